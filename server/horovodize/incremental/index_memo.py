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
suite a new children list, and that function's piece is walked again. (Every compound
statement is checked: fuzzing showed the diff parser also changes kept statements some
lines away from the edit, so no "changed lines" range is trusted.) A tree made by
`splice_parse` leaves every kept statement untouched (`untouched`): no check then.

Merging is incremental too: the lists are concatenated, a dict key that no changed piece
has keeps its merged list, and a changed key is concatenated when first read (`_Merged`).
Each version records the names its changed statements define for the rest of the file
(`defined_names`; `touched_since`), which is what `keep.py` checks its kept answers
against. The equivalence with one walk is a property test (tests/test_incremental_parts.py,
tests/test_incremental.py). One memo per buffer: the language server keeps it next to the
buffer's incremental parser.
"""

from __future__ import annotations

from itertools import chain
from operator import attrgetter, is_

from ..parse import nodes as N
from ..parse.imports import import_bindings
from ..parse.index import Index, build_index

# statement-level nodes: the only ones whose children the diff parser replaces in a kept tree
_COMPOUND = frozenset({
    "suite", "funcdef", "classdef", "decorated", "async_funcdef", "async_stmt", "if_stmt",
    "for_stmt", "while_stmt", "try_stmt", "with_stmt", "match_stmt", "case_block", "error_node",
})
_LISTS = ("calls", "with_items", "assignments", "imports", "funcdefs", "classdefs", "globals")
_DICTS = ("returns", "names", "owned_calls", "owned_withs", "by_method")
_UNIQUE = ("def_owner", "whole_calls")       # dicts whose keys (node ids) belong to one piece
HISTORY = 64                                # versions whose changed names are remembered
_NOTHING: frozenset = frozenset()
_UNSET = object()


def _shape(node, out: list) -> list:
    """(node, its children as a tuple) for `node` and each compound statement in it."""
    children = node.children
    out.append((node, tuple(children)))
    for child in children:
        if child.type in _COMPOUND:
            _shape(child, out)
    return out


def _unchanged(shape: list) -> bool:
    """Every node of the shape still has the same children: then so has every compound
    statement below them (a new one would be a new child of one of them)."""
    for node, children in shape:
        if tuple(node.children) != children:
            return False
    return True


class _Root:
    """One statement as the only child of a walk (so the walk files it under the module)."""

    __slots__ = ("children",)

    def __init__(self, node):
        self.children = [node]


# What a piece keeps under the names and roles generations (memo keys, and the first item
# of tuple keys: ("role", id(stmt)), ("run", pass)), and the passes whose run joins do.
_BY_GENERATION = frozenset({"local_calls", "targets", "functions", "bindings", "role", "roles", "run"})
_RUNS_BY_GENERATION = ("bindings", "targets", "functions")


class IndexMemo:
    def __init__(self):
        self._pieces: dict[int, tuple] = {}     # id(statement) -> (statement, shape, Index)
        self._merged: Index | None = None        # the index of the previous version
        self._stmts: list | None = None          # its statements (the module's children with a piece)
        self._count: dict[str, dict] = {}        # dict field -> key -> pieces that have it
        self.version = 0                         # indexed versions so far
        self._history: list[tuple] = []          # (version, names its changed statements define, or None)
        self._since: dict[int, set | None] = {}  # touched_since answers for the current version
        self.walked = 0                          # statements walked by the last `index` (for tests)
        self._added: list[Index] = []            # the pieces new in this version
        self._removed: list[Index] | None = None  # ... and gone (None: not known, a whole index)
        self.calls_by_qualname: tuple | None = None  # keep.calls_by_qualname of the last version
        self.named: dict[str, tuple] = {}        # `by_name`: kind -> (version, name -> answer)
        # keep.generation: kind -> (version, tables, object), and (kind, tables) -> object
        self.generations: dict[str, tuple] = {}
        self.by_table: dict[tuple, object] = {}
        self._forgot: tuple = (None, frozenset())  # (version, names `forget` was done for)
        # runs.Kept: pass -> id(first piece of a run) -> the run's join (kept one version)
        self.runs: dict[str, dict] = {}
        # set by the parser that made the next tree when it left every statement it kept
        # untouched (`splice_parse`): their shapes need no check; one `index` call only
        self.untouched = False

    def index(self, module) -> Index:
        """`env.build_index(module)`, walking only the statements not seen unchanged before."""
        try:
            return self._index(module)
        except RecursionError:                  # pathological nesting: the plain walk decides
            self._pieces, self._merged, self._count, self._stmts = {}, None, {}, None
            self._next_version(None)
            self._removed = None
            return build_index(module)

    def _index(self, module) -> Index:
        untouched, self.untouched = self.untouched, False
        stmts = [child for child in module.children if child.type == "name" or hasattr(child, "children")]
        if untouched and self._merged is not None and self._stmts is not None:
            return self._spliced(module, stmts)
        pieces: dict[int, tuple] = {}
        order: list[Index] = []
        added: list[Index] = []
        self.walked = 0
        for child in stmts:
            entry = self._pieces.get(id(child))
            if entry is None or entry[0] is not child or not (untouched or _unchanged(entry[1])):
                entry = self._entry(child, module)
                added.append(entry[2])
            pieces[id(child)] = entry
            order.append(entry[2])
        kept = {id(p[2]) for p in pieces.values()}
        removed = [p[2] for key, p in self._pieces.items() if id(p[2]) not in kept]
        return self._finish(pieces, order, added, removed, stmts)

    def _spliced(self, module, stmts: list) -> Index:
        """`_index` after a parse that replaced some statements and left the others the
        same objects, untouched (`splice_parse`): only the statements between the common
        first and last ones are looked at (1-2 instead of ~1,150 at 10,000 lines)."""
        old = self._stmts
        p, s = _common_ends(old, stmts)
        n, m = len(old), len(stmts)
        pieces = dict(self._pieces)
        middle, added = [], []
        self.walked = 0
        for child in old[p:n - s]:
            del pieces[id(child)]
        for child in stmts[p:m - s]:
            entry = self._pieces.get(id(child))
            if entry is None or entry[0] is not child:
                entry = self._entry(child, module)
                added.append(entry[2])
            pieces[id(child)] = entry
            middle.append(entry[2])
        before = self._merged.pieces
        order = before[:p] + middle + before[n - s:]
        kept = {id(piece) for piece in middle}
        removed = [self._pieces[id(child)][2] for child in old[p:n - s]
                   if id(self._pieces[id(child)][2]) not in kept]
        return self._finish(pieces, order, added, removed, stmts)

    def _entry(self, child, module) -> tuple:
        """(statement, shape, piece) of a statement not indexed before."""
        if not hasattr(child, "children"):      # (error recovery can leave a bare name)
            piece = Index()
            piece.names[child.value] = [child]
            return child, [], piece
        self.walked += 1
        return child, _shape(child, []), build_index(_Root(child), owner=module)

    def _finish(self, pieces: dict, order: list, added: list, removed: list, stmts: list) -> Index:
        if self._merged is None or len(added) + len(removed) > len(order) // 2:
            idx = _merge_all(order)
            self._count = {}
            touched = None
        else:
            idx = self._merge_changes(order, added, removed)
            touched = set()
            for piece in removed + added:
                touched |= defined_names(piece)
        self._next_version(touched)
        self._added, self._removed = added, (removed if touched is not None else None)
        idx.pieces, idx.version, idx.history = order, self.version, self
        self._pieces, self._merged, self._stmts = pieces, idx, stmts
        return idx

    def _next_version(self, touched: set | None) -> None:
        """A new version whose changed statements define `touched` (None: not known)."""
        self.version += 1
        self._history.append((self.version, touched))
        del self._history[:-HISTORY]
        self._since = {}

    def by_name(self, kind: str, keys_of) -> dict:
        """A table name -> answer, read from the pieces that hold the name, that outlives a
        version: the names `keys_of(piece)` gives for the pieces this version added or removed
        are dropped, the others kept (their pieces are the same objects, in the same order).
        Empty after a wholesale change or a version it did not see."""
        version, table = self.named.get(kind, (None, None))
        if version == self.version:
            return table
        if table is not None and version == self.version - 1 and self._removed is not None:
            for piece in (*self._added, *self._removed):
                for name in keys_of(piece):
                    table.pop(name, None)
        else:
            table = {}
        self.named[kind] = (self.version, table)
        return table

    def count_keys(self) -> None:
        """Count now which pieces hold each key (`_merge_changes` needs the counts from
        its first version on; idle time is the place for that ~14 ms at 10,000 lines)."""
        if self._merged is not None:
            for name in _DICTS:
                if name not in self._count:
                    self._count[name] = _count(self._merged.pieces, name)

    def note(self, names: set) -> None:
        """Names whose bindings changed this version without their statements changing (a
        role found again differently): what was computed from them is not reused either."""
        touched = self._history[-1][1] if self._history else None
        if touched is not None and names:
            touched |= names
            self._since = {}

    def forget(self, names) -> bool:
        """The kept pieces that mention one of `names` (as any name) forget what they kept
        under the names and roles generations, and the runs that hold them their joins:
        then those generations can be carried over a change of these names
        (`keep.generation`), and only these pieces are analysed again. Every answer kept
        under them reads the tables by names its own statement mentions (a callee's or a
        chain's root), or records the names it read (`keep.reading`). False when that is not
        known to be enough: a dotted name, or no history for this version."""
        if not self._history or self._history[-1][1] is None or self._merged is None \
                or any("." in name for name in names):
            return False
        version, done = self._forgot
        if version == self.version and names <= done:
            return True
        added = set(map(id, self._added))
        hit = set()
        for piece in self._merged.pieces:
            if id(piece) in added or not any(name in piece.names for name in names):
                continue
            hit.add(id(piece))
            memo = piece.memo
            for key in [k for k in memo if k in _BY_GENERATION or (type(k) is tuple and k[0] in _BY_GENERATION)]:
                del memo[key]
        for kind in _RUNS_BY_GENERATION:
            joins = self.runs.get(kind, {})
            for first in [f for f, join in joins.items() if any(id(p) in hit for p in join.pieces)]:
                del joins[first]
        self._forgot = (self.version, (done if version == self.version else frozenset()) | frozenset(names))
        return True

    def only_in_changed(self, names) -> bool:
        """Each of `names` is written (as a name) only in statements new in this version,
        so no statement kept from the previous one can have read what it stands for."""
        count = self._count.get("names")
        if count is None or not self._history or self._history[-1][1] is None:
            return False
        for name in names:
            if "." in name or count.get(name, 0) != sum(name in piece.names for piece in self._added):
                return False
        return True

    def touched_since(self, version: int) -> set | None:
        """The names defined by the statements that changed in the versions after
        `version` (None: unknown, so nothing computed then can be trusted)."""
        if version == self.version:
            return _NOTHING
        found = self._since.get(version, _UNSET)
        if found is _UNSET:
            found = self._since[version] = self._touched_since(version)
        return found

    def _touched_since(self, version: int) -> set | None:
        out: set = set()
        found = False
        for v, touched in self._history:
            if v == version + 1:
                found = True
            if v > version:
                if touched is None:
                    return None
                out |= touched
        return out if found else None

    def _merge_changes(self, order: list[Index], added: list[Index], removed: list[Index]) -> Index:
        """The previous merged index with only the keys of the changed pieces redone.

        A key's list is the concatenation, in source order, of the lists of the pieces
        that have it; a key no changed piece has keeps its list. The redone keys are
        concatenated when first read (`_Merged`): a common name like ``tf`` is in every
        piece, and most keys are never read."""
        prev = self._merged
        idx = Index()
        _splice_lists(idx, prev, order)
        for name in _DICTS:
            count = self._count.get(name)
            if count is None:                     # (first incremental version: from scratch)
                count = self._count[name] = _count(order, name)
                fresh = True
            else:
                fresh = False
            affected = set()
            for piece in removed:
                keys = getattr(piece, name)
                affected.update(keys)
                if not fresh:
                    for key in keys:
                        count[key] -= 1
            for piece in added:
                keys = getattr(piece, name)
                affected.update(keys)
                if not fresh:
                    for key in keys:
                        count[key] = count.get(key, 0) + 1
            old = getattr(prev, name)
            if isinstance(old, _Merged):
                done, todo = dict(old._done), set(old._todo)
            else:
                done, todo = dict(old), set()
            for key in affected:
                done.pop(key, None)
                if count.get(key, 0) > 0:
                    todo.add(key)
                else:
                    todo.discard(key)
                    count.pop(key, None)
            setattr(idx, name, _Merged(done, todo, order, name))
        for name in _UNIQUE:
            merged = dict(getattr(prev, name))
            for piece in removed:
                for key in getattr(piece, name):
                    merged.pop(key, None)
            for piece in added:
                merged.update(getattr(piece, name))
            setattr(idx, name, merged)
        return idx


def _common_ends(old: list, new: list) -> tuple[int, int]:
    """How many items two lists share, by identity, at the start; then at the end."""
    n, m = len(old), len(new)
    limit = min(n, m)
    p = next((i for i, same in enumerate(map(is_, old, new)) if not same), limit)
    s = 0
    while s < limit - p and old[n - 1 - s] is new[m - 1 - s]:
        s += 1
    return p, s


def _splice_lists(idx: Index, prev: Index, order: list[Index]) -> None:
    """The lists: the previous ones with the items of the pieces between the unchanged
    first and last pieces replaced (copied in C; concatenating every piece again cost
    most of a keystroke's merge)."""
    old = prev.pieces
    p, s = _common_ends(old, order)
    n, m = len(old), len(order)
    for name in _LISTS:
        items = attrgetter(name)
        merged = getattr(prev, name)
        replaced = sum(map(len, map(items, old[p:n - s])))
        if p <= s:                  # (the items before or after the change: the shorter side)
            start = sum(map(len, map(items, old[:p])))
            stop = start + replaced
        else:
            stop = len(merged) - sum(map(len, map(items, old[n - s:])))
            start = stop - replaced
        setattr(idx, name, merged[:start] + list(chain.from_iterable(map(items, order[p:m - s]))) + merged[stop:])


class _Merged:
    """A merged dict of the index (the read-only part of the dict API the passes use)
    whose keys in `_todo` are concatenated from this version's pieces (`_order`) when
    first read."""

    __slots__ = ("_done", "_todo", "_order", "_field")

    def __init__(self, done: dict, todo: set, order: list, field: str):
        self._done, self._todo, self._order, self._field = done, todo, order, field

    def _fill(self, key) -> None:
        self._todo.discard(key)
        name = self._field
        self._done[key] = [x for p in self._order for x in getattr(p, name).get(key, ())]

    def _all(self) -> dict:
        for key in list(self._todo):
            self._fill(key)
        return self._done

    def get(self, key, default=None):
        if key in self._todo:
            self._fill(key)
        return self._done.get(key, default)

    def __getitem__(self, key):
        if key in self._todo:
            self._fill(key)
        return self._done[key]

    def __contains__(self, key) -> bool:
        return key in self._todo or key in self._done

    def __iter__(self):            # the keys alone: nothing to concatenate
        return iter([*self._done, *self._todo])

    def __len__(self) -> int:
        return len(self._done) + len(self._todo)

    def keys(self):
        return self._all().keys()

    def values(self):
        return self._all().values()

    def items(self):
        return self._all().items()


def _count(order: list[Index], name: str) -> dict:
    """key -> how many pieces' `name` dict has it."""
    count: dict = {}
    for piece in order:
        for key in getattr(piece, name):
            count[key] = count.get(key, 0) + 1
    return count


def _merge_all(order: list[Index]) -> Index:
    idx = Index()
    for piece in order:
        _merge(idx, piece)
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
    for name in _UNIQUE:
        getattr(idx, name).update(getattr(piece, name))


def defined_names(index: Index) -> set:
    """What a statement defines that code elsewhere can resolve: function and class names
    (at any depth: `function_named` falls back to any of them), import names, and the
    targets of module-level, class-level, ``self.x`` and ``global`` assignments (a local
    of a function is seen only from inside that function, which is in the same statement).
    An edit changes the bindings, functions and classes of exactly these names."""
    names = {fn.name.value for fn in index.funcdefs} | {cls.name.value for cls in index.classdefs}
    declared = {c.value for g in index.globals for c in g.children[1:] if c.type == "name"}
    for stmt, owner in index.assignments:
        parts = N.assign_parts(stmt)
        if parts is None:
            continue
        outer = owner.type in ("file_input", "classdef")
        for d in map(N.dotted, parts[0]):
            if d is not None and (outer or d.startswith("self.") or d in declared):
                names.add(d)
    for node in index.imports:
        names.update(local for local, _full in import_bindings(node))
    for item, owner in index.with_items:
        if len(item.children) >= 3:
            d = N.dotted(item.children[2])
            if d is not None and (owner.type in ("file_input", "classdef") or d.startswith("self.") or d in declared):
                names.add(d)
    return names
