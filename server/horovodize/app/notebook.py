"""Jupyter notebooks (nbformat 4) as an input format, in front of the parse stage.

`load` reads the notebook's JSON text and makes ONE program of its code cells in order
(IPython magics, shell lines and help lines masked by same-length comments so the program
parses and they are never reported nor edited), keeping where each cell starts. Findings
and edits of the unchanged engine map back to (cell, line, column) (`Notebook.locate`) and
to per-cell edits (`Notebook.cell_edits`); `Notebook.converted` rewrites only the JSON text
of each changed cell's ``source`` value, in the style it had (a list of lines or a string,
its indentation, its escapes), so everything else stays byte-identical.

Requires: parse (Source, Edit, ParseError, line_table), errors. Used by the CLI and, through
`from_cells` (an editor's cells, no JSON), by the language server's `lsp.notebooks`.
"""

from __future__ import annotations

import bisect
import difflib
import json
import os
import re
from dataclasses import dataclass, field
from functools import cached_property
from json.decoder import scanstring

from ..errors import UserError
from ..parse.cell_magics import PYTHON_CELL_MAGICS   # (their body is Python: only the first line is masked)
from ..parse.source import Edit, ParseError, Source, apply_edits, line_table

_WS = re.compile(r"[ \t\n\r]*")
# IPython lines that act outside the program: shell commands, package installs, written files.
_ACTS = re.compile(r"[ \t]*(?:!|%(?:pip|conda|sh|run|system)\b|%%(?:bash|sh|script|writefile)\b)")
# IPython's magic machinery: a cell that defines a magic (DLwP 3rd edition's `%%backend`)
# imports it and decorates a function with it; without IPython (a script run by horovodrun)
# the import fails, and with it the decorator (no get_ipython()).
_MAGIC_MACHINERY = re.compile(r"[ \t]*(?:from[ \t]+IPython\.core\.magic[ \t]+import\b|import[ \t]+IPython\.core\.magic\b"
                              r"|@[\w.]*register_(?:cell|line|line_cell)_magic\b)")
# The wait that ends a data window (local rank 0 fetched, now the others; rules/data_acquisition):
# it stays in the cell of the fetch it follows, where the window opened (re-running that cell
# alone runs both halves).
_CLOSES_WINDOW = re.compile(r'(?:if [\w.]+\.local_rank\(\) == 0:\s+)?[\w.]+\.allreduce\([^\n]*name="data_\w+"')
_DECODER = json.JSONDecoder()
# A text's lines, each with its line break (\r\n, \r or \n), the last one also without.
_LINES = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")
_HELP = re.compile(r"[ \t]*(?:\?\??[\w.]+|[\w.]+\?\??)[ \t]*$")
_ASSIGN_MAGIC = re.compile(r"[ \t]*[A-Za-z_]\w*(?:[ \t]*,[ \t]*[A-Za-z_]\w*)*[ \t]*=[ \t]*[%!]")


@dataclass
class Cell:
    index: int                 # position in the notebook's `cells` list (0-based)
    text: str                  # the source, joined
    as_list: bool              # the source was a list of lines (else one string)
    span: tuple[int, int]      # the source value's text in the JSON
    items: list = field(default_factory=list)   # (line, its JSON text) of a list source
    start: int = 0             # where the cell starts in the program
    code: str = ""             # `text` as IPython runs it (a cell indented as a whole is dedented)
    shift: list = field(default_factory=list)   # per line of `code`: indentation removed (dedented cells)
    lines: list = field(default_factory=list)   # line table of `code`


