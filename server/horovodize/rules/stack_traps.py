"""Stack traps: programs a Horovod conversion would silently break (contract points 10, 11).
Warnings; HVD090 and HVD091 carry the fix the conversion applies.

* HVD090 — Keras 3 / ``keras_core``, on every such import line: Horovod 0.28's Keras layer
  runs Keras 2 only (``tf.keras`` on TensorFlow <= 2.15, or ``tf_keras`` with
  ``TF_USE_LEGACY_KERAS=1``). A program using only Keras 2 API gets each import rewritten to
  the Keras target (`keras_target`); one using Keras-3-only API is converted for the
  ``keras3`` target (its imports stay, ``KERAS_BACKEND=tensorflow`` is set above them, the
  Horovod entry points are adapters: rules/keras3_adapters.py); what that target cannot run
  either blocks the whole conversion (`analysis.keras3.keras3_problems`), and the warning says
  which.
* HVD091 — a ``@tf.function(jit_compile=True)`` step (or ``compile(jit_compile=True)``)
  that the conversion gives Horovod collectives: XLA cannot compile them (Horovod 0.28 has
  no XLA kernel for broadcast, an allreduce one on GPU only): the fix removes
  ``jit_compile=True`` (XLA changes speed, not what the step computes). ``set_jit(True)``
  auto-clustering only warns.
* HVD092 — a ``tf.distribute`` program: training is already distributed; Horovod on top
  would reduce twice and fight over devices. `analysis.strategy` makes it a restriction
  fact that blocks every rule in the file (the engine reports it through `diagnostics`).
* HVD093 — TensorFlow 1 API through ``import tensorflow as tf`` (``tf.Session``,
  ``tf.placeholder``, ``tf.train.AdamOptimizer``) or ``tensorflow.examples.tutorials``:
  absent from TensorFlow 2.15, so the program cannot run on the pinned stack;
  `analysis.tf1_api` makes it a fact that blocks every rule, the message says to run
  tf_upgrade_v2 (or use ``tf.compat.v1``) / load MNIST from ``tf.keras.datasets``.

* HVD094 — a Keras 3 archive layout read after Keras 2's ``get_file`` (``os.path.join(
  os.path.dirname(get_file(fname, untar=True)), fname)``): Keras 2.15 extracts into the
  cache folder itself, so the folder read does not exist on the pinned stack;
  `analysis.keras_layout` makes it a fact that blocks every rule, the message gives the
  Keras 2 path.

These run after the rules (the engine calls `merged` once all findings are known), so a
warning survives a conversion that is refused as a whole.

Requires: env, loop, restrictions (`Problem`), keras3, keras_layout, callables.
"""

from __future__ import annotations

from typing import Iterator

from ..analysis.callables import callee_name
from ..analysis.keras3 import ADAPTER_REASON, KERAS3_ROOTS, keras3_blockers, keras3_imports
from ..analysis.loop import FIT, LOOP_CODES, TAPE
from ..analysis.strategy import STRATEGY_METHODS, strategy_message, strategy_uses
from ..analysis.keras_layout import keras_layout_messages
from ..analysis.tf1_api import tf1_api_messages
from ..parse import nodes as N
from ..parse.source import Edit
from .base import SEVERITY_RESTRICTION, Finding, Fix, Related, RuleContext
from .keras_target import BACKEND_ENV, backend_env_edit, legacy_env_edit, rewrite_edits, target_name

RULES = {
    "HVD090": ("keras3-version-trap", "Keras 3 / keras_core import: rewritten to Keras 2 (tf.keras / tf_keras), or Keras 3 kept on the keras3 target (Keras-3-only API); another backend blocks"),
    "HVD091": ("xla-step-collectives", "jit-compiled training step gets Horovod collectives: jit_compile removed"),
    "HVD092": ("tf-distribute-program", "program already distributed with tf.distribute: no Horovod edit"),
    "HVD093": ("tf1-api-on-tf2", "TensorFlow 1 API the pinned TensorFlow 2.15 lacks: no Horovod edit until it is upgraded"),
    "HVD094": ("keras3-archive-layout", "Keras 3 get_file archive layout read on Keras 2 (TF 2.15): no Horovod edit until the path is the Keras 2 one"),
}
WARNINGS = tuple(RULES)


def diagnostics(ctx: RuleContext, converting: bool = True) -> list[Finding]:
    """Every stack-trap warning of the file (HVD090–HVD092); with `converting` (the
    conversion is not refused) HVD090 and HVD091 carry their fixes."""
    out = list(_strategy(ctx)) + list(_keras3(ctx, converting)) + list(_xla(ctx, converting)) + list(_tf1_api(ctx))
    out += [_warn(ctx, "HVD094", node, message, related) for node, message, related in keras_layout_messages(ctx.env)]
    return out


