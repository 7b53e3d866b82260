"""Work division at the use site (HVD041), for a dataset whose source cannot be reached or
must not be sharded:

* a dataset a helper of another module returns (``from mydata import make_dataset``);
* a dataset that a preprocessing layer's ``adapt()`` also reads, through a function's
  argument (``get_normalization_layer(name, train_ds)`` → ``dataset.map(...)`` → ``adapt``):
  sharding it at its source would give each rank its own vocabulary or statistics;
* a dataset a helper of the program returns that another call of it also makes for
  something other than training (``load("train")`` trained on, ``load("val")`` evaluated):
  sharded in the helper, the validation data would be cut too, and a metric computed on it
  and printed by rank 0 would be rank 0's share's. Divided at the training call, the other
  calls keep all of it on every rank (a metric ``fit`` averages is then the same on each).

The data is divided where training uses it: ``fit(train_ds)`` →
``fit(train_ds.apply(lambda ds: ds.shard(N, r).take(<size> // N)))``, the same on a
loop header. At run time ``<size>`` is ``ds.cardinality()`` when TF knows it; when it is
UNKNOWN (-2: ``filter``, a generator, a record file) the elements are counted once
(``ds.reduce``), so every rank still takes the same number; INFINITE (-1) takes all of an
endless shard, bounded by the program's own step count as before. Equal counts, not
``hvd.join()``: a joined rank skips the last updates (its weights fall behind) and
``fit`` has nowhere to put a join.

Also (from pipelines) `same_data`: whether every rank would read a pipeline's examples in the same order (no
shuffle, or only seeded ones); `identical_data` words the "not divided" notes so, and the
engine blocks the conversion on them (contract point 5: never a scaled learning rate on
undivided, identical data).

Runs before `work_division` (catalogue order) and marks the uses it divides
(``Use.at_use``); that module then leaves their sources alone.
Requires: env (bindings, callers, parameters), loop summary; work_division's `training_data`.
"""

from __future__ import annotations

import re
from typing import Iterator

from ..analysis.loop import FIT, TAPE
from ..parse import nodes as N
from ..parse.imports import import_bindings
from ..parse.source import Edit
from .base import Finding, Fix, RuleContext, finding, mentions_hvd
from .pipelines import (  # noqa: F401  (same_data and shuffled_per_rank: read here by identical_data)
    DATASET_METHODS,
    same_data,
    shuffle_seeds,
    shuffled_per_rank,
)
from .work_division import (
    KNOWN_SIZE,
    SHARD_SEED,
    SIZE_PRESERVING,
    _adapted,
    _attributes_read,
    _file_list,
    _key,
    _listed_files,
    _tfds_split,
    _unwrap,
    bounded_already,
    is_split,
    note,
    training_data,
)

RULES: dict = {}        # (HVD041 is work_division's code)
# Modules whose functions return arrays, frames or tensors, not a program's own datasets.
LIBRARIES = ("numpy", "pandas", "sklearn", "scipy", "tensorflow", "keras", "tf_keras", "tensorflow_datasets",
             "torch", "h5py", "PIL", "cv2", "json", "pickle", "os", "glob", "random", "math", "datasets")
DATASET_NAME = re.compile(r"(^|_)(ds|dataset|datasets|data_?set)($|_|\d)", re.I)
# A Keras Sequence, a Python generator or a torch loader has no ``.apply``: left to epochs/steps.
NOT_DATASET = re.compile(r"gen|seq|loader|iter|batches", re.I)
TITLE = "Shard the dataset where training uses it, equal share per rank"
SAME_DATA = "not divided, and every rank trains on the same examples in the same order"


