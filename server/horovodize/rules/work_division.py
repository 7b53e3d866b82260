"""Work division: each rank trains on its own share and all ranks run the same number of
collective steps (contract point 5).

* HVD041: a finite tf.data pipeline that feeds training without a step bound is sharded at
  its source, right after the ``tf.data.Dataset.*(...)`` call, before shuffle and batch;
  each rank then takes the same count (``cardinality() // hvd.size()``), so a size that
  does not divide evenly cannot give one rank one more allreduce (a hang). File lists
  (``list_files``, seeded alike on every rank; a glob read by ``TFRecordDataset``) are
  sharded by file, the same number of files per rank (records not counted: said in point 5).
* HVD042: step bounds are divided: ``fit(steps_per_epoch=, validation_steps=)``, Estimator
  ``train(steps=, max_steps=)`` and ``TrainSpec(max_steps=)`` (never to 0).
* HVD043: ``fit`` on in-memory arrays divides its epochs, as Horovod's Keras examples do
  (``int(math.ceil(epochs / hvd.size()))``): each rank sees every example, in its own
  order, for 1/N of the epochs. One epoch (a literal, or a name bound only to it) divides
  nothing: left alone, and the report says so.

The analysis (`training_data`) also tells HVD040 which ``take(n)`` calls bound training:
a ``take(1)`` that only peeks at a batch is left alone.

Requires: env (dataset/model/estimator bindings), loop summary (the loop driving each step).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterator

from ..analysis.loop import ESTIMATOR, FIT, TAPE
from ..analysis.roles import KERAS_DATASETS
from ..parse import nodes as N
from ..parse.imports import import_bindings
from ..parse.source import Edit
from .array_rows import one_batch
from .base import Finding, Fix, RuleContext, finding, mentions_hvd, report_note
from .tfds_splits import _even_split, _tfds_split
from .written import epoch_files_read
from .pipelines import (  # noqa: F401  (re-exported: use_site, data_shard and step_loops read them here)
    SEQUENCES,
    SHARD_SEED,
    Pipeline,
    _assignments,
    _binding_before,
    _elements,
    _file_list,
    _listed_files,
    _target_path,
    _unwrap,
    _zipped,
    chain_calls,
    generator_loop,
    other_datasets,
    over_range,
    pipeline,
    same_data,
    shuffle_seeds,
)

RULES = {
    "HVD041": ("shard-at-source", "Shard the dataset at its source, equal share per rank"),
    "HVD042": ("divide-steps", "Divide the step count by hvd.size()"),
    "HVD043": ("divide-epochs", "Divide the epochs by hvd.size()"),
}
FIT_STEP_KEYWORDS = ("steps_per_epoch", "validation_steps")
ESTIMATOR_STEP_KEYWORDS = ("steps", "max_steps")
FIT_EPOCHS_POS = 3          # fit(x, y, batch_size, epochs, ...)
# Sources whose size tf.data knows (``cardinality()``): the equal per-rank take needs it.
GYM_MAKE = ("gym.make", "gymnasium.make")
KNOWN_SIZE = ("Dataset.from_tensor_slices", "Dataset.from_tensors", "Dataset.range", "Dataset.zip") + KERAS_DATASETS
# (what HVD041's message adds when its edit seeds a shuffle that had no seed)
SEEDED = (f"; the shuffle gets `seed={SHARD_SEED}`, the same on every rank, so the ranks' shares of one order "
          "are disjoint")


@dataclass
class Use:
    """One place training data enters a collective loop."""

    kind: str                 # TAPE / FIT / ESTIMATOR
    site: object              # the LoopSite
    expr: object = None       # the data expression (for header iterable / fit x)
    pipe: Pipeline | None = None
    at_use: bool = False      # divided where it is used (rules/use_site.py): its source is left alone


def training_data(ctx: RuleContext) -> list[Use]:
    """Where each loop site gets its data (computed once per analysis)."""
    cached = getattr(ctx, "_training_data", None)
    if cached is not None:
        return cached
    uses: list[Use] = []
    for site in ctx.summary.sites:
        if site.kind == TAPE:
            for drv in _drivers(ctx, site):
                if drv.type == "for_stmt":
                    expr = drv.children[3]
                    uses.append(Use(TAPE, site, expr, pipeline(ctx, expr, drv)))
        elif site.kind == FIT:
            call = N.as_call(site.node) or _call_at(site.node)
            arg = call.keyword("x") or call.positional(0) if call is not None else None
            uses.append(Use(FIT, site, arg.value if arg else None,
                            pipeline(ctx, arg.value, site.node) if arg else None))
        elif site.kind == ESTIMATOR:
            uses.append(Use(ESTIMATOR, site))
    ctx._training_data = uses
    return uses


def _drivers(ctx: RuleContext, site) -> list:
    """Every loop that runs the step: the summary's driver, and the loop around each call of
    the step's function (a script often calls ``train_step`` from more than one loop). A
    function that runs its own loop over the data (``train_one_epoch``) is called once an
    epoch: the loop around its call does not run the steps."""
    out = [site.driver] if site.driver is not None else []
    if site.function is not None and (site.driver is None or N.func_scope_of(site.driver) is not site.function):
        for call in ctx.env.callers(site.function):
            loop = N.loop_around(call.node)
            if loop is not None and all(loop is not d for d in out):
                out.append(loop)
    return out


def plays_episodes(ctx: RuleContext) -> bool:
    """The program makes a gym/gymnasium environment: its loop's samples are the episodes each
    rank plays (HVD046 seeds them per rank), not data to shard."""
    return any((ctx.facts.effects.qualname(c) or c.callee_dotted() or "").endswith(GYM_MAKE) for c in ctx.calls("make"))


def _call_at(node):
    for c in N.calls_in(node):
        return c
    return None


def training_takes(ctx: RuleContext) -> list[N.Call]:
    """``take(n)`` calls that bound a pipeline feeding training (HVD040 divides those)."""
    out = []
    for use in training_data(ctx):
        if use.pipe is not None:
            out += bounds(ctx, use.pipe)
        if use.kind == FIT and use.expr is not None and use.pipe is not None and use.pipe.source is not None:
            out += [c for _call, _arg, p in other_datasets(ctx, use.expr, use.site.node, use.pipe)
                    if p is not None for c in bounds(ctx, p)]      # (another call of a training helper's)
    return out


def bounds(ctx: RuleContext, pipe: Pipeline) -> list[N.Call]:
    """The pipeline's ``take`` calls that bound training (not train/validation splits)."""
    return [c for c in pipe.method("take") if not is_split(ctx, c)]