def merged(ctx: RuleContext, findings: list[Finding], converting: bool = True) -> list[Finding]:
    """`findings` plus the trap warnings. Under a tf.distribute strategy (HVD092) nothing is
    converted and the loop is not single-GPU: its loop finding (HVD100-103) is dropped."""
    traps = diagnostics(ctx, converting)
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
    for node, name, test in strategy_uses(env):
        yield _warn(ctx, "HVD092", node, strategy_message(name, test), uses)


# -- HVD093 -----------------------------------------------------------------------------------
def _tf1_api(ctx: RuleContext) -> Iterator[Finding]:
    for node, message, related in tf1_api_messages(ctx.env):
        yield _warn(ctx, "HVD093", node, message, related)


# -- HVD090 -----------------------------------------------------------------------------------
def _keras3(ctx: RuleContext, converting: bool) -> Iterator[Finding]:
    """One HVD090 per import line of standalone ``keras`` / ``keras_core``: with the rewrite to
    the Keras target as its fix when the program uses only Keras 2 API, else (a Keras-3-only
    use blocks the conversion, `analysis.keras3.keras3_problems`) with what blocks it."""
    env, summary = ctx.env, ctx.summary
    imports = keras3_imports(env)
    if not imports or summary is None or not summary.sites and not env.horovod():
        return
    target = ctx.keras_target
    blockers = keras3_blockers(env, target)
    if target == "keras3":
        yield from _keras3_target(ctx, imports, blockers, converting)
        return
    related = [(node, f"{what} (Keras 3 only)") for node, what, _ in blockers[:3]]
    # the tf_keras target's TF_USE_LEGACY_KERAS=1 goes above the first import (after `__future__`)
    first = min((n for n in env.imports if "__future__" not in n.get_code(include_prefix=False)),
                key=lambda n: n.start_pos)
    legacy = target == "tf_keras" and not _sets_legacy_keras(env)
    for node, root in imports:
        if root == "keras_core":
            what = "`keras_core` is Keras 3 on every TensorFlow"
        else:
            what = "standalone `keras` is Keras 3 from TensorFlow 2.16 on (Keras 2 = tf.keras on TF <= 2.15)"
        message = f"{what}, and Horovod 0.28 runs Keras 2 only"
        fix = None
        if blockers:
            node0, _, reason = blockers[0]
            more = f" (and {len(blockers) - 1} more Keras-3-only use(s))" if len(blockers) > 1 else ""
            message += f": not converted, line {node0.start_pos[0]}: {reason}{more}"
        else:
            edits = rewrite_edits(ctx.source, node, KERAS3_ROOTS, target)
            if legacy and node is imports[0][0]:
                edits.insert(0, legacy_env_edit(ctx.source, first))
            new = _rewritten(ctx.source, node, edits)
            message += f": its imports are rewritten to {target_name(target)}"
            if converting and edits:
                fix = Fix(f"import Keras 2 ({target}): `{new}`", edits, needs_setup=False)
        start, end = ctx.source.span(node)
        yield Finding("HVD090", start, end, message, SEVERITY_RESTRICTION, fix,
                      related=[Related(*ctx.source.span(n), m) for n, m in related])


def _keras3_target(ctx: RuleContext, imports, blockers, converting: bool) -> Iterator[Finding]:
    """HVD090 on the keras3 target: the imports stay Keras 3; the first one's fix sets
    ``KERAS_BACKEND=tensorflow`` above the file's imports (Horovod's TensorFlow ops need that
    backend). A use no target runs (`keras3_blockers`) refuses the conversion, named here."""
    env = ctx.env
    why = getattr(ctx, "keras_target_reason", None)
    chosen = f", chosen for {why}" + ("" if why.startswith(ADAPTER_REASON) else ": no Keras 2 has it") if why else ""
    related = [(node, what) for node, what, _ in blockers[:3]]
    for i, (node, root) in enumerate(imports):
        what = "`keras_core` is Keras 3" if root == "keras_core" else "standalone `keras` is Keras 3 (TensorFlow >= 2.16)"
        fix = None
        if blockers:
            node0, _, reason = blockers[0]
            more = f" (and {len(blockers) - 1} more)" if len(blockers) > 1 else ""
            message = f"{what}, which no stack runs under Horovod here: not converted, line {node0.start_pos[0]}: {reason}{more}"
        else:
            message = (f"{what}: the keras3 target (Keras 3 on its TensorFlow backend{chosen}): Horovod's "
                       "TensorFlow ops, through adapters written into the program")
            edit = backend_env_edit(ctx.source, env) if i == 0 else None
            if converting and edit is not None:
                fix = Fix(f"run Keras 3 on its TensorFlow backend: `{BACKEND_ENV.split('  #')[0]}`", [edit], needs_setup=False)
        start, end = ctx.source.span(node)
        yield Finding("HVD090", start, end, message, SEVERITY_RESTRICTION, fix,
                      related=[Related(*ctx.source.span(n), m) for n, m in related])


