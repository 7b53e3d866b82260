"""What the analysis keeps across the versions of one buffer (the language server's
keystroke path), and when a kept answer is still the answer.

The index is merged from one piece per top-level statement (`index_memo`); a piece, its
`Call` objects and its `memo` live as long as the statement is unchanged. Three kinds of
facts are kept there:

* facts of the statement alone (an assignment's shape, its member-alias candidates):
  right while the piece lives;
* facts that also read file-wide tables (callee qualnames, static roles, the calls by
  qualname, the calls that may run a local function): kept under a *generation*, one
  object per distinct table in the buffer's history (aliases; bound names, classes and
  functions; the class structure), compared by identity, and carried over to the next
  version when the tables change only in names no kept statement writes (`generation`);
* facts that read particular bindings and functions (a call's target, a role read from
  another binding): kept with the names they read, recorded as they are computed, and the
  index version. They are reused while the generation is the same and no statement
  changed since defines one of those names (`IndexMemo.touched_since`: the changed
  statements' module-level, class-level and ``global`` targets, functions, classes and
  imports, and the names whose role was found again differently, `IndexMemo.note`).

An answer checked and still right at a version is recorded as that version's (the
"refreshed" comments): `IndexMemo` remembers what changed for 64 versions, and an answer
left with the version it was made at would be found unknown after 64 keystrokes, and made
again with every other such answer of the file at once (a 3x keystroke every 64).

Reads during the environment pass only see bindings made earlier in source order, so the
role changes noted so far in a version are all those a later role can depend on.
tests/test_incremental.py checks incremental against from-scratch analyses on random
edits and on edits made so that kept answers must be dropped.
"""

from __future__ import annotations

from contextlib import contextmanager

from ..parse import nodes as N
from . import runs

DYNAMIC = object()          # a role that reads other bindings (`StaticRoles.of`)


# The generations `IndexMemo.forget` can carry over a change of names, when their aliases
# (the first part) and, for "dynamic", the class structure and ``tf1`` (parts 5 and 6) are
# the same: what reads aliases or the class structure indirectly records no name for it.
_CARRIED = frozenset({"roles", "dynamic", "names"})


def generation(env, kind: str, key: tuple) -> object:
    """The generation of `kind`'s file-wide tables `key` (a tuple of name-keyed parts:
    frozensets of names, tuples of entries whose first item is a name, flags).

    One object per table in a buffer's history (`IndexMemo.generations`), compared by
    identity on every use; and the previous version's object when the tables differ only
    in names written nowhere but in the statements this version changed
    (`IndexMemo.only_in_changed`): every answer kept in another statement read the tables
    by names written in the statements it read, so it is still the answer. That is what
    typing a function-local ``scaled = tf.cast`` (a member alias until its ``(``) or a new
    function's name costs: the new statement, not every kept answer of the file. A reused
    object no longer stands for one table, so it leaves the table map (a later return to
    its first table gets a new object). The roles and names generations are also carried
    over a change in names written elsewhere too: the kept statements that mention one of
    them forget what they kept (`IndexMemo.forget`). Typing before a ``def`` that other
    statements call takes the function in and out of the table at each key, and that cost
    every kept answer of the file (~0.3 s at 50,000 lines) instead of those statements'.
    Without a history (one analysis): a new object."""
    memo = env.index.history
    if memo is None or env.index.version is None:
        return object()
    found = memo.generations.get(kind)
    if found is not None:
        version, old_key, gen = found
        if old_key == key:
            memo.generations[kind] = (memo.version, key, gen)
            return gen
        if version == memo.version - 1:
            changed = changed_names(old_key, key)
            if changed is not None and (memo.only_in_changed(changed) or (
                    kind in _CARRIED and old_key[0] == key[0] and old_key[5:] == key[5:] and memo.forget(changed))):
                memo.generations[kind] = (memo.version, key, gen)
                memo.by_table.pop((kind, old_key), None)
                return gen
    gen = memo.by_table.get((kind, key))
    if gen is None:
        if len(memo.by_table) > 64:
            memo.by_table.clear()
        gen = memo.by_table[(kind, key)] = object()
    memo.generations[kind] = (memo.version, key, gen)
    return gen