def is_split(ctx: RuleContext, take: N.Call) -> bool:
    """``train = ds.take(n)`` next to ``val = ds.skip(n)``: a split of the data, not a step count.
    Dividing it would leave examples to nobody; the share is taken by sharding after it."""
    other = "take" if take.method == "skip" else "skip"      # (``train = ds.skip(n)`` beside ``val = ds.take(n)``)
    receiver = _receiver_text(ctx, take)
    scope = N.func_scope_of(take.node)
    return any(_receiver_text(ctx, c) == receiver and N.func_scope_of(c.node) is scope
               for c in ctx.calls(other) if c.method == other)


def _receiver_text(ctx: RuleContext, call: N.Call) -> str:
    parts = call.receiver_parts
    if not parts:
        return ""
    src = ctx.source
    return src.text[src.offset(parts[0].start_pos):src.offset(parts[-1].end_pos)]


def indivisible(value) -> bool:
    """A literal count of 1 (or less): each rank's share is that count already."""
    try:
        return value.type == "number" and float(value.value) <= 1
    except ValueError:
        return False


def divide(ctx: RuleContext, value) -> list[Edit]:
    """``max(1, <value> // hvd.size())``: each rank's share, never 0."""
    start, end = ctx.source.span(value)
    inner = ctx.source.text[start:end]
    needs_parens = value.type not in ("name", "number", "atom", "atom_expr", "power", "term", "factor")
    if needs_parens:
        inner = f"({inner})"
    return [Edit(start, end, f"max(1, {inner} // {ctx.hvd}.size())")]


def divide_epochs(ctx: RuleContext, value) -> list[Edit]:
    """``int(math.ceil(<value> / hvd.size()))``, as Horovod's Keras examples divide epochs
    (never 0; 3 epochs on 2 ranks is 2, not 1), with ``import math`` when the file lacks it."""
    math, edits = _math_module(ctx)
    start, end = ctx.source.span(value)
    inner = ctx.source.text[start:end]
    if value.type not in ("name", "number", "atom", "atom_expr", "power", "term", "factor"):
        inner = f"({inner})"
    return edits + [Edit(start, end, f"int({math}.ceil({inner} / {ctx.hvd}.size()))")]


# fit's arrays, by keyword and position, that one slice per rank must cut alike.
FIT_ARRAYS = (("x", 0), ("y", 1), ("sample_weight", None))
SLICEABLE = ("name", "atom_expr", "power")


def slice_arrays(ctx: RuleContext, call: N.Call) -> list[Edit]:
    """``fit(x, y)`` for 1 epoch: each of its arrays (x, y, sample_weight) becomes
    ``x[hvd.rank():len(x) // hvd.size() * hvd.size():hvd.size()]``: every rank an equal,
    disjoint share (the same number of batches: no rank waits at a last allreduce), the
    remainder of the division left out. [] when an array is not a plain name or attribute
    (a dict or list of inputs, a call: evaluated twice) or ``fit`` has no ``y`` (``x`` alone
    may be a dataset or a generator)."""
    if call.keyword("y") is None and call.positional(1) is None:
        return []            # x alone may be a dataset or a generator: nothing to slice
    edits: list[Edit] = []
    hvd = ctx.hvd
    for kw, pos in FIT_ARRAYS:
        arg = call.keyword(kw) or (call.positional(pos) if pos is not None else None)
        if arg is None:
            continue
        value = arg.value
        if value.type not in SLICEABLE or (value.type != "name" and any(
                t.type == "trailer" and t.children[0] == "(" for t in value.children[1:])):
            return []
        start, end = ctx.source.span(value)
        text = ctx.source.text[start:end]
        # (the whole argument replaced, not text inserted at its end, where a keyword may be added)
        edits.append(Edit(start, end, f"{text}[{hvd}.rank():len({text}) // {hvd}.size() * {hvd}.size():{hvd}.size()]"))
    return edits


def _preamble(stmt) -> bool:
    """A module's docstring or a ``from __future__`` import: what an added import goes after."""
    first = stmt.children[0] if stmt.type == "simple_stmt" else stmt
    if first.type == "string" or first.type == "strings":
        return True
    return first.type == "import_from" and first.children[1].type == "name" and first.children[1].value == "__future__"


