"""Horovod facts: what a program already does with Horovod, computed once per analysis.

Rules ask these facts instead of matching text, so a program that is already distributed
(in any import style: ``import horovod.keras as hvd``, ``from horovod import tensorflow as
hvd``, ``from horovod.tensorflow import DistributedGradientTape``) gets no second set-up, no
second scaling, no second broadcast, and its edits use its own module name.

Requires: env (aliases, index of calls/assignments, scopes, call targets). Read by rules,
the engine (whole-file fix) and the misuse diagnostics (HVD200-HVD208).
"""

from __future__ import annotations

from ..incremental import keep, runs
from ..parse import nodes as N
from ..parse.imports import import_bindings, import_names
from ..parse.scopes import is_main_guard
from .callbacks import CallbackEntry, CallbackFacts, CallbackList, _in_loop
from .effects import Effects
from .env import Env
from .keras3 import ADAPTER_APIS as APIS, adapter_definitions

# Importable Horovod modules a program may use as "hvd" (edits are written against one).
HVD_MODULES = ("horovod.tensorflow.keras", "horovod.tensorflow", "horovod.keras")
SIZE_APIS = frozenset({"size", "local_size", "cross_size"})
RANK_APIS = frozenset({"rank", "local_rank", "cross_rank"})
# API calls that need a running Horovod (hvd.init() first).
NEEDS_INIT = frozenset({
    "size", "rank", "local_rank", "local_size", "cross_rank", "cross_size", "allreduce", "grouped_allreduce",
    "allgather", "broadcast", "broadcast_variables", "broadcast_global_variables", "broadcast_object",
    "alltoall", "join", "is_homogeneous", "mpi_threads_supported",
})
BROADCASTS = frozenset({
    "callbacks.BroadcastGlobalVariablesCallback", "BroadcastGlobalVariablesHook", "broadcast_variables",
    "broadcast_global_variables", "broadcast", "broadcast_object",
    # elastic states broadcast the model and optimizer from rank 0 on every (re)start
    "elastic.TensorFlowKerasState", "elastic.KerasState", "elastic.TensorFlowState", "elastic.ObjectState",
})
AVERAGING = frozenset({"DistributedOptimizer", "DistributedGradientTape", "allreduce", "grouped_allreduce",
                       "PartialDistributedGradientTape", "PartialDistributedOptimizer"})
STEP_KEYWORDS = frozenset({"steps_per_epoch", "epochs", "steps", "max_steps", "validation_steps", "last_step",
                           "num_steps", "path", "count", "num_shards", "index"})
DATA_METHODS = frozenset({"shard", "take", "skip", "range", "load_data", "fit", "train", "from_tensor_slices",
                          "list_files", "TFRecordDataset", "load"})
LAUNCHERS = ("horovod.run", "tensorflow.app.run", "absl.app.run")


def _names_written(run) -> set:
    """The names written anywhere in a run of pieces."""
    return set().union(*(piece.names for piece in run))


