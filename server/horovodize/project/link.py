"""One program text of an entry and the project modules it imports, and the way back.

The unchanged engine analyses one text. `link` writes the program as Python runs it: the
entry's top block (its imports before the first project import: where the set-up goes, so
it runs before any project module is imported), then each project module the entry reaches,
dependencies first (a library module's ``__main__`` block left out: importing it does not
run it), then the rest of the entry. The project imports themselves are replaced by what
they bind (``from model import build as b`` → ``b = build``), and a module read through its
name (``nets.build()``) is read as the name its module defines (``build()``): the engine then
follows a model, optimizer, dataset or step across modules as it does across functions.

Every piece of the linked text remembers where it came from, so an edit of the engine maps
back to one file (`Link.file_edits`) and a linked line to (file, line) (`Link.locate_line`).
The pieces written here (the replaced imports, the separators) are *virtual*: an edit inside
one cannot be mapped and refuses the conversion.

Requires: parse (Source, Edit, line_table), project.layout, errors. Provides: `Link`, `link`.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from ..errors import UserError
from ..parse.source import Edit, line_table
from .layout import Binding, Layout, Module, main_block, top_imports


@dataclass(frozen=True)
class Piece:
    lstart: int                # offsets in the linked text
    lend: int
    path: Path | None          # the file the text comes from (None: a separator)
    fstart: int                # offsets in that file: what the piece stands for
    fend: int
    virtual: bool              # written by the linker (stands for fstart:fend), not copied


class Link:
    def __init__(self, entry: Path, modules: dict[Path, Module], order: list[Path]):
        self.entry, self.modules, self.order = entry, modules, order
        self.parts: list[str] = []
        self.pieces: list[Piece] = []
        self.collisions: list = []          # (name, [(file, line)]) defined in two modules
        self.split = 0                      # offset in the entry where its top block ends (the set-up's place)
        self._at = 0
        self._tables: dict[Path, list[int]] = {}     # each file's line table, made when first asked

    # -- building -------------------------------------------------------------------------
    def _add(self, text: str, path: Path | None, fstart: int, fend: int, virtual: bool) -> None:
        if not text and not virtual:
            return
        self.pieces.append(Piece(self._at, self._at + len(text), path, fstart, fend, virtual))
        self.parts.append(text)
        self._at += len(text)

    def _copy(self, m: Module, start: int, end: int, replaced: list[tuple[int, int, str]]) -> None:
        """m.text[start:end] with the virtual replacements inside it."""
        at = start
        for s, e, new in replaced:
            if s < start or e > end:
                continue
            self._add(m.text[at:s], m.path, at, s, False)
            self._add(new, m.path, s, e, True)
            at = e
        self._add(m.text[at:end], m.path, at, end, False)
        if not m.text[start:end].endswith(("\n", "\r")) and end > start:
            self._add("\n", None, end, end, True)

    def finish(self) -> None:
        self.text = "".join(self.parts)
        self._starts = [p.lstart for p in self.pieces]

    @cached_property
    def line_starts(self) -> list[int]:
        """The linked text's line table (made when first asked: the language server relinks
        a program per edit and parses the text with the table it makes itself)."""
        return line_table(self.text)

    def _file_lines(self, path: Path) -> list[int]:
        table = self._tables.get(path)
        if table is None:
            table = self._tables[path] = line_table(self.modules[path].text)
        return table

    def library_spans(self) -> tuple:
        """(start, end) of the linked text that the entry's modules (not the entry) fill."""
        return tuple((p.lstart, p.lend) for p in self.pieces if p.path is not None and p.path != self.entry)

    # -- the way back ------------------------------------------------------------------------
    def _around(self, offset: int) -> list[Piece]:
        i = max(bisect.bisect_right(self._starts, offset) - 1, 0)
        while i > 0 and self.pieces[i - 1].lend >= offset:
            i -= 1
        out = []
        while i < len(self.pieces) and self.pieces[i].lstart <= offset:
            if offset <= self.pieces[i].lend:
                out.append(self.pieces[i])
            i += 1
        return out

    def locate(self, offset: int) -> tuple[Path | None, int]:
        """(file, offset in it) of a point of the linked text. A point between two copied
        pieces of one file (a module name read away between them) is the left one's end; a
        point at the edge of a written piece is where that piece stands in its file."""
        around = self._around(offset)
        copied = [p for p in around if not p.virtual]
        if copied:
            inner = [p for p in copied if p.lstart < offset < p.lend] or copied
            p = inner[0]
            return p.path, p.fstart + offset - p.lstart
        written = [p for p in around if p.path is not None]
        if written:
            p = written[0]
            return p.path, p.fstart if offset == p.lstart else p.fend
        return None, 0

    def locate_line(self, line: int) -> tuple[Path | None, int]:
        """1-based linked line → (file, 1-based line in that file)."""
        starts = self.line_starts
        offset = starts[min(max(line - 1, 0), len(starts) - 1)]
        path, fo = self.locate(offset)
        if path is None:
            nxt = next((p for p in self.pieces if p.lstart >= offset and p.path is not None), None)
            if nxt is None:
                return None, line
            path, fo = nxt.path, nxt.fstart
        return path, bisect.bisect_right(self._file_lines(path), fo)

    def file_edits(self, edits: list[Edit]) -> dict[Path, list[Edit]]:
        """Each edit of the linked text as an edit of its file; raises UserError for an edit
        that touches text the linker wrote (a replaced project import, a separator)."""
        out: dict[Path, list[Edit]] = {}
        for e in edits:
            path, start, end, new = self._edit(e)
            out.setdefault(path, []).append(Edit(start, end, new))
        return out

    def _edit(self, e: Edit) -> tuple[Path, int, int, str]:
        if e.start == e.end:
            around = self._around(e.start)
            inner = [p for p in around if p.virtual and p.lstart < e.start < p.lend and p.path is not None]
            if inner and not any(not p.virtual for p in around):
                p = inner[0]                        # inside a written piece: only at the end of its line
                if self.text[e.start:p.lend].strip():
                    raise self._unmappable(e)
                text = e.new_text
                if text.startswith("\n") and not text.endswith("\n"):
                    text = text[1:] + "\n"         # (after a statement → a line of its own)
                return p.path, p.fend, p.fend, text
            path, off = self.locate(e.start)
            if path is None:
                raise self._unmappable(e)
            return path, off, off, e.new_text
        firsts = [p for p in self._around(e.start) if p.lstart <= e.start < p.lend]
        lasts = [p for p in self._around(e.end) if p.lstart < e.end <= p.lend]
        if not firsts or not lasts:
            raise self._unmappable(e)
        a, b = firsts[-1], lasts[0]
        if a is b and not a.virtual:
            start, end = a.fstart + e.start - a.lstart, a.fstart + e.end - a.lstart
            read_away = self._read_away(a) if e.start == a.lstart else None
            if read_away is None:
                return a.path, start, end, e.new_text
            # a name whose module was read away before it (``config.EPOCHS`` linked as
            # ``EPOCHS``): the replacement takes the module's name with it
            linked, original = self.text[e.start:e.end], self.modules[a.path].text[read_away.fstart:end]
            if linked not in e.new_text:
                raise self._unmappable(e)
            return a.path, read_away.fstart, end, e.new_text.replace(linked, original, 1)
        inside = [p for p in self.pieces if p.lstart < e.end and p.lend > e.start]
        if a.path is None or any(p.path != a.path for p in inside) \
                or (a.virtual and e.start > a.lstart) or (b.virtual and e.end < b.lend):
            raise self._unmappable(e)
        path = a.path
        start = a.fstart if a.virtual else a.fstart + e.start - a.lstart
        end = b.fend if b.virtual else b.fstart + e.end - b.lstart
        linked, original = self.text[e.start:e.end], self.modules[path].text[start:end]
        if linked not in e.new_text:
            raise self._unmappable(e)
        return path, start, end, e.new_text.replace(linked, original, 1)

    def _read_away(self, p: Piece) -> Piece | None:
        """The empty written piece just before copied piece `p` that stands for a module's
        name read away in its file (``config.`` of ``config.EPOCHS``), or None."""
        i = self.pieces.index(p)
        before = self.pieces[i - 1] if i else None
        if before is not None and before.virtual and before.lstart == before.lend and before.path == p.path \
                and before.fend == p.fstart and before.fstart < before.fend:
            return before
        return None

    def _unmappable(self, e: Edit) -> UserError:
        path, line = self.locate_line(self.text.count("\n", 0, e.start) + 1)
        where = f"{path}:{line}" if path is not None else "the linked program"
        return UserError(f"{where}: an edit of the conversion falls on a project import the program's "
                         "link rewrote; convert that file on its own or report this case")


