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

The facts the restriction checks need (creation count, condition, aliasing,
reassignment: R2, R3, R5–R7, R9, R10) are recorded here once as `Problem`s and read by
both `restrictions.py` (which reports them) and the rules (through `Blocker`).

Requires: source. Provides: `Env`, `Binding`, `Problem`, `Index`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

from . import keep, runs
from . import nodes as N
from .source import MAX_DEPTH, Source, TooDeep

# Keras optimizer classes and their default learning rates (Keras 2.15 / TF 2.15).
KERAS_OPTIMIZERS = {
    "Adam": "0.001", "AdamW": "0.001", "Adamax": "0.001", "Nadam": "0.001",
    "SGD": "0.01", "RMSprop": "0.001", "Adagrad": "0.001", "Adadelta": "0.001",
    "Ftrl": "0.001", "Lion": "0.0001", "Adafactor": "0.001", "Lamb": "0.001",   # Lamb: Keras 3
}
# TF1 tf.train optimizers; None = learning_rate is required.
TF1_OPTIMIZERS = {
    "AdamOptimizer": "0.001", "AdadeltaOptimizer": "0.001", "GradientDescentOptimizer": None,
    "AdagradOptimizer": None, "MomentumOptimizer": None, "RMSPropOptimizer": None,
    "FtrlOptimizer": None, "ProximalAdagradOptimizer": None,
}
COMPILE_STRINGS = {"adam": "Adam", "sgd": "SGD", "rmsprop": "RMSprop", "adagrad": "Adagrad",
                   "adadelta": "Adadelta", "adamax": "Adamax", "nadam": "Nadam", "ftrl": "Ftrl"}

ROLES = ("optimizer", "dataset", "checkpoint", "model", "estimator", "lr_schedule")
SETUP = ("HVD001", "HVD002")
# The rules that act on an object of each role (what a restriction on it blocks).
ROLE_RULES = {
    "optimizer": ("HVD010", "HVD011", "HVD021"),
    "dataset": ("HVD040",),
    "checkpoint": ("HVD031",),
    "model": ("HVD032", "HVD050", "HVD051"),
    "estimator": ("HVD060", "HVD061"),
    "lr_schedule": ("HVD013",),
    "tape": ("HVD020",),
}
# Qualified names through which an object the conversion rewrites can be reached (R3).
RELEVANT_MEMBERS = (
    "tensorflow.GradientTape", "tensorflow.keras.optimizers", "tensorflow.train",
    "tensorflow.data", "tensorflow.estimator", "tensorflow.keras.Sequential",
    "tensorflow.keras.Model", "tensorflow.keras.applications", "tensorflow.keras.load_model",
)
MODULE_ROOTS = ("tensorflow", "keras", "os", "horovod", "tf_keras", "keras_core")   # keras_core: Keras 3 (keras3.py)


@lru_cache(maxsize=4096)
def canonical(q: str | None) -> str | None:
    """Normalise a qualified name: compat.v1, standalone keras, legacy optimizers."""
    if q is None:
        return None
    for old, new in (
        ("tensorflow.compat.v1", "tensorflow"), ("tensorflow.compat.v2", "tensorflow"),
        ("tensorflow.python.keras", "tensorflow.keras"), ("tf_keras", "tensorflow.keras"),
        ("keras_core", "tensorflow.keras"), ("keras", "tensorflow.keras"),
    ):
        if q == old or q.startswith(old + "."):
            q = new + q[len(old):]
            break
    if q == "tensorflow.optimizers" or q.startswith("tensorflow.optimizers."):
        q = "tensorflow.keras" + q[len("tensorflow"):]
    q = q.replace("tensorflow.keras.optimizers.legacy.", "tensorflow.keras.optimizers.")
    q = q.replace("tensorflow.keras.optimizers.experimental.", "tensorflow.keras.optimizers.")
    q = q.replace("tensorflow.keras.models.", "tensorflow.keras.")
    q = q.replace("tensorflow.keras.saving.load_model", "tensorflow.keras.load_model")   # Keras 3's spelling
    return q


