"""A tf.data cache in a file (``ds.cache(path)``) that every rank fills (contract point 9,
HVD044): TensorFlow's cache writer refuses a second writer of one file ("There appears to
be a concurrent caching iterator running"), and once the pipeline is sharded before it
(HVD041) one shared file would hold one rank's share, which every rank reads on the next
run. Each rank gets its own file, named by its rank and the number of ranks (a file cached
with 4 ranks holds a quarter of the data, no share of a run with 2):
``.cache(f"cache/train-{hvd.rank()}-of-{hvd.size()}")``. A cache in memory (``.cache()``)
is per process already.

Requires: pipelines (the call belongs to a tf.data pipeline), rules.base.
"""

from __future__ import annotations

import re
from typing import Iterator

from ..parse import nodes as N
from ..parse.source import Edit
from .base import Finding, Fix, RuleContext, finding, mentions_hvd, under_rank0_guard
from .pipelines import pipeline

TITLE = "Give each rank its own cache file"
# (a value that takes ``+ f"..."`` without parentheses)
OPERAND = ("name", "atom", "atom_expr", "power", "arith_expr", "term", "strings", "string", "fstring")


def per_rank_caches(ctx: RuleContext) -> Iterator[Finding]:
    """HVD044 at each file-backed ``cache`` of a tf.data pipeline that every rank runs."""
    for call in ctx.calls("cache"):
        arg = call.keyword("filename") or call.positional(0)
        if arg is None or call.has_star() or _empty(arg.value) or ctx.blocked("HVD044", call.node):
            continue
        if mentions_hvd(arg.value, ctx) or under_rank0_guard(N.statement_of(call.node), ctx) or not _dataset(ctx, call):
            continue
        yield finding(ctx, "HVD044", arg.value, "every rank writes the same tf.data cache file at once",
                      Fix(TITLE, _per_rank(ctx, arg.value)))


def _empty(value) -> bool:
    return value.type == "string" and re.fullmatch(r"""[rRuU]?(''|"")""", value.value) is not None


def _dataset(ctx: RuleContext, call: N.Call) -> bool:
    """``cache`` is a tf.data Dataset's: the chain reaches a tf.data source, or its receiver
    is a dataset σ knows."""
    found = pipeline(ctx, call.node)
    if found is not None and found.source is not None:
        return True
    receiver = call.receiver_dotted()
    return bool(receiver) and ctx.env.lookup(receiver, call.node, "dataset") is not None


def _per_rank(ctx: RuleContext, value) -> list[Edit]:
    """The file name with ``-{rank}-of-{size}`` at its end: inside a literal (made an
    f-string), else concatenated."""
    hvd, src = ctx.hvd, ctx.source
    suffix = f"-{{{hvd}.rank()}}-of-{{{hvd}.size()}}"
    start, end = src.span(value)
    if value.type == "fstring":
        close = src.offset(value.children[-1].start_pos)
        return [Edit(close, close, suffix)]
    m = re.fullmatch(r"""([rRuU]?)(['"])([^'"{}]*)\2""", value.value) if value.type == "string" else None
    if m is not None:       # (``u`` does not combine with ``f``)
        prefix = Edit(start, start + 1, "f") if m.group(1) in ("u", "U") else Edit(start, start, "f")
        return [prefix, Edit(end - 1, end - 1, suffix)]
    tail = f' + f"{suffix}"'
    if value.type in OPERAND:
        return [Edit(end, end, tail)]
    return [Edit(start, start, "("), Edit(end, end, ")" + tail)]