def link(layout: Layout) -> Link:
    """The linked program of `layout`'s entry (see the module docstring)."""
    entry = layout.module(layout.entry)
    order = _dependencies_first(layout)
    lk = Link(layout.entry, {p: layout.module(p) for p in order + [layout.entry]}, order)
    replaced = {p: _replacements(layout.module(p), is_entry=p == layout.entry) for p in lk.modules}
    split = lk.split = _header_end(entry)
    lk._copy(entry, 0, split, replaced[layout.entry])
    if not any(full.split(".")[0] == "tensorflow" for _local, full, _code in top_imports(entry.source, split)):
        # the modules import TensorFlow, the entry does not: the set-up (which the engine puts
        # after the program's TensorFlow import) still goes in the entry, which imports it
        lk._add(f"import tensorflow as {TF_ALIAS}\n", layout.entry, split, split, True)
    lk._add("pass\n", None, split, split, True)       # (ends the entry's top block: the set-up goes above)
    for p in order:
        m = layout.module(p)
        lk._add("\n", None, 0, 0, True)
        lk._copy(m, 0, len(m.text), replaced[p])
    lk._add("\n", None, split, split, True)
    lk._copy(entry, split, len(entry.text), replaced[layout.entry])
    lk.finish()
    lk.collisions = _collisions(lk)
    return lk