@lru_cache(maxsize=4096)
def member_role(q: str | None) -> tuple[str, str] | None:
    """(role, class) when the canonical name `q` constructs an object a rule rewrites."""
    if not q:
        return None
    last = q.rsplit(".", 1)[-1]
    if q.startswith("tensorflow.keras.optimizers.schedules."):
        return "lr_schedule", last
    if q.startswith("tensorflow.keras.optimizers.") and last in KERAS_OPTIMIZERS:
        return "optimizer", last
    if q.startswith("tensorflow.train.") and last in TF1_OPTIMIZERS:
        return "optimizer", last
    if q.startswith("tensorflow.data."):
        return "dataset", last
    if q in ("tensorflow.train.Checkpoint", "tensorflow.train.CheckpointManager"):
        return "checkpoint", last
    if q in ("tensorflow.keras.Sequential", "tensorflow.keras.Model", "tensorflow.keras.load_model") or \
            q.startswith("tensorflow.keras.applications."):
        return "model", last
    if q == "tensorflow.keras.estimator.model_to_estimator":     # an Estimator around a compiled Keras model
        return "estimator", last
    if q.startswith("tensorflow.estimator.") and last.endswith(("Estimator", "Classifier", "Regressor")):
        return "estimator", last
    return None


@dataclass(eq=False)
class Binding:
    """``name = <call>`` (or a ``with`` item) giving `name` a role."""

    name: str
    role: str
    stmt: object                 # expr_stmt / with_item
    value: object                # the right-hand side
    scope: object                # funcdef / classdef (for self.x) / file_input
    conditional: object = None   # the if/match/except/ternary it is created under (R7)
    detail: str = ""             # e.g. optimizer class name
    tf1: bool = False
    loop: object = None          # the for/while (inside its scope) it is created in (R5)

    def value_dotted(self) -> str | None:
        """``N.dotted(value)``, once (a plain binding lives as long as its statement)."""
        d = self.__dict__
        if "_dotted" not in d:
            d["_dotted"] = N.dotted(self.value)
        return d["_dotted"]


@dataclass(eq=False)
class Problem:
    """A violated restriction (reported by restrictions.py, enforced by `Blocker`).

    A rule site is blocked when the rule's code is in `blocks` and the site is the
    problem's `node`, one of its `sites` (nodes or bindings), or inside its `region`;
    `everywhere` (set when the Horovod set-up itself is blocked) stops every rule.
    """

    code: str          # "R5", "T4", ...
    node: object
    message: str
    blocks: tuple[str, ...]
    binding: Binding | None = None
    region: object = None        # every site inside this node is blocked
    everywhere: bool = False     # the set-up is blocked, so is every rule
    sites: list = field(default_factory=list)      # further nodes / bindings it blocks
    related: list = field(default_factory=list)    # (node, message) pointers for the diagnostic


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
        hits.sort(key=_position_in_pieces)
        return [call for _k, _i, call in hits]

    def __post_init__(self):
        self._by_key: dict[tuple, list[Binding]] = {}
        self._bound: set[str] = set()          # every name that has a binding in some scope
        self.outer_bound: set[str] = set()     # ... where other top-level statements see it (`_bound_names`)
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
        are final (`_member_aliases`) the answer is kept on the `Call` under their
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
    _member_aliases(env)
    _collect_classes(env)
    every_run = runs.cut(env.index)
    outer: set = set()                  # the names bound where other statements can see them
    for _run, names in runs.pure(env.index, "outer names",
                                 lambda run: set().union(*(_bound_names(env, piece)[1] for piece in run))):
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
    _restriction_facts(env)
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
            read = _assignment(env, stmt, owner, memo, roles)
            if read is not None:
                deps = (deps or set()).union(read)
        else:
            _with_item(env, stmt)
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


def import_bindings(node) -> list[tuple[str, str]]:
    """(local name, full dotted target) of one import statement (library modules only)."""
    out = []
    try:
        if node.type == "import_name":
            for dotted_node, alias in _import_names(node):
                full = _dotted_name(dotted_node)
                out.append((alias, full) if alias else (full.split(".")[0], full.split(".")[0]))
        else:
            module = _from_module(node)
            if module is not None:
                for name, alias in _from_names(node):
                    if name != "*":
                        out.append((alias or name, f"{module}.{name}"))
    except (AttributeError, IndexError):  # an error-recovered import
        return out
    return out


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


def _import_names(node):
    """[(dotted_name node, alias or None)] of ``import a.b as c, d``."""
    names = node.children[1]
    items = names.children if names.type == "dotted_as_names" else [names]
    out = []
    for item in items:
        if item.type == "operator":
            continue
        if item.type == "dotted_as_name":
            out.append((item.children[0], item.children[2].value))
        elif item.type in ("name", "dotted_name"):
            out.append((item, None))
    return out


def _dotted_name(node) -> str:
    return node.get_code(include_prefix=False).replace(" ", "")


def from_module_text(node) -> str:
    """The module of ``from <module> import ...`` as written, leading dots included."""
    parts = []
    for child in node.children[1:]:
        if child == "import":
            break
        parts.append(child.get_code(include_prefix=False).strip())
    return "".join(parts)