@dataclass
class Notebook:
    raw: str
    cells: list[Cell]          # the code cells, in order
    program: str               # the code cells as one program, magics masked
    masks: list                # (start, end) in the program of each masked magic
    name: str = "<notebook>"

    # -- positions -----------------------------------------------------------------
    @cached_property
    def _starts(self) -> list[int]:
        return [c.start for c in self.cells]

    @cached_property
    def _program_lines(self) -> list[int]:
        return line_table(self.program)

    def cell_at(self, offset: int) -> Cell:
        return self.cells[max(0, bisect.bisect_right(self._starts, offset) - 1)]

    def locate(self, offset: int) -> tuple[int, int, int]:
        """Program offset -> (1-based cell number in `cells`, 1-based line, 1-based column)."""
        cell = self.cell_at(offset)
        inner = min(max(0, offset - cell.start), len(cell.code))
        line = bisect.bisect_right(cell.lines, inner) - 1
        shift = cell.shift[line] if cell.shift else 0
        return cell.index + 1, line + 1, inner - cell.lines[line] + 1 + shift

    def locate_line(self, line: int, column: int = 1) -> tuple[int, int, int]:
        """1-based program (line, column) -> (cell number, line, column)."""
        table = self._program_lines
        offset = table[max(1, min(line, len(table))) - 1] + column - 1
        return self.locate(offset)

    def masked(self, start: int, end: int, new_text: str = "") -> bool:
        """Does an edit of [start, end) change a masked magic? (Whole lines inserted
        before one do not.)"""
        if start == end and new_text.endswith(("\n", "\r")):
            return any(s < start < e for s, e in self.masks)
        return any(s < end and start < e or s <= start < e for s, e in self.masks)

    # -- edits ---------------------------------------------------------------------
    def cell_edits(self, edits: list[Edit]) -> dict[int, list[Edit]]:
        """The program's edits per code cell (position in `cells`), in cell offsets. An edit
        that straddles two cells or touches a masked magic is refused (UserError)."""
        out: dict[int, list[Edit]] = {}
        for e in edits:
            cell = self.cell_at(e.start)
            if e.start == e.end and e.start > cell.start + len(cell.code) and cell is not self.cells[-1]:
                # lines inserted on the blank line that separates two cells: the next cell's top
                cell = self.cells[self.cells.index(cell) + 1]
                e = Edit(cell.start, cell.start, e.new_text)
            lo, hi = e.start - cell.start, e.end - cell.start
            if lo < 0 or hi > len(cell.code):
                line = self.locate(e.start)
                raise UserError(f"{self.name}: an edit at cell {line[0]} line {line[1]} would straddle two cells; "
                                "the notebook is left unchanged")
            if self.masked(e.start, e.end, e.new_text):
                raise UserError(f"{self.name}: an edit would change an IPython magic at cell {cell.index + 1}; "
                                "the notebook is left unchanged")
            out.setdefault(cell.index, []).append(_indented(cell, Edit(lo, hi, e.new_text)) if cell.shift
                                                  else Edit(lo, hi, e.new_text))
        return out

    def converted_cells(self, edits: list[Edit], setup: list[Edit] = ()) -> dict[int, str]:
        """The new text of each code cell the edits change. Lines the engine puts after the
        last statement of a cell land at the top of the next code cell; they go at the end
        of the cell they follow when they are the set-up (`setup`, after the imports) or
        indented (they continue that cell's block: a broadcast after a step function's
        `apply_gradients`)."""
        by_cell = self.cell_edits(self.placed(edits, setup))
        cells = {c.index: c for c in self.cells}
        out = {}
        for index, mine in by_cell.items():
            new = apply_edits(cells[index].text, mine)
            if new != cells[index].text:
                out[index] = new
        return out

    def placed(self, edits: list[Edit], setup: list[Edit] = ()) -> list[Edit]:
        """The edits with the set-up, indented lines and the closing wait of a data window
        that fall between two cells moved to the end of the cell they follow
        (`converted_cells`)."""
        return [self._home(e) if e in setup or e.new_text[:1] in (" ", "\t") or _CLOSES_WINDOW.match(e.new_text)
                else e for e in edits]

    def check_cells(self, new_cells: dict[int, str]) -> None:
        """Every changed cell must still parse on its own (magics masked): else ParseError."""
        before = {c.index: c for c in self.cells}
        for index, text in sorted(new_cells.items()):
            old = before.get(index)
            if old is not None and not old.shift and re.match(r"[ \t]+\S", text):
                # IPython would dedent it and run the block's body unguarded, on every rank
                raise ParseError(f"cell {index + 1}: the cell would start inside a block of the cell before "
                                 "(an edit spans two cells)", 1, 1)
            masked = mask(dedent(text)[0])[0]
            try:
                Source(masked).check_parses()
                if "__future__" in masked:          # (still at the top of its cell)
                    _future_first(masked)
            except ParseError as e:
                raise ParseError(f"cell {index + 1}: {e.message}", e.line, e.column)

    def _home(self, e: Edit) -> Edit:
        if e.start != e.end or not e.new_text.endswith(("\n", "\r")):
            return e
        for before, cell in zip(self.cells, self.cells[1:]):
            end = before.start + len(before.code)
            if end < e.start <= cell.start:             # (on the separator's lines, or at the next cell)
                if not before.code or before.code.endswith(("\n", "\r")):
                    return Edit(end, end, e.new_text)
                nl = re.search(r"\r\n|\r|\n$", e.new_text).group(0)
                return Edit(end, end, nl + e.new_text[:-len(nl)])
        return e

    def converted(self, new_cells: dict[int, str]) -> str:
        """The notebook's JSON text with the sources of `new_cells` re-encoded in place."""
        out, last = [], 0
        ensure_ascii = self.raw.isascii()
        for cell in self.cells:
            if cell.index not in new_cells:
                continue
            start, end = cell.span
            out.append(self.raw[last:start])
            out.append(self._encode(cell, new_cells[cell.index], ensure_ascii))
            last = end
        out.append(self.raw[last:])
        return "".join(out)

    def _encode(self, cell: Cell, text: str, ensure_ascii: bool) -> str:
        if not cell.as_list:
            return json.dumps(text, ensure_ascii=ensure_ascii)
        known = {}
        for line, raw in cell.items:
            known.setdefault(line, raw)       # unchanged lines keep their escapes
        lines = re.findall(r"[^\n]*\n|[^\n]+$", text)
        encoded = [known.get(line) or json.dumps(line, ensure_ascii=ensure_ascii) for line in lines]
        body = self.raw[cell.span[0] + 1:cell.span[1] - 1]
        if cell.items:
            lead = _WS.match(body).group(0)
            close = body[len(body.rstrip(" \t\r\n")):]
            first_end = body.index(cell.items[0][1]) + len(cell.items[0][1])
            sep = "," + (_WS.match(body, first_end + 1).group(0) if len(cell.items) > 1 else lead)
        else:
            indent = _line_indent(self.raw, cell.span[0])
            nl = "\r\n" if "\r\n" in self.raw[:cell.span[0]] else "\n"
            lead, close = nl + indent + " ", nl + indent
            sep = "," + lead
        if not encoded:
            return "[]"
        return "[" + lead + sep.join(encoded) + close + "]"

    def script(self, new_cells: dict[int, str], warn=None) -> str:
        """The converted program as a script: cells in order, magics commented out. `warn` is
        told of each commented-out line that acts outside Python (`!wget ...`, `%pip`,
        `%%writefile`): the script no longer does it (fetched data, installed packages)."""
        parts, futures = [], {}
        for cell in self.cells:
            text = dedent(new_cells.get(cell.index, cell.text))[0]
            if cell is not self.cells[0]:     # a later cell's __future__ import goes to the top
                futures.update((line.rstrip(), None) for line in text.splitlines() if FUTURE.match(line))
            masked, spans = mask(text, script=True, future=cell is not self.cells[0])
            for start, end in spans if warn else ():
                if _ACTS.match(text[start:end]):
                    warn(f"cell {cell.index + 1}:{text.count(chr(10), 0, start) + 1}: `{text[start:end].strip()}` is "
                         "commented out in the script (IPython): do it before running the script")
            text = _without_magic_machinery(masked, cell.index, warn)
            parts.append(text if text.endswith(("\n", "\r")) or not text else text + "\n")
        return "".join(line + "\n" for line in futures) + "".join(parts)

    def diff(self, name: str, new_cells: dict[int, str]) -> str:
        """A unified diff per changed cell (headers name the cell)."""
        out = []
        for cell in self.cells:
            if cell.index not in new_cells:
                continue
            a = re.findall(r"[^\n]*\n|[^\n]+$", cell.text)
            b = re.findall(r"[^\n]*\n|[^\n]+$", new_cells[cell.index])
            for line in difflib.unified_diff(a, b, fromfile=f"a/{name}:cell {cell.index + 1}",
                                             tofile=f"b/{name}:cell {cell.index + 1}"):
                out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of cell\n")
        return "".join(out)