def _math_module(ctx: RuleContext) -> tuple[str, list[Edit]]:
    """The name the file binds ``math`` to at its top, or ``math`` and the edit importing it
    on the line after the last top import (before the set-up, which goes after that line)."""
    top = ctx.env.top_imports_end
    for stmt in ctx.source.module.children:
        if stmt.type == "simple_stmt" and stmt.children[0].type in ("import_name", "import_from"):
            for local, full in import_bindings(stmt.children[0]):
                if full == "math" and local.isidentifier():
                    return local, []
        if top is not None and stmt is top:
            break
    if top is None:        # code before any import (a notebook's first cell prints): the first line
        first = next((s for s in ctx.source.module.children if not _preamble(s)), None)
        if first is None or first.type == "endmarker":
            return "math", []
        at = ctx.source.line_start(ctx.source.offset(first.start_pos))
        return "math", [Edit(at, at, f"import math{ctx.nl}")]
    src = ctx.source
    eol = ctx.stmt_end(top)
    cut = eol - len(src.text[:eol]) + len(src.text[:eol].rstrip("\r\n"))
    return "math", [Edit(cut, cut, f"{ctx.nl}import math")]


def epochs_constant(ctx: RuleContext, call: N.Call, value):
    """The value of ``EPOCHS = 50`` when `value` (fit's epochs) is that name, assigned once, at
    the module's top level before the fit, as a number, and read again after the fit (a plot's
    ``range(EPOCHS)`` against the history, a last checkpoint's name): divided there, every use
    counts the epochs the ranks ran. None otherwise (the fit's argument is divided)."""
    if value.type != "name":
        return None
    found = [b for b in ctx.env.bindings if b.name == value.value]
    if len(found) != 1 or found[0].scope is not ctx.source.module or found[0].value is None \
            or found[0].value.type != "number" or found[0].stmt.start_pos > call.node.start_pos:
        return None
    top = ctx.env.top_imports_end          # (after the set-up's place: hvd is bound there)
    if top is None or found[0].stmt.start_pos <= top.start_pos:
        return None
    # Every fit reading the name then trains the divided count; other reads must all come after
    # the last of those fits (a schedule built from it before training is divided on its own).
    fits = [c for name in ("fit", "fit_generator") for c in ctx.calls(name)]
    args = {id(leaf) for c in fits for a in [c.keyword("epochs") or c.positional(FIT_EPOCHS_POS)] if a is not None
            for leaf in N.walk(a.node)}
    last = max((c.node.end_pos for c in fits if any(id(leaf) in args for leaf in N.walk(c.node))), default=None)
    reads = [leaf for leaf in ctx.env.index.names.get(value.value, ())
             if leaf.start_pos > found[0].stmt.end_pos and id(leaf) not in args]
    if last is None or not reads or any(leaf.start_pos < last or _loop_header(leaf) for leaf in reads) \
            or any(s.node is not None and s.node.start_pos > last for s in ctx.summary.sites):
        return None      # (another loop counts with it: a training loop after the fit, a range())
    return found[0].value


def _loop_header(leaf) -> bool:
    """The name is read in the iterable of a ``for`` statement (``for e in range(EPOCHS)``)."""
    node = leaf
    while node.parent is not None and node.parent.type not in ("file_input", "suite"):
        if node.parent.type == "for_stmt" and node is node.parent.children[3]:
            return True
        node = node.parent
    return False


def _constant(ctx: RuleContext, value):
    """The literal a name is bound to when every module-level assignment of it is that one
    literal (``EPOCHS = 1``), else the value itself."""
    if value.type != "name":
        return value
    found = [b for b in ctx.env.bindings if b.name == value.value and b.scope is ctx.source.module]
    values = {b.value.get_code(include_prefix=False) for b in found if b.value is not None}
    if len(found) >= 1 and len(values) == 1 and all(b.value is not None and b.value.type == "number" for b in found):
        return found[0].value
    return _default_passed(ctx, value) or value


def _default_passed(ctx: RuleContext, value):
    """A parameter's literal default when no call of its function passes it (``def train(model,
    ds, epochs=1)`` called as ``train(model, ds)``: the epochs are 1), else None."""
    fn = N.func_scope_of(value)
    if fn is None or fn.type != "funcdef":
        return None
    try:
        params = fn.get_params()
    except Exception:  # noqa: BLE001 - an error-recovered signature
        return None
    index = next((i for i, p in enumerate(params) if p.name.value == value.value), None)
    param = params[index] if index is not None else None
    if param is None or param.default is None or param.default.type != "number" or param.star_count:
        return None
    callers = ctx.env.callers(fn)
    if not callers or any(c.has_star() or c.keyword(value.value) is not None or c.positional(index) is not None
                          for c in callers):
        return None
    return param.default


def _sharded(pipe: Pipeline) -> bool:
    return bool(pipe.method("shard"))


def bounded_already(ctx: RuleContext, pipe: Pipeline) -> bool:
    """The pipeline has a bound (a training ``take``), a shard or an endless repeat of its own:
    nothing for a shard at its source or its use to add."""
    return bool(bounds(ctx, pipe)) or _sharded(pipe) or pipe.infinite