def _from_module(node) -> str | None:
    """The module of an absolute ``from`` import (None for a relative one: not a library)."""
    module = from_module_text(node)
    return None if not module or module.startswith(".") else module


def _from_names(node):
    idx = [i for i, c in enumerate(node.children) if c == "import"]
    if not idx:
        return []
    rest = [c for c in node.children[idx[0] + 1 :] if c.type != "operator" or c.value == "*"]
    out = []
    for item in rest:
        if item.type == "import_as_names":
            for sub in item.children:
                if sub.type == "import_as_name":
                    out.append((sub.children[0].value, sub.children[2].value))
                elif sub.type == "name":
                    out.append((sub.value, None))
        elif item.type == "import_as_name":
            out.append((item.children[0].value, item.children[2].value))
        elif item.type == "name":
            out.append((item.value, None))
        elif item.type == "operator" and item.value == "*":
            out.append(("*", None))
    return out


_UNSET = object()


def _position_in_pieces(hit):
    return hit[0], hit[1]


def call_position(call: N.Call) -> tuple:
    """Source order of calls (the index's preorder: a call node starts before the calls
    inside it, and trailers of one node are in order)."""
    return call.node.start_pos, call.index


# -- member aliases (R2, R3) -------------------------------------------------------------
def _member_aliases(env: Env) -> None:
    """``Adam = tf.optimizers.Adam`` / ``keras = tf.keras`` / ``t = tf``: resolved, so the
    sites reached through them are found, and recorded for R2/R3 (which block them)."""
    for piece in env.index.parts():
        candidates = piece.memo.get("member_aliases")
        if candidates is None:
            candidates = piece.memo["member_aliases"] = _alias_candidates(piece)
        for stmt, name, value, src in candidates:
            if src is None:             # ``t = importlib.import_module("tensorflow")``
                env.module_aliases[name] = stmt
                env.aliases[name] = "tensorflow"
                env.tf_names.add(name)
                continue
            q = env.qualname(value)
            if not q or not q.startswith("tensorflow") or src == name:
                continue
            if q == "tensorflow":            # ``t = tf``, ``tf = tf.compat.v1``: the module itself
                root, _, rest = src.partition(".")
                full = env.aliases[root] + ("." + rest if rest else "")
                env.module_aliases[name] = stmt
                env.tf_names.add(name)
                env.aliases[name] = full
                env.tf1 = env.tf1 or full.startswith("tensorflow.compat.v1")
            elif "." in src:
                env.member_aliases[name] = stmt
                env.aliases[name] = q
    env._callee_q.clear()      # the aliases are final from here on
    env._alias_gen = keep.alias_generation(env)


def _alias_candidates(index: Index) -> list:
    """(stmt, name, value, dotted value or None for a module import call) of the
    ``name = a.b`` / ``name = import_module(...)`` assignments: the statement alone decides."""
    out = []
    for stmt, _owner in index.assignments:
        parts = N.assign_parts(stmt)
        if parts is None:
            continue
        targets, value = parts
        if len(targets) != 1 or targets[0].type != "name":
            continue
        src = N.dotted(value)
        if src is not None or _is_module_import_call(value):
            out.append((stmt, targets[0].value, value, src))
    return out


# Roles reachable through a module-like member alias (``keras = tf.keras``).
REACH = {
    "tensorflow.GradientTape": ("tape",),
    "tensorflow.keras": ("optimizer", "lr_schedule", "model"),
    "tensorflow.keras.optimizers": ("optimizer", "lr_schedule"),
    "tensorflow.keras.optimizers.schedules": ("lr_schedule",),
    "tensorflow.keras.applications": ("model",),
    "tensorflow.train": ("optimizer", "checkpoint"),
    "tensorflow.data": ("dataset",),
    "tensorflow.estimator": ("estimator",),
}


def site_role(env: Env, call: N.Call) -> str | None:
    """The role of what `call` constructs, ``"tape"`` for ``tf.GradientTape()``."""
    q = env.callee_qualname(call)
    if q == "tensorflow.GradientTape":
        return "tape"
    r = member_role(q)
    return r[0] if r else None


def rules_for_roles(roles) -> tuple[str, ...]:
    return tuple(sorted({c for r in roles for c in ROLE_RULES.get(r, ())}))


# -- classes ---------------------------------------------------------------------------
def class_bases(cls) -> list:
    """The base-class expressions of a classdef (keyword arguments' values included)."""
    bases = []
    for child in cls.children:
        if child.type == "arglist":
            bases = [c for c in child.children if c.type != "operator"]
        elif child.type in ("name", "atom_expr", "power", "argument") and child is not cls.name:
            bases.append(child)
    out = []
    for base in bases:
        if base.type == "argument" and len(base.children) == 3:
            out.append(base.children[2])
        elif base.type != "argument":
            out.append(base)
    return out


