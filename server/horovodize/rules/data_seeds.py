"""Randomness reasoned about per rank (contract point 5). The same split on every rank (HVD045): a random split of the data made
before training without a seed gives each rank its own split, so one rank's validation rows
are another rank's training rows and the averaged validation loss is optimistic (seen: 80%
of each rank's validation rows trained on by the other rank at 2 ranks).

Seeded with a fixed value, the same on every rank (the minimal edit):

* ``train_test_split(...)`` (scikit-learn) -> ``random_state=42`` added;
* ``df.sample(frac=...)`` (pandas, shuffling rows before ``np.split``) -> ``random_state=42``;
* ``ds.shuffle(n, reshuffle_each_iteration=False)`` (tf.data, one order for a skip/take
  split) -> ``seed=42``;
* ``np.random.permutation(...)`` / ``np.random.shuffle(x)`` ->
  ``np.random.default_rng(42).permutation(...)`` (a generator of its own: the program's
  other draws from numpy's global state are unchanged).

Only before the first training step, outside any loop (a shuffle each epoch that picks a
rank's batches should differ per rank), and not after the program seeds numpy's global state
(``np.random.seed``, ``keras.utils.set_random_seed``), which makes every rank draw the same.

Per rank where the randomness should differ (HVD046): a reinforcement-learning program (it
makes a ``gym``/``gymnasium`` environment) that seeds its environment (``env.seed(s)``,
``env.reset(seed=s)``) or the draws it explores with (``np.random.seed``, ``random.seed``,
``tf.random.set_seed``, ``keras.utils.set_random_seed``) gets ``s + hvd.rank()``: with one
seed every rank plays the same episodes, so the averaged gradient is one rank's at N times
the learning rate. The weights the per-rank TensorFlow seed initialises are rank 0's after
the broadcast. Such a program's splits are then left alone (HVD045).

Requires: env (qualified names), loop summary (where training starts).
"""

from __future__ import annotations

from typing import Iterator

from ..parse import nodes as N
from ..parse.source import Edit
from ..analysis.loop import FIT
from .base import Finding, Fix, RuleContext, finding, mentions_hvd, report_note
from .work_division import GYM_MAKE, training_data

RULES = {
    "HVD045": ("same-split-on-every-rank", "Seed the random split so every rank makes the same one"),
    "HVD046": ("exploration-seed-per-rank", "Seed the environment and the exploration per rank (seed + hvd.rank())"),
    "HVD049": ("shuffle-seed-per-rank", "Seed TensorFlow per rank (seed + hvd.rank()) so each rank shuffles its own way"),
}
# TensorFlow's global seed (the last two seed numpy and random too): it orders fit's shuffle.
TF_SEEDS = ("tensorflow.random.set_seed", "tensorflow.keras.utils.set_random_seed", "keras.utils.set_random_seed",
            "tf_keras.utils.set_random_seed")
# Between the seed and fit, draws that make the data or its split: they must stay alike.
SPLIT_DRAWS = ("train_test_split", "sample", "shuffle", "permutation", "split_dataset")
# Seeds of the draws an agent explores with (actions sampled by numpy, TensorFlow or random).
# (numpy's and Python's global seeds: they also make the data, kept alike beside a per-rank TF seed)
DATA_SEEDS = ("numpy.random.seed", "np.random.seed", "random.seed")
RANK_SEEDS = DATA_SEEDS + ("tensorflow.random.set_seed", "tf.random.set_seed", "set_random_seed")
SEED = 42
NP_DRAWS = ("permutation", "shuffle")
GLOBAL_SEEDS = ("numpy.random.seed", "np.random.seed", "set_random_seed")   # keras.utils / tf.keras.utils


def check(ctx: RuleContext) -> Iterator[Finding]:
    yield from check_rank_seeds(ctx)
    yield from check_splits(ctx)
    yield from check_fit_seeds(ctx)
    yield from check_iterator_seeds(ctx)


# Keras image iterators: one made with ``seed=`` re-seeds numpy before each batch it draws.
FLOWS = ("flow", "flow_from_directory", "flow_from_dataframe")


def check_iterator_seeds(ctx: RuleContext) -> Iterator[Finding]:
    """HVD049: ``ImageDataGenerator(...).flow_from_directory(..., seed=1)`` in a program that
    trains: the iterator's order and augmentation are a function of its seed, the same on every
    rank (nothing shards it), so each rank would train on the same batches at N times the rate;
    ``seed=1 + hvd.rank()`` (on each iterator alike, so an image and its mask stay paired)."""
    if not ctx.summary.sites:
        return
    for method in FLOWS:
        for call in ctx.calls(method):
            seed = call.keyword("seed")
            if seed is None or mentions_hvd(seed.value, ctx) or not _image_generator(ctx, call) \
                    or ctx.blocked("HVD049", seed.value):
                continue
            start, end = ctx.source.span(seed.value)
            yield finding(ctx, "HVD049", seed.value, f"the image iterator's `seed={seed.value.get_code(include_prefix=False)}` "
                          "orders and augments its batches alike on every rank: every rank would train on the same batches",
                          Fix("Seed the image iterator per rank (seed + hvd.rank())", [Edit(start, end, ranked(ctx, seed.value))]))


