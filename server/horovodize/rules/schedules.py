"""Learning-rate schedules follow the divided steps (HVD047, contract point 4).

A Keras schedule counts optimizer steps: ``ExponentialDecay``/``InverseTimeDecay``/
``PolynomialDecay``/``CosineDecay(decay_steps=, warmup_steps=)``,
``CosineDecayRestarts(first_decay_steps=)``, ``PiecewiseConstantDecay(boundaries=)``. When the
conversion divides each rank's optimizer steps by N (HVD040 take, HVD041 shard, HVD042 step
bounds and ``range(n)`` step loops, HVD043 epochs), such a schedule would decay N times
slower than in the single-process run: its step counts become ``max(1, X // hvd.size())``
(the boundaries through a list comprehension). A count taken from the dataset itself
(``len(ds)``, ``ds.cardinality()``), a per-rank count already, and a schedule class of the
program's own (``class Warmup(LearningRateSchedule)``) are named in the report.

Requires: the findings of the rule modules that divide the steps (data_shard, work_division,
step_loops), run before it (``ctx.earlier``, set by the engine; recomputed without it).
"""

from __future__ import annotations

from typing import Iterator

from ..parse import nodes as N
from ..parse.source import Edit
from . import data_shard, step_loops, work_division
from .base import Finding, Fix, RuleContext, finding, mentions_hvd, report_note
from .work_division import divide

RULES = {"HVD047": ("divide-schedule-steps", "Divide the schedule's step counts by hvd.size()")}
DIVIDERS = ("HVD040", "HVD041", "HVD042", "HVD043")
# schedule -> (keyword, position) of each argument counted in optimizer steps
STEP_ARGS = {
    "ExponentialDecay": (("decay_steps", 1),),
    "InverseTimeDecay": (("decay_steps", 1),),
    "PolynomialDecay": (("decay_steps", 1),),
    "CosineDecay": (("decay_steps", 1), ("warmup_steps", 5)),
    "CosineDecayRestarts": (("first_decay_steps", 1),),
    "PiecewiseConstantDecay": (("boundaries", 0),),
}
BASE = "LearningRateSchedule"


def check(ctx: RuleContext) -> Iterator[Finding]:
    if not ctx.summary.sites or any(s.distributed for s in ctx.summary.sites) or ctx.facts.uses_horovod:
        return
    calls = [(c, name) for name in STEP_ARGS for c in ctx.calls(name) if _is_schedule(ctx, c)]
    own = [cls for cls in ctx.classdefs() if _subclasses_schedule(cls)] if BASE in ctx.source.text else []
    if not (calls or own) or not _divided(ctx):
        return
    for cls in own:
        note(ctx, cls, f"partly done: the schedule `{cls.name.value}` counts optimizer steps of the undivided "
             f"run, and each rank now runs 1/N of them: divide its step counts by {ctx.hvd}.size()")
    for call, name in calls:
        if call.has_star() or ctx.blocked("HVD047", call.node):
            continue
        for kw, pos in STEP_ARGS[name]:
            arg = call.keyword(kw) or call.positional(pos)
            if arg is None:
                continue
            value = arg.value
            if mentions_hvd(value, ctx) or value.get_code(include_prefix=False).strip() == "None":
                continue
            if _per_rank_count(ctx, value):
                note(ctx, call.node, f"partly done: `{kw}` of `{name}` is counted from the dataset, per rank "
                     "already if the dataset is divided: check it is not divided twice")
                continue
            if kw == "boundaries":
                edits = _divide_boundaries(ctx, value)
            elif work_division.indivisible(value):
                continue
            else:
                edits = divide(ctx, value)
            yield finding(ctx, "HVD047", arg.node, f"`{name}` counts {kw} in the optimizer steps of the undivided "
                          "run: each rank now runs 1/N of them, so it would decay N times slower",
                          Fix(RULES["HVD047"][1], edits))


def note(ctx: RuleContext, node, text: str) -> None:
    """A contract-point-4 remark for the conversion report."""
    report_note(ctx, 4, node, text)


def _is_schedule(ctx: RuleContext, call: N.Call) -> bool:
    q = ctx.env.callee_qualname(call) or call.callee_dotted() or ""
    parts = q.split(".")
    return parts[-1] in STEP_ARGS and parts[0] in ("tensorflow", "keras", "tf", "tf_keras") and \
        ("schedules" in parts or "experimental" in parts)


def _subclasses_schedule(cls) -> bool:
    bases = cls.children[3] if len(cls.children) > 3 and cls.children[2] == "(" else None
    return bases is not None and bases != ")" and BASE in bases.get_code(include_prefix=False)


def divisions(ctx: RuleContext) -> list[Finding]:
    """The findings that divide each rank's optimizer steps (computed once per analysis)."""
    if ctx.earlier is not None:         # the engine runs those modules first (rules/catalogue.py)
        return [f for f in ctx.earlier if f.code in DIVIDERS]
    cached = getattr(ctx, "_divisions", None)
    if cached is None:
        cached = [f for module in (data_shard, work_division, step_loops) for f in module.check(ctx)
                  if f.code in DIVIDERS]
        ctx._divisions = cached
    return cached


def _divided(ctx: RuleContext) -> bool:
    return bool(divisions(ctx))


def _per_rank_count(ctx: RuleContext, value) -> bool:
    """``len(train_ds) * epochs``, ``ds.cardinality()``: counted on the (possibly divided) dataset."""
    if "cardinality" in value.get_code(include_prefix=False):
        return True
    for leaf in N.walk(value):
        if leaf.type == "name" and ctx.env.lookup(leaf.value, leaf, "dataset") is not None:
            return True
    return False


def _divide_boundaries(ctx: RuleContext, value) -> list[Edit]:
    """``[1000, 2000]`` → ``[max(1, b // hvd.size()) for b in [1000, 2000]]``."""
    start, end = ctx.source.span(value)
    text = ctx.source.text[start:end]
    return [Edit(start, end, f"[max(1, b // {ctx.hvd}.size()) for b in {text}]")]