def _without_magic_machinery(text: str, index: int, warn=None) -> str:
    """A script's cell with IPython's magic machinery commented out (the import of
    IPython.core.magic, the ``@register_cell_magic`` decorators): the function stays defined,
    as a plain function; `warn` is told of each line."""
    lines = _LINES.findall(text)
    for i, line in enumerate(lines):
        if _MAGIC_MACHINERY.match(line):
            lines[i] = "# " + line
            if warn:
                warn(f"cell {index + 1}:{i + 1}: `{line.strip()}` is commented out in the script: IPython's magic "
                     "machinery, which the script runs without (the function stays defined)")
    return "".join(lines)


def _indented(cell: Cell, e: Edit) -> Edit:
    """An edit of a dedented cell's `code` as an edit of its `text`: positions moved by the
    indentation removed from their line, and the lines it adds indented as the cell is."""
    code_lines, text_lines = cell.lines, line_table(cell.text)

    def at(offset: int) -> tuple[int, int]:
        line = bisect.bisect_right(code_lines, offset) - 1
        return text_lines[line] + offset - code_lines[line] + cell.shift[line], line

    (start, first), (end, last) = at(e.start), at(e.end)
    space = cell.text[:max(cell.shift)]
    parts = re.split(r"(\r\n|\r|\n)", e.new_text)
    out = []
    for i, part in enumerate(parts):
        out.append(part)
        if i % 2 and (i < len(parts) - 2 or parts[-1]):
            out.append(space[:cell.shift[first]])     # a line the edit adds, indented as its first
        elif i % 2:
            out.append(space[:cell.shift[last]])      # the rest of the line the edit ends in
    return Edit(start, end, "".join(out))


