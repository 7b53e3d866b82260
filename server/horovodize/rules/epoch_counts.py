"""What counts the epochs of a ``fit`` whose epochs HVD043 divides (contract point 5).

* ``fit(..., epochs=E, initial_epoch=I)``: Keras trains from epoch I up to epoch E, so with E
  become ``ceil(E / N)`` and I left as it was the fit trains fewer epochs than its share, or
  none (``epochs=5, initial_epoch=5``). I becomes ``I // hvd.size()`` (HVD043 again): at least
  the rank's share of the E - I epochs. ``initial_epoch=len(history.epoch)`` (or anything else
  read from a ``History``) counts the epochs the ranks really ran: left as it is.
* The epochs' name read again after the fit (``EPOCHS`` in the file name of the last epoch's
  checkpoint, a plot's x axis) would count the undivided epochs: there it becomes the divided
  count too (HVD043), unless it is a loop's range (named in the report). A name read only
  there is divided where it is assigned instead (work_division.epochs_constant).

Requires: schedules.divisions (where HVD043 divides a fit's epochs), work_division (the fit calls).
"""

from __future__ import annotations

from typing import Iterator

from ..analysis.loop import FIT
from ..parse import nodes as N
from ..parse.source import Edit
from .base import Finding, Fix, RuleContext, finding, mentions_hvd
from .schedules import divisions
from .work_division import FIT_EPOCHS_POS, _call_at, _loop_header, divide_epochs, note, training_data

RULES: dict = {}      # (HVD043, the divide-epochs family of rules/work_division.py)


def check(ctx: RuleContext) -> Iterator[Finding]:
    fits = []
    counted: set = set()      # the epochs arguments of every fit: a fit reading the name is not a later use
    for use in training_data(ctx):
        if use.kind != FIT:
            continue
        call = N.as_call(use.site.node) or _call_at(use.site.node)
        epochs = call.keyword("epochs") or call.positional(FIT_EPOCHS_POS) if call is not None else None
        if epochs is not None and (call.keyword("initial_epoch") or N.unparen(epochs.value).type == "name"):
            fits.append((call, epochs))
    epoch_divisions = [f for f in divisions(ctx) if f.code == "HVD043"] if fits else []
    divided = {f.start for f in epoch_divisions}
    # (a count divided where it is assigned, ``EPOCHS = int(math.ceil(50 / hvd.size()))``: every
    # later use reads the divided count)
    at_assignment = {f.start for f in epoch_divisions if f.fix is not None and not f.start <= f.fix.edits[-1].start < f.end}
    for other in (*ctx.calls("fit"), *ctx.calls("fit_generator")):
        arg = other.keyword("epochs")
        counted |= {id(leaf) for leaf in N.walk(arg.node)} if arg is not None else set()
    yield from _patience(ctx)
    for call, epochs in fits:
        if ctx.source.span(epochs.node)[0] not in divided:
            continue
        initial = call.keyword("initial_epoch")
        if initial is not None and not mentions_hvd(initial.value, ctx) and not _from_history(initial.value) \
                and not ctx.blocked("HVD043", call.node) and initial.value.get_code(include_prefix=False) != "0":
            yield finding(ctx, "HVD043", initial.node, "the fit starts at an epoch of the undivided run: with its "
                          "epochs divided it would train less than its share, or nothing",
                          Fix("Divide the initial epoch by hvd.size()", _floor_divide(ctx, initial.value)))
        value = N.unparen(epochs.value)
        if value.type == "name" and ctx.source.span(epochs.node)[0] not in at_assignment:
            later = [leaf for leaf in ctx.env.index.names.get(value.value, ()) if leaf.start_pos > call.node.end_pos
                     and not _assigned(leaf) and id(leaf) not in counted and not _keyword_name(leaf)]
            loops = [leaf for leaf in later if _loop_header(leaf)]
            for leaf in later:
                if leaf not in loops and not ctx.blocked("HVD043", leaf):
                    # (a plot's range(EPOCHS) against the History, the last checkpoint's name)
                    yield finding(ctx, "HVD043", leaf, f"`{value.value}` read after the fit counts the undivided "
                                  "epochs; each rank ran its share of them", Fix("Count the epochs the ranks ran",
                                                                                 divide_epochs(ctx, leaf)))
            # (a loop that trains a model of its own counts its own epochs: nothing to say)
            loops = [leaf for leaf in loops if not any(s.node is not None and N.inside(s.node, N.loop_around(leaf) or leaf)
                                                       for s in ctx.summary.sites)]
            if loops:
                note(ctx, loops[0], f"partly done: `{value.value}` still counts the undivided epochs after the fit "
                     f"(each rank ran int(math.ceil({value.value} / {ctx.hvd}.size())) of them) in a loop's range: "
                     "use the divided count there if the loop counts the epochs the fit ran")