def _collect_classes(env: Env) -> None:
    """Keras model subclasses, directly or through another summarised class (in order)."""
    for node in env.index.classdefs:
        name = node.name.value
        env.all_classes[name] = node
        local = []
        for value in class_bases(node):
            q = env.qualname(value)
            d = N.dotted(value)
            if d in env.all_classes and d != name:
                local.append(d)
            if q in ("tensorflow.keras.Model", "tensorflow.keras.Sequential") or d in env.classes:
                env.classes[name] = node
        env.class_bases[name] = local


# -- assignments -----------------------------------------------------------------------
def _assignment(env: Env, stmt, owner, memo: dict, roles: keep.StaticRoles):
    """Add the statement's bindings; the names its roles read from other bindings (None
    when no role was read from them)."""
    shape = _shape_of(env, memo, stmt, owner)
    if shape is _NOT_BOUND:
        return None
    value, call, targets = shape
    static = roles.of(call, stmt, memo) if call is not None and targets else keep.DYNAMIC
    if static is not keep.DYNAMIC:
        for target in targets:
            _bind(env, stmt, value, target, static)
        return None
    if not targets or (call is None and value.type not in TERNARY):
        for target in targets:           # (a plain value: no role)
            _bind(env, stmt, value, target, None)
        return None
    kept = roles.kept(stmt, memo)
    if kept is not None:
        for target, role in zip(targets, kept[1]):
            _bind(env, stmt, value, target, role)
        return kept[0]
    found = []
    with keep.reading(env) as deps:
        for target in targets:   # (each target's role is found after the previous is bound)
            if call is not None:
                role = env.role_of_call(call, stmt) or _returned_role(env, call)
            else:
                role = _ternary_role(env, value, stmt)
            found.append(role)
            _bind(env, stmt, value, target, role)
    roles.keep(stmt, memo, targets, found, deps)
    return deps


def _bind(env: Env, stmt, value, target, role) -> None:
    name, scope, stop, plain = target
    if role is not None:
        cond = value if value.type in TERNARY else conditional_ancestor(stmt, stop)
        b = Binding(name, role[0], stmt, value, scope, cond, role[1], env.tf1, loop=_loop_ancestor(stmt, stop))
        env.add_binding(b)
        return
    # Not a constructor: keep the assignment as a plain binding for R3/R5/R6 facts.
    env.add_binding(plain)


def _shape_of(env: Env, memo: dict, stmt, owner):
    """The statement's `_assignment_shape`, made once while its piece lives."""
    shape = memo.get(id(stmt))
    if shape is None:
        shape = memo[id(stmt)] = _assignment_shape(env, stmt, owner)
    return shape


def _bound_names(env: Env, piece: Index) -> tuple[set, set]:
    """(the names the piece's assignments bind, those of them other top-level statements
    can see: module- and class-level, ``global``, ``self.x``), kept in its memo (the
    shapes are made on the way). A function's locals are seen only inside the statement
    that holds the function, so a new local changes no answer kept for another statement."""
    names = piece.memo.get("bound_names")
    if names is None:
        every, outer = set(), set()
        memo = piece.memo
        for stmt, owner in piece.assignments:
            shape = _shape_of(env, memo, stmt, owner)
            if shape is not _NOT_BOUND:
                for name, scope, _stop, _plain in shape[2]:
                    every.add(name)
                    if scope is None or scope.type != "funcdef":
                        outer.add(name)
        names = piece.memo["bound_names"] = (every, outer)
    return names


_NOT_BOUND = object()


def _assignment_shape(env: Env, stmt, owner):
    """What the statement alone decides (kept in its piece's memo while it is unchanged):
    the value, its call, and per bound target (name, scope, where its conditions stop,
    its plain binding). `_binding_scope` reads the ``global`` statements of the enclosing
    function, which are in the same top-level statement."""
    parts = N.assign_parts(stmt)
    if parts is None:
        return _NOT_BOUND
    targets, value = parts
    call = env.as_call(value)
    out = []
    for target in targets:
        name = N.dotted(target)
        if name is None:
            continue
        scope = _binding_scope(env, name, stmt, owner)
        if scope is None:
            continue
        stop = scope if scope.type != "classdef" else N.enclosing(stmt, {"funcdef"}) or scope
        out.append((name, scope, stop, Binding(name, "other", stmt, value, scope)))
    return value, call, out