def _rewritten(source, node, edits) -> str:
    """The import statement `node` once `edits` (those inside it) are applied."""
    start, end = source.span(node)
    text = source.text[start:end]
    # (lines inserted above it, the tf_keras target's TF_USE_LEGACY_KERAS=1, are not part of it)
    for e in sorted((e for e in edits if start <= e.start and e.end <= end and not e.start == e.end == start),
                    key=lambda e: -e.start):
        text = text[:e.start - start] + e.new_text + text[e.end - start:]
    return text


def _sets_legacy_keras(env) -> bool:
    return any("TF_USE_LEGACY_KERAS" in stmt.get_code() for stmt, _ in env.index.assignments)


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


def _xla(ctx: RuleContext, converting: bool = True) -> Iterator[Finding]:
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
        yield _unjit(ctx, arg, f"training step `{fn.name.value}` is compiled with XLA", converting,
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
            if ctx.keras_target == "keras3" and call.method == "compile" and not ctx.blocked("HVD011", call.node):
                found = _keras3_jit(ctx, call, arg, converting)
                if found is not None:
                    yield found
            elif arg is not None and not ctx.blocked("HVD011", call.node):
                yield _unjit(ctx, arg, "`compile(jit_compile=True)` compiles the fit step with XLA", converting)


def _keras3_jit(ctx: RuleContext, call, arg, converting: bool) -> Finding | None:
    """The keras3 target: Keras 3 compiles fit's step with XLA by default where there is a GPU
    (``jit_compile="auto"``), so a Keras compile (one given an optimizer, a loss or metrics)
    gets ``jit_compile=False`` (``True`` becomes ``False``; removing it would leave "auto")."""
    if not any(call.keyword(k) is not None for k in ("optimizer", "loss", "metrics")):
        return None            # (not a Keras compile: re.compile, a compile of the program's own)
    given = call.keyword("jit_compile")
    if given is not None and arg is None:
        return None            # (False already, or a value the program decides)
    node = arg if arg is not None else call.node
    finding = _warn(ctx, "HVD091", node, "Keras 3 compiles the fit step with XLA on a GPU (`jit_compile` "
                    "defaults to \"auto\"), and the conversion puts Horovod collectives in it, which XLA cannot "
                    "compile (no XLA kernel for broadcast; allreduce on GPU only): the conversion sets "
                    "`jit_compile=False`")
    if converting:
        if arg is not None:
            start, end = ctx.source.span(arg)
            edits = [Edit(start, end, "jit_compile=False")]
        else:
            edits = ctx.add_keyword(call, "jit_compile=False")
        finding.fix = Fix("compile without XLA: `jit_compile=False` (no collective under XLA)", edits, needs_setup=False)
    return finding


def _unjit(ctx: RuleContext, arg, what: str, converting: bool, related=()) -> Finding:
    """HVD091 at a ``jit_compile=True`` argument, with its removal as the fix."""
    finding = _warn(ctx, "HVD091", arg, f"{what}, and the conversion puts Horovod collectives in it, which XLA "
                    "cannot compile (no XLA kernel for broadcast; allreduce on GPU only): the conversion removes "
                    f"`{arg.get_code(include_prefix=False).strip()}`", related)
    if converting:
        finding.fix = Fix(f"remove `{arg.get_code(include_prefix=False).strip()}` (no collective under XLA)",
                          [_argument_removal(ctx, arg)], needs_setup=False)
    return finding


def _argument_removal(ctx: RuleContext, arg) -> Edit:
    """Delete keyword argument `arg` with its comma; ``@tf.function(jit_compile=True)`` loses
    its parentheses (``@tf.function``)."""
    src = ctx.source
    parent = arg.parent
    if parent.type == "trailer":          # the only argument
        if parent.parent is not None and parent.parent.parent is not None and \
                parent.parent.parent.type == "decorator" and parent.get_next_sibling() is None:
            start, end = src.span(parent)
            return Edit(start, end, "")
        start, end = src.span(arg)
        return Edit(start, end, "")
    siblings = parent.children
    i = siblings.index(arg)
    if i > 0:                              # `, jit_compile=True` from the previous argument's end
        start = src.offset(siblings[i - 1].start_pos)
        end = src.offset(arg.end_pos)
        return Edit(start, end, "")
    start = src.offset(arg.start_pos)       # the first: `jit_compile=True, ` up to the next one
    end = src.offset(siblings[2].start_pos) if len(siblings) > 2 else src.offset(siblings[1].end_pos)
    return Edit(start, end, "")


def _xla_message(what: str) -> str:
    return (f"{what}, and the conversion puts Horovod collectives in it, which XLA cannot compile: drop "
            "`jit_compile=True`, or set HOROVOD_ENABLE_XLA_OPS=1 before TensorFlow is imported")


__all__ = ["RULES", "WARNINGS", "diagnostics", "merged"]
