"""Optimizer rules: scale the learning rate by ``hvd.size()`` (HVD010), wrap the optimizer
in ``hvd.DistributedOptimizer`` for Keras and TF1 programs (HVD011), replace
``compile('adam')`` by a scaled, wrapped optimizer (HVD012), scale a schedule's initial
rate instead of the schedule object (HVD013).

Requires: env (optimizer / schedule bindings), loop (Horovod module flavour).
"""

from __future__ import annotations

from typing import Iterator

from .. import nodes as N
from ..env import COMPILE_STRINGS, KERAS_OPTIMIZERS, TF1_OPTIMIZERS
from ..source import Edit
from .base import Finding, Fix, RuleContext, finding, mentions_hvd

RULES = {
    "HVD010": ("scale-learning-rate", "Scale learning rate by hvd.size()"),
    "HVD011": ("distributed-optimizer", "Wrap optimizer in hvd.DistributedOptimizer"),
    "HVD012": ("compile-string-optimizer", "Use a scaled hvd.DistributedOptimizer instead of the optimizer name"),
    "HVD013": ("scale-schedule", "Scale the schedule's initial learning rate by hvd.size()"),
}


def wraps_optimizer(ctx: RuleContext) -> bool:
    """Keras-fit and TF1 programs average gradients in the optimizer, tape programs in the tape."""
    return ctx.summary.hvd_module.endswith("keras") or ctx.summary.estimator or ctx.env.tf1


def check(ctx: RuleContext) -> Iterator[Finding]:
    env = ctx.env
    for b in env.bindings:
        if b.role != "optimizer":
            continue
        call = N.as_call(b.value)
        if call is None:
            continue
        yield from _scale(ctx, call, b)
        if wraps_optimizer(ctx) and not _already_wrapped(ctx, b) and not ctx.blocked("HVD011", b.stmt, b):
            edit = ctx.insert_after_stmt(N.statement_of(b.stmt), f"{b.name} = {ctx.hvd}.DistributedOptimizer({b.name})")
            yield finding(ctx, "HVD011", b.value, f"optimizer `{b.name}` does not average gradients across ranks",
                          Fix(RULES["HVD011"][1], [edit]))
    for call in N.calls_in(ctx.source.module):
        if call.method == "compile" and call.is_whole():
            yield from _compile(ctx, call)


def _scale(ctx: RuleContext, call: N.Call, binding=None) -> Iterator[Finding]:
    if ctx.blocked("HVD010", call.node, binding):
        return
    lr = call.keyword("learning_rate") or call.keyword("lr")
    if lr is None and call.positional(0) is not None:
        lr = call.positional(0)
    name = f"`{binding.name}`" if binding else "optimizer"
    if lr is None:
        if call.has_star():
            return
        default = _default_lr(ctx, call)
        if default is None:
            return
        edit = ctx.add_keyword(call, f"learning_rate={default} * {ctx.hvd}.size()")
        yield finding(ctx, "HVD010", call.node, f"learning rate of {name} is not scaled by the number of ranks",
                      Fix(RULES["HVD010"][1], [edit]))
        return
    if mentions_hvd(lr.value, ctx):
        return
    schedule = _schedule_call(ctx, lr.value)
    if schedule is not None:
        yield from _scale_schedule(ctx, schedule, lr.value)
        return
    if lr.value.type == "lambdef":
        return
    yield finding(ctx, "HVD010", lr.value, f"learning rate of {name} is not scaled by the number of ranks",
                  Fix(RULES["HVD010"][1], ctx.scale(lr.value, "*")))


def _default_lr(ctx: RuleContext, call: N.Call) -> str | None:
    q = ctx.env.qualname(call.callee_parts) or ""
    last = q.rsplit(".", 1)[-1]
    return KERAS_OPTIMIZERS.get(last) if last in KERAS_OPTIMIZERS else TF1_OPTIMIZERS.get(last)


def _schedule_call(ctx: RuleContext, value) -> N.Call | None:
    call = N.as_call(value)
    if call is None:
        b = ctx.env.lookup(N.dotted(value), value, "lr_schedule")
        call = N.as_call(b.value) if b else None
    if call is not None and (ctx.env.role_of_call(call) or ("",))[0] == "lr_schedule":
        return call
    return None


def _scale_schedule(ctx: RuleContext, schedule: N.Call, used_at) -> Iterator[Finding]:
    if ctx.blocked("HVD013", schedule.node):
        return
    arg = schedule.keyword("initial_learning_rate") or schedule.positional(0)
    if arg is None or mentions_hvd(arg.value, ctx):
        return
    yield finding(ctx, "HVD013", arg.value, "initial rate of the learning-rate schedule is not scaled by the number of ranks",
                  Fix(RULES["HVD013"][1], ctx.scale(arg.value, "*")))


def _already_wrapped(ctx: RuleContext, b) -> bool:
    for call in N.calls_in(ctx.source.module):
        if call.method == "DistributedOptimizer":
            first = call.positional(0) or call.keyword("optimizer")
            if first is not None and (N.dotted(first.value) == b.name or first.value is b.value):
                return True
    return False


def _compile(ctx: RuleContext, call: N.Call) -> Iterator[Finding]:
    arg = call.keyword("optimizer") or call.positional(0)
    if arg is None:
        return
    value = arg.value
    if value.type in ("string",) and not value.get_code(include_prefix=False).startswith(("f", "F", "b", "B")):
        name = value.value.strip("'\"").lower()
        cls = COMPILE_STRINGS.get(name)
        if cls is None or ctx.blocked("HVD012", value):
            return
        keras = ctx.env.keras_alias() or f"{ctx.env.tf_alias() or 'tf'}.keras"
        lr = KERAS_OPTIMIZERS[cls]
        start, end = ctx.source.span(value)
        text = f"{ctx.hvd}.DistributedOptimizer({keras}.optimizers.{cls}(learning_rate={lr} * {ctx.hvd}.size()))"
        yield finding(ctx, "HVD012", value, f"optimizer '{name}' given by name is neither scaled nor distributed",
                      Fix(RULES["HVD012"][1], [Edit(start, end, text)]))
        return
    inner = N.as_call(value)
    if inner is None or (ctx.env.role_of_call(inner) or ("",))[0] != "optimizer":
        return
    yield from _scale(ctx, inner)
    if wraps_optimizer(ctx) and not ctx.blocked("HVD011", inner.node):
        yield finding(ctx, "HVD011", inner.node, "optimizer does not average gradients across ranks",
                      Fix(RULES["HVD011"][1], ctx.wrap(inner.node, f"{ctx.hvd}.DistributedOptimizer(", ")")))