def check(ctx: RuleContext) -> Iterator[Finding]:
    seen_sources: set = set()
    for use in training_data(ctx):
        site = use.site
        if site.distributed:
            continue        # already Horovod-trained: its own division is left as it is (HVD207 says when missing)
        if site.kind == FIT:
            call = N.as_call(site.node) or _call_at(site.node)
            if call is None or call.has_star():
                continue
            bounded = False
            for kw in FIT_STEP_KEYWORDS:
                arg = call.keyword(kw) or (call.positional(1) if kw == "steps_per_epoch" and call.method in (
                    "fit_generator", "train_on_generator") else None)   # (generator, steps_per_epoch, epochs, ...)
                if arg is None or (arg.value.type == "keyword" and arg.value.value == "None"):
                    continue
                bounded |= kw == "steps_per_epoch"
                if mentions_hvd(arg.value, ctx) or indivisible(arg.value) or ctx.blocked("HVD042", call.node):
                    continue
                shards = _validation_shard(ctx, call, seen_sources, use) if kw == "validation_steps" else []
                if shards is None:
                    note(ctx, arg.node, "done, but validation_steps is left whole: every rank reads the validation data "
                         "in one order and its source cannot be sharded here, so each rank validates on all of it")
                    continue
                yield from shards
                yield finding(ctx, "HVD042", arg.node, f"every rank runs all {kw}",
                              Fix(f"Divide {kw} by hvd.size()", divide(ctx, arg.value)))
            pipe = use.pipe
            if not use.at_use and pipe is not None and pipe.source is not None:
                yield from _handed_too(ctx, use, bounded, seen_sources)
            if bounded and pipe is not None and pipe.source is not None and not _sharded(pipe) \
                    and not bounds(ctx, pipe) and _same_order_on_every_rank(ctx, pipe):
                # steps divided over batches every rank draws in one order (a seeded shuffle, or
                # none): each rank would train on the same first steps; its own shard too
                yield from _shard(ctx, pipe, seen_sources, use)
                continue
            if bounded or use.at_use or (pipe is not None and bounded_already(ctx, pipe)):
                continue
            if pipe is not None and pipe.source is not None:
                yield from _shard(ctx, pipe, seen_sources, use)
                continue
            split = _tfds_split(ctx, use.expr, site.node) if use.expr is not None else None
            if split is not None:
                yield from _even_split(ctx, split, seen_sources)
                continue
            if pipe is not None or use.expr is None:
                continue           # a dataset built elsewhere: nothing safe to divide
            if small := one_batch(ctx, call):
                note(ctx, call.node, small)
                continue
            epochs = call.keyword("epochs") or call.positional(FIT_EPOCHS_POS)
            if epochs is None or indivisible(epochs.value) or indivisible(_constant(ctx, epochs.value)):
                sliced = None if mentions_hvd(use.expr, ctx) or ctx.blocked("HVD043", call.node) \
                    else slice_arrays(ctx, call)
                if sliced:
                    yield finding(ctx, "HVD043", use.expr, "fit runs 1 epoch over all the arrays on every rank",
                                  Fix("Slice the arrays per rank, an equal share each", sliced))
                elif sliced is not None:
                    what = "fit on in-memory data" if use.expr.type != "atom_expr" or not any(
                        c.method in ("batch", "map", "shuffle", "prefetch", "cache") for c in N.calls_in(use.expr)) \
                        else f"fit on `{ctx.source.code(use.expr)}` (a dataset whose source is not followed here)"
                    note(ctx, call.node, f"not divided: {what} runs 1 epoch, which cannot be divided; shard the data "
                         "where it is made (`.shard(hvd.size(), hvd.rank())`), slice the arrays per rank, or train "
                         "more epochs")
                continue
            if mentions_hvd(epochs.value, ctx) or ctx.blocked("HVD043", call.node):
                continue
            if mentions_hvd(use.expr, ctx):
                continue           # x already sliced per rank
            # a file named for epoch k >= 2 read after the fit: with the epochs divided no rank may
            # reach epoch k, so the arrays are sliced instead, the epochs (and their names) kept
            reads = epoch_files_read(ctx, call)
            # (likewise a LearningRateScheduler whose schedule reads the epoch: a rate per epoch)
            swept = None if reads else ctx.facts.epoch_scheduler(call)
            sliced = slice_arrays(ctx, call) if reads or swept else []
            if sliced:
                read, _path, epoch = max(reads, key=lambda r: r[2]) if reads else (None, None, 0)
                why = f"line {read.node.start_pos[0]} reads the file of epoch {epoch}" if read else \
                    "its LearningRateScheduler sets the rate by the epoch"
                yield finding(ctx, "HVD043", use.expr, "every rank trains on all the arrays for every epoch; the epochs "
                              f"stay: {why}", Fix("Slice the arrays per rank, an equal share each", sliced))
                continue
            count = epochs.value.get_code(include_prefix=False)
            for read, path, epoch in reads:
                note(ctx, read.node, f"partly done: `{ctx.source.code(path)}` (line {read.node.start_pos[0]}) is the "
                     f"file of epoch {epoch}; with the epochs divided (int(math.ceil({count} / {ctx.hvd}.size()))) "
                     "no rank may reach that epoch: read the last epoch's file, or slice the arrays per rank")
            if swept:
                note(ctx, swept.node, "partly done: this LearningRateScheduler sets the rate by the epoch; with the "
                     "epochs divided it runs only the first of them: slice the arrays per rank and keep the epochs")
            where = epochs_constant(ctx, call, epochs.value) or epochs.value
            yield finding(ctx, "HVD043", epochs.node, "every rank trains on all the arrays for every epoch",
                          Fix(RULES["HVD043"][1], divide_epochs(ctx, where)))
            yield from _checkpoint_intervals(ctx, call)
        elif site.kind == TAPE and not use.at_use:
            pipe = use.pipe
            split = _tfds_split(ctx, use.expr, use.expr) if use.expr is not None and (
                pipe is None or pipe.source is None) else None
            if split is not None:
                yield from _even_split(ctx, split, seen_sources)
                continue
            if pipe is None and use.expr is not None and not mentions_hvd(use.expr, ctx) and not over_range(ctx, use.expr) \
                    and not plays_episodes(ctx) and generator_loop(ctx, use.expr, use.expr.parent) is None:
                # (an agent's samples are its own episodes: nothing to shard; a generator's steps: step_loops)
                note(ctx, use.expr, "not divided: the loop's data is not a tf.data pipeline this file builds "
                     "from a source of known size; shard it by rank and bound every rank by the same take(n)")
            if pipe is not None and pipe.infinite and not bounds(ctx, pipe) and not _sharded(pipe):
                note(ctx, use.expr, "not divided: the loop iterates an endless `repeat()` pipeline with no "
                     "take(n) to divide; bound it by take(n)")
            if pipe is None or pipe.source is None or bounded_already(ctx, pipe):
                continue
            yield from _shard(ctx, pipe, seen_sources, use)
        elif site.kind == ESTIMATOR:
            call = N.as_call(site.node) or _call_at(site.node)
            if call is None or call.method != "train":
                continue
            if not any(_estimator_arg(call, kw) for kw in ESTIMATOR_STEP_KEYWORDS):
                note(ctx, call.node, "not divided: train() has no steps/max_steps; every rank runs the whole "
                     "input_fn: give it steps=n // hvd.size() or shard the input_fn's data by rank")
            yield from _estimator_steps(ctx, call)
    for call in ctx.calls("TrainSpec"):
        if ctx.env.callee_qualname(call) and ctx.env.callee_qualname(call).endswith("estimator.TrainSpec"):
            yield from _estimator_steps(ctx, call, ("max_steps",))


