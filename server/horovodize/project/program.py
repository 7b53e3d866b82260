"""A program of several modules converted as one (contract point 12).

`convert_program` links the entry and the project modules it imports (`link`), runs the
unchanged engine on that one text, and maps its edits back to the files they belong to:
the set-up lands in the entry, above its first project import (so it runs before any
project module's code), never in a library module; a library module that an edit makes
name Horovod (or ``math``, or TensorFlow) gets that import, and nothing else of the set-up.
An entry that other project files import (a script that is also a module: evaluate.py's
``from train import get_model``) gets its set-up at the head of its ``__main__`` block
instead (`main_setup`): their import of it sets nothing up. A module whose import trains
(a script with training at its top level) gets the set-up's statements at its top too: it is
started on its own as well, and at the import a second set-up does nothing. The report's lines become
(file, line) (or (file, cell, line) for a notebook entry, through `relocate_report`'s
`cells`), and point 12 lists the program's files, where the set-up went and what is out of
sight (a dynamic import).

Requires: engine, parse (Source, Edit, apply_edits), project.layout, project.link,
project.main_setup, errors.
Provides: `ProgramConversion`, `convert_program`, `is_project`, `relocate_report`, `add_init`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from ..engine import Analysis, analyze, without_overlaps
from ..errors import UserError
from ..parse.source import Edit, ParseError, Source, apply_edits
from . import main_setup
from .layout import Layout, find_root, main_block, top_imports
from .layout import importers as importers_of
from .link import Link, link

PROJECT_POINT = (12, "the program is the project (the entry and its project modules)")


@dataclass
class FileChange:
    path: Path
    before: str
    after: str
    edits: list[Edit] = field(default_factory=list)     # before → after (what an editor applies)

    @property
    def changed(self) -> bool:
        return self.before != self.after


@dataclass
class ProgramConversion:
    entry: Path
    root: Path
    link: Link
    analysis: Analysis
    files: list[FileChange] = field(default_factory=list)      # the entry first, then the modules
    outside: list[tuple[Path, int, str]] = field(default_factory=list)
    init_for: list[Path] = field(default_factory=list)          # modules another program made call Horovod
    setup: list[Edit] = field(default_factory=list)             # the entry's edits that are the set-up
    importers: list[Path] = field(default_factory=list)         # project files that import the entry
    main_setup: str | None = None       # the entry is imported: why its set-up is not in its __main__ block (None: it is)
    trainers: dict = field(default_factory=dict)   # module that trains when imported -> line of its training
    shared: dict = field(default_factory=dict)     # changed module -> files outside the program importing it

    @property
    def refused(self) -> bool:
        return bool(self.analysis.refused)

    def name(self, path: Path | None) -> str:
        """A file of the program as the report names it: relative to the working directory
        when below it (as the diff names it), else to the project root."""
        path = path or self.entry
        for base in (Path.cwd().resolve(), self.root):
            try:
                return str(path.relative_to(base))
            except ValueError:
                continue
        return str(path)


def is_project(entry: Path, root: Path, read) -> bool:
    """Whether `entry` imports a module of the project (then it is converted with them)."""
    layout = Layout(root, entry, read)
    return bool(layout.module(entry).deps)


def analyze_program(entry: Path, read, root: Path | None = None, keras_target: str = "tf.keras",
                    strict: bool = True, scale_lr: bool = True,
                    require_local_fs: bool = False) -> tuple[Layout, Link, Analysis]:
    """The program `entry` starts, linked and analysed. `strict`: a module that does not
    parse raises UserError (a conversion); else it is analysed as parso recovers it.
    `scale_lr`, `require_local_fs`: `engine.Analysis`'s."""
    layout = Layout(root or find_root(entry), entry, read)
    for path in layout.program():
        try:
            layout.module(path).source.check_parses()
        except ParseError as e:
            if strict:
                raise UserError(f"{path}:{e.line}:{e.column}: syntax error: {e.message}", located=True)
    lk = link(layout)
    analysis = analyze(lk.text, keras_target=keras_target, library_spans=lk.library_spans(), scale_lr=scale_lr,
                       require_local_fs=require_local_fs)
    if analysis.error is not None:
        raise UserError(f"{entry}: {analysis.error.message}")
    return layout, lk, analysis


