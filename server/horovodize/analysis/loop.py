"""Training-loop summary (seeds 001/003, section 3): what kind of loop a program has.

The seeds' environment σ maps names to summaries, and this module builds them
explicitly (`Summary.env` at module level, `Summary.scopes` per function):

* ``ModuleSummary id σ tl`` for imports — ``import a.b.c`` nests ``a ↦ a.b ↦ a.b.c``,
  ``from a.b import c`` gives ``c ↦ ModuleSummary "a.b.c"``;
* ``FuncSummary tl`` for every function and method, the join ⊔ of its body;
* ``ClassSummary Model|⊥`` for classes (Model when deriving ``tf.keras.Model`` /
  ``keras.Model``, directly or through another summarised class), with its methods;
* ``ValueSummary "model_instance"`` for ``x = SomeModel(...)`` (also Keras
  ``Sequential``/functional models), ``"estimator"``, and ``"instance"`` for other
  local classes, so ``trainer = Trainer(); trainer.train()`` reaches ``Trainer.train``.

A training-loop kind `tl` is a frozenset of kinds: ⊥ is the empty set, GradTape /
Optimizer (Keras ``fit``) / Estimator are singletons, ⊔ is the union. The seeds leave
the join of two different kinds open; here it is kept ("mixed") and restriction T3
reports it. ``tf.GradientTape()`` gives GradTape, ``model.fit`` Keras fit,
``estimator.train`` / ``tf.estimator.train_and_evaluate`` Estimator, and a call to a
summarised function (``f()``, ``self.step()``, ``trainer.run()``, ``g = tf.function(f)``)
that function's kind, so ``train()`` → ``train_step()`` → tape is found.

`sites` are the places the HVD100–HVD102 diagnostics point at, with the loop that drives
them (followed through callers) and related information (``apply_gradients``, the
optimizer, the model).

Requires: env. Provides: `Summary`, `LoopSite` and the summary classes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..incremental import keep, runs
from ..parse import nodes as N
from ..parse.imports import (
    dotted_name,
    from_module,
    from_module_text,
    from_names,
    import_names,
)
from ..parse.scopes import header
from . import session as graph_mode
from .bindings import holds_other_model
from .env import Env
from .gradflow import is_training_tape
from .roles import call_position

TAPE, FIT, ESTIMATOR = "GradientTape", "Keras fit", "Estimator"
SESSION = "Session"            # TF1 graph mode: a train op run in a Session
# Keras training calls: ``fit_generator`` (deprecated, still in Keras 2.15) is ``fit`` on a generator.
FIT_METHODS = ("fit", "fit_generator")
LOOP_CODES = {TAPE: "HVD100", FIT: "HVD101", ESTIMATOR: "HVD102"}
LOOP_CODES[SESSION] = "HVD103"
BOTTOM: frozenset = frozenset()
KERAS_STEP_METHODS = ("train_step",)     # Keras runs these inside fit


def join(*tls: frozenset) -> frozenset:
    """⊔ of training-loop kinds."""
    return frozenset().union(*tls) if tls else BOTTOM


# -- summaries (the values of σ) ----------------------------------------------------------
@dataclass(eq=False)
class ModuleSummary:
    name: str                               # full dotted name, e.g. "tensorflow.keras"
    members: dict | None = None             # submodules imported through it; None = ⊤
    tl: frozenset = BOTTOM
    node: object = None


@dataclass(eq=False)
class FuncSummary:
    name: str
    tl: frozenset
    node: object
    cls: str | None = None                  # the class of a method


@dataclass(eq=False)
class ClassSummary:
    name: str
    model: bool                             # ClassSummary Model (else ClassSummary ⊥)
    node: object
    methods: dict = field(default_factory=dict)     # name -> FuncSummary
    bases: list = field(default_factory=list)       # local base classes
    attrs: dict = field(default_factory=dict)       # self.x -> ValueSummary

    @property
    def arg(self) -> str | None:
        return "Model" if self.model else None


@dataclass(eq=False)
class ValueSummary:
    kind: str                               # "model_instance" | "estimator" | "instance"
    cls: str | None
    node: object                            # the assignment


@dataclass(eq=False)
class LoopSite:
    kind: str
    node: object                       # tape with-item / fit call / train call
    function: object = None            # enclosing funcdef
    driver: object = None              # the for/while that drives it
    related: list = field(default_factory=list)   # (node, message)
    distributed: bool = False

    @property
    def driver_header(self):
        """The driving loop's header (``for x, y in dataset:``) for related information."""
        return header(self.driver) if self.driver is not None else None


