"""The set-up of a script that another module of its project imports, placed at the head of
its ``if __name__ == "__main__":`` block (contract points 1 and 12).

A script with a ``__main__`` block is a program when started (``python train.py``) and a
module when another script imports it (``from train import get_model`` in evaluate.py).
At its top, its set-up would run at that import, inside the other program. Started, the
script runs its top level, then the block: the set-up at the head of the block still runs
before any Horovod call, where every worker runs it (point 1), and the import runs none of
it (point 12). The set-up's imports (``import horovod.tensorflow as hvd``) stay at the top:
the functions the other program calls name them. The module-level state the conversion adds
beside the set-up (``hvd_broadcast_done``) moves with it: made before the GPU pinning, a
variable would start TensorFlow's runtime, and the pinning would fail.

That holds only when nothing runs before the block: the script's top level holds only
definitions, imports and constants (no call), and so do the project modules it imports
(`blocked_by` of each). Otherwise the set-up stays at the top, and `place` says why.

Requires: parse (Source, Edit), project.layout (main_block, first_code). Provides: `place`,
`blocked_by`.
"""

from __future__ import annotations

import re

from ..parse.source import Edit, Source
from .layout import first_code, main_block

IMPORT_LINE = re.compile(r"(?:import|from)\s")
STATE_LINE = re.compile(r"hvd_\w+ = ")


def blocked_by(source: Source, name: str, own: bool = False) -> str | None:
    """Why a set-up in the ``__main__`` block would come too late for this module (`name`,
    as the report names it): the first statement of its top level that runs code, or None.
    `own`: the script itself (its ``__main__`` block left out)."""
    module = source.module
    stmt = first_code(module, main_block(module))
    if stmt is None:
        return None
    line = stmt.start_pos[0]
    where = "its top level" if own else f"{name}, which it imports,"
    return f"{where} runs code before the `__main__` block ({name} line {line})"


def place(source: Source, edits: list[Edit], setup: list[Edit], name: str) -> tuple[list[Edit], list[Edit], str | None]:
    """(`edits`, `setup`) with the set-up's statements (and the state beside it) moved to
    the head of the script's ``__main__`` block, and None; or both unchanged and why not
    (`name`: the script as the report names it)."""
    block = main_block(source.module)
    if block is None:
        return edits, setup, "it has no `__main__` block"
    why = blocked_by(source, name, own=True)
    if why is not None:
        return edits, setup, why
    suite = block.children[-1]
    if suite.type != "suite":
        return edits, setup, f"its `__main__` block is one line ({name} line {block.start_pos[0]})"
    at = source.offset(suite.children[0].end_pos)              # after the line break of the `if` line
    indent = source.indent_of(suite.children[1])
    body: list[str] = []
    state: list[str] = []
    kept: list[Edit] = []
    new_setup: list[Edit] = []
    for e in edits:
        if e.start != e.end or not (e in setup or _state_only(e.new_text)) or _inside(block, source, e.start):
            kept.append(e)
            continue
        lines = e.new_text.splitlines(keepends=True)
        n = 0
        while n < len(lines) and IMPORT_LINE.match(lines[n]):
            n += 1                                               # (the set-up's imports stay where they are)
        (body if e in setup else state).extend(lines[n:])
        if n:
            stay = Edit(e.start, e.end, "".join(lines[:n]))
            kept.append(stay)
            if e in setup:
                new_setup.append(stay)
    body += state
    if not body:
        return edits, setup, "its set-up has nothing to move"
    nl = source.newline
    moved = Edit(at, at, "".join(indent + line.rstrip("\r\n") + nl if line.strip() else nl for line in body))
    return [moved] + kept, new_setup + [moved], None


def _inside(block, source: Source, offset: int) -> bool:
    """Is `offset` inside a top-level definition or the block (not at the top level)?"""
    for stmt in block.parent.children:
        if stmt is block or stmt.type in ("funcdef", "classdef", "decorated"):
            start, end = source.span(stmt)
            if start < offset < end:
                return True
    return False


def _state_only(text: str) -> bool:
    lines = [line for line in text.splitlines() if line.strip()]
    return bool(lines) and all(STATE_LINE.match(line) for line in lines)