def _collisions(lk: Link) -> list[tuple[str, list[tuple[Path, int]]]]:
    """Top-level functions and classes that two modules of the program define under one
    name: in the one text, the last definition hides the others (a known limit of the link)."""
    where: dict[str, list[tuple[Path, int]]] = {}
    for path in lk.order + [lk.entry]:
        for node in lk.modules[path].source.module.children:
            if node.type == "decorated":
                node = node.children[-1]
            if node.type in ("funcdef", "classdef"):
                where.setdefault(node.name.value, []).append((path, node.start_pos[0]))
    return [(name, places) for name, places in where.items() if len({p for p, _ in places}) > 1]


TF_ALIAS = "tf"


def _dependencies_first(layout: Layout) -> list[Path]:
    """The project modules the entry reaches, each after the modules it imports (the entry
    itself left out; an import cycle is broken where it closes)."""
    done: list[Path] = []
    seen: set[Path] = {layout.entry}

    def visit(path: Path) -> None:
        for dep in layout.module(path).deps:
            if dep not in seen:
                seen.add(dep)
                visit(dep)
                done.append(dep)

    visit(layout.entry)
    return done


def _header_end(m: Module) -> int:
    """Offset where the entry's top block ends: the start of the first top-level statement
    that holds a project import (the project modules are read from there on)."""
    src = m.source
    for stmt in src.module.children:
        if stmt.type != "endmarker" and _holds(stmt, m):
            return src.line_start(src.offset(stmt.start_pos))
    return len(m.text)