def _validation_shard(ctx: RuleContext, call: N.Call, seen: set, use: Use) -> list | None:
    """What divides the validation data with `validation_steps`: nothing when each rank reads
    its own already (sharded, shuffled per rank, or data this file does not build); the shard
    at its source when every rank would read it in one order (each would validate on the same
    first batches); None when that source cannot be sharded (the steps then stay whole)."""
    arg = call.keyword("validation_data")
    pipe = pipeline(ctx, arg.value, call.node) if arg is not None else None
    if pipe is None or pipe.source is None or _sharded(pipe) or mentions_hvd(arg.value, ctx) \
            or not same_data(ctx, pipe):
        return []
    takes = {_key(c) for c in training_takes(ctx)}
    if any(_key(c) in takes for c in bounds(ctx, pipe)):
        return []             # (the training data's own take(n): HVD040 divides it)
    q = ctx.env.callee_qualname(pipe.source) or ""
    if not q.endswith(KNOWN_SIZE) and _listed_files(ctx, pipe) is None and _file_list(ctx, pipe) is None:
        return None           # (no size known before reading it: no equal share can be cut)
    found = list(_shard(ctx, pipe, seen, use))
    for f in found:
        f.message = f.message.replace("every rank iterates the whole dataset", "with validation_steps divided, "
                                      "every rank would validate on the same first batches of the dataset", 1)
    if found or {_key(c) for c in [pipe.source, *pipe.calls]} & seen:
        return found          # (or sharded already, for the training data it shares)
    return None


def _handed_too(ctx: RuleContext, use: Use, bounded: bool, seen: set) -> Iterator[Finding]:
    """The datasets the other calls of a training helper hand to its fit, each divided as the
    one `use` followed (sharded at its source), or said not divided."""
    fn = N.func_scope_of(use.site.node)
    for call, arg, pipe in other_datasets(ctx, use.expr, use.site.node, use.pipe):
        if pipe is not None and pipe.source is not None:
            if bounded and (_sharded(pipe) or bounds(ctx, pipe) or not _same_order_on_every_rank(ctx, pipe)) \
                    or not bounded and bounded_already(ctx, pipe):
                continue       # (its steps divided over batches each rank draws its own way; a bound of its own)
            yield from _shard(ctx, pipe, seen, use)
            continue
        split = _tfds_split(ctx, arg, call.node)
        if split is not None:
            yield from _even_split(ctx, split, seen)
        elif not bounded:
            note(ctx, call.node, f"not divided: `{fn.name.value}()` also trains on `{ctx.source.code(arg)}` here, "
                 "which the conversion cannot follow to a tf.data source (the other calls' datasets are sharded "
                 "at theirs); divide it by rank where it is made (`.shard(hvd.size(), hvd.rank())` on a tf.data "
                 "pipeline, a per-rank slice of arrays)")


# Estimator.train(input_fn, hooks, steps, max_steps): the positions of its step counts.
ESTIMATOR_STEP_POS = {"steps": 2, "max_steps": 3}