def convert_program(entry: Path, read, root: Path | None = None, keras_target: str = "tf.keras",
                    scale_lr: bool = True, require_local_fs: bool = False,
                    importers: list[Path] | None = None) -> ProgramConversion:
    """The conversion of the program `entry` starts; raises UserError (a file that does not
    parse, an edit that cannot be mapped back, a result that does not parse). `importers`:
    the project files that import the entry (None: looked up below the root); when there
    are some, its set-up goes in its ``__main__`` block (`main_setup`)."""
    root = root or find_root(entry)
    layout, lk, analysis = analyze_program(entry, read, root, keras_target, scale_lr=scale_lr,
                                           require_local_fs=require_local_fs)
    conv = ProgramConversion(layout.entry, root.resolve(), lk, analysis)
    if importers is None:
        importers = importers_of(root, layout.entry, read) if layout.entry.suffix == ".py" else []
    conv.importers = [p.resolve() for p in importers]
    for path in [layout.entry] + lk.order:
        conv.outside += [(path, line, text) for line, text in layout.module(path).outside]
    for name, places in lk.collisions:
        (path, line), others = places[-1], places[:-1]
        conv.outside.append((path, line, f"`{name}` is also defined in " + ", ".join(
            f"{conv.name(p)} line {n}" for p, n in others) + ": read as one program, the analysis follows this "
            "definition wherever the name is used; check the changes made where the others are used"))
    known = _program_imports(conv)
    per_file = _placed(conv, known)
    moved = _move_state(conv, per_file)
    if conv.importers and conv.setup:
        _setup_in_main(conv, per_file, moved)
    conv.trainers = _trains_when_imported(conv) if conv.setup else {}
    own_setup = _module_setup(conv.setup)
    for path in [layout.entry] + lk.order:
        before = lk.modules[path].text
        edits = per_file.get(path, [])
        if path != layout.entry:
            setup = own_setup if path in conv.trainers else ""
            edits = edits + _imports_needed(lk.modules[path].source, edits, known, setup + moved.get(path, ""))
        edits = without_overlaps(edits)
        after = apply_edits(before, edits)
        if after != before:
            try:
                Source(after).check_parses()
            except ParseError as e:
                raise UserError(f"{path}: the conversion does not parse ({e}); nothing written")
        conv.files.append(FileChange(path, before, after, edits))
    return conv


def note_shared(conv: ProgramConversion, read) -> None:
    """The files outside this program that import a module it changes (another entry of the
    project: after the change the module calls Horovod, which that program never set up),
    also through a package's ``__init__.py`` or another module, notebooks included: point
    12 names them. For one entry's conversion; a folder's converts them together."""
    inside = {f.path for f in conv.files}
    stop = frozenset({conv.entry.resolve()})      # (not back through the entry: `conv.importers`)
    for f in conv.files:
        if f.changed and _calls_horovod_when_imported(conv, f):
            others = [p.resolve() for p in importers_of(conv.root, f.path, read, True, stop) if p.resolve() not in inside]
            if others:
                conv.shared[f.path] = others


def _calls_horovod_when_imported(conv: ProgramConversion, f: FileChange) -> bool:
    """Whether an edit of `f` calls Horovod where an importer runs it: outside the file's
    ``__main__`` block (a seed or a keyword of its own changes nothing for its importers)."""
    source = conv.link.modules[f.path].source
    block = main_block(source.module)
    start, end = source.span(block) if block is not None else (0, 0)
    return any(HOROVOD.search(e.new_text) and not start <= e.start < end for e in f.edits)


def _placed(conv: ProgramConversion, known: dict[str, str]) -> dict[Path, list[Edit]]:
    """The conversion's edits per file, the set-up in the entry (never in a library module);
    `known`: the program's import statement of each name (`_program_imports`)."""
    analysis, lk = conv.analysis, conv.link
    setup = analysis.setup.fix.edits if analysis.setup is not None and analysis.setup.fix else []
    edits = analysis.conversion_edits()
    out: dict[Path, list[Edit]] = {}
    for e in (e for e in edits if e in setup):     # (first: what follows the set-up at its offset stays after it)
        path, start = lk.locate(e.start)
        text = e.new_text
        if path != conv.entry or e.start != e.end:
            start = lk.split
            text = _own_lines(text)
        placed = Edit(start, start, _with_tf(lk, text, start))
        out.setdefault(conv.entry, []).append(placed)
        conv.setup.append(placed)
    for path, mapped in lk.file_edits([e for e in edits if e not in setup]).items():
        for e in mapped:
            if path != conv.entry and INIT.search(e.new_text):
                # a missing hvd.init() (a library converted by an earlier run): in the entry
                at = lk.split
                line = known.get("hvd", "import horovod.tensorflow as hvd")
                bound = _top_bindings(lk.modules[conv.entry].source, at)
                out.setdefault(conv.entry, []).append(Edit(at, at, ("" if "hvd" in bound else line + "\n") + "hvd.init()\n"))
                continue
            out.setdefault(path, []).append(e)
    return out