class HvdFacts(CallbackFacts):
    """Horovod facts of one analysed file (see the module docstring)."""

    def __init__(self, env: Env):
        self.env = env
        self.locals: dict[str, str] = {}        # local name -> full horovod dotted path
        self.imports: list = []                 # the import statements that bind Horovod
        self.module_name: str | None = None     # the program's Horovod module as written ("hvd")
        self.module: str | None = None          # its full name ("horovod.tensorflow.keras")
        self._collect_imports()
        self._collect_adapters()
        self.api_calls: dict[str, list[N.Call]] = {}
        self._api_of: dict[int, str] = {}
        if self.locals:
            pieces = [piece for run, names in runs.pure(env.index, "names", _names_written)
                      if not names.isdisjoint(self.locals) for piece in run]
            for piece in pieces:
                if not any(local in piece.names for local in self.locals):
                    continue           # (no call in it can reach Horovod: none names it)
                for call, _owner in piece.calls:
                    api = self._api(call)
                    if api is not None:
                        self._api_of[id(call.node), call.index] = api
                        self.api_calls.setdefault(api, []).append(call)
        self._assigns: dict[tuple, list] = {}   # (name, id(scope)) -> its assignments (`_assigns_in`)
        self._no_flow: dict = {}        # apis -> name keys from which no such call flows (`flows_from`)
        self._memo: dict = {}
        self._effects: Effects | None = None

    @property
    def effects(self) -> Effects:
        """What calls, local functions and local classes do (writes, reads, output...)."""
        if self._effects is None:
            self._effects = Effects(self.env)
        return self._effects

    # -- imports -----------------------------------------------------------------------
    def _collect_imports(self) -> None:
        for node in self.env.imports:
            found = False
            if node.type == "import_name":
                for dotted_node, alias in import_names(node):
                    full = dotted_node.get_code(include_prefix=False).replace(" ", "")
                    if not full.startswith("horovod"):
                        continue
                    found = True
                    if alias:
                        self.locals[alias] = full
                        self._module_candidate(alias, full, node)
                    else:                       # ``import horovod.tensorflow``: used as written
                        self.locals.setdefault(full.split(".")[0], full.split(".")[0])
                        self._module_candidate(full, full, node)
            else:
                for local, full in import_bindings(node):
                    if full.startswith("horovod"):
                        found = True
                        self.locals[local] = full
                        self._module_candidate(local, full, node)
            if found:
                self.imports.append(node)

    def _collect_adapters(self) -> None:
        """The keras3 target's adapters (rules/keras3_adapters.py) in a program that imports
        Horovod: a module-level ``def DistributedOptimizer`` / ``class
        BroadcastGlobalVariablesCallback`` ... whose docstring starts ``hvd.<API> for Keras 3``
        is that Horovod API here, as a from-import of it would be."""
        if not self.locals:
            return
        for name in adapter_definitions(self.env.source.module):
            self.locals.setdefault(name, APIS[name])

    def _module_candidate(self, local: str, full: str, node) -> None:
        if full not in HVD_MODULES:
            return
        # the first module import at module level wins (a keras one over a plain one)
        top = N.func_scope_of(node).type == "file_input"
        better = self.module_name is None or (top and not self._module_top) or (
            top == self._module_top and full.endswith("keras") and not self.module.endswith("keras"))
        if better:
            self.module_name, self.module, self._module_top = local, full, top

    _module_top = False

    @property
    def uses_horovod(self) -> bool:
        return bool(self.locals)

    @property
    def keras_flavour(self) -> bool:
        return bool(self.module and self.module.endswith("keras"))

    def hint_codes(self) -> frozenset:
        """Codes that stay individual quick fixes, out of the whole-file fix: in a program
        distributed by hand, prints and progress on every rank; once gradients are averaged,
        an unscaled rate too (Horovod's own benchmark keeps SGD(0.01): the user's choice)."""
        if not self.uses_horovod:
            return frozenset()
        codes = set(HINTS_WHEN_DISTRIBUTED)
        if self.averages_gradients:
            codes |= {"HVD010", "HVD013"}
            if self.divides_work():   # a warm-up `take(1)` beside a divided loop is not a training bound
                codes |= {"HVD040", "HVD041", "HVD042", "HVD043"}
        return frozenset(codes)

    def divides_work(self) -> bool:
        """Some data or step position already depends on ``size()``/``rank()``: a shard, a
        divided take/steps/epochs, a per-rank file or slice (Horovod's examples)."""
        if "divides" not in self._memo:
            apis = SIZE_APIS | RANK_APIS
            found = any(n.type == "subscript" and self.flows_from(n, apis) for n in N.walk(self.env.source.module))
            for call, _owner in self.env.index.calls:
                if found:
                    break
                if self.api(call) is not None:
                    continue
                for arg in call.args:
                    if (arg.keyword in STEP_KEYWORDS or (arg.keyword is None and call.method in DATA_METHODS)) \
                            and self.flows_from(arg.value, apis):
                        found = True
                        break
            self._memo["divides"] = found
        return self._memo["divides"]

    # -- API calls ---------------------------------------------------------------------
    def _api(self, call: N.Call) -> str | None:
        d = call.callee_dotted()
        if d is None:
            return None
        root, _, rest = d.partition(".")
        full = self.locals.get(root)
        if full is None:
            return None
        return api_name(full + ("." + rest if rest else ""))

    def api(self, call: N.Call) -> str | None:
        """The Horovod API a call reaches (``init``, ``size``, ``DistributedOptimizer``,
        ``callbacks.BroadcastGlobalVariablesCallback``, ``elastic.run``, ``run``), else None."""
        return self._api_of.get((id(call.node), call.index))

    def calls(self, *apis: str) -> list[N.Call]:
        out = [c for a in apis for c in self.api_calls.get(a, ())]
        return sorted(out, key=lambda c: c.node.start_pos) if len(apis) > 1 else out

    def api_of_node(self, node) -> str | None:
        call = N.as_call(node)
        return self.api(call) if call is not None else None

    @property
    def init_calls(self) -> list[N.Call]:
        return self.calls("init")

    @property
    def averages_gradients(self) -> bool:
        return any(self.api_calls.get(a) for a in AVERAGING)

    @property
    def broadcasts(self) -> list[N.Call]:
        return self.calls(*BROADCASTS)

    @property
    def elastic(self) -> bool:
        return any(a.startswith("elastic.") for a in self.api_calls)

    def tape_wrapped(self, tape_name: str, scope) -> bool:
        """The tape is given to ``DistributedGradientTape`` (or gradients are allreduced) in `scope`."""
        for call in self.calls("DistributedGradientTape", "PartialDistributedGradientTape"):
            arg = call.positional(0) or call.keyword("gradtape")
            if arg is not None and N.dotted(arg.value) == tape_name and N.func_scope_of(call.node) is scope:
                return True
        return any(N.func_scope_of(c.node) is scope for c in self.calls("allreduce", "grouped_allreduce"))

    def optimizer_wrapped(self, name: str | None, value=None) -> bool:
        """``DistributedOptimizer(<name>)`` anywhere, or the optimizer built inside one."""
        for call in self.calls("DistributedOptimizer", "PartialDistributedOptimizer"):
            arg = call.positional(0) or call.keyword("optimizer")
            if arg is None:
                continue
            if (name and N.dotted(arg.value) == name) or (value is not None and arg.value is value):
                return True
        if value is not None:
            outer = N.call_with_argument(value)
            if outer is not None and self.api(outer) in ("DistributedOptimizer", "PartialDistributedOptimizer"):
                return True
        return False

    # -- dataflow ----------------------------------------------------------------------
    def assignments(self, name: str, at) -> list:
        """(statement, value, augmented operator or '') assigning `name`, in the innermost
        scope that assigns it, seen from `at`. Tuple targets and ``+=`` count."""
        if name.startswith("self."):
            cls = N.enclosing(at, {"classdef"})
            return self._assigns_in(name, cls) if cls is not None else []
        for scope in self.env.scopes_for(at):
            found = self._assigns_in(name, scope)
            if found:
                return found
            if scope.type == "funcdef" and name in self.env.param_names(scope):
                return [(None, arg, "") for arg in self._param_values(scope, name)]
        return []

    def _assigns_in(self, name: str, scope) -> list:
        """The assignments of `name` whose scope is `scope`, in source order, from each index
        piece's table of what its statements assign (`_assigned`, kept with the piece):
        not a table of every assignment of the file per keystroke (HVD207 reads a few
        names on each, ``tf`` among them)."""
        key = (name, id(scope))
        found = self._assigns.get(key)
        if found is None:
            found = self._assigns[key] = []
            want = _MODULE if scope.type == "file_input" else scope
            for stmt, value, op, where in self._assigned_anywhere(name):
                if where is want:
                    found.append((stmt, value, op))
        return found

    def _assigned_anywhere(self, name: str) -> list:
        """Every assignment of `name` in the file, in source order. With the buffer's memo the
        list outlives the keystroke (`IndexMemo.by_name`): only a name that a changed
        statement assigns is looked up in every piece again."""
        index = self.env.index
        memo = index.history if index.version is not None else None
        table = memo.by_name("assigned", _assigned) if memo is not None else {}
        found = table.get(name)
        if found is None:
            found = [entry for piece in index.parts() for entry in _assigned(piece).get(name, ())]
            if memo is not None:
                table[name] = found
        return found

    def _param_values(self, fn, name: str) -> list:
        """The argument expressions callers pass for parameter `name` (and its default)."""
        out = []
        try:
            params = fn.get_params()
        except Exception:  # noqa: BLE001 - error-recovered signature
            return out
        names = [p.name.value for p in params]
        pos = names.index(name)
        default = params[pos].default
        if default is not None:
            out.append(default)
        bound = self.env.is_method(fn)
        for call in self.env.callers(fn):
            arg = call.keyword(name)
            if arg is None and not call.has_star():
                arg = call.positional(pos - (1 if bound else 0))
            if arg is not None:
                out.append(arg.value)
        return out

    def flows_from(self, node, apis: frozenset, at=None) -> bool:
        """Some value flowing into `node` (names, arithmetic, calls, function arguments) is a
        call of one of the Horovod `apis`. (`factor` != 0 implies this: it follows the same
        assignments, fewer of them.) When the answer is no, no name the search went through
        reaches one either: they are not searched again for these `apis` (HVD207 asks this
        of every argument in the file)."""
        seen: set = set()
        if self._any(node, apis, at, seen):
            return True
        self._no_flow.setdefault(apis, set()).update(seen)
        return False

    def _any(self, node, apis, at, seen) -> bool:
        dead = self._no_flow.get(apis, ())
        for n in N.walk(node):
            call = N.as_call(n) if n.type in ("atom_expr", "power") else None
            if call is not None and self.api(call) in apis:
                return True
            if n.type == "name" and _is_load(n):
                name = _dotted_at(n)
                key = (name, id(N.func_scope_of(n)))
                if key in seen or key in dead:
                    continue
                seen.add(key)
                for _stmt, value, _op in self.assignments(name, n):
                    if value is not None and self._any(value, apis, value, seen):
                        return True
        return False

    def contains_size(self, node) -> bool:
        return self.flows_from(node, SIZE_APIS)

    def rank_dependent(self, node) -> bool:
        return self.flows_from(node, RANK_APIS)

    def mentions_horovod(self, node) -> bool:
        """Any Horovod call flows into `node`."""
        return self.uses_horovod and self._any(node, _AnyApi(), None, set())

    def size_factor(self, node) -> int:
        """How many times ``hvd.size()`` multiplies `node` along its dataflow (max over the
        assignments a name may come from): 1 is scaled once, 2 twice."""
        return self.factor(node, SIZE_APIS, None)

    def factor(self, node, apis, at, depth: int = 0, seen: frozenset = frozenset()) -> int:
        if node is None or depth > 12:
            return 0
        t = node.type
        call = N.as_call(node) if t in ("atom_expr", "power") else None
        if call is not None:
            if self.api(call) in apis:
                return 1
            # float(x), tf.constant(x), max(x, ...): the factor of the arguments
            return max((self.factor(a.value, apis, at, depth + 1, seen) for a in call.args), default=0)
        if t == "name" or (t in ("atom_expr", "power") and N.dotted(node) and N.dotted(node).startswith("self.")):
            name = N.dotted(node)
            key = (name, id(N.func_scope_of(node)))
            if key in seen or not _is_load(node if t == "name" else node.children[0]):
                return 0
            seen = seen | {key}
            best, aug = 0, 0
            for stmt, value, op in self.assignments(name, node):
                if stmt is not None and stmt.start_pos > node.start_pos and N.func_scope_of(stmt) is N.func_scope_of(node) \
                        and not _in_loop(node):
                    continue     # assigned after this use
                f = self.factor(value, apis, at, depth + 1, seen)
                if op in ("*=",):
                    aug += f
                elif op in ("/=", "//="):
                    aug -= f
                else:
                    best = max(best, f)
            return best + aug
        if t == "term":
            total, sign = 0, 1
            for child in node.children:
                if child.type == "operator":
                    sign = -1 if child.value in ("/", "//") else 1
                    continue
                total += sign * self.factor(child, apis, at, depth + 1, seen)
            return total
        if t == "atom" and node.children[0] == "(" and len(node.children) == 3:
            return self.factor(node.children[1], apis, at, depth + 1, seen)
        if t in ("arith_expr", "test", "factor", "power", "atom_expr"):
            return max((self.factor(c, apis, at, depth + 1, seen) for c in node.children
                        if c.type != "operator" and c.type != "keyword"), default=0)
        return 0

    # -- rank guards -------------------------------------------------------------------
    def is_rank_test(self, test) -> bool:
        return self.uses_horovod and self.rank_dependent(test)

    def under_rank_guard(self, node) -> bool:
        """`node` runs only on some ranks: inside an ``if`` (or a branch of it) whose test
        depends on the rank, or after ``if hvd.rank() != 0: return`` in its function."""
        if not self.uses_horovod:
            return False
        cur = node
        while cur.parent is not None:
            parent = cur.parent
            if parent.type == "if_stmt" and cur.type in ("suite", "simple_stmt") and cur is not parent.children[1]:
                if any(self.is_rank_test(c) for c in _if_tests(parent, cur)):
                    return True
            if parent.type == "suite" or parent.type == "file_input":
                for sibling in parent.children:
                    if sibling is cur:
                        break
                    if sibling.type == "if_stmt" and _returns_early(sibling) and self.is_rank_test(sibling.children[1]):
                        return True
            if parent.type in ("funcdef", "lambdef", "classdef"):
                return False
            cur = parent
        return False

    def guard_tests(self) -> list:
        """Every ``if`` whose test depends on the rank."""
        return [n for n in N.walk(self.env.source.module)
                if n.type == "if_stmt" and self.is_rank_test(n.children[1])] if self.uses_horovod else []

    # -- when init() runs --------------------------------------------------------------
    def before_init(self, node) -> bool:
        """`node` is module-level code that can run before any ``hvd.init()``: a launcher's
        branch (``horovod.run(train)``), or code above the init statement. Functions are
        judged where they run, so only module-level code is answered here."""
        if not self.uses_horovod or not self.init_calls:
            return False
        if N.enclosing(node, {"funcdef", "lambdef", "classdef"}) is not None:
            return False
        for point in self._init_points():
            if point.start_pos <= node.start_pos and self._same_path(point, node):
                return False
        return True

    def _init_points(self) -> list:
        """Module-level nodes after which init has run: init calls at module level, and
        module-level calls of functions that (transitively) call init."""
        if "init_points" in self._memo:
            return self._memo["init_points"]
        inits = self.init_calls
        fns = {id(N.enclosing(c.node, {"funcdef"})) for c in inits}
        fns.discard(id(None))
        points = [c.node for c in inits if N.enclosing(c.node, {"funcdef", "lambdef"}) is None]
        resolved = keep.resolved_calls(self.env)
        for _ in range(4):      # callers of init-calling functions, a few levels up
            grew = False
            for call, target in resolved:           # (the other calls run no local function)
                if id(target) not in fns:
                    continue
                fn = N.enclosing(call.node, {"funcdef"})
                if fn is None:
                    if call.node not in points:
                        points.append(call.node)
                elif id(fn) not in fns:
                    fns.add(id(fn))
                    grew = True
            if not grew:
                break
        self._memo["init_points"] = points
        return points

    @staticmethod
    def _same_path(point, node) -> bool:
        """`point` runs on every path that reaches `node`: `node` is in the same block as
        one of `point`'s enclosing statements (not in another branch of an ``if``)."""
        cur = point
        blocks = []
        while cur is not None:
            if cur.type in ("suite", "file_input"):
                blocks.append(cur)
            cur = cur.parent
        cur = node
        while cur is not None:
            if cur.type in ("suite", "file_input") and any(cur is b for b in blocks):
                return True
            cur = cur.parent
        return False

    def launcher_calls(self) -> list[N.Call]:
        """``horovod.run(fn, ...)``, ``app.run(main)``: calls that start workers elsewhere."""
        out = list(self.calls("run"))
        for call, _owner in self.env.index.calls:
            if call.method == "run" and (self.env.callee_qualname(call) or "") in LAUNCHERS[1:]:
                out.append(call)
        return out

