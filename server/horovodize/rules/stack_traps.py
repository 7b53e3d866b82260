"""Stack traps: programs a Horovod conversion would silently break. Warnings, no quick fix.

* HVD090 — Keras 3 / ``keras_core``: Horovod 0.28 supports Keras 2 only (``tf.keras`` in
  TensorFlow <= 2.15, or ``tf_keras`` with ``TF_USE_LEGACY_KERAS=1``). The conversion
  proceeds; the warning names the Keras-3-only APIs used (``keras.ops`` ...), which have
  no tf_keras twin.
* HVD091 — a ``@tf.function(jit_compile=True)`` step (or ``compile(jit_compile=True)``)
  that the conversion gives Horovod collectives: XLA cannot compile them unless
  Horovod's XLA ops are registered (``HOROVOD_ENABLE_XLA_OPS=1`` before TensorFlow loads).
* HVD092 — a ``tf.distribute`` program: training is already distributed; Horovod on top
  would reduce twice and fight over devices. `analysis.strategy` makes it a restriction
  fact that blocks every rule in the file (the engine reports it through `diagnostics`).

These run after the rules (the engine calls `merged` once all findings are known), so a
warning survives a conversion that is refused as a whole.

Requires: env, loop, restrictions (`Problem`), keras3, callables.
"""

from __future__ import annotations

from typing import Iterator

from ..analysis.callables import callee_name
from ..analysis.keras3 import (
    backend_not_tensorflow,
    keras3_imports,
    keras3_only_uses,
    optimizer_apply_uses,
)
from ..analysis.loop import FIT, LOOP_CODES, TAPE
from ..analysis.strategy import STRATEGY_METHODS, strategy_message, strategy_uses
from ..parse import nodes as N
from .base import SEVERITY_RESTRICTION, Finding, Related, RuleContext

RULES = {
    "HVD090": ("keras3-version-trap", "Keras 3 / keras_core program: Horovod supports Keras 2 only"),
    "HVD091": ("xla-step-collectives", "jit-compiled training step gets Horovod collectives"),
    "HVD092": ("tf-distribute-program", "program already distributed with tf.distribute: no Horovod edit"),
}
WARNINGS = tuple(RULES)


def diagnostics(ctx: RuleContext) -> list[Finding]:
    """Every stack-trap warning of the file (HVD090–HVD092)."""
    out = list(_strategy(ctx)) + list(_keras3(ctx)) + list(_xla(ctx))
    return out


def merged(ctx: RuleContext, findings: list[Finding]) -> list[Finding]:
    """`findings` plus the trap warnings. Under a tf.distribute strategy (HVD092) nothing is
    converted and the loop is not single-GPU: its loop finding (HVD100-103) is dropped."""
    traps = diagnostics(ctx)
    if any(t.code == "HVD092" for t in traps):
        findings = [f for f in findings if f.code not in LOOP_CODES.values()]
    return findings + traps


def _warn(ctx: RuleContext, code: str, node, message: str, related=()) -> Finding:
    start, end = ctx.source.span(node)
    return Finding(code, start, end, message, SEVERITY_RESTRICTION, None,
                   related=[Related(*ctx.source.span(n), m) for n, m in related])


# -- HVD092 -----------------------------------------------------------------------------------
def _strategy(ctx: RuleContext) -> Iterator[Finding]:
    env = ctx.env
    uses = [(call.node, f"`{call.receiver_dotted()}.{call.method}` runs under the strategy")
            for call in env.calls_with_method("scope", "run", *STRATEGY_METHODS)
            if call.receiver_dotted() and "strateg" in call.receiver_dotted().lower()][:3]
    for node, name in strategy_uses(env):
        yield _warn(ctx, "HVD092", node, strategy_message(name), uses)


# -- HVD090 -----------------------------------------------------------------------------------
def _keras3(ctx: RuleContext) -> Iterator[Finding]:
    env, summary = ctx.env, ctx.summary
    imports = keras3_imports(env)
    if not imports or summary is None or not summary.sites:
        return
    node, root = imports[0]
    if root == "keras_core":
        what = "`keras_core` is Keras 3"
    else:
        what = "standalone `keras` is Keras 3 from TensorFlow 2.16 on"
    message = (f"{what}; Horovod 0.28 supports Keras 2 only: run on TensorFlow <= 2.15, or install tf_keras, "
               "set TF_USE_LEGACY_KERAS=1 and `import tf_keras as keras`")
    only = keras3_only_uses(env)
    related = []
    if only:
        names = ", ".join(f"`{api}`" for api in list(only)[:4])
        message += f"; {names} {'has' if len(only) == 1 else 'have'} no tf_keras twin (rewrite with `tf.*` ops)"
        related = [(leaf, f"`{api}` exists only in Keras 3") for api, leaf in list(only.items())[:3]]
    applies = optimizer_apply_uses(env)
    if applies:
        receiver = applies[0].receiver_dotted()
        message += (f"; `{receiver}.apply(grads, vars)` is Keras 3 only: write "
                    f"`{receiver}.apply_gradients(zip(grads, vars))` (the initial broadcast, HVD021, follows that call)")
        related.append((applies[0].node, "Keras 3 optimizer API"))
    backend = backend_not_tensorflow(env)
    if backend:
        message += f"; KERAS_BACKEND={backend}: Horovod's TensorFlow ops need the tensorflow backend"
    yield _warn(ctx, "HVD090", node, message, related)


