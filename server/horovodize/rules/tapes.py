"""The tapes the set-up and HVD020 both ask about: the training tapes of a Keras
``train_step`` override (they need ``horovod.tensorflow``'s ``DistributedGradientTape``
even in a ``fit`` program, so the set-up imports that module too), whether a tape is
already wrapped or averaged by hand, and the name horovod.tensorflow is bound to.

A program that trains with both ``fit`` and a GradientTape loop imports
horovod.tensorflow.keras as ``hvd`` and horovod.tensorflow beside it for the tape loop
(`tape_loops_beside_fit`, `in_keras_step`).

Requires: rules.base, analysis (gradflow, loop). Provides: `keras_step_tapes`,
`tf_module_alias`, `wrapped`, `tape_loops_beside_fit`, `in_keras_step`, `tape_optimizers`,
`compiles_tape_step` (a compile whose optimizers the train_step's tape averages).
"""

from __future__ import annotations

from ..analysis.gradflow import is_training_tape
from ..analysis.loop import KERAS_STEP_METHODS, TAPE
from ..parse import nodes as N
from .base import RuleContext

HVD_TF = "horovod.tensorflow"


def keras_step_tapes(ctx: RuleContext) -> list:
    """Training tapes of a Keras ``train_step`` override that take their gradients themselves
    (``tape.gradient`` then ``opt.apply_gradients``). ``fit`` runs the step, but
    horovod.tensorflow.keras's ``DistributedOptimizer`` averages only the gradients its own
    ``minimize`` computes (TF >= 2.4), never those handed to ``apply_gradients``: without a
    ``DistributedGradientTape`` (from horovod.tensorflow) every rank trains alone (seen in a
    2-rank run of keras-io's GAN shape)."""
    cached = getattr(ctx, "_keras_step_tapes", None)
    if cached is not None:
        return cached
    out = []
    for tape in ctx.env.tapes:
        with_stmt = N.enclosing(tape.stmt, {"with_stmt"})
        fn = N.enclosing(tape.stmt, {"funcdef"})
        if with_stmt is None or "." in tape.name or fn is None or fn.name.value not in KERAS_STEP_METHODS:
            continue
        cls = N.enclosing(fn, {"classdef"})
        if cls is None or cls.name.value not in ctx.env.classes or not ctx.env.is_method(fn):
            continue
        takes = any(c.receiver_dotted() == tape.name and N.func_scope_of(c.node) is N.func_scope_of(tape.stmt)
                    for c in ctx.calls("gradient"))
        if takes and is_training_tape(ctx.env, tape) and not wrapped(ctx, tape, with_stmt):
            out.append(tape)
    ctx._keras_step_tapes = out
    return out


def tape_loops_beside_fit(ctx: RuleContext) -> bool:
    """A Keras-flavoured program (``hvd`` is horovod.tensorflow.keras) that also trains with a
    GradientTape loop of its own: that loop uses horovod.tensorflow's tape and broadcast."""
    return ctx.summary.hvd_module.endswith("keras") and any(s.kind == TAPE for s in ctx.summary.sites)


def in_keras_step(ctx: RuleContext, node) -> bool:
    """Is `node` inside a Keras model's ``train_step`` override (run by fit)?"""
    fn = N.enclosing(node, {"funcdef"})
    while fn is not None:
        if fn.name.value in KERAS_STEP_METHODS and ctx.env.is_method(fn):
            cls = N.enclosing(fn, {"classdef"})
            if cls is not None and cls.name.value in ctx.env.classes:
                return True
        fn = N.enclosing(fn, {"funcdef"})
    return False


def tape_optimizers(ctx: RuleContext) -> set:
    """ids of the optimizer bindings a GradientTape loop applies (``opt.apply_gradients``
    outside a Keras ``train_step``): their gradients are averaged by the tape, not the optimizer."""
    out = set()
    for call in ctx.calls("apply_gradients"):
        if in_keras_step(ctx, call.node):
            continue
        b = ctx.env.lookup(call.receiver_dotted(), call.node, "optimizer")
        if b is not None:
            out.add(id(b))
    return out


def tf_module_alias(ctx: RuleContext) -> str | None:
    """The name the program binds horovod.tensorflow to; for a program without Horovod, the
    name the set-up binds it to (`setup_imports.setup_code`); else None."""
    for local, full in ctx.facts.locals.items():
        if full == HVD_TF:
            return local
    if ctx.facts.uses_horovod:
        return None
    if ctx.keras_target == "keras3":
        return ctx.hvd          # (the set-up imports horovod.tensorflow itself as hvd)
    name = "hvd_tf"
    while name in ctx.env.index.names:
        name += "_"
    return name


def wrapped(ctx: RuleContext, tape, with_stmt) -> bool:
    scope = N.func_scope_of(with_stmt)
    if ctx.facts.tape_wrapped(tape.name, scope):
        return True   # any import form: ``from horovod.tensorflow import DistributedGradientTape as DGT``
    if ctx.calls("allreduce", scope):
        return True  # gradients already averaged by hand
    return any(N.dotted(a.value) == tape.name
               for a in (c.positional(0) for c in ctx.calls("DistributedGradientTape", scope)) if a is not None)


def step_tape_classes(ctx: RuleContext) -> set:
    """ids of the classdefs whose Keras ``train_step`` takes a training tape's gradients
    itself (wrapped already or by HVD020): their DistributedGradientTape averages, so the
    optimizers given to their ``compile`` stay plain (Horovod's idiom, REVIEW.md section 4;
    a DistributedOptimizer there would only repeat the tape's work)."""
    cached = getattr(ctx, "_step_tape_classes", None)
    if cached is not None:
        return cached
    out = set()
    for tape in ctx.env.tapes:
        with_stmt = N.enclosing(tape.stmt, {"with_stmt"})
        fn = N.enclosing(tape.stmt, {"funcdef"})
        if with_stmt is None or "." in tape.name or fn is None or fn.name.value not in KERAS_STEP_METHODS:
            continue
        cls = N.enclosing(fn, {"classdef"})
        if cls is None or cls.name.value not in ctx.env.classes or not ctx.env.is_method(fn):
            continue
        if any(c.receiver_dotted() == tape.name and N.func_scope_of(c.node) is N.func_scope_of(tape.stmt)
               for c in ctx.calls("gradient")) and is_training_tape(ctx.env, tape):
            out.add(id(cls))
    ctx._step_tape_classes = out
    return out


def compiles_tape_step(ctx: RuleContext, call: N.Call) -> bool:
    """Is `call` (``m.compile(...)``) the compile of a model whose class (or a base) has a
    ``train_step`` that averages through its tape (`step_tape_classes`)?"""
    classes = step_tape_classes(ctx)
    if not classes:
        return False
    b = ctx.env.lookup(call.receiver_dotted(), call.node, "model")
    if b is None or not b.detail:
        return False
    step = ctx.env.method(b.detail, "train_step")
    return step is not None and id(N.enclosing(step, {"classdef"})) in classes