@dataclass(eq=False)
class Summary:
    kinds: frozenset
    functions: dict                    # funcdef -> tl
    sites: list[LoopSite]
    hvd_module: str
    module_tl: frozenset = BOTTOM                  # ⊔ of the module's own statements
    graph: object = None                           # TF1 graph-mode facts (session.Graph)
    sigma: object = None                           # () -> (env, scopes), built when first read

    # σ is the seeds' summary of every name; no rule reads it (they ask `functions` and
    # `sites`), so it is built only when asked for, not on every keystroke.
    @property
    def env(self) -> dict:
        """σ after the module: name -> summary."""
        return self._sigma()[0]

    @property
    def scopes(self) -> dict:
        """funcdef -> {name: summary} of its body."""
        return self._sigma()[1]

    def _sigma(self) -> tuple:
        built = self.__dict__.get("_built")
        if built is None:
            built = self.__dict__["_built"] = self.sigma() if self.sigma is not None else ({}, {})
        return built

    @property
    def estimator(self) -> bool:
        return ESTIMATOR in self.kinds

    @property
    def label(self) -> str:
        if not self.kinds:
            return "none"
        return next(iter(self.kinds)) if len(self.kinds) == 1 else "mixed"

    def function(self, name: str) -> FuncSummary | None:
        """A function's or a method's (``"Trainer.train"``) summary by name."""
        if "." in name:
            cls, _, meth = name.partition(".")
            c = self.env.get(cls)
            return c.methods.get(meth) if isinstance(c, ClassSummary) else None
        s = self.env.get(name)
        if isinstance(s, FuncSummary):
            return s
        for scope in self.scopes.values():
            if isinstance(scope.get(name), FuncSummary):
                return scope[name]
        return None

    def scope_of(self, name: str) -> dict:
        """σ of a function's own body, by the function's name (``"main"``, ``"Trainer.train"``)."""
        f = self.function(name)
        return self.scopes.get(f.node, {}) if f is not None else {}


# -- the pass -------------------------------------------------------------------------------
class _RunFunctions:
    """`_Summarizer.solve`'s tables for the functions of a run of pieces (`runs`): the
    calls that read no binding (a Keras ``train_step``, the local functions the other calls
    run) joined once; the functions with calls that may start a loop are left `pending`,
    asked again at each version. Valid for the same pieces and the same call targets of
    the run (`keep.RunTargets`: the same join object, which is made again when the names
    or classes generation changes, as each piece's `_functions` would be)."""

    __slots__ = ("pieces", "targets", "direct", "callees", "callers", "pending", "linked")

    def __init__(self, summarizer, run, targets):
        self.targets = targets
        self.direct: dict = {}
        self.callees: dict = {}
        self.callers: dict = {}
        self.pending: list = []
        self.linked: list = []
        for piece in run:
            for fn, keras, candidates, plain in summarizer._functions(piece):
                key = id(fn)
                if keras:
                    self.direct[key], self.callees[key] = frozenset({FIT}), []
                elif candidates:
                    self.pending.append((fn, candidates, plain))
                else:
                    self.direct[key], self.callees[key] = BOTTOM, list(plain)
                    for t in plain:
                        self.callers.setdefault(id(t), []).append(fn)
                    if plain:
                        self.linked.append(fn)


