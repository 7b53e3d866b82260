"""Training-loop summary (seeds 001/003, section 3): what kind of loop a program has.

Each function and method gets ``FuncSummary tl``, the join of its body: a
``tf.GradientTape()`` with-item gives GradTape, ``model.fit`` Keras fit,
``estimator.train`` Estimator, and a call to a summarised function (``f()``,
``self.step()``, ``trainer.run()``) that function's kind — so a loop spread over
``train()`` → ``train_step()`` → tape is found. Kinds are sets; the join is the union, and
more than one kind is "mixed". Module-level statements give the module's kind; a file
that only defines its loop (never calls it) falls back to the join of its functions.

Requires: env. Provides: `Summary` (kinds, loop sites with the loop that drives them).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from . import nodes as N
from .env import Env

TAPE, FIT, ESTIMATOR = "GradientTape", "Keras fit", "Estimator"
LOOP_CODES = {TAPE: "HVD100", FIT: "HVD101", ESTIMATOR: "HVD102"}


@dataclass
class LoopSite:
    kind: str
    node: object                       # tape with-item / fit call / train call
    function: object = None            # enclosing funcdef
    driver: object = None              # the for/while that drives it
    related: list = field(default_factory=list)   # (node, message)
    distributed: bool = False


@dataclass
class Summary:
    kinds: frozenset
    functions: dict                    # funcdef -> frozenset of kinds
    sites: list[LoopSite]
    hvd_module: str

    @property
    def estimator(self) -> bool:
        return ESTIMATOR in self.kinds

    @property
    def label(self) -> str:
        if not self.kinds:
            return "none"
        return next(iter(self.kinds)) if len(self.kinds) == 1 else "mixed"


class _Summarizer:
    def __init__(self, env: Env):
        self.env = env
        self.memo: dict[int, frozenset] = {}
        self.active: set[int] = set()
        self.methods: dict[str, dict[str, object]] = {}
        for node in N.walk(env.source.module):
            if node.type == "classdef":
                self.methods[node.name.value] = {
                    f.name.value: f for f in N.walk(node) if f.type == "funcdef" and N.enclosing(f, {"classdef"}) is node
                }
        self.wrapped = self._tf_function_aliases()
        self.compiled = {c.receiver_dotted() for c in N.calls_in(env.source.module) if c.method == "compile"}

    def _tf_function_aliases(self) -> dict[str, str]:
        """``g = tf.function(f)`` makes g summarise as f."""
        out = {}
        for b in self.env.bindings:
            call = N.as_call(b.value)
            if call is not None and self.env.qualname(call.callee_parts) == "tensorflow.function":
                arg = call.positional(0)
                if arg is not None and N.dotted(arg.value):
                    out[b.name] = N.dotted(arg.value)
        return out

    # -- kinds ---------------------------------------------------------------------
    def function(self, fn) -> frozenset:
        key = id(fn)
        if key in self.memo:
            return self.memo[key]
        if key in self.active:
            return frozenset()
        self.active.add(key)
        kinds = self.body(fn.children[-1])
        self.active.discard(key)
        self.memo[key] = kinds
        return kinds

    def body(self, node) -> frozenset:
        kinds: set = set()
        stack = list(getattr(node, "children", ()))
        while stack:
            cur = stack.pop()
            if cur.type in ("funcdef", "classdef", "lambdef"):
                continue
            if cur.type == "with_item":
                call = N.as_call(cur.children[0])
                if call is not None and self.env.qualname(call.callee_parts) == "tensorflow.GradientTape":
                    kinds.add(TAPE)
            if cur.type in ("atom_expr", "power"):
                for i, child in enumerate(cur.children):
                    if i and N.is_call_trailer(child):
                        kinds |= self.call(N.Call(cur, i))
            stack.extend(getattr(cur, "children", ()))
        return frozenset(kinds)

    def call(self, call: N.Call) -> frozenset:
        env, method, receiver = self.env, call.method, call.receiver_dotted()
        if method == "fit" and receiver and (env.lookup(receiver, call.node, "model") or receiver in self.compiled):
            return frozenset({FIT})
        if method == "train" and env.lookup(receiver, call.node, "estimator"):
            return frozenset({ESTIMATOR})
        target = self.target(call)
        return self.function(target) if target is not None else frozenset()

    def target(self, call: N.Call):
        """The local function or method a call runs, if the summary can tell."""
        callee = call.callee_dotted()
        if callee is None:
            return None
        callee = self.wrapped.get(callee, callee)
        if "." not in callee:
            fns = [f for f in self.env.functions.get(callee, []) if N.enclosing(f, {"classdef"}) is None]
            return fns[-1] if fns else None
        obj, _, meth = callee.rpartition(".")
        if obj == "self":
            cls = N.enclosing(call.node, {"classdef"})
            return self.methods.get(cls.name.value, {}).get(meth) if cls is not None else None
        b = self.env.lookup(obj, call.node)
        if b is not None:
            inner = N.as_call(b.value)
            cls = inner.callee_dotted() if inner is not None else None
            return self.methods.get(cls or "", {}).get(meth)
        return None


def summarize(env: Env) -> Summary:
    s = _Summarizer(env)
    module = env.source.module
    functions = {}
    for fns in env.functions.values():
        for fn in fns:
            functions[fn] = s.function(fn)
    kinds = s.body(module)
    if not kinds:
        kinds = frozenset().union(*functions.values()) if functions else frozenset()
    sites = _sites(env, s)
    if not kinds:
        kinds = frozenset(site.kind for site in sites)
    return Summary(kinds, functions, sites, _hvd_module(env, kinds))


def _hvd_module(env: Env, kinds: frozenset) -> str:
    if env.horovod():
        return env.hvd_module
    if TAPE in kinds or ESTIMATOR in kinds or env.tf1:
        return "horovod.tensorflow"
    if FIT in kinds:
        return "horovod.tensorflow.keras"
    if env.keras_import is not None and env.tf_import is None:
        return "horovod.tensorflow.keras"
    return "horovod.tensorflow"


def _sites(env: Env, s: _Summarizer) -> list[LoopSite]:
    from .rules.gradient_tape import gradient_sites, _wrapped  # shared matchers
    from .rules.base import RuleContext

    sites = []
    ctx = RuleContext(env.source, env, None, lambda *a: False)
    grads = list(gradient_sites(ctx))
    for tape in env.tapes:
        with_stmt = N.enclosing(tape.stmt, {"with_stmt"})
        fn = N.enclosing(tape.stmt, {"funcdef"})
        site = LoopSite(TAPE, tape.stmt, fn, _driver(s, tape.stmt, fn))
        site.distributed = env.horovod() and with_stmt is not None and _wrapped(ctx, tape, with_stmt)
        scope = N.func_scope_of(tape.stmt)
        for call, b, receiver in grads:
            if N.func_scope_of(call.node) is scope:
                site.related.append((call.node, f"`{receiver}.apply_gradients` applies this tape's gradients"))
        sites.append(site)
    for call in N.calls_in(env.source.module):
        kind = s.call(call) if call.method in ("fit", "train") else frozenset()
        if kind not in (frozenset({FIT}), frozenset({ESTIMATOR})):
            continue
        k = next(iter(kind))
        fn = N.enclosing(call.node, {"funcdef"})
        site = LoopSite(k, call.node, fn, None)
        code = call.trailer.get_code(include_prefix=False)
        site.distributed = env.horovod() and ("BroadcastGlobalVariables" in code)
        b = env.lookup(call.receiver_dotted(), call.node)
        if b is not None:
            site.related.append((b.stmt, f"`{b.name}` is created here"))
        sites.append(site)
    return sites


def _driver(s: _Summarizer, node, fn, depth: int = 0):
    """The innermost for/while running `node`, following callers of its function."""
    loop = N.enclosing(node, {"for_stmt", "while_stmt"})
    if loop is not None and (fn is None or N.enclosing(loop, {"funcdef"}) is fn or _inside(loop, fn)):
        return loop
    if fn is None or depth > 8:
        return None
    for call in N.calls_in(s.env.source.module):
        if s.target(call) is fn:
            caller = N.enclosing(call.node, {"funcdef"})
            found = _driver(s, call.node, caller, depth + 1)
            if found is not None:
                return found
    return None


def _inside(node, ancestor) -> bool:
    cur = node
    while cur is not None:
        if cur is ancestor:
            return True
        cur = cur.parent
    return False