def _line_indent(raw: str, offset: int) -> str:
    start = raw.rfind("\n", 0, offset) + 1
    return _WS.match(raw, start).group(0).replace("\n", "").replace("\r", "")


# -- reading -----------------------------------------------------------------------
def load(raw: str, name: str = "<notebook>") -> Notebook:
    """The notebook in `raw` (its JSON text); UserError when it is not a usable nbformat-4
    notebook (invalid JSON, another nbformat, no code cell)."""
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as e:
        raise UserError(f"{name}: not a notebook: invalid JSON at line {e.lineno} column {e.colno} ({e.msg})")
    except RecursionError:
        raise UserError(f"{name}: not a notebook: JSON nested too deeply")
    if not isinstance(data, dict) or not isinstance(data.get("cells"), list):
        raise UserError(f"{name}: not a notebook: no `cells` list at the top level")
    if data.get("nbformat") != 4:
        raise UserError(f"{name}: nbformat {data.get('nbformat')!r} is not supported (only nbformat 4; "
                        "`jupyter nbconvert --to notebook --nbformat 4` upgrades it)")
    spans = _source_spans(raw)
    cells = []
    for i, c in enumerate(data["cells"]):
        if not isinstance(c, dict) or c.get("cell_type") != "code":
            continue
        src = c.get("source", "")
        if isinstance(src, list) and all(isinstance(s, str) for s in src):
            text, as_list = "".join(src), True
        elif isinstance(src, str):
            text, as_list = src, False
        else:
            raise UserError(f"{name}: cell {i + 1}: `source` is neither a string nor a list of strings")
        if i not in spans:
            raise UserError(f"{name}: cell {i + 1}: no `source` to convert")
        span, items = spans[i]
        cells.append(Cell(i, text, as_list, span, items if as_list else []))
    if not cells:
        raise UserError(f"{name}: no code cells")
    return _program(raw, cells, name)


