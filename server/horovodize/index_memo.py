"""The env index walk, reused per top-level statement across the versions of one buffer.

After a keystroke parso's diff parser keeps every top-level statement the edit did not
touch as the same node objects (it only shifts their positions), so their part of the
index (`env.Index`: calls, assignments, names, ...) is the same list of the same nodes.
`IndexMemo` keeps each top-level statement's piece of the index and walks again only the
statements that are new; the pieces are concatenated in source order, which gives
exactly the index one walk over the whole module gives (lists in preorder, dict keys in
order of first occurrence). The index holds nodes, never positions, so a piece stays
right when the statement moves.

A piece is valid while its statement is the same object with the same children, and so
is every compound statement and suite inside it: when an edit falls inside a function,
the diff parser keeps the ``def`` node (and the statements it can copy) but gives the
suite a new children list, and that function's piece is walked again. (The diff parser
only ever re-creates the suites of functions and classes inside a kept node; checking
every compound statement is cheap and does not depend on that.) The equivalence is a
property test (tests/test_incremental.py). One memo per buffer: the language server keeps
it next to the buffer's incremental parser.
"""

from __future__ import annotations

from .env import Index, build_index

# statement-level nodes: the only ones whose children the diff parser replaces in a kept tree
_COMPOUND = frozenset({
    "suite", "funcdef", "classdef", "decorated", "async_funcdef", "async_stmt", "if_stmt",
    "for_stmt", "while_stmt", "try_stmt", "with_stmt", "match_stmt", "case_block", "error_node",
})
_LISTS = ("calls", "with_items", "assignments", "imports", "funcdefs", "classdefs", "globals")
_DICTS = ("returns", "names", "owned_calls", "owned_withs", "by_method")


def _shape(node, out: list) -> list:
    """The children (as tuples of node objects) of `node` and of its compound statements."""
    children = node.children
    out.append(tuple(children))
    for child in children:
        if child.type in _COMPOUND:
            _shape(child, out)
    return out


class _Root:
    """One statement as the only child of a walk (so the walk files it under the module)."""

    __slots__ = ("children",)

    def __init__(self, node):
        self.children = [node]


class IndexMemo:
    def __init__(self):
        self._pieces: dict[int, tuple] = {}     # id(statement) -> (statement, shape, Index)
        self.walked = 0                          # statements walked by the last `index` (for tests)

    def index(self, module) -> Index:
        """`env.build_index(module)`, walking only the statements not seen unchanged before."""
        try:
            return self._index(module)
        except RecursionError:                  # pathological nesting: the plain walk decides
            self._pieces = {}
            return build_index(module)

    def _index(self, module) -> Index:
        idx = Index()
        pieces: dict[int, tuple] = {}
        self.walked = 0
        for child in module.children:
            if not hasattr(child, "children"):
                if child.type == "name":             # (error recovery can leave a bare name)
                    idx.names.setdefault(child.value, []).append(child)
                continue
            shape = _shape(child, [])
            old = self._pieces.get(id(child))
            if old is not None and old[0] is child and old[1] == shape:
                piece = old[2]
            else:
                piece = build_index(_Root(child), owner=module)
                self.walked += 1
            pieces[id(child)] = (child, shape, piece)
            _merge(idx, piece)
        self._pieces = pieces
        return idx


def _merge(idx: Index, piece: Index) -> None:
    for name in _LISTS:
        getattr(idx, name).extend(getattr(piece, name))
    for name in _DICTS:
        target = getattr(idx, name)
        for key, values in getattr(piece, name).items():
            found = target.get(key)
            if found is None:
                target[key] = list(values)
            else:
                found.extend(values)
    idx.def_owner.update(piece.def_owner)