def _estimator_arg(call: N.Call, kw: str):
    """The `kw` argument of ``Estimator.train``, by keyword or position (None for a TrainSpec's)."""
    pos = ESTIMATOR_STEP_POS.get(kw) if call.method == "train" else None
    return call.keyword(kw) or (call.positional(pos) if pos is not None else None)


def _estimator_steps(ctx: RuleContext, call: N.Call, keywords=ESTIMATOR_STEP_KEYWORDS) -> Iterator[Finding]:
    for kw in keywords:
        arg = _estimator_arg(call, kw)
        if arg is None or (arg.value.type == "keyword" and arg.value.value == "None"):
            continue
        if mentions_hvd(arg.value, ctx) or indivisible(arg.value) or ctx.blocked("HVD042", call.node):
            continue
        yield finding(ctx, "HVD042", arg.node, f"every rank runs all {kw}",
                      Fix(f"Divide {kw} by hvd.size()", divide(ctx, arg.value)))


def note(ctx: RuleContext, node, text: str) -> None:
    """A contract-point-5 remark for the conversion report (what was not divided, and why)."""
    report_note(ctx, 5, node, text)


def _examples_built(pipe: Pipeline):
    """The first ``batch``/``window`` (from the source) that a later ``shuffle`` or ``batch``
    follows: it builds the examples (``chars.batch(41).map(split)...shuffle().batch(64)``), so
    the shard goes after it; sharded before it, each rank's sequences would skip every other
    character. None when there is no such link."""
    order = list(reversed(pipe.calls))
    for i, c in enumerate(order):
        if c.method in ("batch", "window") and any(d.method in ("batch", "padded_batch", "shuffle")
                                                   for d in order[i + 1:]):
            return c
    return None


def _shard(ctx: RuleContext, pipe: Pipeline, seen: set, use: Use) -> Iterator[Finding]:
    splits = [c for c in pipe.calls if c.method in ("take", "skip") and is_split(ctx, c)]
    src = splits[-1] if splits else pipe.source     # after the split nearest the source, else the source
    built = _examples_built(pipe)
    if built is not None and (not splits or pipe.calls.index(built) < pipe.calls.index(src)):
        src = built       # a batch that builds the examples (a text's characters into sequences)
    adapted = _adapted(ctx)
    if src is pipe.source and _attributes_read(ctx, src):
        adapted.add(_key(src))
    if _key(src) in adapted:
        # ``layer.adapt(raw_ds...)``: sharding what adapt reads would give each rank its own
        # vocabulary or statistics; shard after the last link adapt shares, if size-preserving.
        # (Likewise ``ds.class_names``: the attribute is on the utility's dataset only.)
        later = [c for c in reversed(pipe.calls[:pipe.calls.index(src)] if src in pipe.calls else pipe.calls)
                 if _key(c) not in adapted]
        if not later or later[0].method not in SIZE_PRESERVING:
            note(ctx, pipe.source.node, "not divided: a preprocessing layer's adapt() (or `.class_names`) "
                 "reads this dataset as the source returns it, so it cannot be sharded there; shard it by "
                 "rank after that read and bound every rank by the same take(n)")
            return
        src = later[0]
    key = _key(src)
    if key in seen or ctx.blocked("HVD041", src.node) or mentions_hvd(src.node, ctx):
        return
    q = ctx.env.callee_qualname(pipe.source) or ""
    files = _listed_files(ctx, pipe) if src is pipe.source else None
    if files is not None:
        yield from _shard_files(ctx, files, pipe, seen)
        return
    listed = _file_list(ctx, pipe) if src is pipe.source else None
    if listed is not None:
        yield from _shard_file_list(ctx, listed, pipe, seen)
        return
    if not q.endswith(KNOWN_SIZE) and not (src is not pipe.source and q.endswith("list_files")):
        # (a file list cut by a split is sized: list_files knows its count, shuffle and skip keep it)
        # Sharding without an equal bound can give one rank one more batch: its last allreduce
        # then waits for ranks that have finished. No size, no safe bound: left to the user.
        note(ctx, pipe.source.node, f"not divided: `{q.removeprefix('tensorflow.')}` has no size known "
             "before reading it, so no equal per-rank bound can be set here; when you know its number of "
             "records N, divide it where it is made: `.shard(hvd.size(), hvd.rank()).take(N // hvd.size())`; "
             "with several files, shard the file list by rank (`list_files(...).shard(hvd.size(), hvd.rank())`) "
             "and bound every rank by the same take(n) or steps_per_epoch")
        return
    seen.add(key)
    hvd = ctx.hvd
    end = ctx.source.offset(src.trailer.end_pos)
    text = (f".apply(lambda ds: ds.shard({hvd}.size(), {hvd}.rank())"
            f".take(ds.cardinality() // {hvd}.size()))")
    name = q.replace("tensorflow.keras.", "keras.").replace("tensorflow.", "tf.")
    edits = [Edit(end, end, text)]
    why = ""
    if q.endswith("Dataset.zip") and src is pipe.source:
        # ``zip((a, b))`` of pipelines each shuffled without a seed: each rank zips its own
        # orders, so the shards cut after it overlap; the same seeds on every rank order them
        # alike (a seed per part, else the parts would be shuffled in step: a[i] with b[i]).
        for i, part in enumerate(_zipped(ctx, src)):
            seeds = shuffle_seeds(ctx, part, SHARD_SEED + i)
            if seeds is None:
                note(ctx, src.node, "done, but a dataset zipped here is shuffled without a seed before it is "
                     "divided: each rank takes its share of its own order; give that shuffle the same seed "
                     "on every rank for disjoint shares")
            elif seeds:
                edits = seeds + edits
                why = SEEDED.replace("the shuffle gets `seed=", "each shuffle gets a seed from `")
    if q in KERAS_DATASETS and _unseeded_shuffle(pipe.source, q):
        # Each rank would shuffle the files with a seed of its own: the shards would overlap.
        # The same seed on every rank orders the files alike, so the shards are disjoint.
        if pipe.source.has_star():
            note(ctx, pipe.source.node, f"divided, but `{name}` shuffles its files with a random seed of its "
                 "own on each rank (no `seed=`), so the ranks' shares overlap; pass the same `seed=` on every "
                 "rank for disjoint shares")
        else:
            edits = ctx.add_keyword(pipe.source, f"seed={SHARD_SEED}") + edits
            why += SEEDED
    yield finding(ctx, "HVD041", src.node, f"every rank iterates the whole dataset from `{name}`{why}",
                  Fix(RULES["HVD041"][1], edits))