def from_cells(texts: list[str], name: str = "<notebook>") -> Notebook:
    """The program of an editor's code cells (their texts, in order; no JSON): positions,
    `cell_edits` and `placed` as for `load`'s, with `Cell.index` the position in `texts`."""
    return _program("", [Cell(i, text, False, (0, 0)) for i, text in enumerate(texts)], name)


def _program(raw: str, cells: list[Cell], name: str = "<notebook>") -> Notebook:
    parts, masks, pos = [], [], 0
    for cell in cells:
        cell.start = pos
        cell.code, cell.shift = dedent(cell.text)
        cell.lines = line_table(cell.code)
        text, spans = mask(cell.code, future=cell is not cells[0])
        masks += [(pos + s, pos + e) for s, e in spans]
        # every cell ends a statement, and a blank line follows it (a separator outside every
        # cell): the rules that group statements (one rank-0 guard around consecutive prints,
        # `rank0_guards._apart`) end a group at a blank line, so no group spans two cells
        text += "\n" if text.endswith(("\n", "\r")) else "\n\n"
        parts.append(text)
        pos += len(text)
    return Notebook(raw, cells, "".join(parts), masks, name)


def _ws(s: str, i: int) -> int:
    return _WS.match(s, i).end()


def _source_spans(raw: str) -> dict[int, tuple[tuple[int, int], list]]:
    """cell index -> ((start, end) of its `source` value in `raw`, [(line, JSON text)] of a
    list source). Values are skipped with the C decoder: a 50 MB output costs one decode."""
    out: dict[int, tuple] = {}
    i = _ws(raw, 0)

    def members(i):                    # raw[i] == "{": yields (key, value start); caller moves on
        i = _ws(raw, i + 1)
        if raw[i] == "}":
            return i + 1
        while True:
            key, i = scanstring(raw, i + 1)
            i = _ws(raw, _ws(raw, i) + 1)          # past ":"
            i = yield key, i
            i = _ws(raw, i)
            if raw[i] == "}":
                return i + 1
            i = _ws(raw, i + 1)                    # past ","

    def skip(i):
        return _DECODER.raw_decode(raw, i)

    def walk_object(i, on_key):
        gen = members(i)
        try:
            item = next(gen)
            while True:
                key, start = item
                item = gen.send(on_key(key, start))
        except StopIteration as stop:
            return stop.value

    def cells_array(i):
        n, i = 0, _ws(raw, i + 1)
        if raw[i] == "]":
            return i + 1
        while True:
            index = n

            def cell_key(key, start):
                if key != "source":
                    return skip(start)[1]
                value, end = skip(start)
                items = []
                if isinstance(value, list):
                    j = _ws(raw, start + 1)
                    for line in value:
                        _, e = skip(j)
                        items.append((line, raw[j:e]))
                        j = _ws(raw, e)
                        j = _ws(raw, j + 1) if raw[j] == "," else j
                out[index] = ((start, end), items)
                return end
            i = _ws(raw, walk_object(i, cell_key))
            n += 1
            if raw[i] == "]":
                return i + 1
            i = _ws(raw, i + 1)

    def top_key(key, start):
        if key == "cells":
            out.clear()
            return cells_array(start)
        return skip(start)[1]

    walk_object(i, top_key)
    return out


# -- magics --------------------------------------------------------------------------
def dedent(text: str) -> tuple[str, list[int]]:
    """IPython's leading-indent clean-up: when a cell's first line is indented, that
    indentation is removed from every line that starts with it. (text, removed per line;
    [] when nothing is removed)."""
    m = re.match(r"[ \t]+", text)
    if not m:
        return text, []
    space = m.group(0)
    lines = _LINES.findall(text)
    shift = [len(space) if line.startswith(space) else 0 for line in lines]
    if text.endswith(("\n", "\r")):
        shift.append(0)
    return "".join(line[n:] for line, n in zip(lines, shift)), shift


FUTURE = re.compile(r"from[ \t]+__future__[ \t]+import\b")


