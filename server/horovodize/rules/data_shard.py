"""Data rule: each rank takes its share of the dataset, ``dataset.take(max(1, n // hvd.size()))``
(HVD040); the alternative fix also shards, so ranks see different examples. Only a ``take``
that bounds a pipeline feeding training is divided: ``take(1)`` to peek at a batch is not
(`work_division.training_takes`).

Requires: env (dataset bindings), restrictions (R5–R7 on the dataset).
"""

from __future__ import annotations

from typing import Iterator

from ..parse import nodes as N
from ..parse.source import Edit
from .base import Finding, Fix, RuleContext, finding, mentions_hvd
from .work_division import divide, training_takes

RULES = {"HVD040": ("shard-dataset", "Take max(1, n // hvd.size()) elements per rank")}


def check(ctx: RuleContext) -> Iterator[Finding]:
    bounds = {(id(c.node), c.index) for c in training_takes(ctx)}
    for call in ctx.calls("take"):
        if (id(call.node), call.index) not in bounds:
            continue
        root = call.node.children[0]
        b = ctx.env.lookup(root.value, call.node, "dataset") if root.type == "name" else None
        if b is None:
            continue
        arg = call.keyword("count") or call.positional(0)
        if arg is None or mentions_hvd(arg.value, ctx) or _sharded(ctx, call) or ctx.blocked("HVD040", call.node, b):
            continue
        scale = divide(ctx, arg.value)
        dot = ctx.source.offset(call.node.children[call.index - 1].start_pos)
        shard = Fix(SHARD_TITLE, [Edit(dot, dot, f".shard({ctx.hvd}.size(), {ctx.hvd}.rank())")] + scale)
        take = Fix(RULES["HVD040"][1], scale)
        # a shuffle before the take gives each rank its own elements; without one every rank
        # would take the same first n // N (`packed_ds.skip(n_val).take(n_train)`): shard first
        first, other = (take, shard) if _shuffled(ctx, call, b) else (shard, take)
        yield finding(ctx, "HVD040", call.node, f"every rank takes the same {arg.value.get_code(include_prefix=False)} elements",
                      first, alternatives=[other])


SHARD_TITLE = "Shard the dataset by rank and take max(1, n // hvd.size())"


def _shuffled(ctx: RuleContext, call: N.Call, binding) -> bool:
    """A ``shuffle`` in the chain before the take, or in a value assigned to the dataset name
    before the take's statement (``dataset = dataset.shuffle(100).batch(10)``)."""
    chain = "".join(c.get_code(include_prefix=False) for c in call.node.children[1:call.index])
    if ".shuffle(" in chain:
        return True
    values = [getattr(binding, "value", None)] + [v for _s, v, _op in ctx.facts.assignments(binding.name, call.node)]
    own = N.statement_of(call.node)     # (a shuffle after the take, `ds.take(n).shuffle(n)`, comes too late)
    return any(v is not None and v.start_pos < call.node.start_pos and N.statement_of(v) is not own
               and ".shuffle(" in v.get_code(include_prefix=False) for v in values)


def _sharded(ctx: RuleContext, call: N.Call) -> bool:
    return bool(ctx.calls("shard", call.node))