def _image_generator(ctx: RuleContext, call: N.Call) -> bool:
    """The receiver of `call` is an ``ImageDataGenerator`` (made there, or assigned to its name)."""
    parts = call.receiver_parts
    text = "".join(p.get_code(include_prefix=False) for p in parts)
    if "ImageDataGenerator(" in text:
        return True
    if len(parts) != 1 or parts[0].type != "name":
        return False
    return any(v is not None and "ImageDataGenerator(" in v.get_code(include_prefix=False)
               for _s, v, _op in ctx.facts.assignments(parts[0].value, call.node))


def check_fit_seeds(ctx: RuleContext) -> Iterator[Finding]:
    """HVD049: ``fit`` on in-memory arrays whose epochs are divided (HVD043: every rank reads all
    of the arrays, each in its own shuffled order), or on a pipeline shuffled without a seed
    whose steps are divided (HVD042), after TensorFlow's global seed is set: the
    seed orders fit's shuffle, so every rank would draw the same batches (one gradient at N
    times the rate). The seed gets ``+ hvd.rank()`` in place; when the program draws its data
    or a split from the seeded state between the seed and ``fit`` (which must stay the same on
    every rank), a new seeding line right before ``fit`` instead. A seed read from the
    launcher's rank (``os.environ["HOROVOD_RANK"]``) is per rank already."""
    divided = [f for f in ctx.earlier if f.fix is not None and (
        f.code == "HVD043" and f.fix.title == "Divide the epochs by hvd.size()"
        or f.code == "HVD042" and f.fix.title == "Divide steps_per_epoch by hvd.size()")]
    if not divided:
        return
    seeds = [c for name in ("set_seed", "set_random_seed") for c in ctx.calls(name)
             if _qualname(ctx, c).replace("tf.", "tensorflow.", 1).endswith(TF_SEEDS)]
    done: set = set()
    for use in training_data(ctx):
        call = N.as_call(use.site.node)
        if use.site.kind != FIT or call is None or use.site.distributed or use.at_use:
            continue
        start, end = ctx.source.span(call.node)
        if not any(start <= f.start < end for f in divided) or not _shuffled_by_tensorflow(use, call):
            continue
        scope = N.func_scope_of(call.node)
        before = [c for c in seeds if c.node.start_pos < call.node.start_pos
                  and N.func_scope_of(c.node) in (scope, ctx.source.module) and not _in_loop(c.node)]
        if not before:
            continue
        seed = max(before, key=lambda c: c.node.start_pos)
        arg = seed.keyword("seed") or seed.positional(0)
        if arg is None or seed.has_star() or mentions_hvd(seed.node, ctx) or id(seed.node) in done \
                or "RANK" in arg.value.get_code() \
                or ctx.blocked("HVD049", seed.node):
            continue
        done.add(id(seed.node))
        _note_kept_seeds(ctx, call, scope, seed)
        seeded = ranked(ctx, arg.value)
        what = (f"`{seed.callee_dotted()}` orders fit's shuffle alike on every rank: with the epochs or steps divided, the "
                "ranks would train on the same batches")
        if use.pipe is not None:
            # a tf.data shuffle takes its seeds when the pipeline is built (maybe before this seed,
            # maybe after draws that must stay alike), not when fit runs: its own seed per rank
            # (with the global seed set, the pair fixes each rank's order)
            shuffles = [c for c in use.pipe.method("shuffle") if c.keyword("seed") is None and len(c.args) < 2]
            if not shuffles or any(c.has_star() for c in shuffles):
                continue
            value = arg.value.get_code(include_prefix=False) if arg.value.type == "number" else str(SEED)
            edits = [e for c in shuffles for e in ctx.add_keyword(c, f"seed={value} + {ctx.hvd}.rank()")]
            yield finding(ctx, "HVD049", shuffles[0].node, what + " (the shuffle gets a seed of each rank's own: what "
                          "else the global seed draws stays the same on every rank)",
                          Fix("Seed the shuffle per rank (seed + hvd.rank())", edits))
            continue
        if not _draws_between(ctx, seed, call):
            start, end = ctx.source.span(arg.value)
            yield finding(ctx, "HVD049", seed.node, what, Fix(RULES["HVD049"][1], [Edit(start, end, seeded)]))
            continue
        callee = ctx.source.text[ctx.source.offset(seed.node.start_pos):ctx.source.offset(seed.trailer.start_pos)]
        stmt = N.statement_of(call.node)
        yield finding(ctx, "HVD049", seed.node, what + " (re-seeded per rank right before fit: the data drawn "
                      "after the seed stays the same on every rank)",
                      Fix(RULES["HVD049"][1], [ctx.insert_before_stmt(stmt, f"{callee}({seeded})")]))