def changed_names(old: tuple, new: tuple) -> set | None:
    """The names whose part of the tables differs between two keys of `generation`
    (None: a flag changed, which no name stands for)."""
    out: set = set()
    for a, b in zip(old, new):
        if a == b:
            continue
        if isinstance(a, frozenset):
            out |= a ^ b
        elif isinstance(a, tuple):
            out.update(entry[0] for entry in set(a) ^ set(b))
        else:
            return None
    return out


def alias_generation(env) -> object:
    env._alias_items = tuple(sorted(env.aliases.items()))
    return generation(env, "aliases", (env._alias_items,))


def names_generation(env) -> object:
    """(aliases, bound names other statements see, classes, functions) of a finished
    environment: what `Env.may_call_local` and callee qualnames read. A function's local
    names are left out: `may_call_local` may answer True for another statement's call
    because of one, but no lookup from there sees it, so the call's target (None) and
    what the loop summary makes of it are the same."""
    gen = env.__dict__.get("_names_gen")
    if gen is None:
        key = (env._alias_items, frozenset(env.outer_bound), frozenset(env.all_classes), frozenset(env.functions))
        gen = env.__dict__["_names_gen"] = generation(env, "names", key)
    return gen


def class_entries(env) -> tuple:
    """(name, local bases, Keras-ness, method names) of each class."""
    entries = env.__dict__.get("_class_entries")
    if entries is None:
        table = env._class_methods()
        entries = env.__dict__["_class_entries"] = tuple(
            (name, tuple(env.class_bases.get(name, ())), name in env.classes, tuple(sorted(table.get(id(cls), ()))))
            for name, cls in env.all_classes.items())
    return entries


def class_generation(env) -> object:
    """(aliases, classes with their local bases, Keras-ness and method names)."""
    gen = env.__dict__.get("_class_gen")
    if gen is None:
        gen = env.__dict__["_class_gen"] = generation(env, "classes", (env._alias_items, class_entries(env)))
    return gen


# -- calls ---------------------------------------------------------------------------------
LOOP_METHODS = frozenset({"run", "fit", "fit_generator", "train"})   # calls that may start a training loop
LOOP_QUALNAMES = frozenset({"tensorflow.GradientTape", "tensorflow.estimator.train_and_evaluate"})


def may_start_loop(env, call: N.Call) -> bool:
    """A call that may start a training loop by itself (the loop summary's direct kinds)."""
    return call.method in LOOP_METHODS or env.callee_qualname(call) in LOOP_QUALNAMES


@contextmanager
def reading(env):
    """The names `Env.lookup`, `function_named`, `_mro` and `callables.callee_name` read
    while the block runs (what a kept answer depends on)."""
    env._deps = deps = []
    try:
        yield deps
    finally:
        env._deps = None


def local_calls(env, piece) -> tuple:
    """(generation, id(owner) -> the piece's calls that may start a loop themselves or run
    a local function, the piece's `may_call_local` calls in source order); the other calls
    add nothing to a loop summary. Kept once the environment is finished."""
    gen = names_generation(env) if env.ready else object()   # (names still growing: not kept)
    cached = piece.memo.get("local_calls")
    if cached is not None and cached[0] is gen:
        return cached
    ordered = [c for c, _owner in piece.calls if env.may_call_local(c)]
    local = set(map(id, ordered))
    table: dict[int, list] = {}
    for key, calls in piece.owned_calls.items():
        found = [c for c in calls if id(c) in local or may_start_loop(env, c)]
        if found:
            table[key] = found
    cached = (gen, table, ordered)
    if env.ready:
        piece.memo["local_calls"] = cached
    return cached


def qualname_table(env, piece) -> dict:
    """callee qualname -> [(position in the piece, call)] of one piece, under the aliases."""
    cached = piece.memo.get("by_qualname")
    if cached is not None and cached[0] is env._alias_gen:
        return cached[1]
    table: dict = {}
    for i, (call, _owner) in enumerate(piece.calls):
        q = env.callee_qualname(call)
        if q is not None:
            found = table.get(q)
            if found is None:
                table[q] = [(i, call)]
            else:
                found.append((i, call))
    if env._alias_gen is not None:
        piece.memo["by_qualname"] = (env._alias_gen, table)
    return table