def check(ctx: RuleContext) -> Iterator[Finding]:
    adapted = _adapted_arguments(ctx)
    seen: set = set()
    for use in training_data(ctx):
        if use.site.distributed or use.expr is None or use.site.kind not in (FIT, TAPE):
            continue
        expr = N.unparen(_unwrap(ctx, N.unparen(use.expr)))
        shared = _shared_helper(ctx, use)
        if expr.type != "name" and (shared is None or expr.type not in ("atom_expr", "power")) \
                or mentions_hvd(use.expr, ctx):
            continue
        if use.site.kind == FIT and not _fit_on_dataset_alone(use):
            continue
        b = _binding_any(ctx, expr.value, expr) if expr.type == "name" else None
        why = None
        if shared is not None:
            why = shared
        elif b is None:
            why = _handed_in(ctx, expr, use)
        elif use.pipe is not None and use.pipe.source is not None and both_subsets(use.pipe.source):
            why = (f"`{expr.value}` comes from a `subset='both'` (training, validation) pair: divided where "
                   "training uses it")
        elif _read_whole(ctx, use.pipe):
            why = (f"`{expr.value}` is read whole by a preprocessing layer's adapt() (or for `.class_names`): "
                   "sharded where training uses it, so that read still sees all of it")
        elif _no_size(ctx, use.pipe):
            q = (ctx.env.callee_qualname(use.pipe.source) or "").removeprefix("tensorflow.")
            why = (f"`{q}` has no size known before reading it: divided where training uses it, its "
                   "elements counted at run time so every rank takes the same number")
        elif _source_out_of_reach(ctx, use.pipe) and _tfds_split(ctx, use.expr, use.site.node) is None:
            why = (f"`{expr.value}` is a tf.data pipeline whose source the conversion cannot reach (built through "
                   "a function of the program): divided where training uses it")
        elif id(b.stmt) in adapted and use.pipe is not None and not bounded_already(ctx, use.pipe):
            why = (f"`{expr.value}` is also read by a preprocessing layer's adapt() through a function's argument: "
                   "sharded where training uses it, so adapt() still sees all of it")
        else:
            helper = _imported_helper(ctx, b)
            named = DATASET_NAME.search(expr.value) or DATASET_NAME.search(helper.rsplit(".", 1)[-1])
            other = NOT_DATASET.search(expr.value) or NOT_DATASET.search(helper.rsplit(".", 1)[-1])
            if helper and (named or use.site.kind == FIT and not other):
                why = f"`{expr.value}` comes from `{helper}` of another module: divided where training uses it"
        if why is None or ctx.blocked("HVD041", expr):
            continue
        use.at_use = True          # (also a second use of one loop: two drivers of one step)
        if (id(expr), 0) in seen:
            continue
        seen.add((id(expr), 0))
        seeds = shuffle_seeds(ctx, use.pipe)
        if seeds is None:
            note(ctx, expr, "done, but the data is shuffled without a seed before it is divided here: each rank "
                  "takes its share of its own order, a random 1/N that may overlap another rank's; give that "
                  "shuffle the same seed on every rank for disjoint shares")
        shown = expr.value if expr.type == "name" else expr.get_code(include_prefix=False)
        yield finding(ctx, "HVD041", expr, f"every rank iterates all of `{shown}`; {why}",
                      Fix(TITLE, (seeds or []) + [_apply(ctx, expr)]))


def _shared_helper(ctx: RuleContext, use) -> str | None:
    """Why a pipeline that a local function returns is divided where training uses it: the
    function is also called for data that no training loop reads (``load("val")`` beside
    ``load("train")``), which must stay whole. None when every call of it feeds training
    (then it is sharded at its source, inside the function)."""
    if use.pipe is None or not use.pipe.through or use.pipe.source is None or bounded_already(ctx, use.pipe):
        return None
    trained = _trained_calls(ctx)
    for fn, call in use.pipe.through:
        others = [c.node for c in ctx.env.callers(fn) if id(c.node) not in trained]
        if others:
            other = " ".join(others[0].get_code(include_prefix=False).split())
            other = other if len(other) <= 60 else f"{fn.name.value}(...)"
            return (f"`{fn.name.value}()` also makes data that no training loop reads (`{other}`), which stays "
                    "whole on every rank: divided where training uses it")
    return None


def _trained_calls(ctx: RuleContext) -> set:
    """The calls of local functions whose returns feed a training loop (computed once)."""
    cached = ctx.__dict__.get("_trained_calls")
    if cached is None:
        cached = ctx.__dict__["_trained_calls"] = {
            id(call) for use in training_data(ctx) if use.pipe is not None for _fn, call in use.pipe.through}
    return cached


def _handed_in(ctx: RuleContext, expr, use) -> str | None:
    """Why a dataset named so (``dataset``, ``train_ds``) that this file never builds is
    divided where training uses it: a parameter of a function that no call of this file
    fills with a pipeline it can follow (``def train(dataset, epochs)`` called by another
    module, or with a dataset built out of sight), or a name the file reads without assigning
    it (a notebook cell run before, an ``exec``). None otherwise."""
    name = expr.value
    if not DATASET_NAME.search(name) or NOT_DATASET.search(name) or use.pipe is not None and use.pipe.known:
        return None
    env = ctx.env
    for scope in env.scopes_for(expr):
        if scope.type == "funcdef" and name in env.param_names(scope):
            return (f"`{name}` is handed in by the caller of `{scope.name.value}()`, out of this conversion's "
                    "sight: divided where training uses it")
    if env.bindings_of(name, ctx.source.module):
        return None
    return f"`{name}` is never assigned in this file: divided where training uses it"


def _source_out_of_reach(ctx: RuleContext, pipe) -> bool:
    """Dataset methods followed back to where the walk loses the source (a ``tfds.load`` tuple
    handed through a local function's parameter: tensorflow/docs data_augmentation's
    ``prepare(train_ds, shuffle=True)``), with no bound, shard or endless repeat of its own."""
    return pipe is not None and pipe.source is None and any(c.method in DATASET_METHODS for c in pipe.calls) \
        and not bounded_already(ctx, pipe)


def both_subsets(call) -> bool:
    """A Keras directory utility called with ``subset='both'``: it returns a (training,
    validation) pair, so nothing can be appended to the call itself."""
    arg = call.keyword("subset")
    return arg is not None and arg.value.get_code(include_prefix=False).strip("'\"") == "both"