def mask(text: str, script: bool = False, future: bool = False) -> tuple[str, list[tuple[int, int]]]:
    """`text` with each IPython line (``%magic``, ``!shell``, ``x = !cmd``, ``obj?``, a
    ``%%cell`` magic) made a comment (a statement inside a block), and the (start, end) of
    each. Same length (program positions stay the cell's) unless `script` (then ``# `` is
    put before the line). `future`: a ``from __future__ import`` line too (legal at the top
    of any cell, as Jupyter compiles each cell on its own; not in the middle of a program)."""
    lines = _LINES.findall(text)
    spans, out, pos = [], [], 0
    first = text.lstrip(" \t\r\n")
    whole = first.startswith("%%") and re.match(r"%%(\w+)", first) and \
        re.match(r"%%(\w+)", first).group(1) not in PYTHON_CELL_MAGICS
    ipython = None if whole else ipython_lines(text, lines)
    starts = _logical_starts(text) if not whole and ipython is None else None
    seen_code = continued = was_continued = False
    for n, line in enumerate(lines):
        body = line.rstrip("\r\n")
        stripped = body.lstrip(" \t")
        if ipython is not None:             # IPython's own transformer decides (`ipython_lines`)
            is_magic = bool(stripped) and (n in ipython or (future and stripped is body
                                                             and FUTURE.match(body) is not None))
        else:
            is_magic = bool(stripped) and (whole or continued or (pos in starts and (
                stripped[0] in "%!" or _HELP.match(body) or _ASSIGN_MAGIC.match(body)
                or (stripped.startswith("%%") and not seen_code)
                or (future and stripped is body and FUTURE.match(body) is not None))))
        if stripped and not stripped.startswith("#"):
            seen_code = True
        was_continued = continued
        continued = is_magic and body.endswith("\\")       # `!cmd \` goes on on the next line
        if is_magic:
            indent = len(body) - len(stripped)
            # A magic inside a block (``if IS_COLAB:`` / ``    %pip install ...``) is a
            # statement there, as IPython makes it (``get_ipython().run_line_magic(...)``):
            # a comment would leave the block empty. Its continuation lines stay comments.
            statement = indent > 0 and not was_continued and not whole
            if script:
                new = body[:indent] + ("pass  # " if statement else "# ") + stripped
            elif statement:
                new = body[:indent] + ("0#" + stripped[2:] if len(stripped) > 1 else "0")
            else:
                new = body[:indent] + "#" + stripped[1:]
            spans.append((pos + indent, pos + len(body)))
            out.append(new + line[len(body):])
        else:
            out.append(line)
        pos += len(line)
    return "".join(out), spans


_TRANSFORMER: list = []          # [IPython's TransformerManager] once imported, [None] without IPython
_SEEN: dict = {}                 # cell text -> `ipython_lines` answer (shared: `mask` only reads it)


def ipython_lines(text: str, lines: list[str]) -> set[int] | None:
    """The indexes of the lines of a cell that IPython transforms (a magic, a shell line and
    its continuations, ``x = !cmd``, ``obj?``), found by IPython's own input transformer
    (``IPython.core.inputtransformer2``): the lines its output does not keep. None when
    IPython is not importable (or ``HOROVODIZE_NO_IPYTHON`` is set), or it fails on the
    cell: then `mask` follows the same rules itself. A ``%%`` cell magic is `mask`'s."""
    if not _TRANSFORMER:
        manager = None
        if not os.environ.get("HOROVODIZE_NO_IPYTHON"):
            try:
                from IPython.core.inputtransformer2 import TransformerManager
                manager = TransformerManager()
            except Exception:          # noqa: BLE001 - not installed, or broken: the own rules
                manager = None
        _TRANSFORMER.append(manager)
    manager = _TRANSFORMER[0]
    if manager is None or "get_ipython" in text or text.lstrip(" \t\r\n").startswith("%%"):
        return None                    # (a cell that calls it itself: the diff would not tell)
    if text in _SEEN:                  # (the editor re-reads every cell on each keystroke)
        return _SEEN[text]
    old = [line.rstrip("\r\n") for line in lines]
    unix = "".join(line + "\n" for line in old)          # (IPython is given \n line ends only)
    try:
        new = manager.transform_cell(unix)
    except Exception:                  # noqa: BLE001 - IPython gave up: the own rules
        new = None
    if len(_SEEN) >= 1024:
        _SEEN.clear()
    found = _SEEN[text] = None if new is None else set() if new == unix else _changed_lines(old, new)
    return found


