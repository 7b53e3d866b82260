"""Rank-0 rules: side effects that must happen once, not once per rank — ``print``
(HVD030), ``checkpoint.save`` (HVD031), ``x.write``, ``model.summary()``,
``model.save_weights``, ``model.save`` (HVD032) — run under ``if hvd.rank() == 0:``.

The guard is written on the statement's own line (``if hvd.rank() == 0: print(...)``):
one insertion, nothing re-indented.

Requires: env (checkpoint and model bindings), restrictions (R4: prints without side effects).
"""

from __future__ import annotations

from typing import Iterator

from .. import nodes as N
from .base import Finding, Fix, RuleContext, finding, under_rank0_guard

RULES = {
    "HVD030": ("rank0-print", "Print on rank 0 only"),
    "HVD031": ("rank0-checkpoint", "Save checkpoints on rank 0 only"),
    "HVD032": ("rank0-write", "Write files and summaries on rank 0 only"),
}
MODEL_METHODS = ("summary", "save_weights", "save")


def classify(ctx: RuleContext, call: N.Call) -> str | None:
    """The rule code for a statement-level call, if it is a rank-0 side effect."""
    env = ctx.env
    if call.callee_dotted() == "print" and "print" not in env.functions:
        return "HVD030"
    method, receiver = call.method, call.receiver_dotted()
    if method == "save" and env.lookup(receiver, call.node, "checkpoint"):
        return "HVD031"
    if method == "write":
        return "HVD032"
    if method in MODEL_METHODS and receiver and (
        env.lookup(receiver, call.node, "model") or (method == "summary" and not call.args)
    ):
        return "HVD032"
    return None


def statement(call: N.Call):
    """The small statement when the call is the whole statement or an assignment's RHS."""
    if not call.is_whole():
        return None
    parent = call.node.parent
    if N.is_statement(call.node):
        return call.node
    if parent.type == "expr_stmt" and parent.children[-1] is call.node and parent.children[-2] == "=":
        return parent
    return None


def check(ctx: RuleContext) -> Iterator[Finding]:
    names = dict.fromkeys(("print", "save", "write", *MODEL_METHODS))
    candidates = [c for name in names for c in ctx.calls(name)]
    for call in sorted(candidates, key=lambda c: c.node.start_pos):
        code = classify(ctx, call)
        if code is None:
            continue
        stmt = statement(call)
        if stmt is None or (code in ("HVD030", "HVD032") and stmt is not call.node):
            continue  # `ta = ta.write(i, v)` is a value (TensorArray), not a side effect
        if under_rank0_guard(stmt, ctx) or ctx.blocked(code, call.node):
            continue
        edit = ctx.guard_rank0(stmt)
        if edit is None:
            continue
        what = {"HVD030": "print runs on every rank", "HVD031": "every rank saves the checkpoint",
                "HVD032": f"`{call.method}` runs on every rank"}[code]
        yield finding(ctx, code, call.node, what, Fix(RULES[code][1], [edit]))