TERNARY = ("test", "ternary")     # parso calls ``a if c else b`` a "test"


def _ternary_role(env: Env, value, at):
    """``opt = Adam() if x else SGD()``: the role both (or either) branches construct."""
    for branch in (value.children[0], value.children[-1]):
        call = env.as_call(branch)
        role = env.role_of_call(call, at) if call is not None else None
        if role is not None:
            return role
    return None


def _binding_scope(env: Env, name: str, stmt, owner):
    if name.startswith("self."):
        if name.count(".") != 1:
            return None
        return N.enclosing(stmt, {"classdef"})
    if "." in name:
        return None
    if owner.type == "classdef":
        return owner              # a class attribute: not visible as a bare name elsewhere
    if owner.type == "lambdef":
        return None
    if owner.type == "funcdef" and name in env.global_names.get(id(owner), ()):
        return env.source.module  # ``global opt`` makes the assignment a module binding
    return N.func_scope_of(stmt)


def _returned_role(env: Env, call: N.Call, depth: int = 0):
    """``model = build_model()`` where build_model returns a Keras model/optimizer/dataset."""
    fn = env.call_target(call) if depth < 4 else None
    if fn is None:
        return None
    for ret in env.index.returns.get(id(fn), []):
        if len(ret.children) < 2:
            continue
        value = ret.children[1]
        inner = env.as_call(value)
        if inner is not None:
            role = env.role_of_call(inner, ret) or _returned_role(env, inner, depth + 1)
            if role:
                return role
        elif value.type == "name":
            if env._deps is not None:
                env._deps.append(value.value)
            b = next((b for b in env.bindings_of(value.value, fn) if b.role != "other"), None)
            if b is not None:
                return b.role, b.detail
    return None


def _with_item(env: Env, item) -> None:
    if len(item.children) < 3:
        return
    call = env.as_call(item.children[0])
    target = N.dotted(item.children[2])
    if call is not None and target and env.callee_qualname(call) == "tensorflow.GradientTape":
        b = Binding(target, "tape", item, item.children[0], N.func_scope_of(item))
        env.tapes.append(b)
        env._by_value.setdefault(id(item.children[0]), b)


# -- conditions ----------------------------------------------------------------------------
def is_main_guard(if_stmt) -> bool:
    """``if __name__ == "__main__":`` (either operand order) — not a condition for R7/T5."""
    test = if_stmt.children[1] if len(if_stmt.children) > 1 else None
    if test is None or test.type != "comparison" or len(test.children) != 3:
        return False
    a, op, b = test.children
    texts = {a.get_code(include_prefix=False), b.get_code(include_prefix=False).strip("'\"")}
    return op.get_code(include_prefix=False).strip() == "==" and "__name__" in texts and \
        any(t.strip("'\"") == "__main__" for t in texts)


def conditional_ancestor(node, stop):
    """The if/match/except (not the main guard) between `node` and `stop`, if any.

    ``try`` bodies are not conditions (the seeds summarise them like straight-line code);
    an ``except`` handler runs only on an error, so it is one.
    """
    cur, child = node.parent, node
    while cur is not None and cur is not stop:
        t = cur.type
        if t == "if_stmt" and not is_main_guard(cur):
            return cur
        if t in ("match_stmt", "case_block"):
            return cur
        if t == "try_stmt" and _in_handler(cur, child):
            return child          # the handler's body (the try body and the other handlers are not under it)
        if t in ("funcdef", "classdef", "lambdef"):
            return None
        child, cur = cur, cur.parent
    return None


def _in_handler(try_stmt, child) -> bool:
    """Is `child` (a direct child of `try_stmt`) the body of an ``except`` clause?"""
    kids = try_stmt.children
    try:
        i = kids.index(child)
    except ValueError:
        return False
    for j in range(i - 1, -1, -1):
        k = kids[j]
        if k.type == "except_clause" or (k.type == "keyword" and k.value == "except"):
            return True
        if k.type == "keyword" and k.value in ("try", "else", "finally"):
            return False
    return False


def _loop_ancestor(node, stop):
    cur = node.parent
    while cur is not None and cur is not stop:
        if cur.type in ("for_stmt", "while_stmt"):
            return cur
        if cur.type in ("funcdef", "classdef", "lambdef"):
            return None
        cur = cur.parent
    return None