class _Summarizer:
    def __init__(self, env: Env):
        self.env = env
        idx = env.index
        self.graph = graph_mode.analyze(env)
        self.train_runs = {id(r.call.node): r for r in self.graph.runs}
        self.memo: dict[int, frozenset] = {}
        # (by_method lists a call under its method, or its callee when it has none)
        self.compiled = {c.receiver_dotted() for c in idx.by_method.get("compile", ()) if c.method == "compile"}
        self.hvd_calls: dict[str, list] = {}
        for name in ("DistributedGradientTape", "DistributedOptimizer", "BroadcastGlobalVariablesHook",
                     "BroadcastGlobalVariablesCallback", "broadcast_variables", "allreduce"):
            found = [c for c in idx.by_method.get(name, ()) if c.method == name]
            if found:
                self.hvd_calls[name] = found
        self.solve()

    # -- kinds -----------------------------------------------------------------------
    def solve(self) -> None:
        """FuncSummary of every function: the least fixpoint of tl(f) = direct(f) ⊔ ⊔ tl(callee),
        so mutual recursion gets the kinds of the whole cycle."""
        env = self.env
        direct: dict[int, frozenset] = {}
        callees: dict[int, list] = {}
        callers: dict[int, list] = {}
        pending, linked = [], []            # functions with loop-starting calls; with callees
        kept_runs = runs.Kept(env.index, "functions")
        targets = runs.this_version(env.index, "targets")
        for run in runs.cut(env.index):
            join = kept_runs.get(run)
            made_with = targets.get(id(run[0]))
            if join is not None and join.targets is made_with and made_with is not None:
                kept_runs.put(run, join)
            else:
                join = kept_runs.make(run, _RunFunctions(self, run, made_with), point=False)
            direct.update(join.direct)
            callees.update(join.callees)
            for key, fns in join.callers.items():
                callers.setdefault(key, []).extend(fns)
            pending += join.pending
            linked += join.linked
        for fn, candidates, plain in pending:
            key = id(fn)
            kinds, found = set(), list(plain)
            for call in candidates:
                k = self.direct_kind(call)
                if k:
                    kinds.add(k)
                    continue
                t = env.call_target(call)
                if t is not None:
                    found.append(t)
            for t in found:
                callers.setdefault(id(t), []).append(fn)
            direct[key], callees[key] = frozenset(kinds), found
            if found:
                linked.append(fn)
        tl = dict(direct)
        work = linked                       # (the least fixpoint: any order gives it)
        while work:
            fn = work.pop()
            new = direct[id(fn)].union(*(tl.get(id(t), BOTTOM) for t in callees[id(fn)]))
            if new != tl[id(fn)]:
                tl[id(fn)] = new
                work += callers.get(id(fn), [])
        self.memo = tl

    def _functions(self, piece) -> list:
        """(function, a Keras train_step?, its calls that may start a loop themselves, the
        local functions its other calls run) for each function of one index piece. Only
        the first kind of call reads bindings (`direct_kind`); the rest is kept in the
        piece's memo while its call targets are (`keep.keep_targets`) and the class
        structure and names are the same."""
        env = self.env
        targets = piece.memo.get("targets")
        names, classes = keep.names_generation(env), keep.class_generation(env)
        kept = piece.memo.get("functions")
        if kept is not None and targets is not None and kept[0] is names and kept[1] is classes \
                and kept[2] is targets[2]:
            return kept[3]
        local = env.local_calls(piece)
        out = []
        for fn in piece.funcdefs:
            candidates, plain = [], []
            for call in local.get(id(fn), ()):
                if keep.may_start_loop(env, call):
                    candidates.append(call)
                else:
                    target = env.call_target(call)
                    if target is not None:
                        plain.append(target)
            out.append((fn, self.keras_step(fn), candidates, plain))
        if targets is not None:
            piece.memo["functions"] = (names, classes, targets[2], out)
        return out

    def function(self, fn) -> frozenset:
        return self.memo.get(id(fn), BOTTOM)

    def owned(self, owner) -> frozenset:
        """⊔ over the calls of one body (nested functions, classes and lambdas excluded)."""
        kinds: set = set()
        for call in self.env.index.owned_calls.get(id(owner), ()):
            kinds |= self.call(call)
        return frozenset(kinds)

    def keras_step(self, fn) -> bool:
        """A ``train_step`` override of a Keras model subclass: Keras runs it inside fit."""
        if fn.name.value not in KERAS_STEP_METHODS or not self.env.is_method(fn):
            return False
        cls = N.enclosing(fn, {"classdef"})
        return cls is not None and cls.name.value in self.env.classes

    def direct_kind(self, call: N.Call) -> str | None:
        """The seeds' summary_E for the calls that start a loop themselves."""
        env, method = self.env, call.method
        if method == "run" and id(call.node) in self.train_runs:
            return SESSION
        q = env.callee_qualname(call)
        if q == "tensorflow.GradientTape":
            b = env.binding_for_value(call.node)
            return TAPE if b is None or b.role != "tape" or is_training_tape(env, b) else None
        if q == "tensorflow.estimator.train_and_evaluate":
            return ESTIMATOR
        if method in FIT_METHODS and self.is_model(call):
            return FIT
        if method == "train" and env.lookup(call.receiver_dotted(), call.node, "estimator"):
            return ESTIMATOR
        return None

    def call(self, call: N.Call) -> frozenset:
        k = self.direct_kind(call)
        if k:
            return frozenset({k})
        target = self.env.call_target(call)
        return self.function(target) if target is not None else BOTTOM

    def is_model(self, call: N.Call) -> bool:
        receiver = call.receiver_dotted()
        return bool(receiver) and (self.env.lookup(receiver, call.node, "model") is not None
                                   or receiver in self.compiled) and not holds_other_model(self.env, receiver, call.node)

    # -- drivers and related information ---------------------------------------------------
    def driver(self, node, fn):
        """The innermost for/while running `node`, following the callers of its function."""
        loop = N.loop_around(node)
        if loop is not None:
            return loop
        seen, queue = {id(fn)}, [fn] if fn is not None else []
        while queue:
            f = queue.pop(0)
            for call in self.env.callers(f):
                loop = N.loop_around(call.node)
                if loop is not None:
                    return loop
                caller = N.enclosing(call.node, {"funcdef"})
                if caller is not None and id(caller) not in seen:
                    seen.add(id(caller))
                    queue.append(caller)
        return None

    def apply_sites(self, fn) -> list:
        """``apply_gradients`` calls of the step: in `fn`, else in its callers, else its callees."""
        env = self.env
        owner = fn if fn is not None else env.source.module

        def applies(o):
            return [c for c in env.index.owned_calls.get(id(o), ()) if c.method == "apply_gradients"]

        found = applies(owner)
        if found or fn is None:
            return found
        seen, frontier = {id(fn)}, [fn]
        for _ in range(3):
            nxt = []
            for f in frontier:
                for call in env.callers(f):
                    caller = N.enclosing(call.node, {"funcdef"}) or env.source.module
                    if id(caller) not in seen:
                        seen.add(id(caller))
                        nxt.append(caller)
                        found += applies(caller)
            if found:
                return found
            frontier = [f for f in nxt if f.type == "funcdef"]
        for call in env.index.owned_calls.get(id(fn), ()):
            target = env.call_target(call)
            if target is not None:
                found += applies(target)
        return found

    def tape_wrapped(self, tape) -> bool:
        scope = N.func_scope_of(tape.stmt)
        for call in self.hvd_calls.get("DistributedGradientTape", ()):
            arg = call.positional(0)
            if arg is not None and N.dotted(arg.value) == tape.name and N.func_scope_of(call.node) is scope:
                return True
        # gradients averaged by hand (Horovod's RL-style `[hvd.allreduce(g) for g in grads]`)
        grads = {N.dotted(c.node.parent.children[0]) for c in self.env.index.by_method.get("gradient", ())
                 if c.method == "gradient" and c.receiver_dotted() == tape.name and c.node.parent is not None
                 and c.node.parent.type == "expr_stmt" and N.func_scope_of(c.node) is scope}
        grads.discard(None)
        for call in self.hvd_calls.get("allreduce", ()):
            if N.func_scope_of(call.node) is scope and self.env.horovod():
                stmt = N.statement_of(call.node)
                if any(leaf.type == "name" and leaf.value in grads for leaf in N.walk(stmt)):
                    return True
        return False

    def fit_distributed(self, call: N.Call) -> bool:
        env = self.env
        if not env.horovod():
            return False
        if self.hvd_calls.get("DistributedOptimizer"):
            return True            # a distributed-optimizer loop (seed restriction T2)
        code = call.trailer.get_code(include_prefix=False)
        if "BroadcastGlobalVariables" in code:
            return True
        arg = call.keyword("callbacks") or call.positional(5 if call.method == "fit" else 4)
        b = env.lookup(N.dotted(arg.value), call.node) if arg is not None else None
        return b is not None and "BroadcastGlobalVariables" in b.value.get_code(include_prefix=False)

    def estimator_distributed(self, call: N.Call) -> bool:
        return self.env.horovod() and bool(self.hvd_calls.get("DistributedOptimizer")
                                           or self.hvd_calls.get("BroadcastGlobalVariablesHook"))


