"""Which program a file belongs to, and the programs of a folder.

`program_for` answers for one file: a script that imports project modules starts a program
of its own (so does a notebook that does, and a script another project file imports); a module of definitions belongs to the first entry of its project that imports
it; anything else is a program alone. `plan_folder` splits a folder into the files
converted alone and the programs (entry → root), leaving out the modules a program
converts. `prepare` converts a folder's programs before any is shown or written, so a
module two programs share is read as it was, and a program that trains nothing itself but
imports a module another program made call Horovod gets ``hvd.init()``.

Every function takes `read(path) -> text` (the CLI's reader; the language server's would
give open buffers). Requires: engine, parse, project.layout, project.program, errors.
Provides: `program_for`, `may_import`, `parsing_once`, `library_only`, `plan_folder`, `prepare`, `original_reader`,
`module_names`.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from ..engine import analyze
from ..errors import UserError
from ..parse.source import Source
from .layout import (Layout, find_root, importers, main_block, package_parent, project_entries, project_files,
                     runs_code)
from .program import add_init, convert_program, is_project


def program_for(path: Path, read, bound: Path | None = None) -> tuple[Path, Path] | None:
    """(entry, root) of the program `path` belongs to: itself when it is a script that
    imports modules of its project, or one with a ``__main__`` block that another project
    file imports (its set-up then goes in that block), or a notebook that imports modules of
    its project (`read` gives its code cells as one program); for a module of definitions,
    the first entry of its project that imports it; None for a file that is a program alone.
    `bound`: the folder the root search stops at (`layout.find_root`; the language server's
    workspace folder)."""
    if path.suffix not in (".py", ".ipynb") or not path.is_file():
        return None
    root = find_root(path, bound=bound)
    read = parsing_once(read)
    try:
        if path.suffix == ".ipynb":
            return (path, root) if is_project(path, root, read) else None
        module = read.source(path, read(path)).module
        if main_block(module) is None and not runs_code(module):
            for folder in dict.fromkeys([package_parent(path), root]):
                files = may_import(path, project_files(folder), read)
                entries, _imported = project_entries(folder, files, read)
                for entry in entries:
                    if path.resolve() in Layout(folder, entry, read).program()[1:]:
                        return entry, folder
            return None
        if is_project(path, root, read) or (main_block(module) is not None and importers(root, path, read)):
            return path, root
        return None
    except UserError:
        return None


class parsing_once:
    """`read`, each text parsed once however many layouts read it (``read.source``, see
    layout's docstring); the trees of a reader that has them (the language server's) kept."""

    def __init__(self, read):
        self.read, self.trees = read, {}
        self._source = getattr(read, "source", None)

    def __call__(self, path: Path) -> str:
        return self.read(path)

    def source(self, path: Path, text: str) -> Source:
        key = Path(path).resolve()
        found = self.trees.get(key)
        if found is None or found.text != text:
            found = self.trees[key] = self._source(path, text) if self._source else Source(text)
        return found


RELATIVE = re.compile(r"^\s*from\s+\.", re.MULTILINE)


def may_import(target: Path, files: list[Path], read) -> list[Path]:
    """The files of `files` (in their order) that may import `target`, directly or through
    other files: each names, in its text, the module of a file of that chain (its name, or
    its package's for an ``__init__.py``), or, once a package's ``__init__.py`` is in the
    chain, imports relatively (``from . import x`` names no module). A text test, so that
    only these files are parsed: it keeps every file that can import `target` (an import
    names what it imports), and some that do not."""
    target = target.resolve()
    texts: dict[Path, str] = {}
    for f in files:
        try:
            texts[f.resolve()] = read(f)
        except (OSError, UnicodeDecodeError, UserError):
            continue
    chain, names, relative = {target}, set(), False
    todo = [target]
    while todo:
        for p in todo:
            names.add(p.parent.name if p.name == "__init__.py" else p.stem)
            relative = relative or p.name == "__init__.py"
        words = re.compile(r"\b(?:{})\b".format("|".join(re.escape(n) for n in sorted(names))))
        todo = [r for r, text in texts.items()
                if r not in chain and (words.search(text) or (relative and RELATIVE.search(text)))]
        chain.update(todo)
    return [f for f in files if f.resolve() in chain and f.resolve() in texts]


def library_only(path: Path, read) -> bool:
    """A module of definitions only (no ``__main__`` block, nothing run at top level) that
    trains: converting it alone would set Horovod up at its import."""
    try:
        source = Source(read(path))
    except UserError:
        return False
    module = source.module
    if main_block(module) is not None or runs_code(module):
        return False
    analysis = analyze(source.text, module=module)
    return bool(analysis.summary and analysis.summary.sites) and not (analysis.facts and analysis.facts.uses_horovod)


def plan_folder(folder: Path, files: list[Path], read) -> tuple[list[Path], dict[Path, Path], list[str]]:
    """(the files to convert, entry -> root of each program of several modules, what to tell
    the user): a module a program imports is converted with it, not on its own; a module
    that others import but no entry reaches is left out."""
    py = [f for f in files if f.suffix in (".py", ".ipynb")]
    try:
        entries, imported = project_entries(folder, py, read)
    except UserError:
        return files, {}, []
    programs, covered = {}, set()
    for e in entries:
        reach = Layout(folder, e, read).program()
        if len(reach) > 1 or e.resolve() in imported:     # (imported: its set-up goes in its __main__ block)
            programs[e] = folder
            covered.update(reach[1:])
    starts = {e.resolve() for e in entries}
    out, said = [], []
    for f in files:
        r = f.resolve()
        if r in covered and r not in starts:
            continue
        if f.suffix == ".py" and r in imported and r not in starts:
            said.append(f"{f}: a module that other modules import but no entry of {folder} reaches; not converted "
                        "on its own (it is converted with the script that uses it)")
            continue
        out.append(f)
    return out, programs, said


def original_reader(done: dict, read):
    """`read`, but a module as it was before any program of this run wrote it."""
    originals = done.setdefault("originals", {})

    def reader(path: Path) -> str:
        key = path.resolve()
        if key not in originals:
            originals[key] = read(path)
        return originals[key]
    return reader


def prepare(programs: dict[Path, Path], keras_target: str, done: dict, read, scale_lr: bool = True,
            require_local_fs: bool = False) -> dict:
    """The conversions of a folder's programs, before any is printed or written: a program
    that trains nothing itself but imports a module another program made call Horovod gets
    ``hvd.init()`` (Horovod's calls fail before it). {entry: conversion or UserError}."""
    out: dict = {}
    for entry, root in programs.items():
        try:
            out[entry] = convert_program(entry, original_reader(done, read), root, keras_target, scale_lr,
                                         require_local_fs)
        except UserError as e:
            out[entry] = e
    convs = [c for c in out.values() if not isinstance(c, UserError) and not c.refused]
    changed = {f.path: f.after for c in convs for f in c.files[1:] if f.changed}
    for c in convs:
        uses = {f.path: changed[f.path] for f in c.files[1:] if f.path in changed and not f.changed}
        if not uses or any(f.changed for f in c.files):
            continue
        text = add_init(c, uses, changed.get(c.entry))
        if text is not None and c.entry in changed:       # (the entry is another program's module too)
            for other in convs:
                for f in other.files:
                    if f.path == c.entry:
                        f.after = text
    return out


def module_names(entry: Path, root: Path, read) -> str:
    """The project modules `entry` imports, as the user names them."""
    return ", ".join(shown(p) for p in Layout(root, entry, read).program()[1:])


def shown(path: Path) -> str:
    """A file as the user names it: relative to the working directory when below it."""
    try:
        return str(Path(os.path.abspath(path)).relative_to(Path.cwd()))
    except ValueError:
        return str(path)