# -- restriction facts ---------------------------------------------------------------------
def _restriction_facts(env: Env) -> None:
    """Facts for R2, R3, R5, R6, R7, R9, R10 (reported and explained by restrictions.py)."""
    _r2_r3(env)
    created = ("optimizer", "dataset", "checkpoint")     # (only their groups have facts)
    groups: dict[tuple, list[Binding]] = {}
    for b in env.with_role():
        if b.role in created:
            key = (b.name, id(b.scope))
            if key not in groups:
                groups[key] = env.bindings_of(b.name, b.scope)
    # in the order of each group's first binding, as a walk over all bindings meets them
    first = {id(group[0]): group for group in groups.values()}
    for b in env.bindings:
        if not first:
            break
        group = first.pop(id(b), None)
        if group is not None:
            _creation_facts(env, group)
    _aliases(env)
    _inline_creations(env)
    _r9(env)


def _r2_r3(env: Env) -> None:
    for name, stmt in env.module_aliases.items():
        what = "by a call, not an import" if N.dotted(N.assign_parts(stmt)[1]) is None else f"to `{name}` by an assignment"
        env.problems.append(Problem("R2", stmt, f"the tensorflow module is bound {what}; "
                                    "sites reached through it are not rewritten", SETUP))
    # `tf = something` re-binding the tensorflow module name.
    for b in env.module_bindings():
        if b.name in env.tf_names and b.name not in env.module_aliases \
                and b.name in env.aliases and env.aliases[b.name].startswith("tensorflow"):
            env.problems.append(Problem("R2", b.stmt, f"the tensorflow module name `{b.name}` is re-bound by an assignment", SETUP))
    for name, stmt in env.member_aliases.items():
        q = env.aliases.get(name)
        roles = set(REACH.get(q, ()))
        r = member_role(q)
        if r is not None and not q.startswith("tensorflow.data."):
            roles.add(r[0])              # ``Adam = tf.optimizers.Adam``; not ``AUTOTUNE = tf.data.AUTOTUNE``
        if q == "tensorflow.GradientTape":
            roles.add("tape")
        sites = []
        for call in _calls_through(env, name):
            role = site_role(env, call)
            if role is None:
                continue
            roles.add(role)
            sites.append(call.node)
            b = env.binding_for_value(call.node)
            if b is not None:
                sites.append(b)
        if not roles:
            continue
        src = N.dotted(N.assign_parts(stmt)[1])
        related = [(n, f"created through `{name}` here") for n in sites if not isinstance(n, Binding)][:3]
        env.problems.append(Problem(
            "R3", stmt, f"`{name}` aliases the tensorflow member `{src}`; what is created through it is not rewritten",
            rules_for_roles(roles), sites=sites, related=related))


def _calls_through(env: Env, name: str):
    """Calls whose callee starts with the name `name` (``Adam(...)``, ``keras.optimizers.SGD(...)``)."""
    for leaf in env.index.names.get(name, []):
        parent = leaf.parent
        if parent is None or parent.type not in ("atom_expr", "power") or parent.children[0] is not leaf:
            continue
        for i in range(1, len(parent.children)):
            if N.is_call_trailer(parent.children[i]):
                yield N.Call(parent, i)
                break


def _mentions(node, name: str) -> bool:
    """Does expression `node` read the variable `name` (``ds.batch(32)``, ``wrap(opt)``)?"""
    root = name.split(".")[0]
    for leaf in _leaves(node):
        if leaf.type == "name" and leaf.value == root and is_name_use(leaf):
            if "." not in name:
                return True
            nxt = leaf.get_next_sibling()
            if nxt is not None and nxt.type == "trailer" and nxt.children[0] == "." and \
                    nxt.children[1].value == name.split(".", 1)[1]:
                return True
    return False


def _leaves(node):
    stack = [node]
    while stack:
        cur = stack.pop()
        children = getattr(cur, "children", None)
        if children is None:
            yield cur
        else:
            stack.extend(children)