def summarize(env: Env) -> Summary:
    s = _Summarizer(env)
    module = env.source.module
    functions = {fn: s.function(fn) for fn in env.index.funcdefs}
    module_tl = s.owned(module)
    kinds = module_tl or join(*functions.values())
    sites = _sites(env, s)
    if not kinds:
        kinds = frozenset(site.kind for site in sites)
    return Summary(kinds, functions, sites, _hvd_module(env, kinds), module_tl, graph=s.graph,
                   sigma=lambda: _environment(env, s, functions))


def _hvd_module(env: Env, kinds: frozenset) -> str:
    if env.horovod():
        return env.hvd_module
    if FIT in kinds and TAPE in kinds and not (ESTIMATOR in kinds or SESSION in kinds or env.tf1):
        # fit and a tape loop in one program: horovod.tensorflow.keras for fit (callbacks),
        # horovod.tensorflow imported beside it for the tape (rules/tapes.py)
        return "horovod.tensorflow.keras"
    if TAPE in kinds or ESTIMATOR in kinds or SESSION in kinds or env.tf1:
        return "horovod.tensorflow"
    if FIT in kinds:
        return "horovod.tensorflow.keras"
    if env.keras_import is not None and env.tf_import is None:
        return "horovod.tensorflow.keras"
    return "horovod.tensorflow"