INIT = re.compile(r"\bhvd\.init\(\)")
# An edit that calls Horovod (an import of it, a seed or a keyword does not: importers run as before).
HOROVOD = re.compile(r"\bhvd\.\w")


def _trains_when_imported(conv: ProgramConversion) -> dict[Path, int]:
    """The modules (not the entry) whose import runs a training loop (a script with training
    at its top level that the entry imports, ``from train import get_model``): {module: the
    line of its training}. Such a module is a script too: started on its own it needs the
    set-up, so it gets one at its top (`_module_setup`); at the entry's import of it, the
    entry's set-up has run, and a second one does nothing."""
    lk, analysis = conv.link, conv.analysis
    out: dict[Path, int] = {}
    for site in (analysis.summary.sites if analysis.summary else []):
        if site.node is None:
            continue
        path, offset = lk.locate(analysis.source.offset(site.node.start_pos))
        if path is None or path == conv.entry or path in out:
            continue
        module = lk.modules[path].source
        if site.function is None or site.function.name.value in _called_at_top(module.module):
            out[path] = module.position(offset)[0] + 1
    return out


def _called_at_top(module) -> set[str]:
    """The names called by a module's top-level statements (definitions and its ``__main__``
    block left out)."""
    from ..parse import nodes as N

    block, names = main_block(module), set()
    for stmt in module.children:
        if stmt is block or stmt.type in ("funcdef", "classdef", "decorated"):
            continue
        names.update(c.callee_dotted() or "" for c in N.calls_in(stmt))
    return names


def _module_setup(setup: list[Edit]) -> str:
    """The set-up's statements (``hvd.init()``, the GPU pinning) without its imports and
    state, for a module that trains when imported (`_trains_when_imported`)."""
    lines = [line for e in setup for line in e.new_text.splitlines()
             if line.strip() and not main_setup.IMPORT_LINE.match(line) and not STATE.match(line)]
    return "".join(line + "\n" for line in lines) if any(INIT.search(line) for line in lines) else ""


def _setup_in_main(conv: ProgramConversion, per_file: dict[Path, list[Edit]], moved: dict[Path, str]) -> None:
    """An entry other project files import: its set-up at the head of its ``__main__``
    block, so that their import of it sets nothing up (`main_setup`); else `conv.main_setup`
    says why it stays at the top."""
    lk = conv.link
    why = next((f"the state its training step needs is made at import of {conv.name(p)}" for p in moved), None)
    for path in lk.order:
        why = why or main_setup.blocked_by(lk.modules[path].source, conv.name(path))
    if why is None:
        edits, setup, why = main_setup.place(lk.modules[conv.entry].source, per_file.get(conv.entry, []), conv.setup,
                                             conv.name(conv.entry))
        if why is None:
            per_file[conv.entry], conv.setup = edits, setup
    conv.main_setup = why


STATE = re.compile(r"^(hvd_\w+) = .*$", re.M)


def _move_state(conv: ProgramConversion, per_file: dict[Path, list[Edit]]) -> dict[Path, str]:
    """The module-level state the conversion adds after the set-up (``hvd_broadcast_done =
    tf.Variable(False, ...)``) moved to the one module whose edits use it (a training step
    in a library class): {module: the lines it gets after its imports}."""
    entry = conv.entry
    out: dict[Path, str] = {}
    for e in list(per_file.get(entry, [])):
        names = STATE.findall(e.new_text)
        if not names or any(not STATE.match(line) for line in e.new_text.splitlines() if line.strip()):
            continue
        users = {path for path, edits in per_file.items()
                 for x in edits if x is not e and any(re.search(rf"\b{n}\b", x.new_text) for n in names)}
        if len(users) == 1 and entry not in users:
            (home,) = users
            per_file[entry].remove(e)
            out[home] = out.get(home, "") + e.new_text
    return out


def _own_lines(text: str) -> str:
    """The set-up's lines without the copy of a late import the engine put before them."""
    lines = text.splitlines(keepends=True)
    while lines and not lines[0].startswith(("import horovod", "import tensorflow")) and lines[0].startswith(("import ", "from ")):
        lines.pop(0)
    return "".join(lines)


