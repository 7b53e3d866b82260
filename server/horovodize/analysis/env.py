"""The environment pass (σ of the seeds): which names hold tensorflow, keras, the
optimizer, dataset, checkpoint, model, estimator, schedule and tape.

One iterative walk indexes the module (`Index`: calls, with-items, assignments, names,
returns, each with its *owner* — the function, class body, lambda or module whose code
it is). Then, in source order: import aliases, member aliases (``Adam =
tf.optimizers.Adam``, resolved *and* reported as R3), Keras model classes, and
*bindings* (``name = <call>`` whose callee resolves to a known TensorFlow constructor).
Names are keyed by scope (function or module; ``self.x`` by class) and looked up through
a dictionary, so the lookups the rules make on every call are O(1) in the file size.

A name that is a *parameter* resolves through the function's call sites
(``train_step(model, opt, x)`` called with ``opt = tf.keras.optimizers.SGD(...)``), so a
loop split over functions and methods still finds its optimizer, dataset and model.

The bindings are found by `bindings`, the restriction facts (R2, R3, R5-R7, R9, R10) by
`creations`; the vocabulary (roles, `Binding`, `Problem`) is `roles`.

Requires: parse (source, index, imports, scopes), incremental (keep, runs),
analysis.roles, analysis.bindings, analysis.creations, analysis.callables.
Provides: `Env`, `build_env`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..incremental import keep, runs
from ..parse import nodes as N
from ..parse.imports import import_bindings
from ..parse.index import Index, build_index
from ..parse.source import Source
from .bindings import (
    bind_assignment,
    bind_with_item,
    bound_names,
    collect_classes,
    member_aliases,
)
from .creations import restriction_facts
from .roles import (
    MODULE_ROOTS,
    Binding,
    Problem,
    call_position,
    canonical,
    member_role,
    position_in_pieces,
)


# -- the environment -----------------------------------------------------------------------
@dataclass(eq=False)
class Env:
    source: Source
    aliases: dict[str, str] = field(default_factory=dict)        # local name -> module/member
    tf_names: set[str] = field(default_factory=set)
    tf1: bool = False
    keras_import: object = None                                   # `from tensorflow import keras` node
    tf_import: object = None
    hvd_name: str | None = None
    hvd_module: str | None = None
    imports: list = field(default_factory=list)                   # all import statements
    top_imports_end: object = None                                # last import of the top block
    top_block_end: object = None                                  # first statement after the top block
    setup_after: object = None        # the statement the Horovod set-up follows (a late module-level tf import)
    library_spans: tuple = ()         # (start, end): other modules of a linked program (engine.analyze)
    bindings: list[Binding] = field(default_factory=list)
    tapes: list[Binding] = field(default_factory=list)
    classes: dict[str, object] = field(default_factory=dict)      # Keras model subclasses
    all_classes: dict[str, object] = field(default_factory=dict)  # every class of the file
    class_bases: dict[str, list] = field(default_factory=dict)    # class -> local base class names
    functions: dict[str, list] = field(default_factory=dict)      # name -> funcdefs (methods too)
    problems: list[Problem] = field(default_factory=list)
    member_aliases: dict[str, object] = field(default_factory=dict)   # R3: name -> alias statement
    module_aliases: dict[str, object] = field(default_factory=dict)   # R2: name -> statement
    index: Index = field(default_factory=Index)
    global_names: dict[int, set] = field(default_factory=dict)   # id(funcdef) -> names declared global

    def calls_with_method(self, *names: str) -> list:
        """The calls ``<receiver>.<name>(...)`` for any of `names`, in source order (from
        the index's `by_method`, not a walk over every call)."""
        by_method = self.index.by_method
        found = [c for name in names for c in by_method.get(name, ()) if c.method == name]
        if len(names) > 1:
            found.sort(key=call_position)
        return found

    def calls_where(self, wanted) -> list:
        """The calls whose callee qualname `q` satisfies ``wanted(q)``, in source order (the
        aliases are final). `wanted` is asked once per distinct qualname, and each index
        piece keeps its calls by qualname (`keep.qualname_table`): a pass looking for a few
        library functions does not walk every call of the file."""
        where = self.__dict__.get("_q_where")
        if where is None:
            where = self.__dict__["_q_where"] = keep.calls_by_qualname(self)
        number = self.__dict__.get("_piece_number")
        if number is None:
            number = self.__dict__["_piece_number"] = {id(piece): k for k, piece in enumerate(self.index.parts())}
        hits = [(number[id(piece)], i, call) for q, found in where.items() if wanted(q)
                for piece, pairs in found for i, call in pairs]
        hits.sort(key=position_in_pieces)
        return [call for _k, _i, call in hits]

    def __post_init__(self):
        self._by_key: dict[tuple, list[Binding]] = {}
        self._bound: set[str] = set()          # every name that has a binding in some scope
        self.outer_bound: set[str] = set()     # ... where other top-level statements see it (`bound_names`)
        self._by_value: dict[int, Binding] = {}
        self._with_role: list[Binding] = []
        self._module_bindings: list[Binding] = []
        self._renames: list[Binding] = []
        self._methods: dict[int, dict] = {}
        self._targets: dict[tuple, object] = {}
        self._callers: dict[int, list] | None = None
        self._building_callers = False
        self._param_memo: dict[tuple, Binding | None] = {}
        self._param_active: set[tuple] = set()
        self._params: dict[int, list] = {}
        self._deps: list | None = None                  # names a kept answer reads, while it is computed (keep.py)
        self._targets_kept = False                      # keep.keep_targets has run: the pieces' tables are current
        self._callee_q: dict[tuple, str | None] = {}   # (id(call node), index) -> callee qualname
        self._alias_gen: object | None = None           # set once the aliases are final
        self.ready = False

    # -- resolution ----------------------------------------------------------------
    def qualname(self, node_or_parts) -> str | None:
        """Canonical dotted name of an expression (or callee parts) through the aliases."""
        d = N.dotted(node_or_parts) if not isinstance(node_or_parts, list) else N.dotted_parts(node_or_parts)
        return self._resolve(d)

    def _resolve(self, d: str | None) -> str | None:
        if d is None:
            return None
        root, _, rest = d.partition(".")
        if root not in self.aliases:
            return None
        full = self.aliases[root] + ("." + rest if rest else "")
        return canonical(full)

    def callee_qualname(self, call: N.Call) -> str | None:
        """``qualname(call.callee_parts)``, computed once per call site. Once the aliases
        are final (`member_aliases`) the answer is kept on the `Call` under their
        generation: the index keeps a statement's `Call`s while the statement is
        unchanged, so an unchanged call is not resolved again after an edit elsewhere."""
        gen = self._alias_gen
        if gen is not None:
            cached = call.__dict__.get("_q")
            if cached is not None and cached[0] is gen:
                return cached[1]
            q = self._callee_q_of(call)
            call.__dict__["_q"] = (gen, q)
            return q
        key = (id(call.node), call.index)
        try:
            return self._callee_q[key]
        except KeyError:
            q = self._callee_q[key] = self._callee_q_of(call)
            return q

    def _callee_q_of(self, call: N.Call) -> str | None:
        root = call.node.children[0]
        if root.type != "name" or root.value not in self.aliases:
            return None       # (the dotted name's root is not an alias)
        return self._resolve(call.callee_dotted())

    def as_call(self, node) -> N.Call | None:
        """`nodes.as_call`, answered with the index's own `Call` (and its cached facts)."""
        found = self.index.whole_calls.get(id(node))
        if found is not None and found.node is node:
            return found
        return N.as_call(node)

    def scopes_for(self, node) -> list:
        """Lookup chain of scopes for a name used at `node` (innermost first)."""
        chain, cur = [], node.parent
        while cur is not None:
            if cur.type in ("funcdef", "file_input"):
                chain.append(cur)
            cur = cur.parent
        return chain

    def add_binding(self, b: Binding) -> None:
        self.bindings.append(b)
        self._by_key.setdefault((b.name, id(b.scope)), []).append(b)
        self._bound.add(b.name)
        if b.value is not None:
            self._by_value.setdefault(id(b.value), b)

    def add_kept(self, kept: keep.PieceBindings) -> None:
        """`add_binding` for each of a piece's kept bindings (and its tapes), at once."""
        self.bindings += kept.bindings
        self.tapes += kept.tapes
        self._bound |= kept.bound
        self._by_value.update(kept.by_value)      # (node ids of this piece: no other piece has them)
        # (shared, not copied: only `add_binding` appends to a list here, and a key of a scope
        # inside a kept piece gets no binding from another piece; every reader only reads)
        self._by_key.update(kept.local_keys)
        for key, found in kept.module_keys.items():
            self._by_key.setdefault(key, []).extend(found)
        self.add_sorted(kept.with_role, kept.module, kept.renames)

    def add_sorted(self, with_role: list, module: list, renames: list) -> None:
        """A piece's (or run's) bindings with a role, at module level, and renaming another
        name (`keep.sorted_lists`), after those already added: each list in order without a
        walk over every binding of the file per pass on each keystroke."""
        self._with_role += with_role
        self._module_bindings += module
        self._renames += renames

    def with_role(self) -> list[Binding]:
        """The bindings whose role is not ``"other"`` (a few of thousands), in order: what
        the restriction facts and the rules look for."""
        return self._with_role if self.ready else [b for b in self.bindings if b.role != "other"]

    def module_bindings(self) -> list[Binding]:
        """The module-level bindings, in order."""
        module = self.source.module
        return self._module_bindings if self.ready else [b for b in self.bindings if b.scope is module]

    def renames(self) -> list[Binding]:
        """The bindings without a role whose value is another name (``opt2 = opt``), in order."""
        return self._renames

    def bindings_of(self, name: str, scope) -> list[Binding]:
        """Every binding of `name` in exactly `scope`, in source order."""
        return self._by_key.get((name, id(scope)), [])

    def lookup(self, name: str | None, at, role: str | None = None, params: bool = True) -> Binding | None:
        """The binding of `name` visible at node `at` (``self.x`` through the class and its
        local bases; a parameter through the function's call sites)."""
        if not name or at is None:
            return None
        if self._deps is not None:
            self._deps.append(name)
        if name not in self._bound and (not params or name.startswith("self.")):
            return None      # no scope binds it (and no parameter can stand for it)
        if name.startswith("self."):
            cls = self.class_of(at)
            if cls is None:
                return None
            for c in self._mro(cls.name.value):
                found = self._pick(self.bindings_of(name, c), role, params)
                if found is not None:
                    return found
                if self.bindings_of(name, c):
                    return None
            return None
        for scope in self.scopes_for(at):
            cands = self.bindings_of(name, scope)
            if cands:
                return self._pick(cands, role, params)
            if scope.type == "funcdef" and name in self.param_names(scope):
                if not params:
                    return None       # the parameter shadows any outer binding
                found = self.param_binding(scope, name, role) if self.ready else None
                if found is not None:
                    return found
                # unresolved parameter: fall back to an outer binding of the same name (scripts
                # usually pass their global ``model``/``optimizer`` under the same name)
        return None

    def _pick(self, cands: list[Binding], role: str | None, params: bool) -> Binding | None:
        if not cands:
            return None
        if role is None:
            return cands[0]
        for b in cands:
            if b.role == role:
                return b
        # ``self.opt = opt`` where `opt` is a parameter: follow the parameter.
        first = cands[0]
        if params and self.ready and first.role == "other" and first.value is not None and first.value.type == "name":
            fn = N.enclosing(first.stmt, {"funcdef"})
            if fn is not None and first.value.value in self.param_names(fn):
                return self.param_binding(fn, first.value.value, role)
        return None

    def class_of(self, node):
        """The class whose method (or nested function) holds `node`."""
        return N.enclosing(node, {"classdef"})

    def _mro(self, cls_name: str) -> list:
        out, seen, todo = [], set(), [cls_name]
        while todo:
            name = todo.pop(0)
            if self._deps is not None:
                self._deps.append(name)
            if name in seen or name not in self.all_classes:
                continue
            seen.add(name)
            out.append(self.all_classes[name])
            todo += self.class_bases.get(name, [])
        return out

    def methods(self, cls_name: str) -> dict[str, object]:
        """The methods defined directly in a class body."""
        cls = self.all_classes.get(cls_name)
        return self._class_methods().get(id(cls), {}) if cls is not None else {}

    def _class_methods(self) -> dict[int, dict]:
        """id(class) -> its methods by name (a class and its methods are in one piece)."""
        if not self._methods:
            table: dict[int, dict] = {}
            for _run, methods in runs.pure(self.index, "methods", _methods_of):
                table.update(methods)
            self._methods = table or {0: {}}
        return self._methods

    def method(self, cls_name: str, name: str):
        """A method of a local class, through its local base classes."""
        table = self._class_methods()
        for cls in self._mro(cls_name):
            fn = table.get(id(cls), {}).get(name)
            if fn is not None:
                return fn
        return None

    def is_method(self, fn) -> bool:
        owner = self.index.def_owner.get(id(fn))
        if owner is None:
            up = N.enclosing(fn, {"funcdef", "classdef"})
            return up is not None and up.type == "classdef"
        return owner.type == "classdef"

    def param_names(self, fn) -> list[str]:
        key = id(fn)
        if key not in self._params:
            names = []
            try:
                for p in fn.get_params():
                    names.append(p.name.value)
            except Exception:  # noqa: BLE001 - an error-recovered signature
                names = []
            self._params[key] = names
        return self._params[key]

    def param_binding(self, fn, name: str, role: str | None) -> Binding | None:
        """The binding passed for parameter `name` of `fn` at one of its call sites."""
        key = (id(fn), name, role)
        if key in self._param_memo:
            return self._param_memo[key]
        if key in self._param_active or self._building_callers:
            return None
        self._param_active.add(key)
        found = None
        try:
            params = self.param_names(fn)
            pos = params.index(name)
            bound = self.is_method(fn) and not _is_staticmethod(fn)
            for call in self.callers(fn):
                arg = call.keyword(name)
                if arg is None:
                    # self is implicit unless the method is called on its class: ``Trainer.step(t, x)``
                    receiver = call.receiver_dotted() if call.method else None
                    offset = pos - (1 if bound and receiver not in self.all_classes else 0)
                    arg = call.positional(offset) if offset >= 0 and not call.has_star() else None
                d = N.dotted(arg.value) if arg is not None else None
                if d is None:
                    continue
                found = self.lookup(d, call.node, role)
                if found is not None:
                    break
        finally:
            self._param_active.discard(key)
        self._param_memo[key] = found
        return found

    # -- calls -----------------------------------------------------------------------
    def function_named(self, name: str, at):
        """The (non-method) function a bare name calls at `at`: innermost scope, last def."""
        if self._deps is not None:
            self._deps.append(name)
        fns = [f for f in self.functions.get(name, []) if not self.is_method(f)]
        if not fns:
            return None
        chain = self.scopes_for(at) if at is not None else []
        for scope in chain:
            here = [f for f in fns if N.func_scope_of(f) is scope]
            if here:
                return here[-1]
        return fns[-1]

    def may_call_local(self, call: N.Call) -> bool:
        """False when `call` names no local function, class, bound name or ``self`` (most
        calls of a training file: ``tf.image.resize(...)``, ``print(...)``), so
        `call_target` is None without the general resolution."""
        callee = call.callee_dotted()
        if callee is None:
            return True
        obj = callee.rpartition(".")[0] or callee
        return obj == "self" or obj in self._bound or obj in self.all_classes \
            or (obj is callee and obj in self.functions)

    def local_calls(self, piece) -> dict:
        """id(owner) -> the calls of one index piece that may start a loop themselves
        (``fit``, ``train``, ``run``, GradientTape, train_and_evaluate) or run a local
        function (`may_call_local`); the other calls add nothing to a loop summary."""
        return keep.local_calls(self, piece)[1]

    def call_target(self, call: N.Call):
        """The local function or method `call` runs, when σ can tell (else None)."""
        key = (id(call.node), call.index)
        found = self._targets.get(key, _UNSET)
        if found is not _UNSET:
            return found
        if not self.may_call_local(call):
            return None
        self._targets[key] = None          # cycle guard
        if self.ready and self.index.version is not None:
            target = keep.kept_target(self, call)      # (kept across versions of the buffer)
        else:
            target = self._call_target(call)
        self._targets[key] = target
        return target

    def _call_target(self, call: N.Call):
        callee = call.callee_dotted()
        if self._deps is not None:       # (the class names it may check)
            root = call.node.children[0]
            self._deps += (callee, callee.rpartition(".")[0]) if callee else (getattr(root, "value", None),)
        if callee is None:
            parts = call.callee_parts
            # ``Trainer().train()``: a method on a fresh instance of a local class.
            if len(parts) == 3 and parts[0].type == "name" and N.is_call_trailer(parts[1]) \
                    and call.method and parts[0].value in self.all_classes:
                return self.method(parts[0].value, call.method)
            return None
        if "." not in callee:
            fn = self.function_named(callee, call.node)
            if fn is not None:
                return fn
            if callee in self.all_classes:          # ``Trainer(model, opt)`` runs ``__init__``
                return self.method(callee, "__init__")
            return self._wrapped(self.lookup(callee, call.node, params=False))
        obj, _, meth = callee.rpartition(".")
        if obj == "self":
            cls = self.class_of(call.node)
            if cls is not None:
                fn = self.method(cls.name.value, meth)
                if fn is not None:
                    return fn
            return self._wrapped(self.lookup(callee, call.node, params=False))
        if obj in self.all_classes:        # ``Trainer.train(self)``
            return self.method(obj, meth)
        b = self.lookup(obj, call.node, params=False)
        cls = self.instance_class(b)
        return self.method(cls, meth) if cls else None

    def _wrapped(self, b: Binding | None):
        """``g = tf.function(f)``: g runs f."""
        if b is None:
            return None
        call = self.as_call(b.value)
        if call is None or not _wrapper(self, call):
            return None
        arg = call.positional(0)
        d = N.dotted(arg.value) if arg is not None else None
        if d is None:
            return None
        if "." not in d:
            return self.function_named(d, b.stmt)
        if d.startswith("self.") and d.count(".") == 1:
            cls = self.class_of(b.stmt)
            return self.method(cls.name.value, d[5:]) if cls is not None else None
        return None

    def instance_class(self, b: Binding | None) -> str | None:
        """The local class `b` holds an instance of (``trainer = Trainer(...)``)."""
        if b is None:
            return None
        callee = b.__dict__.get("_callee", _UNSET)      # (the value's callee: syntax, kept on b)
        if callee is _UNSET:
            call = self.as_call(b.value)
            callee = b.__dict__["_callee"] = call.callee_dotted() if call is not None else None
        return callee if callee in self.all_classes else None

    def callers(self, fn) -> list:
        """Every call whose target is `fn` (the reverse call graph, built once)."""
        if self._callers is None:
            self._building_callers = True
            graph: dict[int, list] = {}
            try:
                for call, target in keep.resolved_calls(self):
                    graph.setdefault(id(target), []).append(call)
            finally:
                self._building_callers = False
            self._callers = graph
        return self._callers.get(id(fn), [])

    # -- roles -------------------------------------------------------------------------
    def role_of_call(self, call: N.Call, at=None) -> tuple[str, str] | None:
        """(role, detail) when `call` constructs a known TensorFlow object."""
        q = self.callee_qualname(call)
        if q:
            return member_role(q)
        children = call.node.children
        for i in range(1, call.index):
            if N.is_call_trailer(children[i]):
                # ``tf.data.Dataset.range(9).batch(3)``: a method chain on a new dataset.
                first = member_role(self.qualname(children[:i]))
                if first is not None and first[0] == "dataset" and call.method:
                    return "dataset", call.method
                break
        callee = call.callee_dotted()
        if callee in self.classes:
            return "model", callee
        # A method chain on a dataset stays a dataset: ds.shuffle(100).batch(32).
        root = call.node.children[0]
        if root.type == "name" and at is not None and call.method:
            b = self.lookup(root.value, at, "dataset")
            if b is not None:
                return "dataset", call.method
        return None

    def binding_for_call(self, call: N.Call) -> Binding | None:
        return self._by_value.get(id(call.node))

    def binding_for_value(self, node) -> Binding | None:
        return self._by_value.get(id(node))

    def horovod(self) -> bool:
        return self.hvd_name is not None

    def tf_alias(self) -> str | None:
        if "tf" in self.tf_names and self.aliases.get("tf", "").startswith("tensorflow"):
            return "tf"
        return next(iter(sorted(self.tf_names)), None)

    def keras_alias(self) -> str | None:
        for name, q in self.aliases.items():
            if q in ("tensorflow.keras", "keras", "keras_core"):
                return name
        return None


def _methods_of(run) -> dict[int, dict]:
    table: dict[int, dict] = {}
    for piece in run:
        for fn in piece.funcdefs:
            owner = piece.def_owner.get(id(fn))
            if owner is not None and owner.type == "classdef":
                table.setdefault(id(owner), {})[fn.name.value] = fn
    return table


def _functions_of(run) -> dict[str, list]:
    table: dict[str, list] = {}
    for piece in run:
        for fn in piece.funcdefs:
            table.setdefault(fn.name.value, []).append(fn)
    return table


def _wrapper(env: Env, call) -> bool:
    """``tf.function(f)`` / ``functools.partial(f, ...)`` (callables.py)."""
    from .callables import is_wrapper
    return is_wrapper(env, call)


def _is_staticmethod(fn) -> bool:
    parent = fn.parent
    if parent is None or parent.type != "decorated":
        return False
    return "staticmethod" in parent.children[0].get_code(include_prefix=False)


def build_env(source: Source, memo=None) -> Env:
    """`memo`: an `index_memo.IndexMemo` of the buffer's earlier versions (language server)."""
    env = Env(source)
    module = source.module
    env.index = memo.index(module) if memo is not None else build_index(module)
    _collect_imports(env, module)
    for _run, functions in runs.pure(env.index, "functions by name", _functions_of):
        for name, found in functions.items():
            env.functions.setdefault(name, []).extend(found)
    for stmt in env.index.globals:
        fn = N.enclosing(stmt, {"funcdef"})
        if fn is not None and stmt.type == "global_stmt":
            env.global_names.setdefault(id(fn), set()).update(
                c.value for c in stmt.children[1:] if c.type == "name")
    member_aliases(env)
    collect_classes(env)
    every_run = runs.cut(env.index)
    outer: set = set()                  # the names bound where other statements can see them
    for _run, names in runs.pure(env.index, "outer names",
                                 lambda run: set().union(*(bound_names(env, piece)[1] for piece in run))):
        outer |= names
    env.outer_bound = outer
    roles = keep.StaticRoles(env, outer)
    kept_bindings = runs.Kept(env.index, "bindings")
    for run in every_run:
        join = kept_bindings.get(run)
        if join is not None and join.valid(roles):
            env.add_kept(join)
            kept_bindings.put(run, join)
            continue
        for piece in run:
            _piece_bindings(env, piece, roles, module)
        if kept_bindings.keeping:
            kept_bindings.make(run, keep.RunBindings(roles, [piece.memo["bindings"] for piece in run]))
    env.ready = True
    env._targets.clear()   # targets resolved while bindings were still being collected
    keep.keep_targets(env)
    restriction_facts(env)
    return env


def _piece_bindings(env: Env, piece: Index, roles, module) -> None:
    """One piece's bindings and tapes: its kept ones when still valid, else found again."""
    memo = piece.memo
    kept = memo.get("bindings")
    if kept is not None and kept.deps is not None:
        checked = runs.checked(piece, "bindings")
        if checked is not None and kept.version < checked:
            kept.version = checked          # (valid then: its run was)
    if kept is not None and kept.valid(roles):
        env.add_kept(kept)
        return
    first_binding, first_tape = len(env.bindings), len(env.tapes)
    deps: set | None = None          # the names the piece's dynamic roles read
    for stmt, owner in _in_order(piece):
        if stmt.type == "expr_stmt":
            read = bind_assignment(env, stmt, owner, memo, roles)
            if read is not None:
                deps = (deps or set()).union(read)
        else:
            bind_with_item(env, stmt)
    if env.index.version is None:          # (no memo: nothing is kept, only the lists are added)
        env.add_sorted(*keep.sorted_lists(env.bindings[first_binding:], module))
        return
    kept = memo["bindings"] = keep.PieceBindings(roles, None if deps is None else frozenset(deps),
                                                 env.bindings[first_binding:], env.tapes[first_tape:], module)
    env.add_sorted(kept.with_role, kept.module, kept.renames)


def _in_order(index: Index):
    """Assignments and with-items merged in source order (both lists are already sorted)."""
    return _merged_in_order(index.assignments, index.with_items) if index.with_items else index.assignments


def _merged_in_order(a: list, w: list):
    i = j = 0
    while i < len(a) or j < len(w):
        if j >= len(w) or (i < len(a) and a[i][0].start_pos <= w[j][0].start_pos):
            yield a[i]
            i += 1
        else:
            yield w[j]
            j += 1


# -- imports ---------------------------------------------------------------------------
def _collect_imports(env: Env, module) -> None:
    for stmt in _module_statements(module):
        kind = _top_kind(stmt)
        if kind == "import":
            env.top_imports_end = stmt
        elif kind == "code":
            env.top_block_end = stmt
            break                   # (the top block ends at the first code statement)
    for node in env.index.imports:
        env.imports.append(node)
        _import(env, node)
    env.setup_after = env.top_imports_end
    late = env.tf_import or env.keras_import
    if late is not None and env.top_block_end is not None and late.start_pos > env.top_block_end.start_pos:
        stmt = N.statement_of(late)
        line = stmt.parent if stmt.parent is not None and stmt.parent.type == "simple_stmt" else stmt
        if line.parent is module:      # below other code, not nested: the set-up follows it (HVD-R1)
            env.setup_after = stmt


def _module_statements(module):
    for child in module.children:
        if child.type in ("newline", "endmarker"):
            continue
        # (parso leaves a last statement without a line break bare, without its simple_stmt)
        yield child


def _top_kind(stmt) -> str:
    """'import', 'neutral' (docstring, os.environ, sys.path...) or 'code'."""
    if stmt.type in N.COMPOUND or stmt.type in ("error_node", "error_leaf"):
        return "code"
    kinds = set()
    for small in (stmt.children if stmt.type == "simple_stmt" else [stmt]):
        if small.type in ("import_name", "import_from"):
            kinds.add("import")
        elif small.type in ("newline", "operator", "string"):
            continue
        else:
            code = small.get_code(include_prefix=False)
            if code.startswith(("os.environ", "sys.path", "warnings.", "logging.", "__")):
                continue
            kinds.add("code")
    if "code" in kinds:
        return "code"
    return "import" if "import" in kinds else "neutral"


def _import(env: Env, node) -> None:
    for local, full in import_bindings(node):
        _bind_module(env, local, full, node)


def _bind_module(env: Env, local: str, full: str, node) -> None:
    if full.split(".")[0] not in MODULE_ROOTS:
        return
    env.aliases[local] = full
    if full.startswith("horovod"):
        # only a module can be written as ``hvd.size()`` (``from horovod.tensorflow import
        # broadcast_variables`` binds a function); see hvd_facts for every other form
        if full in ("horovod.tensorflow", "horovod.tensorflow.keras", "horovod.keras") and env.hvd_name is None:
            env.hvd_name, env.hvd_module = local, full
        return
    c = canonical(full)
    if c == "tensorflow":
        env.tf_names.add(local)
        env.tf_import = env.tf_import or node
        if full.startswith("tensorflow.compat.v1"):
            env.tf1 = True
    elif c and c.startswith("tensorflow.keras"):
        env.keras_import = env.keras_import or node


_UNSET = object()