def _changed_lines(old: list[str], new: str) -> set[int]:
    """The indexes of the lines of `old` that IPython's output `new` does not keep."""
    out = set()
    matcher = difflib.SequenceMatcher(None, old, new.split("\n"), autojunk=False)
    for tag, i1, i2, _j1, _j2 in matcher.get_opcodes():
        if tag in ("replace", "delete"):
            out.update(range(i1, i2))
    return out


def _future_first(text: str) -> None:
    """ParseError when a ``from __future__`` import is not at the top of `text` (Python's
    own compiler decides; a syntax it does not know is parso's to judge, not this)."""
    try:
        compile(text, "<cell>", "exec", dont_inherit=True)
    except SyntaxError as e:
        if "__future__" in str(e.msg):
            raise ParseError(e.msg, e.lineno or 1, e.offset or 1)


def _logical_starts(text: str) -> set[int]:
    """Offsets of the lines that start a logical line (not inside brackets, a string or
    after a backslash): only those can be an IPython magic."""
    starts, depth, i, n = {0}, 0, 0, len(text)
    cont = False
    while i < n:
        ch = text[i]
        if ch in "\r\n":
            i += 2 if text.startswith("\r\n", i) else 1
            if depth == 0 and not cont:
                starts.add(i)
            cont = False
            continue
        cont = False
        if ch == "#":
            while i < n and text[i] not in "\r\n":
                i += 1
            continue
        if ch in "\"'":
            quote = text[i:i + 3] if text[i:i + 3] in ('"""', "'''") else ch
            i += len(quote)
            while i < n and not text.startswith(quote, i):
                if text[i] == "\\":
                    i += 1
                elif len(quote) == 1 and text[i] in "\r\n":
                    break
                i += 1
            else:
                i += len(quote)
            continue
        if ch == "\\" and text[i + 1:i + 2] in ("\n", "\r"):
            cont = True
            i += 1
            continue
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth = max(0, depth - 1)
        i += 1
    return starts


# -- the report ------------------------------------------------------------------------
def relocate_report(data: dict, nb: Notebook, script: str | None = None) -> dict:
    """The conversion report (app/report.py's data) with program lines made (cell, line),
    and how to launch the result: a notebook is not started by horovodrun, its script is."""
    def cell_line(line: int) -> tuple[int, int]:
        return nb.locate_line(line)[:2]

    def fix(d: dict) -> None:
        if isinstance(d.get("line"), int) and "cell" not in d:     # (point 8 shares `reasons`)
            d["cell"], d["line"] = cell_line(d["line"])

    def text(s: str) -> str:
        return re.sub(r"\bline (\d+)", lambda m: "cell %d line %d" % cell_line(int(m.group(1))), s)

    for r in data["reasons"]:
        fix(r)
        r["message"] = text(r["message"])      # (lines a reason names: point 7's shared-filesystem reads)
    for p in data["points"]:
        p["reason"] = text(p["reason"])
        for d in p["changes"] + p.get("notes", []):
            fix(d)
            if "note" in d:
                d["note"] = text(d["note"])
    data["launch"] = launch(script)
    return data


def launch(script: str | None) -> str:
    """The report's line on how to run a converted notebook (its script, `script`, if written)."""
    if script:
        return (f"run it on N ranks: horovodrun -np N -H host1:4,host2:4 python {script} "
                f"(N = hosts x slots, e.g. -np 8 on two hosts of 4; one machine: "
                f"horovodrun -np 2 -H localhost:2 python {script})")
    return ("a notebook is not started by horovodrun: `horovodize convert NOTEBOOK.ipynb "
            "--to-script train.py` writes the converted program and the command that runs it")
