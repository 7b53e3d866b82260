"""Keras ``fit`` rules: broadcast the initial state with
``hvd.callbacks.BroadcastGlobalVariablesCallback(0)`` first and run the user's own
callbacks on rank 0 only (HVD050); progress output on rank 0 only (HVD051).

Requires: env (model bindings, or a name the file calls ``compile`` on), loop (flavour).
"""

from __future__ import annotations

from typing import Iterator

from .. import nodes as N
from ..source import Edit
from .base import Finding, Fix, RuleContext, finding, mentions_hvd

RULES = {
    "HVD050": ("broadcast-callback", "Broadcast initial variables with a Horovod callback"),
    "HVD051": ("rank0-verbose", "Show progress on rank 0 only"),
}
# Keras Model.fit(x, y, batch_size, epochs, verbose, callbacks, ...)
VERBOSE_POS, CALLBACKS_POS = 4, 5
LOW_PRECEDENCE = ("test", "lambdef", "namedexpr_test")


def fit_calls(ctx: RuleContext) -> Iterator[N.Call]:
    """Every ``model.fit(...)`` on something the file knows to be a Keras model."""
    compiled = {c.receiver_dotted() for c in ctx.calls("compile")}
    for call in ctx.calls("fit"):
        receiver = call.receiver_dotted()
        if receiver and (ctx.env.lookup(receiver, call.node, "model") or receiver in compiled):
            yield call


def check(ctx: RuleContext) -> Iterator[Finding]:
    for call in fit_calls(ctx):
        if call.has_star():
            continue
        yield from _callbacks(ctx, call)
        yield from _verbose(ctx, call)


def _arg(call: N.Call, name: str, pos: int):
    return call.keyword(name) or call.positional(pos)


def _paren(ctx: RuleContext, node, text_before="", text_after="") -> list[Edit]:
    """Rewrite an argument value as one replacement, not a prefix and a suffix insertion.

    A suffix insertion at the end of the last argument would share its offset with the
    other rule's ``, keyword=...`` insertion at that point, and the order of insertions
    at one offset is the order of the findings: ``verbose=0`` followed by a new
    ``callbacks=`` came out as ``verbose=0, callbacks=[...] if hvd.rank() == 0 else 0``.
    A replacement of ``[start, end)`` always sorts before an insertion at ``end``.
    """
    start, end = ctx.source.span(node)
    value = ctx.source.text[start:end]
    if node.type in LOW_PRECEDENCE:
        value = f"({value})"
    return [Edit(start, end, f"{text_before}{value}{text_after}")]


def _callbacks(ctx: RuleContext, call: N.Call) -> Iterator[Finding]:
    if ctx.blocked("HVD050", call.node):
        return
    hvd = ctx.hvd
    broadcast = f"{hvd}.callbacks.BroadcastGlobalVariablesCallback(0)"
    arg = _arg(call, "callbacks", CALLBACKS_POS)
    if arg is None:
        edits = ctx.add_keyword(call, f"callbacks=[{broadcast}]")
    elif mentions_hvd(arg.value, ctx) or "BroadcastGlobalVariables" in arg.value.get_code(include_prefix=False) \
            or _list_holds_hvd(ctx, arg.value):
        return
    elif arg.value.type == "keyword" and arg.value.value == "None":
        start, end = ctx.source.span(arg.value)
        edits = [Edit(start, end, f"[{broadcast}]")]
    elif arg.value.type == "atom" and arg.value.children[0] == "[":
        edits = _paren(ctx, arg.value, f"[{broadcast}] + (", f" if {hvd}.rank() == 0 else [])")
    else:  # a name or expression: a list, a tuple, or None at run time
        edits = _paren(ctx, arg.value, f"[{broadcast}] + (list(", f" or []) if {hvd}.rank() == 0 else [])")
    yield finding(ctx, "HVD050", call.node, "fit does not broadcast the initial variables from rank 0",
                  Fix(RULES["HVD050"][1], edits))


def _verbose(ctx: RuleContext, call: N.Call) -> Iterator[Finding]:
    if ctx.blocked("HVD051", call.node):
        return
    hvd = ctx.hvd
    arg = _arg(call, "verbose", VERBOSE_POS)
    if arg is None:
        edits = ctx.add_keyword(call, f"verbose=1 if {hvd}.rank() == 0 else 0")
    elif mentions_hvd(arg.value, ctx) or arg.value.get_code(include_prefix=False) in ("0", "False"):
        return  # already rank-dependent, or silent on every rank
    else:
        edits = _paren(ctx, arg.value, "", f" if {hvd}.rank() == 0 else 0")
    yield finding(ctx, "HVD051", call.node, "every rank prints fit progress",
                  Fix(RULES["HVD051"][1], edits))


def _list_holds_hvd(ctx: RuleContext, value) -> bool:
    """``callbacks=cbs`` where ``cbs`` is built with Horovod callbacks in the same scope
    (``cbs = [hvd.callbacks.BroadcastGlobalVariablesCallback(0), ...]``, ``cbs.append(hvd...)``,
    ``cbs += [...]``): Horovod's own examples, already distributed."""
    name = N.dotted(value)
    if name is None or not ctx.env.horovod():
        return False
    scope = N.func_scope_of(value)
    for node in N.walk(scope):
        if node.type == "expr_stmt":
            parts = N.assign_parts(node)
            if parts is not None:
                targets, rhs = parts
            elif len(node.children) == 3 and node.children[1].type == "operator" and node.children[1].value == "+=":
                targets, rhs = [node.children[0]], node.children[2]
            else:
                continue
            if any(N.dotted(t) == name for t in targets) and mentions_hvd(rhs, ctx):
                return True
    for call in [c for m in ("append", "extend", "insert") for c in ctx.calls(m, scope)]:
        if call.receiver_dotted() == name \
                and any(mentions_hvd(a.value, ctx) for a in call.args):
            return True
    return False