class _AnyApi(frozenset):
    """Membership test that accepts every Horovod API name."""

    def __contains__(self, item) -> bool:
        return item is not None


def api_name(full: str) -> str | None:
    """``horovod.tensorflow.keras.callbacks.X`` -> ``callbacks.X``; ``horovod.run`` -> ``run``."""
    if not full.startswith("horovod"):
        return None
    rest = full[len("horovod"):].lstrip(".")
    for prefix in ("tensorflow.keras.", "tensorflow.", "keras."):
        if rest.startswith(prefix):
            return rest[len(prefix):]
    if rest in ("tensorflow", "tensorflow.keras", "keras"):
        return ""
    return rest


_MODULE = object()       # the module scope in `_assigned` (a piece outlives its module node)


def _assigned(piece) -> dict:
    """name -> (statement, value, op, scope or `_MODULE`) of the assignments in
    one index piece: its statements alone decide it, so it lives in the piece's memo."""
    table = piece.memo.get("assigned")
    if table is None:
        table = piece.memo["assigned"] = {}
        for stmt, _owner in piece.assignments:
            for target, value, op in _assign_items(stmt):
                for name in _target_names(target):
                    scope = _scope_for_target(name, stmt)
                    where = _MODULE if scope is not None and scope.type == "file_input" else scope
                    table.setdefault(name, []).append((stmt, value, op, where))
    return table


