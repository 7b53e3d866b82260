"""Estimator rules (TF1, ``tensorflow.compat.v1``): ``hooks`` gain
``hvd.BroadcastGlobalVariablesHook(0)`` (HVD060); only rank 0 writes ``model_dir`` (HVD061).

Requires: env (estimator bindings).
"""

from __future__ import annotations

from typing import Iterator

from .. import nodes as N
from ..source import Edit
from .base import Finding, Fix, RuleContext, finding, mentions_hvd

RULES = {
    "HVD060": ("broadcast-hook", "Add hvd.BroadcastGlobalVariablesHook(0) to the hooks"),
    "HVD061": ("rank0-model-dir", "Write the model directory on rank 0 only"),
}
HOOKS_POS = 1          # Estimator.train(input_fn, hooks=None, steps=None, ...)
ATOMIC = ("name", "atom", "atom_expr", "power")
LOW_PRECEDENCE = ("test", "lambdef", "namedexpr_test")


def train_calls(ctx: RuleContext) -> Iterator[N.Call]:
    for call in ctx.calls("train"):
        if ctx.env.lookup(call.receiver_dotted(), call.node, "estimator"):
            yield call


def _is_list_literal(node) -> bool:
    return node.type == "atom" and node.children[0] == "["


def check(ctx: RuleContext) -> Iterator[Finding]:
    hvd = ctx.hvd
    for call in train_calls(ctx):
        if call.has_star() or ctx.blocked("HVD060", call.node):
            continue
        hook = f"{hvd}.BroadcastGlobalVariablesHook(0)"
        arg = call.keyword("hooks") or call.positional(HOOKS_POS)
        if arg is None:
            edits = ctx.add_keyword(call, f"hooks=[{hook}]")
        elif mentions_hvd(arg.value, ctx):
            continue
        elif arg.value.type == "keyword" and arg.value.value == "None":   # hooks=None
            start, end = ctx.source.span(arg.value)
            edits = [Edit(start, end, f"[{hook}]")]
        elif _is_list_literal(arg.value):
            edits = ctx.wrap(arg.value, "", f" + [{hook}]")
        else:  # a name, tuple or expression: any iterable, or None at run time
            # `h if c else None or []` would bind as `h if c else (None or [])`
            before, after = ("list((", ") or [])") if arg.value.type in LOW_PRECEDENCE else ("list(", " or [])")
            edits = ctx.wrap(arg.value, before, f"{after} + [{hook}]")
        yield finding(ctx, "HVD060", call.node, "Estimator training does not broadcast the initial variables",
                      Fix(RULES["HVD060"][1], edits))
    for b in ctx.env.bindings:
        if b.role != "estimator":
            continue
        call = N.as_call(b.value)
        arg = call.keyword("model_dir") if call else None
        if arg is None or mentions_hvd(arg.value, ctx) or ctx.blocked("HVD061", b.stmt, b):
            continue
        value = arg.value
        # A conditional expression is parso's "test" node: `d if c else None if hvd.rank() == 0
        # else None` would bind as `d if c else (None if ...)`, so it is parenthesised.
        edits = ctx.wrap(value, "(", f") if {hvd}.rank() == 0 else None") if value.type in LOW_PRECEDENCE \
            else ctx.wrap(value, "", f" if {hvd}.rank() == 0 else None")
        yield finding(ctx, "HVD061", value, "every rank writes checkpoints to model_dir",
                      Fix(RULES["HVD061"][1], edits))
