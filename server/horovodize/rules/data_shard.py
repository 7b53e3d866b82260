"""Data rule: each rank takes its share of the dataset, ``dataset.take(n // hvd.size())``
(HVD040); the alternative fix also shards, so ranks see different examples.

Requires: env (dataset bindings), restrictions (R5–R7 on the dataset).
"""

from __future__ import annotations

from typing import Iterator

from .. import nodes as N
from ..source import Edit
from .base import Finding, Fix, RuleContext, finding, mentions_hvd

RULES = {"HVD040": ("shard-dataset", "Take n // hvd.size() elements per rank")}


def check(ctx: RuleContext) -> Iterator[Finding]:
    for call in ctx.calls("take"):
        root = call.node.children[0]
        b = ctx.env.lookup(root.value, call.node, "dataset") if root.type == "name" else None
        if b is None:
            continue
        arg = call.keyword("count") or call.positional(0)
        if arg is None or mentions_hvd(arg.value, ctx) or _sharded(ctx, call) or ctx.blocked("HVD040", call.node, b):
            continue
        scale = ctx.scale(arg.value, "//")
        dot = ctx.source.offset(call.node.children[call.index - 1].start_pos)
        shard = Edit(dot, dot, f".shard({ctx.hvd}.size(), {ctx.hvd}.rank())")
        yield finding(ctx, "HVD040", call.node, f"every rank takes the same {arg.value.get_code(include_prefix=False)} elements",
                      Fix(RULES["HVD040"][1], scale),
                      alternatives=[Fix("Shard the dataset by rank and take n // hvd.size()", [shard] + scale)])


def _sharded(ctx: RuleContext, call: N.Call) -> bool:
    return bool(ctx.calls("shard", call.node))
