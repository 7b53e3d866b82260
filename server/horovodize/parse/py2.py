"""Name the Python 2 construct that keeps a file from parsing on Python 3.

Many TF1-era training scripts are Python 2 (``print x``, ``except E, e``). parso's error
("invalid syntax") does not say why; this says which construct, on which line, so the
user knows to port the file (``2to3``) rather than look for a typo. Only called once a file
is known not to parse: the patterns are checked line by line outside strings and comments.
"""

from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass

PORT = "horovodize reads Python 3 only; port the file first (e.g. `2to3 -w FILE`)"


@dataclass(frozen=True)
class Py2Construct:
    line: int          # 1-based
    column: int        # 1-based
    what: str

    @property
    def message(self) -> str:
        return f"Python 2 {self.what}: {PORT}"


# (regex over a logical line with strings blanked, description); first match wins per line.
LINE_PATTERNS = [
    (re.compile(r"^\s*print\s*>>"), "`print >>f, x` statement (write `print(x, file=f)`)"),
    (re.compile(r"^\s*print\s+(?![\s(=.,)\[]|$)"), "`print x` statement (write `print(x)`)"),
    (re.compile(r"^\s*exec\s+(?![\s(=.,)]|$)"), "`exec \"...\"` statement (write `exec(...)`)"),
    (re.compile(r"^\s*except\s+[^:]*[^\s:],\s*[A-Za-z_]\w*\s*:"), "`except E, e:` (write `except E as e:`)"),
    (re.compile(r"^\s*raise\s+[\w.]+\s*,"), "`raise E, msg` (write `raise E(msg)`)"),
    (re.compile(r"<>"), "`<>` operator (write `!=`)"),
    (re.compile(r"`"), "backtick repr (write `repr(x)`)"),
    (re.compile(r"(?<![\w.])0[0-7]+[lL]?(?![\w.])"), "octal literal `0777` (write `0o777`)"),
    (re.compile(r"(?<![\w.])\d+[lL](?!\w)"), "long literal `10L` (write `10`)"),
    (re.compile(r"^\s*def\s+\w+\s*\([^)]*\(\s*\w+\s*,"), "tuple parameter `def f((a, b))`"),
]


def find(text: str) -> Py2Construct | None:
    """The first Python 2 construct in `text`, or None."""
    for lineno, line in enumerate(_code_lines(text), 1):
        for pattern, what in LINE_PATTERNS:
            m = pattern.search(line)
            if m:
                lead = len(m.group(0)) - len(m.group(0).lstrip())
                return Py2Construct(lineno, m.start() + lead + 1, what)
    for lineno, raw in enumerate(text.splitlines(), 1):
        for m in re.finditer(r"(?<![\w])(ur|UR|Ur|uR)['\"]", raw):
            return Py2Construct(lineno, m.start() + 1, "`ur\"...\"` string prefix (write `r\"...\"`)")
    return None


def _code_lines(text: str) -> list[str]:
    """The file's lines with string contents and comments blanked (same columns), so a
    backtick or ``<>`` in a string is not taken for code. Falls back to a regex blanking
    when the tokenizer gives up (it does on some Python 2 files)."""
    lines = text.splitlines()
    out = [list(line) for line in lines]
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type not in (tokenize.STRING, tokenize.COMMENT):
                continue
            (sl, sc), (el, ec) = tok.start, tok.end
            for ln in range(sl, el + 1):
                if ln - 1 >= len(out):
                    break
                row = out[ln - 1]
                a = sc + 1 if ln == sl else 0
                b = ec - 1 if ln == el else len(row)
                if tok.type == tokenize.COMMENT:
                    a, b = (sc if ln == sl else 0), len(row)
                for i in range(max(a, 0), min(b, len(row))):
                    row[i] = " "
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return [_blank_simple(line) for line in lines]
    return ["".join(row) for row in out]


def _blank_simple(line: str) -> str:
    line = re.sub(r"(['\"])(?:\\.|(?!\1).)*\1", lambda m: m.group(1) + " " * (len(m.group(0)) - 2) + m.group(1), line)
    hash_at = line.find("#")
    return line if hash_at < 0 else line[:hash_at] + " " * (len(line) - hash_at)