# -- σ ------------------------------------------------------------------------------------
def _environment(env: Env, s: _Summarizer, functions: dict) -> tuple[dict, dict]:
    """σ after the module (imports, functions, classes, values) and σ of each function body."""
    module = env.source.module
    sigma: dict = {}
    scopes: dict = {fn: {} for fn in env.index.funcdefs}
    for node in env.index.imports:
        scope = N.func_scope_of(node)
        if scope is module:
            if N.enclosing(node, {"classdef"}) is None:
                _import_summaries(node, sigma)
        elif scope in scopes:
            _import_summaries(node, scopes[scope])
    classes: dict = {}
    for cls in env.index.classdefs:
        name = cls.name.value
        c = ClassSummary(name, name in env.classes, cls, bases=list(env.class_bases.get(name, [])))
        classes[id(cls)] = c
        owner = N.enclosing(cls, {"funcdef"})
        (scopes.get(owner, {}) if owner is not None else sigma)[name] = c
    owners = env.index.def_owner
    for fn in env.index.funcdefs:
        up = owners.get(id(fn))            # (the function, class or module it is defined in)
        if up is None or up.type not in ("funcdef", "classdef"):
            up = N.enclosing(fn, {"funcdef", "classdef"})
        if up is not None and up.type == "classdef":
            f = FuncSummary(fn.name.value, functions[fn], fn, up.name.value)
            classes[id(up)].methods[fn.name.value] = f
        else:
            f = FuncSummary(fn.name.value, functions[fn], fn)
            (scopes[up] if up is not None else sigma)[fn.name.value] = f
    for b in env.bindings:
        v = _value_summary(env, b)
        if v is None:
            continue
        if b.scope.type == "classdef":
            if b.name.startswith("self.") and id(b.scope) in classes:
                classes[id(b.scope)].attrs.setdefault(b.name, v)
        elif b.scope is module:
            sigma[b.name] = v
        elif b.scope in scopes:
            scopes[b.scope][b.name] = v
    return sigma, scopes