def _creation_facts(env: Env, group: list[Binding]) -> None:
    made = [b for b in group if b.role in ("optimizer", "dataset", "checkpoint")]
    if not made:
        return
    role = made[0].role
    blocks = ROLE_RULES[role]
    code_once = "R10" if role == "checkpoint" else "R5"
    first = made[0]
    creations = [b for b in made if not _mentions(b.value, b.name)]
    sites = [b for b in group if b.role == role]
    def problem(code, b, msg, related=()):
        env.problems.append(Problem(code, b.stmt, msg, blocks, first, sites=list(sites), related=list(related)))
    counted = []
    for b in creations:
        if b.conditional is not None and role != "checkpoint" and not _train_mode_branch(b):
            what = "a conditional expression" if b.conditional is b.value else "a condition"
            problem("R7", b, f"{role} `{b.name}` is created under {what}",
                    [(_header(b.conditional), "the condition")] if b.conditional is not b.value else [])
        elif b.loop is not None:
            problem(code_once, b, f"{role} `{b.name}` is created inside a loop, once per iteration",
                    [(_header(b.loop), "the loop")])
        else:
            counted.append(b)
    for b in counted[1:]:
        problem(code_once, b, f"{role} `{b.name}` is created more than once", [(counted[0].stmt, "first created here")])
    start = first.stmt.start_pos
    for other in group:
        if other.role == role or other.stmt.start_pos <= start:
            continue
        if other.role == "other" and _mentions(other.value, other.name):
            continue   # ``opt = hvd.DistributedOptimizer(opt)``, ``ds = shard(ds)``: a wrapper, not a new value
        code = "R6" if role != "checkpoint" else "R10"
        env.problems.append(Problem(code, other.stmt, f"{role} variable `{other.name}` is reassigned to another value",
                                    blocks, first, sites=list(sites), related=[(first.stmt, "created here")]))


def _header(stmt):
    """The header of a compound statement (``if x:``, ``for a in b:``, ``except E:`` for a
    handler's body) for related info."""
    if stmt.type in ("suite", "simple_stmt") and stmt.parent is not None and stmt.parent.type == "try_stmt":
        kids = stmt.parent.children
        i = kids.index(stmt)
        j = i - 1
        while j > 0 and not (kids[j].type == "except_clause" or kids[j] == "except"):
            j -= 1
        return _Span(kids[j].start_pos, kids[i - 1].end_pos)
    for child in getattr(stmt, "children", ()):
        if child.type == "operator" and child.value == ":":
            return _Span(stmt.start_pos, child.end_pos)
    return stmt


@dataclass
class _Span:
    """A position range standing in for a node (``source.span`` reads only these)."""

    start_pos: tuple
    end_pos: tuple


def _aliases(env: Env) -> None:
    """``opt2 = opt`` (R5) / ``ckpt2 = ckpt`` (R10): a second name for one object."""
    for b in env.renames():
        src = b.value_dotted()
        target = env.lookup(src, b.stmt, params=False)
        if target is None or target.role not in ("optimizer", "dataset", "checkpoint"):
            continue
        code = "R10" if target.role == "checkpoint" else "R5"
        group = env.bindings_of(target.name, target.scope)
        env.problems.append(Problem(code, b.stmt, f"{target.role} `{src}` is aliased as `{b.name}`",
                                    ROLE_RULES[target.role], target,
                                    sites=[g for g in group if g.role == target.role],
                                    related=[(target.stmt, "created here")]))


INLINE_USES = {"optimizer": ("apply_gradients", "minimize"), "dataset": ("take",), "checkpoint": ("save", "write")}


def _inline_creations(env: Env) -> None:
    """A dataset/optimizer/checkpoint created without an assignment (R5/R10) where a rule
    would have acted on it: ``tf.train.Checkpoint(m=m).save(p)``, ``train(tf.keras.optimizers.Adam())``."""
    for call in env.calls_where(_inline_role):
        role = member_role(env.callee_qualname(call))
        if env.binding_for_value(call.node) is not None:
            continue
        if not call.is_whole():
            nxt = call.node.children[call.index + 1] if call.index + 1 < len(call.node.children) else None
            meth = nxt.children[1].value if nxt is not None and nxt.type == "trailer" and nxt.children[0] == "." else None
            if meth not in INLINE_USES[role[0]]:
                continue
            reason = f"`.{meth}` is called on it directly"
        else:
            if role[0] != "optimizer" or not _is_argument(env, call):
                continue
            reason = "it is passed as an argument"
        code = "R10" if role[0] == "checkpoint" else "R5"
        start = call.node.children[0]
        node = _Span(start.start_pos, call.trailer.end_pos)
        env.problems.append(Problem(code, node, f"`{call.callee_dotted()}(...)` creates {_a(role[0])} without an "
                                    f"assignment ({reason})", ROLE_RULES[role[0]], sites=[call.node]))


def _inline_role(q: str) -> bool:
    role = member_role(q)
    return role is not None and role[0] in INLINE_USES


def _a(word: str) -> str:
    return ("an " if word[0] in "aeiou" else "a ") + word


def _is_argument(env: Env, call: N.Call) -> bool:
    """An inline optimizer passed to something other than ``compile`` or a Horovod wrapper."""
    outer = N.call_with_argument(call.node)
    if outer is None:
        return False
    if outer.method == "compile":
        return False
    q = env.callee_qualname(outer) or ""
    if (member_role(q) or ("",))[0] == "estimator":
        return False            # a premade Estimator's optimizer= (rules/estimator.py wraps it in place)
    return not q.startswith("horovod") and outer.method != "DistributedOptimizer"