def _shard_file_list(ctx: RuleContext, arg, pipe: Pipeline, seen: set) -> Iterator[Finding]:
    """``TFRecordDataset(files)`` reads ``files`` as a dataset of its names, sorted (the same
    order on every rank), sharded, the same number of files on every rank."""
    key = _key(pipe.source)
    if key in seen or ctx.blocked("HVD041", pipe.source.node) or mentions_hvd(pipe.source.node, ctx):
        return
    root = pipe.source.node.children[0]
    if root.type != "name" or not (pipe.source.callee_dotted() or "").startswith(f"{root.value}.data."):
        return          # (``from tensorflow.data import TFRecordDataset``: no tf name to build with)
    seen.add(key)
    hvd, tf = ctx.hvd, root.value
    start, end = ctx.source.span(arg.value)
    edits = [Edit(start, start, f"{tf}.data.Dataset.from_tensor_slices(sorted("),
             Edit(end, end, f")).apply(lambda ds: ds.shard({hvd}.size(), {hvd}.rank())"
                            f".take(ds.cardinality() // {hvd}.size()))")]
    note(ctx, pipe.source.node, "partly done: the files are divided by rank, the same number on every rank, "
         "but not their records: if the files hold different numbers of batches, one rank runs more "
         "steps and its last allreduce waits for the others; bound every rank by the same "
         "steps_per_epoch or take(n)")
    yield finding(ctx, "HVD041", pipe.source.node, "every rank reads every file of the list",
                  Fix(RULES["HVD041"][1], edits))


def _shard_files(ctx: RuleContext, files: N.Call, pipe: Pipeline, seen: set) -> Iterator[Finding]:
    """Shard the file names at ``list_files``: each rank reads its own files, the same number
    of files on every rank. ``list_files`` shuffles with a seed of each run's own unless given
    one, so each rank would order the files its own way and the shards would overlap: the
    same ``seed=`` on every rank keeps the shuffle and makes the shards disjoint."""
    key = _key(files)
    if key in seen or ctx.blocked("HVD041", files.node) or mentions_hvd(files.node, ctx):
        return
    if files.has_star():
        note(ctx, files.node, "not divided: `list_files(*...)` may shuffle the files with a random seed of "
             "its own on each rank; give it `seed=` and shard it by rank")
        return
    if pipe.method("skip") or pipe.method("take"):
        # ``list_ds.skip(val_size)``: a split counted on all the files would take a larger
        # part of each rank's share; shard after the split instead (left to the user)
        note(ctx, files.node, "not divided: the files from `list_files` are split by skip/take counted on "
             "all of them; shard the training split by rank (`.shard(hvd.size(), hvd.rank())`) and bound "
             "every rank by the same take(n)")
        return
    seen.add(key)
    hvd = ctx.hvd
    end = ctx.source.offset(files.trailer.end_pos)
    edits = [Edit(end, end, f".apply(lambda ds: ds.shard({hvd}.size(), {hvd}.rank())"
                            f".take(ds.cardinality() // {hvd}.size()))")]
    shuffle = files.keyword("shuffle") or (files.positional(1) if len(files.args) > 1 else None)
    unshuffled = shuffle is not None and shuffle.value.type == "keyword" and shuffle.value.value == "False"
    why = ""
    if not unshuffled and files.keyword("seed") is None and len(files.args) < 3:
        edits = ctx.add_keyword(files, f"seed={SHARD_SEED}") + edits
        why = SEEDED
    # one element per file (``map(load_image)``): equal files, equal steps; else say so
    if files is not pipe.source or not all(c.method in SIZE_PRESERVING for c in pipe.calls):
        note(ctx, files.node, "partly done: the files are divided by rank, the same number on every rank, "
             "but not their records: if the files hold different numbers of batches, one rank runs more "
             "steps and its last allreduce waits for the others; bound every rank by the same "
             "steps_per_epoch or take(n)")
    yield finding(ctx, "HVD041", files.node, f"every rank reads every file from `tf.data.Dataset.list_files`{why}",
                  Fix(RULES["HVD041"][1], edits))


