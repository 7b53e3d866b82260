"""Step counts inside a loop the conversion divides (contract point 5: what is computed from
the divided count still holds).

A loop whose steps HVD040/HVD042 divide (``ds.take(steps).enumerate()``,
``enumerate(ds.take(n))``, ``range(n)``) runs 1/N of its steps on each rank. A checkpoint
saved every K steps of its counter (``if (step + 1) % 5000 == 0: checkpoint.save(...)``)
would then be saved N times less often, and never once K exceeds the rank's steps (pix2pix:
40000 steps, every 5000, none on 9 ranks, and the restore after training silently loads
nothing). K becomes ``max(1, K // hvd.size())`` (HVD042): as many checkpoints as one process
saves. Moduli that only pace prints or images are left as they are, as in Horovod's own
examples.

Requires: schedules.divisions (the findings that divide the steps), work_division.divide.
"""

from __future__ import annotations

from typing import Iterator

from ..parse import nodes as N
from .base import Finding, Fix, RuleContext, finding, mentions_hvd
from .schedules import divisions
from .work_division import RULES as WD_RULES
from .work_division import divide

RULES: dict = {}      # (HVD042, the divide-steps family of rules/work_division.py)
LOOP_DIVIDERS = ("HVD040", "HVD042")
SAVES = ("save", "save_weights", "save_model")


def check(ctx: RuleContext) -> Iterator[Finding]:
    starts = [f.start for f in divisions(ctx) if f.code in LOOP_DIVIDERS]
    if not starts:
        return
    loops = {}
    for name in ("take", "range"):
        for call in ctx.calls(name):
            loop = N.enclosing(call.node, {"for_stmt"})
            if loop is None or id(loop) in loops or not N.inside(call.node, loop.children[3]):
                continue
            lo, hi = ctx.source.span(loop.children[3])
            if any(lo <= s < hi for s in starts):
                loops[id(loop)] = loop
    for loop in loops.values():
        counter = _counter(loop)
        if counter is None:
            continue
        for node in N.walk(loop.children[-1]):
            if node.type != "if_stmt" or not _saves(node):
                continue
            for k in _moduli(node.children[1], counter):
                if mentions_hvd(k, ctx) or ctx.blocked("HVD042", k):
                    continue
                yield finding(ctx, "HVD042", k, f"a checkpoint every {k.get_code(include_prefix=False).strip()} "
                              f"steps of `{counter}` counts steps of the undivided loop: each rank now runs "
                              "1/N of them, so it would save N times less often, or never",
                              Fix(WD_RULES["HVD042"][1], divide(ctx, k)))


def _counter(loop) -> str | None:
    """The name counting the loop's steps: ``range``'s variable, or the index of an
    ``enumerate``."""
    target, iterable = loop.children[1], loop.children[3]
    code = iterable.get_code(include_prefix=False).strip()
    if target.type == "name":
        return target.value if code.startswith("range(") else None
    if target.type in ("exprlist", "testlist_star_expr") and target.children[0].type == "name" and \
            (code.startswith("enumerate(") or code.endswith(".enumerate()")):
        return target.children[0].value
    return None


def _saves(if_stmt) -> bool:
    body = if_stmt.children[3] if len(if_stmt.children) > 3 else None
    return body is not None and any(c.method in SAVES for c in N.calls_in(body))


def _moduli(test, counter: str) -> list:
    """The right operands K of ``<expr with counter> % K`` in an ``if`` test (a literal or a
    name)."""
    out = []
    for node in N.walk(test):
        if node.type != "term":
            continue
        kids = node.children
        for i in range(1, len(kids) - 1, 2):
            if kids[i] == "%" and kids[i + 1].type in ("number", "name") and \
                    any(leaf.type == "name" and leaf.value == counter for leaf in N.walk(kids[i - 1])):
                out.append(kids[i + 1])
    return out