def _read_whole(ctx: RuleContext, pipe) -> bool:
    """The pipeline is one that `work_division` cannot shard at its source because ``adapt()``
    or ``.class_names`` reads it there, and no size-preserving link of its own follows."""
    if pipe is None or pipe.source is None or bounded_already(ctx, pipe):
        return False
    adapted = _adapted(ctx)
    src = pipe.source
    if _attributes_read(ctx, src):
        adapted.add(_key(src))
    if _key(src) not in adapted or [c for c in pipe.method("take") if is_split(ctx, c)]:
        return False
    later = [c for c in reversed(pipe.calls) if _key(c) not in adapted]
    return not later or later[0].method not in SIZE_PRESERVING


def _no_size(ctx: RuleContext, pipe) -> bool:
    """A pipeline of this file from a source whose size TF does not know (``make_csv_dataset``,
    ``TFRecordDataset`` of one file, ``from_generator``), not a list of files `work_division`
    shards by file, with no bound, shard or endless repeat of its own."""
    if pipe is None or pipe.source is None or bounded_already(ctx, pipe):
        return False
    if pipe.method("take"):
        return False        # (a train/validation split: work_division shards after it)
    q = ctx.env.callee_qualname(pipe.source) or ""
    if not q.startswith("tensorflow.data.") or q.endswith(KNOWN_SIZE):
        return False
    return _listed_files(ctx, pipe) is None and _file_list(ctx, pipe) is None


def _apply(ctx: RuleContext, expr) -> Edit:
    hvd, tf = ctx.hvd, ctx.env.tf_alias()
    if tf:
        size = (f"(ds.cardinality() if ds.cardinality() != {tf}.data.UNKNOWN_CARDINALITY "
                f"else ds.reduce({tf}.constant(0, {tf}.int64), lambda n, _: n + 1))")
    else:
        size = "(ds.cardinality() if ds.cardinality() != -2 else ds.reduce(ds.cardinality() * 0, lambda n, _: n + 1))"
    end = ctx.source.span(expr)[1]
    return Edit(end, end, f".apply(lambda ds: ds.shard({hvd}.size(), {hvd}.rank()).take({size} // {hvd}.size()))")


def _fit_on_dataset_alone(use) -> bool:
    """``fit(ds, ...)``: no ``y`` (arrays come with one), no step bound (HVD042 divides that)."""
    call = N.as_call(use.site.node)
    if call is None or call.has_star():
        return False
    return call.keyword("y") is None and call.positional(1) is None and call.keyword("steps_per_epoch") is None


def _binding_any(ctx: RuleContext, name: str, at):
    """The assignment of `name` last before `at` in its innermost scope that assigns it, whatever its role."""
    env = ctx.env
    for scope in env.scopes_for(at):
        cands = [b for b in env.bindings_of(name, scope) if b.stmt.start_pos < at.start_pos and b.stmt is not N.statement_of(at)]
        if cands:
            return cands[-1]
        if scope.type == "funcdef" and name in env.param_names(scope):
            return None
    return None


def _imported_helper(ctx: RuleContext, b) -> str:
    """``mydata.make_dataset`` when the binding's value is a call of a function imported from a
    module of the program (not a library), else ''."""
    value = getattr(b, "value", None)
    call = N.as_call(N.unparen(value)) if value is not None else None
    if call is None or ctx.env.function_named(call.callee_dotted() or "", call.node) is not None:
        return ""
    dotted = call.callee_dotted() or ""
    root, _, rest = dotted.partition(".")
    full = next((f for node in ctx.env.index.imports for local, f in import_bindings(node) if local == root), "")
    q = f"{full}.{rest}" if full and rest else full
    if "." not in q or q.split(".")[0] in LIBRARIES or q.startswith("__"):
        return ""
    return q


def _adapted_arguments(ctx: RuleContext) -> set:
    """ids of the assignment statements whose dataset a local function's parameter hands to a
    preprocessing layer's ``adapt()`` (``get_normalization_layer(name, train_ds)``)."""
    env = ctx.env
    params: list = []          # (funcdef, parameter name)
    for call in ctx.calls("adapt"):
        arg = call.keyword("data") or call.positional(0)
        fn = N.func_scope_of(call.node)
        if arg is None or fn is None:
            continue
        name, at = _root_name(arg.value), call.node
        for _ in range(12):
            if name is None:
                break
            if name in env.param_names(fn):
                params.append((fn, name))
                break
            b = _binding_any(ctx, name, at)
            if b is None or getattr(b, "value", None) is None:
                break
            name, at = _root_name(b.value), b.stmt
    out: set = set()
    for fn, param in params:
        index = env.param_names(fn).index(param)
        for call in env.callers(fn):
            arg = call.keyword(param) or call.positional(index)
            name = _root_name(arg.value) if arg is not None else None
            b = _binding_any(ctx, name, call.node) if name else None
            if b is not None:
                out.add(id(b.stmt))
    return out


def _root_name(expr):
    """``ds`` of ``ds``, ``ds.map(f)``, ``ds.map(f).batch(2)``; None for anything else."""
    expr = N.unparen(expr)
    if expr.type == "name":
        return expr.value
    if expr.type in ("atom_expr", "power") and expr.children[0].type == "name":
        return expr.children[0].value
    return None