def _note_kept_seeds(ctx: RuleContext, fit: N.Call, scope, tf_seed: N.Call) -> None:
    """Point 5 says why numpy's and Python's global seeds before ``fit`` stay as they are
    while TensorFlow's goes per rank: they make the data and the splits drawn before
    training, which must be the same on every rank, and fit's shuffle does not read them."""
    line = tf_seed.node.start_pos[0]
    for call in ctx.calls("seed"):
        if _qualname(ctx, call) not in DATA_SEEDS or _in_loop(call.node) \
                or call.node.start_pos > fit.node.start_pos or mentions_hvd(call.node, ctx) \
                or N.func_scope_of(call.node) not in (scope, ctx.source.module):
            continue
        text = call.node.get_code(include_prefix=False)
        report_note(ctx, 5, call.node, f"done, but `{text}` stays the same on every rank: it makes the data and the "
                    f"splits drawn before training, which every rank must share; fit's shuffle follows "
                    f"TensorFlow's seed, per rank from line {line}")


def ranked(ctx: RuleContext, value) -> str:
    """``<seed> + hvd.rank()`` (parenthesised when it needs to be)."""
    text = value.get_code(include_prefix=False)
    simple = value.type in ("name", "number", "atom", "atom_expr", "power", "term", "factor")
    return f"{text} + {ctx.hvd}.rank()" if simple else f"({text}) + {ctx.hvd}.rank()"


def _shuffled_by_tensorflow(use, call: N.Call) -> bool:
    """fit's data is shuffled in an order TensorFlow's global seed fixes: arrays (fit shuffles
    them unless ``shuffle=False``), or a pipeline of this file, not sharded, with a shuffle
    that has no seed of its own (divided by its steps, each rank reads all of it)."""
    if use.pipe is None:
        arg = call.keyword("shuffle")
        return arg is None or arg.value.get_code(include_prefix=False) not in ("False", "None")
    pipe = use.pipe
    return not pipe.method("shard") and any(c.keyword("seed") is None and len(c.args) < 2
                                            for c in pipe.method("shuffle"))


def _draws_between(ctx: RuleContext, seed: N.Call, fit: N.Call) -> bool:
    """A random draw of TensorFlow (or, after ``set_random_seed``, of numpy or random), or a
    split, between the seeding and ``fit`` in the program's text."""
    everything = _qualname(ctx, seed).endswith("set_random_seed")
    prefixes = ("tensorflow.random.", "tf.random.") + (("numpy.random.", "np.random.", "random.") if everything else ())
    for c in N.calls_in(ctx.source.module):
        name = c.method or c.callee_dotted() or ""
        if not seed.node.end_pos <= c.node.start_pos < fit.node.start_pos or name in ("seed", "set_seed"):
            continue
        q = _qualname(ctx, c)
        if q.startswith(prefixes) or name in SPLIT_DRAWS and _seed(ctx, c)[0] is not None:
            return True
    return False


def check_splits(ctx: RuleContext) -> Iterator[Finding]:
    """HVD045: the unseeded splits before training."""
    if not ctx.summary.sites or any(True for _ in check_rank_seeds(ctx)):
        return                         # nothing trains; or the program's seeds become per rank
    # (before the last training site: a second model trained on a later split needs it alike too)
    start = max(s.node.start_pos for s in ctx.summary.sites if s.node is not None)
    seeded = [c.node.start_pos for name in ("seed", "set_random_seed") for c in ctx.calls(name)
              if _qualname(ctx, c).endswith(GLOBAL_SEEDS)]
    # (numpy's global seed does not order a tf.data shuffle; TensorFlow's does)
    tf_seeded = [c.node.start_pos for name in ("set_seed", "set_random_seed") for c in ctx.calls(name)
                 if _qualname(ctx, c).endswith(("random.set_seed", "set_random_seed"))]
    for name in ("train_test_split", "sample", *NP_DRAWS):
        for call in ctx.calls(name):
            edits, what = _seed(ctx, call)
            if edits is None or _in_loop(call.node):
                continue
            if call.node.start_pos >= start and not _fixed_order(call):
                continue          # (a tf.data split's shuffle builds a dataset: where it stands does not matter)
            if any(p < call.node.start_pos for p in (tf_seeded if _fixed_order(call) else seeded)) \
                    or mentions_hvd(call.node, ctx) \
                    or ctx.blocked("HVD045", call.node):
                continue
            yield finding(ctx, "HVD045", call.node, f"{what} without a seed: each rank makes its own split",
                          Fix(RULES["HVD045"][1], edits))