def _value_summary(env: Env, b) -> ValueSummary | None:
    if b.role == "model":
        return ValueSummary("model_instance", b.detail or None, b.stmt)
    if b.role == "estimator":
        return ValueSummary("estimator", b.detail or None, b.stmt)
    cls = env.instance_class(b)
    if cls is not None:
        return ValueSummary("instance", cls, b.stmt)
    return None


def _import_summaries(node, sigma: dict) -> None:
    """The seeds' summary_A: ``import a.b.c`` → σ[a ↦ ModuleSummary a [b ↦ … [c ↦ ⊤]]];
    ``from a.b import c as d`` → σ[d ↦ ModuleSummary "a.b.c"]."""
    try:
        if node.type == "import_name":
            for dotted_node, alias in import_names(node):
                full = dotted_name(dotted_node)
                if alias:
                    sigma[alias] = ModuleSummary(full, None, BOTTOM, node)
                    continue
                parts = full.split(".")
                top = sigma.get(parts[0])
                if not isinstance(top, ModuleSummary) or top.name != parts[0]:
                    top = sigma[parts[0]] = ModuleSummary(parts[0], None, BOTTOM, node)
                cur = top
                for i in range(1, len(parts)):
                    if cur.members is None:
                        cur.members = {}
                    nxt = cur.members.get(parts[i])
                    if nxt is None:
                        nxt = cur.members[parts[i]] = ModuleSummary(".".join(parts[: i + 1]), None, BOTTOM, node)
                    cur = nxt
        else:
            module = from_module(node)
            if module is None:        # relative: keep the dots (the seeds only have level 0)
                module = from_module_text(node)
            for name, alias in from_names(node):
                if name != "*":
                    full = f"{module}{name}" if module.endswith(".") else f"{module}.{name}"
                    sigma[alias or name] = ModuleSummary(full, None, BOTTOM, node)
    except (AttributeError, IndexError):      # an error-recovered import statement
        return


# -- sites ---------------------------------------------------------------------------------
def _sites(env: Env, s: _Summarizer) -> list[LoopSite]:
    sites: list[LoopSite] = []
    keras_steps: dict[str, list] = {}
    for tape in env.tapes:
        fn = N.enclosing(tape.stmt, {"funcdef"})
        if not is_training_tape(env, tape):
            continue          # its gradients reach no optimizer (gradflow): not a training loop
        if fn is not None and s.keras_step(fn):
            keras_steps.setdefault(N.enclosing(fn, {"classdef"}).name.value, []).append(tape)
            continue
        site = LoopSite(TAPE, tape.stmt, fn, s.driver(tape.stmt, fn))
        site.distributed = env.horovod() and s.tape_wrapped(tape)
        seen: set = set()
        for call in s.apply_sites(fn):
            receiver = call.receiver_dotted() or "optimizer"
            site.related.append((call.node, f"`{receiver}.apply_gradients` applies this tape's gradients"))
            b = env.lookup(call.receiver_dotted(), call.node, "optimizer")
            if b is not None and id(b) not in seen:
                seen.add(id(b))
                site.related.append((b.stmt, f"optimizer `{b.name}` is created here"))
        sites.append(site)
    candidates = env.calls_with_method(*FIT_METHODS, "train")
    candidates += env.calls_where(lambda q: q == "tensorflow.estimator.train_and_evaluate")
    candidates.sort(key=call_position)
    for call in candidates:
        if call.method in FIT_METHODS and s.is_model(call):
            sites.append(_fit_site(env, s, call, keras_steps))
        elif (call.method == "train" and env.lookup(call.receiver_dotted(), call.node, "estimator")) or \
                env.callee_qualname(call) == "tensorflow.estimator.train_and_evaluate":
            sites.append(_estimator_site(env, s, call))
    sites += _session_sites(env, s)
    sites.sort(key=lambda site: site.node.start_pos)
    return sites


