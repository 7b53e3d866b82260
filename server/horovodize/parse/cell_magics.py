"""Code run from a string: a notebook exported as a script (``jupyter nbconvert --to script``)
keeps a ``%%time`` cell as ``get_ipython().run_cell_magic('time', '', 'train(ds, EPOCHS)')``,
and IPython runs that string as the cell's code.

Provides `unwrap`: the text with each such one-line call made the code it runs, at the same
offsets (``0;`` and spaces in place of the call's head, spaces in place of its tail), so that
an analysis follows the call inside (the training it starts, the files it writes), and the
spans of those calls; `outside` says whether an edit of that text applies to the original
unchanged (it leaves the call's head and tail alone and puts no line break or quote in its string).
Requires nothing.
"""

from __future__ import annotations

import re

# Cell magics whose body is Python, run in the notebook's namespace (only their first line is IPython).
PYTHON_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun", "debug"})

_CALL = re.compile(
    r"^get_ipython\(\)\.run_cell_magic\(\s*(['\"])(?P<magic>\w+)\1\s*,\s*(['\"])[^'\"\\\r\n]*\3\s*,\s*"
    r"(['\"])(?P<body>[^'\"\\\r\n]+)\4\s*\)[ \t]*(?=\r?$)", re.M)


def unwrap(text: str) -> tuple[str, list[tuple[int, int, int, int]]]:
    """(text with the calls unwrapped, [(call start, call end, code start, code end)])."""
    if "run_cell_magic(" not in text:
        return text, []
    spans, parts, pos = [], [], 0
    for m in _CALL.finditer(text):
        body = m.group("body")
        if m.group("magic") not in PYTHON_CELL_MAGICS or not _simple(body):
            continue
        start, end = m.span()
        b0, b1 = m.span("body")
        parts += [text[pos:start], "0;" + " " * (b0 - start - 2), body, " " * (end - b1)]
        spans.append((start, end, b0, b1))
        pos = end
    return "".join(parts) + text[pos:], spans


def outside(spans, start: int, end: int, new_text: str) -> bool:
    """An edit of the unwrapped text that the original takes as it is."""
    for s, e, b0, b1 in spans:
        if end <= s or start >= e:
            continue
        if not (b0 <= start and end <= b1 and not any(c in new_text for c in "\r\n'\"\\")):
            return False
    return True


def _simple(body: str) -> bool:
    """One simple statement (no block, no second statement that would need its own line)."""
    try:
        compile(body, "<cell>", "exec")
    except (SyntaxError, ValueError):
        return False
    return not body.rstrip().endswith(":")