def check_rank_seeds(ctx: RuleContext) -> Iterator[Finding]:
    """HVD046: a reinforcement-learning program (it makes a ``gym`` environment) seeds its
    environment and its exploration with one value: every rank would play the same episodes
    (identical gradients: single-process training at N times the learning rate)."""
    makes = [c for c in ctx.calls("make") if _qualname(ctx, c).endswith(GYM_MAKE)]
    if not makes or not ctx.summary.sites:
        return
    envs = set()
    for make in makes:
        parts = N.assign_parts(N.statement_of(make.node))
        if parts is not None and N.unparen(parts[1]) is make.node:
            envs |= {N.dotted(t) for t in parts[0]} - {None}
    candidates = []
    for call in ctx.calls("seed") + ctx.calls("set_seed") + ctx.calls("set_random_seed") + ctx.calls("reset"):
        receiver = N.dotted(call.node.children[0]) if call.index == 2 else None
        if call.method == "reset":
            arg = call.keyword("seed") if receiver in envs else None
        elif call.method == "seed" and receiver in envs:
            arg = call.keyword("seed") or call.positional(0)
        elif _qualname(ctx, call).endswith(RANK_SEEDS):
            arg = call.keyword("seed") or call.positional(0)
        else:
            arg = None
        if arg is None or call.has_star() or arg.value.get_code(include_prefix=False) == "None":
            continue
        if mentions_hvd(call.node, ctx) or ctx.blocked("HVD046", call.node):
            continue
        candidates.append((call, arg))
    for call, arg in candidates:
        start, end = ctx.source.span(arg.value)
        yield finding(ctx, "HVD046", call.node, "every rank explores with the same seed: the ranks play the same "
                      "episodes", Fix(RULES["HVD046"][1], [Edit(start, end, ranked(ctx, arg.value))]))


def _qualname(ctx: RuleContext, call: N.Call) -> str:
    return ctx.facts.effects.qualname(call) or call.callee_dotted() or ""


def _seed(ctx: RuleContext, call: N.Call) -> tuple[list | None, str]:
    """The edits that seed the call, and how the message names it; (None, "") when it is
    not an unseeded split."""
    if call.has_star():
        return None, ""
    q = _qualname(ctx, call)
    if call.method == "train_test_split" or q.endswith("model_selection.train_test_split") \
            or q == "train_test_split":
        if call.keyword("random_state") is not None:
            return None, ""
        return ctx.add_keyword(call, f"random_state={SEED}"), "`train_test_split`"
    if _fixed_order(call):
        if call.keyword("seed") is not None or call.positional(1) is not None:      # shuffle(n, seed, ...)
            return None, ""
        return ctx.add_keyword(call, f"seed={SEED}"), "`shuffle(reshuffle_each_iteration=False)` fixes a split"
    if call.method == "sample":
        if call.keyword("frac") is None or call.keyword("random_state") is not None:
            return None, ""        # pandas' sample(frac=...) only (a distribution's sample(n) is not a split)
        return ctx.add_keyword(call, f"random_state={SEED}"), "`sample(frac=...)` shuffles the rows"
    if call.method in NP_DRAWS and q in (f"numpy.random.{call.method}", f"np.random.{call.method}"):
        name = call.trailer.get_previous_sibling()      # the ``.permutation`` trailer
        at = ctx.source.offset(name.children[1].start_pos)
        return [Edit(at, at, f"default_rng({SEED}).")], f"`np.random.{call.method}`"
    return None, ""


def _fixed_order(call: N.Call) -> bool:
    """``ds.shuffle(n, reshuffle_each_iteration=False)``: one order for good, the order a
    ``skip``/``take`` split then cuts (tensorflow/docs load_data/images)."""
    arg = call.keyword("reshuffle_each_iteration")
    return call.method == "shuffle" and arg is not None and arg.value.get_code(include_prefix=False) == "False"


def _in_loop(node) -> bool:
    cur = node.parent
    while cur is not None and cur.type not in ("funcdef", "classdef"):
        if cur.type in ("for_stmt", "while_stmt", "comp_for", "sync_comp_for"):
            return True
        cur = cur.parent
    return False
