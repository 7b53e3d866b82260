"""Contract point 5, all or nothing: never a scaled learning rate on undivided, identical data.

Runs after `work_division` (catalogue order) and rewords its point-5 "not divided" notes
for the training uses whose data every rank would read alike: a tf.data pipeline of this
file with no shuffle, or only seeded ones (`use_site.same_data`), ``fit(..., shuffle=False)``
on in-memory arrays, or a fit on arrays no bigger than one batch (`array_rows`). Such a note starts with `SAME_DATA`; the engine blocks the conversion
on it when a rule scales the learning rate (N ranks computing one gradient at N times the
rate is not distributed training). Where each rank shuffles its own way the note stays
advisory: every rank trains on all of the data, in its own order.
Requires: work_division's `training_data` and notes, use_site's `same_data`.
"""

from __future__ import annotations

from typing import Iterator

from ..analysis.loop import FIT
from ..parse import nodes as N
from .base import Finding, RuleContext
from .array_rows import one_batch
from .use_site import SAME_DATA, same_data, shuffled_per_rank
from .work_division import _call_at, training_data

RULES: dict = {}
NOT_DIVIDED = "not divided: "


def check(ctx: RuleContext) -> Iterator[Finding]:
    notes = ctx.__dict__.get("notes")
    if not notes:
        return
    lines: set = set()
    shuffled: set = set()      # lines of pipelines each rank shuffles its own way
    for use in training_data(ctx):
        if use.site.distributed or use.at_use:
            continue
        pipe = use.pipe
        at = {n.start_pos[0] for n in [use.expr] + ([pipe.source.node] + [c.node for c in pipe.calls]
                                                    if pipe is not None and pipe.source is not None else [])
              if n is not None}
        if pipe is not None and same_data(ctx, pipe):
            lines |= at
        elif use.site.kind == FIT and pipe is None and (_unshuffled_fit(use.site.node) or _one_batch(ctx, use.site.node)):
            lines.add(use.site.node.start_pos[0])
        elif shuffled_per_rank(ctx, pipe):
            shuffled |= at
    for i, (point, line, text) in enumerate(notes):
        if point != 5 or not text.startswith(NOT_DIVIDED):
            continue
        if line in lines:
            notes[i] = (point, line, f"{SAME_DATA}: {text[len(NOT_DIVIDED):]}")
        elif line in shuffled:
            notes[i] = (point, line, f"{text} (each rank shuffles the data its own way, so the ranks' batches "
                                     "differ: every rank trains on all of it, right but not faster)")
    yield from ()


def _one_batch(ctx: RuleContext, node) -> bool:
    """``fit`` on arrays no bigger than one batch: every rank's one step per epoch is alike."""
    call = N.as_call(node) or _call_at(node)
    return call is not None and one_batch(ctx, call) is not None


def _unshuffled_fit(node) -> bool:
    """``fit(x, y, shuffle=False)``: every rank reads the arrays in the same order."""
    call = N.as_call(node)
    arg = call.keyword("shuffle") if call is not None else None
    return arg is not None and arg.value.type == "keyword" and arg.value.value == "False"
