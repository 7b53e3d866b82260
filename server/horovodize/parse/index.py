"""The index of a parse tree: one walk that files every call, with-item, assignment, import,
def, class, return and name of a module in source order, each with its *owner* (the
function, class body, lambda or module whose code it is).

The passes read the tree through this index only, so a lookup they make on every call is a
dictionary read. The language server builds it per top-level statement and merges the
pieces (`incremental.index_memo`); one walk over the module gives the same index.

Requires: parse.source, parse.nodes. Provides: `Index`, `build_index`, `OWNERS`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from . import nodes as N
from .source import MAX_DEPTH, TooDeep

# -- the index -----------------------------------------------------------------------------
OWNERS = ("funcdef", "classdef", "lambdef")


@dataclass
class Index:
    """Everything the passes read, collected by one walk, in source order."""

    calls: list = field(default_factory=list)          # (Call, owner)
    with_items: list = field(default_factory=list)     # (with_item, owner)
    assignments: list = field(default_factory=list)    # (expr_stmt, owner)
    imports: list = field(default_factory=list)
    funcdefs: list = field(default_factory=list)
    classdefs: list = field(default_factory=list)
    returns: dict = field(default_factory=dict)        # id(owner) -> [return_stmt]
    names: dict = field(default_factory=dict)          # value -> [name leaf]
    globals: list = field(default_factory=list)        # global_stmt / nonlocal_stmt
    owned_calls: dict = field(default_factory=dict)    # id(owner) -> [Call]
    owned_withs: dict = field(default_factory=dict)    # id(owner) -> [with_item]
    def_owner: dict = field(default_factory=dict)      # id(funcdef/classdef) -> owner it is defined in
    by_method: dict = field(default_factory=dict)      # method or callee name -> [Call]
    whole_calls: dict = field(default_factory=dict)    # id(atom_expr) -> its Call when it is one (`Env.as_call`)
    # The language server's index is merged from one piece per top-level statement
    # (index_memo); a piece lives as long as its statement is unchanged, and so does its
    # `memo` (facts the passes derive from the statement alone, keyed by id(node)).
    pieces: list = field(default_factory=list)
    memo: dict = field(default_factory=dict)
    version: int | None = None       # the memo's count of indexed versions (None: not from a memo)
    history: object = None           # the IndexMemo (`touched_since`)

    def touched_since(self, version: int):
        """The names defined by the statements that changed after `version` (a set),
        or None when that is not known (too long ago, or a wholesale change)."""
        return self.history.touched_since(version) if self.history is not None else None

    def unchanged_since(self, version, names) -> bool:
        """No statement changed after `version` defines one of `names` (False: unknown)."""
        if version is None:
            return False
        touched = self.touched_since(version)
        return touched is not None and touched.isdisjoint(names)

    def parts(self) -> list:
        """The pieces in source order (the index itself when it was not built by pieces)."""
        return self.pieces or [self]

    def kept(self, key: str, make) -> list:
        """`make(piece)` (a list: what a piece's statements alone decide) of every piece, in
        source order, each made once and kept in its piece's `memo` under `key`: a keystroke
        reads the pieces it did not change."""
        out = []
        for piece in self.parts():
            found = piece.memo.get(key)
            if found is None:
                found = piece.memo[key] = make(piece)
            out += found
        return out


def build_index(module, owner=None) -> Index:
    """One preorder walk (recursive: the tree is shallow, and a leaf costs no stack entry).
    A tree deeper than `MAX_DEPTH` raises `TooDeep` (later passes recurse too); a caller
    already deep in the stack falls back to the same walk with an explicit stack. `owner`
    (default: `module`) owns the top-level statements (`index_memo` walks one at a time)."""
    owner = module if owner is None else owner
    idx = Index()
    names = idx.names

    calls, by_method, owned_calls, whole_calls = idx.calls, idx.by_method, idx.owned_calls, idx.whole_calls

    def visit(node, owner, depth):
        if depth > MAX_DEPTH:
            raise TooDeep.at(node)            # the explicit bound (source.MAX_DEPTH)
        depth += 1
        for child in node.children:
            t = child.type
            if t == "name":
                found = names.get(child.value)
                if found is None:
                    names[child.value] = [child]
                else:
                    found.append(child)
            elif t in _LEAVES:
                continue
            elif t == "atom_expr" or t == "power":    # `_record`'s calls, inlined (most recorded nodes)
                children = child.children
                last = None
                for i in range(1, len(children)):
                    trailer = children[i]
                    if trailer.type != "trailer":
                        continue
                    first = trailer.children[0]
                    if first.type != "operator" or first.value != "(":
                        continue
                    last = call = N.Call(child, i)
                    before = children[i - 1]          # `Call.method`, filled in (a cached property)
                    if before.type == "trailer" and before.children[0].type == "operator" \
                            and before.children[0].value == ".":
                        method = call.__dict__["method"] = before.children[1].value
                    else:
                        method = call.__dict__["method"] = None
                    calls.append((call, owner))
                    key = method or call.callee_dotted()
                    found = by_method.get(key)
                    if found is None:
                        by_method[key] = [call]
                    else:
                        found.append(call)
                    found = owned_calls.get(id(owner))
                    if found is None:
                        owned_calls[id(owner)] = [call]
                    else:
                        found.append(call)
                if last is not None and last.index == len(children) - 1 and children[0] != "await":
                    whole_calls[id(child)] = last         # (`N.as_call`)
                visit(child, owner, depth)
            elif t in _RECORDED:
                visit(child, _record(idx, child, owner), depth)
            else:                                   # (every leaf type is above: an inner node)
                visit(child, owner, depth)

    try:
        visit(module, owner, 0)  # a parso Module (file_input): nothing to record for the root
    except RecursionError:
        idx = Index()
        stack = [(child, owner) for child in reversed(module.children)]
        while stack:
            node, owner = stack.pop()
            if node.type == "name":
                idx.names.setdefault(node.value, []).append(node)
            elif hasattr(node, "children"):
                inner = _record(idx, node, owner)
                stack.extend((child, inner) for child in reversed(node.children))
    finally:
        visit = None              # (a recursive closure is a reference cycle: leave no garbage for the gc)
    return idx


# The node types `_record` files (the walk skips the call for the others) and parso's leaf types.
_RECORDED = frozenset({"atom_expr", "power", "funcdef", "classdef", "lambdef", "with_item", "expr_stmt",
                       "import_name", "import_from", "return_stmt", "global_stmt", "nonlocal_stmt"})


_LEAVES = frozenset({"operator", "keyword", "number", "string", "newline", "endmarker", "error_leaf",
                     "fstring_start", "fstring_string", "fstring_end"})


def _record(idx: Index, node, owner):
    """File `node` (an inner node) in the index; returns the owner of its children."""
    t = node.type
    if t == "atom_expr" or t == "power":
        children = node.children
        for i in range(1, len(children)):
            if N.is_call_trailer(children[i]):
                call = N.Call(node, i)
                idx.calls.append((call, owner))
                idx.by_method.setdefault(call.method or call.callee_dotted(), []).append(call)
                idx.owned_calls.setdefault(id(owner), []).append(call)
        if idx.calls and idx.calls[-1][0].node is node and N.as_call(node) is not None:
            idx.whole_calls[id(node)] = idx.calls[-1][0]
    elif t in OWNERS:
        idx.def_owner[id(node)] = owner
        if t == "funcdef":
            idx.funcdefs.append(node)
        elif t == "classdef":
            idx.classdefs.append(node)
        return node
    elif t == "with_item":
        idx.with_items.append((node, owner))
        idx.owned_withs.setdefault(id(owner), []).append(node)
    elif t == "expr_stmt":
        idx.assignments.append((node, owner))
    elif t == "import_name" or t == "import_from":
        idx.imports.append(node)
    elif t == "return_stmt":
        idx.returns.setdefault(id(owner), []).append(node)
    elif t == "global_stmt" or t == "nonlocal_stmt":
        idx.globals.append(node)
    return owner
