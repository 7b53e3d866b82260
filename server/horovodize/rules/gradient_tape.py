"""GradientTape rules: average gradients with ``hvd.DistributedGradientTape`` (HVD020) and
broadcast the initial state from rank 0 once, after the first ``apply_gradients`` (HVD021).

The seeds' broadcast uses a Python ``global`` flag, which ``@tf.function`` reads once at
trace time, and iterates ``zip(...)`` twice. Here the arguments are materialised with
``list(...)`` and the "first step" test is the optimizer's own step counter
(``opt.iterations == k``), a tensor that works eagerly and inside ``@tf.function``.

Requires: env (tapes, optimizer bindings), loop (flavour), restrictions (R8).
"""

from __future__ import annotations

from typing import Iterator

from .. import nodes as N
from ..source import Edit
from .base import Finding, Fix, RuleContext, finding

RULES = {
    "HVD020": ("distributed-gradient-tape", "Wrap the tape in hvd.DistributedGradientTape"),
    "HVD021": ("broadcast-initial-state", "Broadcast model and optimizer variables after the first step"),
}
GRADS = "hvd_grads_and_vars"


def applies(ctx: RuleContext) -> bool:
    return not ctx.summary.hvd_module.endswith("keras")


def check(ctx: RuleContext) -> Iterator[Finding]:
    if not applies(ctx):
        return
    yield from _tapes(ctx)
    yield from _apply_gradients(ctx)


def _tapes(ctx: RuleContext) -> Iterator[Finding]:
    for tape in ctx.env.tapes:
        with_stmt = N.enclosing(tape.stmt, {"with_stmt"})
        if with_stmt is None or "." in tape.name or _wrapped(ctx, tape, with_stmt):
            continue
        if ctx.blocked("HVD020", tape.stmt, tape):
            continue
        outer = with_stmt.parent if with_stmt.parent.type == "async_stmt" else with_stmt
        edit = ctx.insert_after_stmt(outer, f"{tape.name} = {ctx.hvd}.DistributedGradientTape({tape.name})")
        yield finding(ctx, "HVD020", tape.stmt, f"gradients of tape `{tape.name}` are not averaged across ranks",
                      Fix(RULES["HVD020"][1], [edit]))


def _wrapped(ctx: RuleContext, tape, with_stmt) -> bool:
    scope = N.func_scope_of(with_stmt)
    for call in N.calls_in(scope):
        if call.method == "DistributedGradientTape":
            arg = call.positional(0)
            if arg is not None and N.dotted(arg.value) == tape.name:
                return True
    return False


def gradient_sites(ctx: RuleContext) -> Iterator[tuple[N.Call, object, str]]:
    """(call, statement, optimizer text) of every ``opt.apply_gradients(...)`` on a known optimizer."""
    for call in N.calls_in(ctx.source.module):
        if call.method != "apply_gradients":
            continue
        receiver = call.receiver_dotted()
        b = ctx.env.lookup(receiver, call.node, "optimizer")
        if b is None:
            continue
        yield call, b, receiver


def statement_form(call: N.Call):
    """The statement when the call is an expression statement or a direct assignment RHS (R8)."""
    if not call.is_whole():
        return None
    parent = call.node.parent
    if parent.type == "simple_stmt":
        stmt = call.node
    elif parent.type == "expr_stmt" and parent.children[-1] is call.node and parent.children[-2] == "=":
        stmt = parent
    else:
        return None
    return stmt if N.alone_on_line(stmt) else None


def _apply_gradients(ctx: RuleContext) -> Iterator[Finding]:
    counts: dict[tuple, int] = {}
    for call, binding, receiver in gradient_sites(ctx):
        stmt = statement_form(call)
        scope = N.func_scope_of(call.node)
        key = (id(scope), receiver)
        counts[key] = counts.get(key, 0) + 1
        if stmt is None or ctx.blocked("HVD021", call.node, binding) or _broadcasts(ctx, scope):
            continue
        arg = call.keyword("grads_and_vars") or call.positional(0)
        if arg is None:
            continue
        src = ctx.source
        start, end = src.span(arg.value)
        hvd, unit = ctx.hvd, src.indent_unit
        after = "\n".join([
            f"if {receiver}.iterations == {counts[key]}:",
            f"{unit}{hvd}.broadcast_variables([v for _, v in {GRADS}], root_rank=0)",
            f"{unit}{hvd}.broadcast_variables({receiver}.variables() if callable({receiver}.variables) else {receiver}.variables, root_rank=0)",
        ])
        edits = [
            ctx.insert_before_stmt(stmt, f"{GRADS} = list({src.text[start:end]})"),
            Edit(start, end, GRADS),
            ctx.insert_after_stmt(stmt, after),
        ]
        yield finding(ctx, "HVD021", call.node, f"variables of `{receiver}` and the model are not broadcast from rank 0",
                      Fix(RULES["HVD021"][1], edits))


def _broadcasts(ctx: RuleContext, scope) -> bool:
    return any(c.method == "broadcast_variables" for c in N.calls_in(scope))