def calls_by_qualname(env) -> dict:
    """qualname -> [(piece, its `qualname_table` entry)] over the whole index, for
    `Env.calls_where` (the aliases are final). The previous version's, with the pieces
    that changed taken out and put in, when the aliases are the same and that version
    is the one before (`IndexMemo.calls_by_qualname`); else made from every piece."""
    memo, gen, version = env.index.history, env._alias_gen, env.index.version
    kept = memo.calls_by_qualname if memo is not None and gen is not None else None
    where = None
    if kept is not None and kept[0] == version - 1 and kept[1] is gen and memo._removed is not None:
        where = _update_where(env, dict(kept[2]), memo._removed, memo._added, gen)
    if where is None:
        where = {}
        for piece in env.index.parts():
            for q, pairs in qualname_table(env, piece).items():
                found = where.get(q)
                if found is None:
                    where[q] = [(piece, pairs)]
                else:
                    found.append((piece, pairs))
    if memo is not None and gen is not None and version is not None:
        memo.calls_by_qualname = (version, gen, where)
    return where


def _update_where(env, where: dict, removed: list, added: list, gen) -> dict | None:
    """`where` (a copy of the previous version's dict: its lists are copied before they
    change) without the removed pieces and with the added ones; None when a removed
    piece's table is not the one made under these aliases."""
    for piece in removed:
        cached = piece.memo.get("by_qualname")
        if cached is None or cached[0] is not gen:
            return None
        for q in cached[1]:
            left = [entry for entry in where.get(q, ()) if entry[0] is not piece]
            if left:
                where[q] = left
            else:
                del where[q]
    for piece in added:
        for q, pairs in qualname_table(env, piece).items():
            where[q] = where.get(q, []) + [(piece, pairs)]
    return where


def kept_target(env, call: N.Call):
    """`Env._call_target`, kept on the `Call`: it reads the class structure and, through
    `lookup` / `function_named` / `_mro`, the names it records; the function it names
    must also still be in the tree."""
    gen = class_generation(env)
    kept = call.__dict__.get("_target")
    if kept is not None and kept[1] is gen:
        target = kept[2]
        if env.index.unchanged_since(kept[0], kept[3]) and (target is None or id(target) in env.index.def_owner):
            if kept[0] != env.index.version:
                call.__dict__["_target"] = (env.index.version,) + kept[1:]    # (refreshed)
            return target
    with reading(env) as deps:
        target = env._call_target(call)
    call.__dict__["_target"] = (env.index.version, gen, target, frozenset(deps))
    return target


def keep_targets(env) -> None:
    """Once the environment is finished: each piece's call targets, from its memo when
    none can have changed, into the version's table that `Env.call_target` reads first.
    The table covers the piece's `local_calls`: a call that could not run local code read
    no name, so the table is also made again when those calls are found again (a function
    or binding of their names written elsewhere changes the names generation). A run of
    pieces whose joined table is still valid adds it at once (`RunTargets`)."""
    if env.index.version is None:
        return
    gen, names = class_generation(env), names_generation(env)
    owners = env.index.def_owner
    kept_runs = runs.Kept(env.index, "targets")
    for run in runs.cut(env.index):
        join = kept_runs.get(run)
        if join is not None and join.valid(env, gen, names, owners):
            env._targets.update(join.table)
            kept_runs.put(run, join)
            continue
        for piece in run:
            _piece_targets(env, piece, gen, owners)
        kept_runs.make(run, RunTargets(env, [piece.memo["targets"] for piece in run], gen, names))
    env._targets_kept = True


def resolved_calls(env) -> list:
    """(call, the local function it runs) of every call that runs one, in source order:
    from each run's joined targets when they are kept for this version (`RunTargets`),
    else from each piece's local calls."""
    joins = runs.this_version(env.index, "targets") if env._targets_kept else {}
    out: list = []
    for run in runs.cut(env.index):
        join = joins.get(id(run[0]))
        if join is not None:
            out += join.resolved
            continue
        for piece in run:
            for call in local_calls(env, piece)[2]:
                target = env.call_target(call)
                if target is not None:
                    out.append((call, target))
    return out


def _piece_targets(env, piece, gen, owners) -> None:
    calls = local_calls(env, piece)
    kept = piece.memo.get("targets")
    if kept is not None:
        checked = runs.checked(piece, "targets")
        if checked is not None and kept[0] < checked:
            kept = (checked,) + kept[1:]
    if kept is not None and kept[1] is gen and kept[6] is calls \
            and env.index.unchanged_since(kept[0], kept[3]) and kept[4] <= owners.keys():
        env._targets.update(kept[2])
        if kept[0] != env.index.version:
            piece.memo["targets"] = (env.index.version,) + kept[1:]       # (refreshed)
        return
    table, deps, alive, resolved = {}, set(), set(), []
    for call in calls[2]:
        target = table[(id(call.node), call.index)] = env.call_target(call)
        deps |= call.__dict__["_target"][3] if "_target" in call.__dict__ else ()
        if target is not None:
            alive.add(id(target))
            resolved.append((call, target))
    piece.memo["targets"] = (env.index.version, gen, table, frozenset(deps), alive, resolved, calls)