def _fit_site(env: Env, s: _Summarizer, call: N.Call, keras_steps: dict) -> LoopSite:
    fn = N.enclosing(call.node, {"funcdef"})
    site = LoopSite(FIT, call.node, fn, None, distributed=s.fit_distributed(call))
    receiver = call.receiver_dotted()
    b = env.lookup(receiver, call.node, "model")
    if b is not None:
        site.related.append((b.stmt, f"model `{b.name}` is created here"))
    for compile_call in env.index.by_method.get("compile", ()):
        if compile_call.method != "compile" or compile_call.receiver_dotted() != receiver:
            continue
        if b is not None and env.lookup(receiver, compile_call.node, "model") is not b:
            continue
        site.related.append((compile_call.node, f"`{receiver}.compile` sets the optimizer this fit trains with"))
        arg = compile_call.keyword("optimizer") or compile_call.positional(0)
        ob = env.lookup(N.dotted(arg.value), compile_call.node, "optimizer") if arg is not None else None
        if ob is not None:
            site.related.append((ob.stmt, f"optimizer `{ob.name}` is created here"))
        break
    cls = env.instance_class(b) if b is not None else None
    for name in ([cls] if cls else []):
        for c in env._mro(name):
            for tape in keras_steps.get(c.name.value, []):
                site.related.append((tape.stmt, f"the custom `train_step` of `{c.name.value}` runs inside this fit"))
    return site


def _estimator_site(env: Env, s: _Summarizer, call: N.Call) -> LoopSite:
    fn = N.enclosing(call.node, {"funcdef"})
    site = LoopSite(ESTIMATOR, call.node, fn, None, distributed=s.estimator_distributed(call))
    receiver = call.receiver_dotted() if call.method == "train" else None
    if receiver is None:          # tf.estimator.train_and_evaluate(estimator, train_spec, eval_spec)
        arg = call.positional(0) or call.keyword("estimator")
        receiver = N.dotted(arg.value) if arg is not None else None
    b = env.lookup(receiver, call.node, "estimator")
    if b is not None:
        site.related.append((b.stmt, f"estimator `{b.name}` is created here"))
        ctor = N.as_call(b.value)
        arg = ctor.keyword("model_fn") if ctor is not None else None
        model_fn = env.function_named(N.dotted(arg.value), b.stmt) if arg is not None and N.dotted(arg.value) else None
        if model_fn is not None:
            for ob in env.with_role():
                if ob.role == "optimizer" and ob.scope is model_fn:
                    site.related.append((ob.stmt, f"optimizer `{ob.name}` is created here"))
    return site


def _session_sites(env: Env, s: _Summarizer) -> list[LoopSite]:
    """HVD103: each ``sess.run`` that fetches a train op, with the session and the train op."""
    out = []
    hvd_done = env.horovod() and bool(s.hvd_calls.get("DistributedOptimizer") or s.hvd_calls.get(
        "BroadcastGlobalVariablesHook") or env.index.by_method.get("broadcast_global_variables"))
    for run in s.graph.runs:
        fn = N.enclosing(run.call.node, {"funcdef"})
        site = LoopSite(SESSION, run.call.node, fn, s.driver(run.call.node, fn), distributed=hvd_done)
        if run.session is not None:
            what = "monitored session" if run.session.kind == "monitored" else "session"
            site.related.append((run.session.call.node, f"the {what} `{run.session.name or 'session'}` is created here"))
        for name, op in s.graph.train_ops.items():
            if any(n.type == "name" and n.value == name for n in N.walk(run.call.trailer)):
                site.related.append((op.node, f"`{name}` is the train op this step runs"))
        out.append(site)
    return out