def _checkpoint_intervals(ctx: RuleContext, fit: N.Call) -> Iterator[Finding]:
    """A ``ModelCheckpoint`` of this fit that saves every k epochs counted in the undivided
    run (``save_freq=5 * n_batches``, ``period=5``): once the epochs are divided, a run of
    ceil(E/N) < k epochs would save nothing (and a later ``latest_checkpoint`` would find
    the untrained one). k becomes ``max(1, k // hvd.size())``: about as many checkpoints as
    before, the first within the divided run. A ``save_freq`` in batches that is not such a
    product is named in the report."""
    callbacks = fit.keyword("callbacks")
    if callbacks is None:
        return
    names = {leaf.value for leaf in N.walk(callbacks.value) if leaf.type == "name"}
    for cp in ctx.calls("ModelCheckpoint"):
        stmt = N.statement_of(cp.node)
        parts = N.assign_parts(stmt) if stmt.type == "expr_stmt" else None
        bound = parts is not None and N.unparen(parts[1]) is cp.node and \
            any(N.dotted(t) in names for t in parts[0])
        if not (bound or N.inside(cp.node, callbacks.value)):
            continue
        for kw in ("save_freq", "period"):
            arg = cp.keyword(kw)
            if arg is None or mentions_hvd(arg.value, ctx) or arg.value.type in ("string", "strings"):
                continue
            k = _epochs_factor(arg.value) if kw == "save_freq" else arg.value
            if k is not None and k.type == "number" and k.value.isdigit() and int(k.value) >= 2 and not bound:
                note(ctx, cp.node, f"partly done: `{kw}={arg.value.get_code(include_prefix=False)}` counts epochs of "
                     f"the undivided run (a callback HVD050 moves onto rank 0): make it max(1, {k.value} // "
                     f"{ctx.hvd}.size())")
                continue
            if k is None or k.type != "number" or not k.value.isdigit() or int(k.value) < 2:
                note(ctx, cp.node, f"partly done: `{kw}={arg.value.get_code(include_prefix=False)}` counts batches "
                     "of the undivided epochs; with the epochs divided it may save less often or not at all")
                continue
            start, end = ctx.source.span(k)
            yield finding(ctx, "HVD043", arg.node, f"the checkpoint interval counts {k.value} epochs of the "
                          "undivided run", Fix("Divide the epochs the checkpoint interval counts by hvd.size()",
                                               [Edit(start, end, f"max(1, {k.value} // {ctx.hvd}.size())")]))


def _epochs_factor(value):
    """The integer literal k of ``k * n`` / ``n * k`` (k epochs of n batches), or None."""
    if value.type != "term" or len(value.children) != 3 or value.children[1] != "*":
        return None
    numbers = [c for c in (value.children[0], value.children[2]) if c.type == "number"]
    return numbers[0] if len(numbers) == 1 else None


SIZE_PRESERVING = ("map", "batch", "padded_batch", "cache", "prefetch", "shuffle")


def _key(call: N.Call) -> tuple:
    return id(call.node), call.index


ATTRIBUTES = ("class_names", "file_paths")


def _same_order_on_every_rank(ctx: RuleContext, pipe: Pipeline) -> bool:
    """Every rank draws the pipeline's elements in one order: a source of known size (tensors,
    a range, a Keras directory utility given a seed) with no shuffle, or each shuffle with a
    fixed seed (a Keras directory utility shuffles with a random seed unless given one). A
    shuffle without a seed gives each rank its own order (HVD049 makes it so under a global
    seed), and dividing the steps is then enough."""
    q = ctx.env.callee_qualname(pipe.source) or ""
    if not q.endswith(KNOWN_SIZE) or q in KERAS_DATASETS and _unseeded_shuffle(pipe.source, q):
        return False      # (a generator, a CSV or TFDS reader may draw or shuffle its own way)
    for c in pipe.method("shuffle"):
        seed = c.keyword("seed") or c.positional(1)
        if seed is None or c.has_star() or mentions_hvd(seed.value, ctx):
            return False
    return True


def _unseeded_shuffle(call: N.Call, q: str) -> bool:
    """A Keras utility that shuffles (the directory ones by default) without a ``seed``."""
    if call.keyword("seed") is not None:
        return False
    arg = call.keyword("shuffle")
    if arg is None:
        return not q.endswith("timeseries_dataset_from_array")
    return not (arg.value.type == "keyword" and arg.value.value in ("False", "None"))


def _attributes_read(ctx: RuleContext, src: N.Call) -> bool:
    """``ds.class_names`` read from the name the Keras utility's dataset is bound to:
    ``.apply(...)`` returns a dataset without that attribute."""
    parts = N.assign_parts(N.statement_of(src.node))
    if parts is None or N.unparen(parts[1]) is not src.node:
        return False
    names = {N.dotted(t) for t in parts[0]} - {None}
    text = ctx.source.text
    names = {n for n in names if any(f"{n}.{a}" in text for a in ATTRIBUTES)}   # (a plain search first)
    return any(re.search(rf"(?<![\w.]){re.escape(n)}\.({'|'.join(ATTRIBUTES)})\b", ctx.source.text) for n in names)


def _adapted(ctx: RuleContext) -> set:
    """The pipeline links (and sources) a preprocessing layer's ``adapt(ds)`` reads."""
    out: set = set()
    for call in ctx.calls("adapt"):
        arg = call.keyword("data") or call.positional(0)
        pipe = pipeline(ctx, arg.value, call.node) if arg is not None else None
        if pipe is not None:
            out |= {_key(c) for c in pipe.calls}
            if pipe.source is not None:
                out.add(_key(pipe.source))
    return out