class RunTargets:
    """The call targets of a run of pieces (`runs`), joined: valid while the class and
    names generations are the same (so is each piece's `local_calls`), no statement
    changed since defines a name one of them read, and every target is still defined."""

    __slots__ = ("pieces", "version", "gen", "names", "table", "deps", "alive", "resolved")

    def __init__(self, env, entries: list, gen, names):
        self.version, self.gen, self.names = env.index.version, gen, names
        self.table: dict = {}
        self.resolved: list = []            # (call, target) in order (`resolved_calls`)
        for entry in entries:
            self.table.update(entry[2])
            self.resolved += entry[5]
        self.deps = frozenset().union(*(entry[3] for entry in entries))
        self.alive = set().union(*(entry[4] for entry in entries))

    def valid(self, env, gen, names, owners) -> bool:
        if self.gen is gen and self.names is names and env.index.unchanged_since(self.version, self.deps) \
                and self.alive <= owners.keys():
            self.version = env.index.version                                  # (refreshed)
            return True
        return False


# -- roles -----------------------------------------------------------------------------------
class StaticRoles:
    """Roles of ``name = <call>`` kept with their statement.

    Static: no binding can change the role (the callee names no local function, class,
    ``self`` or bound name, and no method chain starts at a bound name, ``ds.batch(32)``;
    bound names are those other statements see and the statement's own, `_bound_names`):
    it is the callee qualname's, a dataset chain's or a Keras subclass's, kept under the
    generation of aliases, bound names, classes and functions. Dynamic roles (the others)
    are kept with the names they read (`kept`, `keep`)."""

    def __init__(self, env, outer: set):
        self.env, self.bound = env, outer
        key = (env._alias_items, frozenset(outer), frozenset(env.all_classes), frozenset(env.classes),
               frozenset(env.functions))
        self.gen = generation(env, "roles", key)
        self.dynamic_gen = generation(env, "dynamic", key + (class_entries(env), env.tf1))

    def of(self, call: N.Call, stmt, memo: dict):
        """The static role of the statement's call (None: no role), or `DYNAMIC`."""
        cached = memo.get(("role", id(stmt)))
        if cached is not None and cached[0] is self.gen:
            return cached[1]
        role = self.env.role_of_call(call, stmt) if self._static(call, memo["bound_names"][0]) else DYNAMIC
        memo[("role", id(stmt))] = (self.gen, role)
        return role

    def _static(self, call: N.Call, own: set) -> bool:
        """`own`: the names the call's own top-level statement binds (its locals among them)."""
        env, outer = self.env, self.bound
        root = call.node.children[0]
        callee = call.callee_dotted()
        if callee is None:
            if root.type == "name" and root.value in env.all_classes:
                return False                     # ``Trainer().train()``
        else:
            obj = callee.rpartition(".")[0] or callee
            if obj == "self" or obj in outer or obj in own or obj in env.all_classes \
                    or (obj is callee and obj in env.functions):
                return False
        return not (root.type == "name" and call.method and (root.value in outer or root.value in own))

    def kept(self, stmt, memo: dict) -> tuple | None:
        """(the names they read, the roles per target) a dynamic statement got before,
        when nothing they read can have changed since."""
        entry = memo.get(("roles", id(stmt)))
        index = self.env.index
        if entry is None or entry[1] is not self.dynamic_gen or index.version is None \
                or not index.unchanged_since(entry[0], entry[2]):
            return None
        if entry[0] != index.version:
            memo[("roles", id(stmt))] = (index.version,) + entry[1:]          # (refreshed)
        return entry[2], entry[3]

    def keep(self, stmt, memo: dict, targets, found: list, deps: list) -> None:
        index = self.env.index
        if index.version is None:
            return
        old = memo.get(("roles", id(stmt)))
        if old is not None and old[3] != found:
            # later roles that read these names must be found again (also in later versions)
            index.history.note({t[0] for t, a, b in zip(targets, old[3], found) if a != b})
        memo[("roles", id(stmt))] = (index.version, self.dynamic_gen, frozenset(deps), found)