def _assign_items(stmt):
    """(target, value, op) of an assignment or augmented assignment statement."""
    ch = stmt.children
    parts = N.assign_parts(stmt)
    if parts is not None:
        targets, value = parts
        return [(t, value, "") for t in targets]
    if len(ch) == 3 and ch[1].type == "operator" and ch[1].value.endswith("=") and ch[1].value != "==":
        return [(ch[0], ch[2], ch[1].value)]
    return []


def _target_names(target) -> list[str]:
    d = N.dotted(target)
    if d is not None:
        return [d] if "." not in d or (d.startswith("self.") and d.count(".") == 1) else []
    if target.type in ("atom", "testlist_star_expr", "exprlist", "testlist_comp"):
        out = []
        for c in target.children:
            if c.type != "operator":
                out += _target_names(c)
        return out
    if target.type == "star_expr":
        return _target_names(target.children[1])
    return []


def _scope_for_target(name: str, stmt):
    if name.startswith("self."):
        return N.enclosing(stmt, {"classdef"})
    return N.func_scope_of(stmt)


def _dotted_at(leaf) -> str:
    nxt = leaf.get_next_sibling()
    if leaf.value == "self" and nxt is not None and nxt.type == "trailer" and nxt.children[0] == ".":
        return f"self.{nxt.children[1].value}"
    return leaf.value