PATIENT = ("EarlyStopping", "ReduceLROnPlateau")


def _patience(ctx: RuleContext) -> Iterator[Finding]:
    """``EarlyStopping(patience=P)`` / ``ReduceLROnPlateau(patience=P)`` when every fit's epochs
    are divided (HVD043): each rank's epoch then trains on all of the data, N epochs of the
    single-process run at once, so P epochs of patience would wait N times longer; P becomes
    ``int(math.ceil(P / hvd.size()))`` (a patience of 0 stays 0)."""
    calls = [c for name in PATIENT for c in ctx.calls(name) if ".callbacks." in (ctx.env.callee_qualname(c) or "")]
    if not calls:
        return
    divided = {f.start for f in divisions(ctx) if f.code == "HVD043"}
    fits = [N.as_call(u.site.node) or _call_at(u.site.node) for u in training_data(ctx) if u.kind == FIT]
    epochs = [(c.keyword("epochs") or c.positional(FIT_EPOCHS_POS)) if c is not None else None for c in fits]
    if not epochs or any(e is None or ctx.source.span(e.node)[0] not in divided for e in epochs):
        return
    for call in calls:
        arg = call.keyword("patience")
        if arg is None or mentions_hvd(arg.value, ctx) or ctx.blocked("HVD043", call.node) or \
                arg.value.get_code(include_prefix=False).strip() in ("0", "1"):
            continue
        yield finding(ctx, "HVD043", arg.node, f"`patience` of `{call.method or call.callee_dotted()}` counts epochs "
                      "of the undivided run: with the epochs divided each one trains on N of them",
                      Fix("Divide the patience by hvd.size()", divide_epochs(ctx, arg.value)))


def _from_history(value) -> bool:
    """``len(history.epoch)``, ``history.epoch[-1] + 1``: the epochs the ranks really ran."""
    return any(leaf.type == "name" and leaf.value == "epoch" and leaf.get_previous_sibling() == "."
               for leaf in N.walk(value) if leaf.type == "name") or ".epoch" in value.get_code(include_prefix=False)


def _keyword_name(leaf) -> bool:
    """The ``epochs`` of ``f(epochs=...)``: a keyword, not a read of the name."""
    nxt = leaf.get_next_sibling()
    return leaf.parent is not None and leaf.parent.type == "argument" and nxt is not None and nxt == "="


def _assigned(leaf) -> bool:
    stmt = N.statement_of(leaf)
    parts = N.assign_parts(stmt) if stmt is not None and stmt.type == "expr_stmt" else None
    return parts is not None and any(N.inside(leaf, t) or leaf is t for t in parts[0])


def _floor_divide(ctx: RuleContext, value) -> list[Edit]:
    start, end = ctx.source.span(value)
    inner = ctx.source.text[start:end]
    if value.type not in ("name", "number", "atom", "atom_expr", "power"):
        inner = f"({inner})"
    return [Edit(start, end, f"{inner} // {ctx.hvd}.size()")]