def sorted_lists(bindings: list, module) -> tuple[list, list, list]:
    """(the bindings with a role, those at module level, those without a role whose value
    is another name), each in order: what `Env.add_sorted` adds."""
    return ([b for b in bindings if b.role != "other"], [b for b in bindings if b.scope is module],
            [b for b in bindings if b.role == "other" and b.value is not None
             and b.value_dotted() not in (None, b.name)])


class PieceBindings:
    """The bindings and tapes one index piece added: the same for the same generation when
    every role in it was static (`deps` None), and, when some were read from other
    bindings, also while none of the names they read (`deps`) has changed since `version`
    (what `StaticRoles.kept` checks per statement, for the whole piece at once). An
    unchanged piece adds them again at once, with its share of the environment's tables
    (`Env.add_kept`)."""

    __slots__ = ("gen", "tf1", "deps", "version", "bindings", "tapes", "bound", "by_value", "local_keys",
                 "module_keys", "with_role", "module", "renames")

    def __init__(self, roles: StaticRoles, deps: frozenset | None, bindings: list, tapes: list, module):
        env = roles.env
        self.gen = roles.gen if deps is None else roles.dynamic_gen
        self.tf1, self.deps, self.version = env.tf1, deps, env.index.version
        self.bindings, self.tapes = bindings, tapes
        self.bound = {b.name for b in bindings}
        self.by_value: dict = {}
        for b in bindings:
            if b.value is not None:
                self.by_value.setdefault(id(b.value), b)
        for t in tapes:
            self.by_value.setdefault(id(t.value), t)
        # a function's or class's own names are bound only by this piece; the module's by all
        self.local_keys: dict = {}
        self.module_keys: dict = {}
        for b in bindings:
            keys = self.module_keys if b.scope is module else self.local_keys
            keys.setdefault((b.name, id(b.scope)), []).append(b)
        self.with_role, self.module, self.renames = sorted_lists(bindings, module)

    def valid(self, roles: StaticRoles) -> bool:
        if self.tf1 != roles.env.tf1:
            return False
        if self.deps is None:
            return self.gen is roles.gen
        if self.gen is roles.dynamic_gen and roles.env.index.unchanged_since(self.version, self.deps):
            self.version = roles.env.index.version                              # (refreshed)
            return True
        return False


class RunBindings:
    """The `PieceBindings` of a run of pieces (`runs`), joined as `Env.add_kept` would add
    them one by one: valid while every piece's would be (the same generations and ``tf1``;
    none of the names the dynamic roles read changed since the run's version)."""

    __slots__ = ("pieces", "gen", "dynamic_gen", "tf1", "deps", "version", "bindings", "tapes", "bound",
                 "by_value", "local_keys", "module_keys", "with_role", "module", "renames")

    def __init__(self, roles: StaticRoles, kept: list):
        env = roles.env
        self.tf1, self.version = env.tf1, env.index.version
        dynamic = [k for k in kept if k.deps is not None]
        self.gen = roles.gen if len(dynamic) < len(kept) else None
        self.dynamic_gen = roles.dynamic_gen if dynamic else None
        self.deps = frozenset().union(*(k.deps for k in dynamic))
        self.bindings = [b for k in kept for b in k.bindings]
        self.tapes = [t for k in kept for t in k.tapes]
        self.with_role = [b for k in kept for b in k.with_role]
        self.module = [b for k in kept for b in k.module]
        self.renames = [b for k in kept for b in k.renames]
        self.bound = set().union(*(k.bound for k in kept))
        self.by_value: dict = {}
        self.local_keys: dict = {}
        self.module_keys: dict = {}
        for k in kept:
            self.by_value.update(k.by_value)
            self.local_keys.update(k.local_keys)
            for key, found in k.module_keys.items():
                self.module_keys.setdefault(key, []).extend(found)

    def valid(self, roles: StaticRoles) -> bool:
        env = roles.env
        if self.tf1 != env.tf1 or (self.gen is not None and self.gen is not roles.gen):
            return False
        if self.dynamic_gen is not None and (self.dynamic_gen is not roles.dynamic_gen
                                             or not env.index.unchanged_since(self.version, self.deps)):
            return False
        self.version = env.index.version                                      # (refreshed)
        return True