def _r9(env: Env) -> None:
    """A global optimizer used by a function defined before it, or changed inside one."""
    module = env.source.module
    for b in env.with_role():
        if b.role != "optimizer" or b.scope is not module:
            continue
        group = [g for g in env.bindings_of(b.name, module) if g.role == "optimizer"]
        if b is not group[0]:
            continue
        reported = set()
        for leaf in env.index.names.get(b.name, []):
            fn = N.enclosing(leaf, {"funcdef"})
            if fn is None or not is_name_use(leaf) or id(fn) in reported or fn.end_pos > b.stmt.start_pos:
                continue
            outer = _outermost_function(fn)
            if outer.end_pos > b.stmt.start_pos or _local_in(env, b.name, fn):
                continue
            reported.add(id(fn))
            env.problems.append(Problem(
                "R9", b.stmt, f"global optimizer `{b.name}` is defined after `{fn.name.value}`, which uses it",
                ("HVD021",), region=fn, related=[(leaf, f"`{fn.name.value}` uses `{b.name}` here")]))
    # ``global opt`` + an assignment inside a function: the optimizer changes after its creation.
    for b in env.module_bindings():
        if b.role not in ("optimizer", "other"):
            continue
        fn = N.enclosing(b.stmt, {"funcdef"})
        if fn is None:
            continue
        group = [g for g in env.bindings_of(b.name, module) if g.role == "optimizer"]
        if not group or (b.role == "other" and b.stmt.start_pos < group[0].stmt.start_pos):
            continue
        env.problems.append(Problem("R9", b.stmt, f"global optimizer `{b.name}` is assigned inside `{fn.name.value}`",
                                    ROLE_RULES["optimizer"], group[0], sites=list(group),
                                    related=[(group[0].stmt, "created here")] if group[0] is not b else []))


def is_name_use(leaf) -> bool:
    """A name leaf that reads a variable: not an attribute (``x.opt``), a keyword argument's
    name, a parameter, an import name or the name a def/class introduces."""
    parent = leaf.parent
    if parent is None:
        return False
    t = parent.type
    if (t == "trailer" and parent.children[0] == ".") or t in ("param", "import_as_name", "dotted_as_name", "dotted_name",
                                "import_from", "import_name", "global_stmt", "nonlocal_stmt"):
        return False
    if t in ("funcdef", "classdef") and parent.children[1] is leaf:
        return False
    if t == "argument" and parent.children[0] is leaf and len(parent.children) > 1 and parent.children[1] == "=":
        return False
    return True


def _outermost_function(fn):
    cur = fn
    while True:
        up = N.enclosing(cur, {"funcdef"})
        if up is None:
            return cur
        cur = up


def _local_in(env: Env, name: str, fn) -> bool:
    """Is `name` a parameter or a local variable of `fn` (so not the global)?"""
    if name in env.param_names(fn):
        return True
    if env.bindings_of(name, fn):
        return not any(g.type == "global_stmt" and any(getattr(c, "value", None) == name for c in g.children)
                       for g in env.index.globals if N.enclosing(g, {"funcdef"}) is fn)
    return False


def _is_module_import_call(value) -> bool:
    children = getattr(value, "children", None)
    if not children or len(children) < 2:
        return False
    before = children[-2]                 # (the callee's last name, before making the `Call`)
    if before.type == "trailer":
        before = before.children[-1]
    if before.type != "name" or before.value not in ("import_module", "__import__"):
        return False
    call = N.as_call(value)
    if call is None or call.callee_dotted() is None:     # (its last name is the one above)
        return False
    arg = call.positional(0)
    text = arg.value.get_code(include_prefix=False).strip("'\"") if arg is not None else ""
    return text in ("tensorflow", "tensorflow.compat.v1")


def _train_mode_branch(b: Binding) -> bool:
    """An Estimator ``model_fn``'s ``if mode == tf.estimator.ModeKeys.TRAIN:`` (Horovod's own
    TF1 Estimator example): the optimizer exists only where training happens and the rules'
    edits stay in that branch, so it is not R7's conditional creation."""
    cond = b.conditional
    if b.role != "optimizer" or cond is None or cond.type != "if_stmt" or cond.children[0] != "if":
        return False
    test = cond.children[1].get_code(include_prefix=False).replace(" ", "")
    return "ModeKeys.TRAIN" in test and "!=" not in test and "not" not in test \
        and b.stmt.start_pos < cond.children[3].end_pos        # in the first branch