def _holds(stmt, m: Module) -> bool:
    return any(stmt.start_pos <= imp.node.start_pos and imp.node.end_pos <= stmt.end_pos for imp in m.imports)


def _replacements(m: Module, is_entry: bool) -> list[tuple[int, int, str]]:
    """(start, end, new text) in `m`: each project import by what it binds, each read of a
    project module's name by the name itself, a library's ``__main__`` block by nothing."""
    src = m.source
    out: list[tuple[int, int, str]] = []
    prefixes: dict[str, list[str]] = {}
    for imp in m.imports:
        start, end = src.span(imp.node)
        kept = _kept_text(imp)
        binds = [f"{b.local} = {b.name}" for b in imp.bindings if b.name is not None and b.local != b.name]
        out.append((start, end, "; ".join(([kept] if kept else []) + binds) or "pass"))
        for b in imp.bindings:
            if b.name is None:
                prefixes.setdefault(b.prefix.split(".")[0], []).append(b.prefix)
    if prefixes:
        out += _prefix_reads(m, prefixes)
    if not is_entry:
        block = main_block(src.module)
        if block is not None:
            start, end = src.line_start(src.offset(block.start_pos)), src.offset(block.end_pos)
            out = [r for r in out if not (start <= r[0] < end)] + [(start, end, "")]   # (its reads go with it)
    out.sort()
    return out


def _kept_text(imp) -> str:
    """The part of a mixed import (``import os, model``) that names no project module."""
    from ..parse.imports import dotted_name, from_module_text, from_names, import_names

    node = imp.node
    locals_ = {b.local for b in imp.bindings}
    if node.type == "import_name":
        kept = [(dotted_name(d), a) for d, a in import_names(node)
                if (a or dotted_name(d).split(".")[0]) not in locals_]
        return "import " + ", ".join(f"{d} as {a}" if a else d for d, a in kept) if kept else ""
    if imp.star is not None:
        return ""
    kept = [(n, a) for n, a in from_names(node) if (a or n) not in locals_]
    return f"from {from_module_text(node)} import " + ", ".join(f"{n} as {a}" if a else n for n, a in kept) if kept else ""


def _prefix_reads(m: Module, prefixes: dict[str, list[str]]) -> list[tuple[int, int, str]]:
    """The spans of ``nets.`` in ``nets.build(...)`` (``trainer.loop.`` in ``trainer.loop.run``)."""
    src = m.source
    out = []
    imports = [src.span(imp.node) for imp in m.imports]
    for leaf in _names(src.module, set(prefixes)):
        start = src.offset(leaf.start_pos)
        if any(s <= start < e for s, e in imports):
            continue
        text = src.text[start:start + 200]
        for prefix in sorted(prefixes[leaf.value], key=len, reverse=True):
            squeezed = _match_prefix(text, prefix)
            if squeezed:
                out.append((start, start + squeezed, ""))
                break
    return out


def _match_prefix(text: str, prefix: str) -> int:
    """Length of `prefix` (``a.b.``) at the start of `text`, spaces around dots allowed, and
    followed by a name; 0 when it does not match."""
    i = 0
    for part in prefix.rstrip(".").split("."):
        if not text.startswith(part, i):
            return 0
        i += len(part)
        while i < len(text) and text[i] in " \t":
            i += 1
        if i >= len(text) or text[i] != ".":
            return 0
        i += 1
        while i < len(text) and text[i] in " \t":
            i += 1
    return i if i < len(text) and (text[i].isalpha() or text[i] == "_") else 0


def _names(module, wanted: set[str]):
    stack = [module]
    while stack:
        node = stack.pop()
        children = getattr(node, "children", None)
        if children is None:
            if node.type == "name" and node.value in wanted:
                prev = node.get_previous_leaf()
                if prev is None or prev.value != ".":
                    yield node
            continue
        stack.extend(reversed(children))


__all__ = ["Binding", "Link", "Piece", "link"]