def _with_tf(lk: Link, text: str, at: int) -> str:
    """The set-up text, with ``import tensorflow as tf`` first when its GPU pinning names a
    TensorFlow alias the entry does not bind above `at`."""
    m = re.search(r"\b(\w+)\.config\.experimental", text)
    if m is None:
        return text
    alias = m.group(1)
    bound = _top_bindings(lk.modules[lk.entry].source, at)
    if alias in bound or re.search(rf"^import tensorflow as {re.escape(alias)}$", text, re.M):
        return text
    return f"import tensorflow as {alias}\n" + text


def _top_bindings(source: Source, before: int | None = None) -> dict[str, str]:
    """Local name → import statement, of the module-level imports (above `before`)."""
    return {local: code for local, _full, code in top_imports(source, before)}


def _imports_needed(source: Source, edits: list[Edit], known: dict[str, str], state: str = "") -> list[Edit]:
    """The imports a library module (`source`) needs for the names its edits add (``hvd``,
    ``math``, a TensorFlow alias): the import statement the program binds it with (`known`),
    after the module's own imports, then the `state` moved to it. Never ``hvd.init()``: the
    entry's set-up runs it."""
    if not edits and not state:
        return []
    own = _top_bindings(source)
    texts = [e.new_text for e in edits] + [state]
    used = {m.group(1) for t in texts for m in re.finditer(r"(?<![\w.])([A-Za-z_]\w*)\b", t)}
    missing = [known[n] for n in sorted(used) if n in known and n not in own and not _bound_in_file(source, n)]
    if not missing and not state:
        return []
    at = _after_imports(source)
    nl = source.newline
    lines = list(dict.fromkeys(missing)) + state.splitlines()
    return [Edit(at, at, "".join(line + nl for line in lines))]


def _program_imports(conv: ProgramConversion) -> dict[str, str]:
    """Name → the import statement that binds it, from the set-up and every module."""
    known: dict[str, str] = {}
    setup = conv.analysis.setup
    if setup is not None and setup.fix is not None:
        for e in setup.fix.edits:
            for line in e.new_text.splitlines():
                m = re.match(r"import ([\w.]+) as (\w+)$", line.strip())
                if m:
                    known[m.group(2)] = line.strip()
    for e in conv.analysis.conversion_edits():
        m = re.fullmatch(r"\s*import (\w+)\s*", e.new_text)
        if m:
            known.setdefault(m.group(1), f"import {m.group(1)}")
    for path in conv.link.modules:
        for name, line in _top_bindings(conv.link.modules[path].source).items():
            if line.startswith(("import tensorflow", "import math", "import horovod", "import numpy")):
                known.setdefault(name, line)
    return known


def _bound_in_file(source: Source, name: str) -> bool:
    return re.search(rf"^\s*(?:def|class)\s+{re.escape(name)}\b|^{re.escape(name)}\s*=", source.text, re.M) is not None


def _after_imports(source: Source) -> int:
    """Offset after the module's top imports (after its docstring and __future__ import when
    it has no other)."""
    at = 0
    for stmt in source.module.children:
        if stmt.type == "simple_stmt" and stmt.children[0].type in ("import_name", "import_from", "string"):
            at = source.line_end(source.offset(stmt.end_pos) - 1) if stmt.end_pos else at
            continue
        break
    return at


HVD_IMPORT = re.compile(r"^import (horovod[\w.]*) as (\w+)$", re.M)


def add_init(conv: ProgramConversion, modules: dict[Path, str], base: str | None = None) -> str | None:
    """Give the entry of `conv` (a program that trains nothing itself) ``hvd.init()``: its
    `modules` ({path: converted text}) call Horovod since another program of the folder was
    converted, and Horovod's calls fail before ``hvd.init()`` (one process: rank 0 of 1).
    `base`: the entry's text as another program converted it (the entry is that program's
    module too): then ``hvd.init()`` follows the Horovod import that program gave it.
    Returns the entry's new text (None: no such import)."""
    entry = conv.files[0]
    if base is not None:
        # right after its Horovod import: the module's own top-level code may already call
        # Horovod (a guarded print), and when the other program imports it, Horovod is set
        # up already (a second hvd.init() does nothing)
        source = Source(base)
        stmt = next((s for s in source.module.children if s.type == "simple_stmt"
                     and HVD_IMPORT.fullmatch(s.get_code(include_prefix=False).strip())), None)
        if stmt is None:
            return None
        at = source.line_end(source.offset(stmt.end_pos) - 1)
        entry.after = base[:at] + "hvd.init()" + source.newline + base[at:]
        entry.edits = []          # (made on another program's text: written as a whole by the CLI)
    else:
        line = next((m.group(0) for text in modules.values() for m in [HVD_IMPORT.search(text)] if m),
                    "import horovod.tensorflow as hvd")
        at = conv.link.split
        bound = _top_bindings(conv.link.modules[conv.entry].source, at)
        text = ("" if "hvd" in bound else line + "\n") + "hvd.init()\n"
        conv.setup.append(Edit(at, at, text))
        entry.edits = without_overlaps(entry.edits + [conv.setup[-1]])
        entry.after = apply_edits(entry.before, entry.edits)
    conv.init_for = sorted(modules)
    return entry.after