def _is_load(leaf) -> bool:
    """A name read, not an attribute name, keyword name or a def/param name."""
    parent = leaf.parent
    if parent is None:
        return False
    if parent.type == "trailer":
        return False
    if parent.type == "argument" and parent.children[0] is leaf and len(parent.children) > 1 \
            and parent.children[1] == "=":
        return False
    if parent.type in ("funcdef", "classdef", "param", "import_from", "dotted_name", "import_as_name"):
        return False
    return True


def _if_tests(if_stmt, suite) -> list:
    """The tests that decide whether `suite` (one branch of `if_stmt`) runs."""
    ch = if_stmt.children
    tests = []
    for i, c in enumerate(ch):
        if c is suite:
            # the branch's own test precedes its ':'; an else branch depends on all tests
            if i >= 3 and ch[i - 3] in ("if", "elif"):
                return [ch[i - 2]]
            return tests
        if c in ("if", "elif"):
            tests.append(ch[i + 1])
    return tests


def _returns_early(if_stmt) -> bool:
    suite = if_stmt.children[3] if len(if_stmt.children) > 3 else None
    if suite is None or len(if_stmt.children) > 4:
        return False
    code = suite.get_code(include_prefix=False).strip()
    return code in ("return", "return None", "continue", "break") or code.startswith("return") and "\n" not in code


def build_facts(env: Env) -> HvdFacts:
    return HvdFacts(env)


__all__ = ["HvdFacts", "CallbackEntry", "CallbackList", "build_facts", "api_name", "is_main_guard"]

# Codes whose edits are hints in a program already distributed by hand: shown as quick
# fixes, never applied by the whole-file fix (Horovod's own examples print on every rank).
HINTS_WHEN_DISTRIBUTED = frozenset({"HVD030", "HVD051", "HVD044"})