# -- HVD091 -----------------------------------------------------------------------------------
def jit_compiled(env, fn) -> object | None:
    """The ``jit_compile=True`` argument that makes `fn` an XLA-compiled step, if any."""
    parent = fn.parent
    if parent is not None and parent.type == "decorated":
        decorators = parent.children[0]
        items = decorators.children if decorators.type == "decorators" else [decorators]
        for dec in items:
            arg = _jit_argument(env, dec)
            if arg is not None:
                return arg
    return None


def _jit_argument(env, dec):
    """``@tf.function(jit_compile=True)`` (also ``experimental_compile=True``)."""
    for call in N.calls_in(dec):
        if callee_name(env, call) == "tensorflow.function":
            return _true_keyword(call)
    return None


def _true_keyword(call):
    for key in ("jit_compile", "experimental_compile"):
        arg = call.keyword(key)
        if arg is not None and arg.value.get_code(include_prefix=False).strip() == "True":
            return arg.node
    return None


def _xla(ctx: RuleContext) -> Iterator[Finding]:
    env, summary = ctx.env, ctx.summary
    if summary is None or not any(not s.distributed for s in summary.sites) and not env.horovod():
        return
    steps = {}
    for fn, tl in summary.functions.items():
        if TAPE in tl:
            arg = jit_compiled(env, fn)
            if arg is not None:
                steps[id(fn)] = (fn, arg)
    # ``step = tf.function(train_step, jit_compile=True)``
    for call in env.index.by_method.get("function", ()):
        if callee_name(env, call) != "tensorflow.function":
            continue
        arg = _true_keyword(call)
        first = call.positional(0)
        target = N.as_call(first.value) if first is not None else None
        d = N.dotted(first.value) if first is not None and target is None else None
        fn = env.function_named(d, call.node) if d and "." not in d else None
        if d and d.startswith("self.") and env.class_of(call.node) is not None:
            fn = env.method(env.class_of(call.node).name.value, d[5:])
        if arg is not None and fn is not None and TAPE in summary.functions.get(fn, ()):
            steps.setdefault(id(fn), (fn, arg))
    for fn, arg in steps.values():
        if ctx.blocked("HVD020", fn.name):
            continue          # nothing Horovod goes into this step
        yield _warn(ctx, "HVD091", arg, _xla_message(f"training step `{fn.name.value}` is compiled with XLA"),
                    [(fn.name, "the step that gets Horovod's collectives")])
    # ``tf.config.optimizer.set_jit(True)``: XLA auto-clustering of every function
    for call in env.index.by_method.get("set_jit", ()):
        arg = call.positional(0) or call.keyword("enabled")
        text = arg.value.get_code(include_prefix=False).strip() if arg is not None else ""
        if env.callee_qualname(call) == "tensorflow.config.optimizer.set_jit" and text not in ("False", "0", "None", "") \
                and not ctx.blocked("HVD020", call.node) and not ctx.blocked("HVD011", call.node):
            yield _warn(ctx, "HVD091", call.node, _xla_message("`set_jit` turns on XLA auto-clustering of the training step"))
    if FIT in summary.kinds:
        for call in env.index.by_method.get("compile", ()):
            arg = _true_keyword(call) if call.method == "compile" else None
            if arg is not None and not ctx.blocked("HVD011", call.node):
                yield _warn(ctx, "HVD091", arg, _xla_message("`compile(jit_compile=True)` compiles the fit step with XLA"))


def _xla_message(what: str) -> str:
    return (f"{what}, and the conversion puts Horovod collectives in it, which XLA cannot compile: drop "
            "`jit_compile=True`, or set HOROVOD_ENABLE_XLA_OPS=1 before TensorFlow is imported")


__all__ = ["RULES", "WARNINGS", "diagnostics", "merged"]