# -- the report ---------------------------------------------------------------------------
def relocate_report(data: dict, conv: ProgramConversion, cells=None) -> dict:
    """The report (app/report.py's data) with linked lines made (file, line), and point 12.
    `cells(path, line)`: (cell, line in it) for a file whose lines are a notebook's code
    cells as one program, None for the others."""
    def where(line: int) -> tuple[str, int | None, int]:
        path, file_line = conv.link.locate_line(line)
        cell = cells(path, file_line) if cells is not None and path is not None else None
        return (conv.name(path), *cell) if cell is not None else (conv.name(path), None, file_line)

    def fix(d: dict) -> None:
        if isinstance(d.get("line"), int) and "file" not in d:
            d["file"], cell, d["line"] = where(d["line"])
            if cell is not None:
                d["cell"] = cell

    def said(m) -> str:
        name, cell, line = where(int(m.group(1)))
        return f"{name} cell {cell} line {line}" if cell is not None else f"{name} line {line}"

    def text(s: str) -> str:
        s = re.sub(r"\bthis file\b", "this program", s)      # (the engine's notes speak of one file)
        return re.sub(r"\bline (\d+)", said, s)

    for r in data["reasons"]:
        fix(r)
        r["message"] = text(r["message"])
    for p in data["points"]:
        p["reason"] = text(p["reason"])
        for d in p["changes"] + p.get("notes", []):
            fix(d)
            if "note" in d:
                d["note"] = text(d["note"])
    files = conv.files
    changed = [conv.name(f.path) for f in files if f.changed]
    notes = [{"file": conv.name(p), "line": line, "note": t} for p, line, t in conv.outside]
    status = "not done" if notes else ("done" if changed and not conv.refused else "nothing to change")
    reason = "; ".join(f"{n['file']} line {n['line']}: {n['note']}" for n in notes) if notes else (
        "one program of " + ", ".join(conv.name(f.path) for f in files))
    left = [p["point"] for p in data["points"] if p["status"] in ("not done", "partly done")]
    if status == "done" and left and not conv.refused:
        status = "partly done"          # the program was read as one, but not every point is done across it
        reason += "; left across its modules: point " + ", ".join(map(str, left))
    if conv.importers and conv.setup and not conv.refused:
        by = ", ".join(conv.name(p) for p in conv.importers)
        if conv.main_setup is None:
            reason += f"; set-up in the `__main__` block of {conv.name(conv.entry)}: {by} imports it, and sets nothing up"
        else:
            status = "partly done" if status == "done" else status
            reason += (f"; the set-up of {conv.name(conv.entry)} stays at its top, so {by}, which imports it, runs it "
                       f"again (a second hvd.init() does nothing): {conv.main_setup}; put what it runs when started under "
                       "`if __name__ == \"__main__\":` and convert again")
    for path, line in conv.trainers.items():
        status = "partly done" if status == "done" else status
        reason += (f"; {conv.name(path)} trains when {conv.name(conv.entry)} imports it ({conv.name(path)} line {line}): "
                   f"its set-up is at its top too, so it runs on its own, and at that import after "
                   f"{conv.name(conv.entry)}'s (a second hvd.init() does nothing); put its training under "
                   "`if __name__ == \"__main__\":` to keep it out of the import")
    for path, others in conv.shared.items():
        status = "partly done" if status == "done" else status
        reason += (f"; {conv.name(path)} is also imported by " + ", ".join(conv.name(p) for p in others) +
                   ", outside this program: changed here, it calls Horovod there without a set-up; convert the "
                   "folder (`horovodize convert DIR`) to convert those programs with it")
    if conv.init_for:
        status = "done" if status == "nothing to change" else status
        reason += ("; hvd.init() added: it imports " + ", ".join(conv.name(p) for p in conv.init_for) +
                   ", which another program's conversion made call Horovod (this one runs as rank 0 of 1)")
    data["points"].append({"point": PROJECT_POINT[0], "title": PROJECT_POINT[1], "status": status,
                           "reason": reason, "changes": [], "notes": []})
    data["points"].sort(key=lambda p: p["point"])
    data["files"] = [conv.name(f.path) for f in files]
    return data
