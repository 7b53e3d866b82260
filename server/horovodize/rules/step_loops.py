"""Step loops (contract point 5): a GradientTape program driven by ``for step in range(n)``
that draws a batch each step (``next(it)`` with ``it = iter(ds)``, ``next(iter(ds))``,
``ds.as_numpy_iterator()``, a generator ``def batches(): ... yield`` read with ``next``, a
function drawing a random batch ``x, y = get_batch()``), or one that iterates a generator of
the program, ``for x, y in batches(n):``, whose yields sit in one ``for _ in range(n)`` (that
range is divided, in the generator).

* HVD042 (the divide-steps family, here for loops): ``range(n)`` becomes
  ``range(max(1, n // hvd.size()))`` (``range(1, n + 1)`` becomes
  ``range(1, 1 + max(1, n // hvd.size()))``): every rank runs the same number of steps, n
  in all, never 0.
* The ranks must draw different batches, else the steps are single-process training at N
  times the learning rate:
  - a tf.data pipeline shuffled without a seed (and no global TensorFlow seed) is drawn in
    its own order on each rank: left as it is; one in a fixed order (no shuffle, a seeded
    shuffle, ``tf.random.set_seed``) is sharded at its source (HVD041, as work_division does;
    a repeated pipeline of unknown size, ``TFRecordDataset(...)...repeat()``, by a plain
    ``.shard(hvd.size(), hvd.rank())``: the divided loop bounds every rank alike);
  - a function or generator drawing from numpy's or Python's global random state gives the
    same batches on every rank when the program seeds that state once: the seed gets
    ``+ hvd.rank()`` (HVD048), in place, or, when the program draws a split from it before the
    loop (which must stay the same on every rank), in a new seeding line right before the loop;
    unseeded draws differ per rank already;
  - anything else (a batch of fixed arrays, a generator that reads in order, a seeded
    ``default_rng``) is named in the report, and the loop is not divided.

A reinforcement-learning program (it makes a ``gym`` environment) is left alone: each rank's
steps train on the episodes of its own environment, the same number on every rank.

Requires: env (bindings, local functions), loop summary (the loop driving each step),
work_division (training data uses, the shard at source, the division edit).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

from ..analysis.loop import FIT, TAPE
from ..analysis.roles import KERAS_DATASETS
from ..parse import nodes as N
from ..parse.source import Edit
from . import data_seeds
from .base import Finding, Fix, RuleContext, finding, mentions_hvd
from .work_division import KNOWN_SIZE, _key, _shard, divide, generator_loop, note, pipeline, training_data

RULES = {
    "HVD048": ("data-seed-per-rank", "Seed the batches' random draws per rank (seed + hvd.rank())"),
}
RANGE_WRAPPERS = ("enumerate", "tqdm", "tqdm.tqdm", "tqdm.auto.tqdm")
# Seeds of a global random state the batches are drawn from, by the module whose draws they seed.
NP_SEEDS = ("numpy.random.seed",)
PY_SEEDS = ("random.seed",)
TF_SEEDS = ("tensorflow.random.set_seed", "tensorflow.keras.utils.set_random_seed", "keras.utils.set_random_seed")
NOT_DRAWS = ("seed", "default_rng", "RandomState", "Generator", "get_state", "set_state")


@dataclass
class Draw:
    """Where a step gets its batch."""

    kind: str           # "dataset" / "random" / "fixed"
    node: object        # the expression drawn from (dataset, function def)
    detail: str = ""    # "numpy" / "python" / "tensorflow" for random draws

    @property
    def label(self) -> str:
        """The function drawing the batches, or the random call drawn in the step."""
        if self.node.type == "funcdef":
            return self.node.name.value
        return self.node.get_code(include_prefix=False).split("(", 1)[0]


def _range_call(ctx: RuleContext, expr) -> N.Call | None:
    expr = N.unparen(expr)
    while True:
        call = N.as_call(expr)
        if call is None:
            return None
        name = call.callee_dotted()
        if name == "range" and ctx.env.function_named("range", expr) is None:
            return call
        if name not in RANGE_WRAPPERS or not call.args:
            return None
        expr = N.unparen(call.args[0].value)


def check(ctx: RuleContext) -> Iterator[Finding]:
    if any(data_seeds._qualname(ctx, c).endswith(data_seeds.GYM_MAKE) for c in ctx.calls("make")):
        return      # reinforcement learning: each rank's steps train on its own episodes (HVD046 seeds them)
    _until_loops(ctx)
    yield from _generator_fits(ctx)
    yield from _seed_generators(ctx)
    seen: set = set()
    for use in training_data(ctx):
        if use.kind != TAPE or use.site.distributed or use.expr is None:
            continue
        rng = _range_call(ctx, use.expr)
        if rng is None:
            found = list(_generator_steps(ctx, use, seen))
            yield from found or _seeded_noise(ctx, use, seen)
            continue
        if mentions_hvd(rng.node, ctx) or ctx.blocked("HVD042", rng.node):
            continue
        loop = use.expr.parent
        if loop is None or loop.type != "for_stmt":
            continue
        draws = _draws(ctx, loop, use.site)
        fixes, reasons = [], []
        for draw in draws:
            found, why = _per_rank(ctx, draw, loop, use, seen)
            fixes += found
            if why:
                reasons.append(why)
        if not draws:
            reasons.append("each step trains on the same data on every rank (no batch drawn from a dataset "
                           "iterator, generator or random draw in the loop)")
        if reasons:
            note(ctx, rng.node, "not divided: " + "; ".join(reasons) + "; draw each rank's batches from its own "
                 "shard (`.shard(hvd.size(), hvd.rank())`) and divide the steps")
            continue
        edits = _divide_range(ctx, rng)
        if edits is None:
            note(ctx, rng.node, "not divided: a `range` with a step (or unpacked arguments) is left as it is; "
                 "divide its number of steps by hvd.size()")
            continue
        yield from fixes
        stop = rng.positional(1 if len(rng.args) == 3 else len(rng.args) - 1).value
        if stop.type == "name" and any(n.type == "name" and n.value == stop.value for n in N.walk(loop.children[-1])):
            note(ctx, rng.node, f"partly done: `{stop.value}` still counts the undivided steps inside the loop "
                 f"(e.g. a last-step test never true on a rank): use max(1, {stop.value} // {ctx.hvd}.size()) there")
        yield finding(ctx, "HVD042", rng.node, "every rank runs all the loop's steps",
                      Fix("Divide the loop's steps by hvd.size()", edits))


def _generator_steps(ctx: RuleContext, use, seen: set) -> Iterator[Finding]:
    """``for batch in batches(): step(batch)`` (or ``ds = batches()`` then ``for batch in ds``),
    where ``batches`` is a generator of the program, called once, whose every ``yield`` is in
    one ``for _ in range(n)`` of its own body: the loop's steps are that range's, divided there
    (HVD042) when each rank draws its own batches (unseeded random draws, or a seeding made
    per rank: HVD048); otherwise the report says why not."""
    loop = use.expr.parent
    fn = generator_loop(ctx, use.expr, loop) if loop is not None and loop.type == "for_stmt" else None
    if fn is None:
        return
    label = f"the generator `{fn.name.value}`"
    yields = [n for n in N.walk(fn.children[-1]) if n.type == "yield_expr" or (n.type == "keyword" and n.value == "yield")]
    loops = {id(N.loop_around(y)): N.loop_around(y) for y in yields}
    inner = next(iter(loops.values())) if len(loops) == 1 else None
    rng = _range_call(ctx, inner.children[3]) if inner is not None and inner.type == "for_stmt" else None
    if rng is not None and (mentions_hvd(rng.node, ctx) or ctx.blocked("HVD042", rng.node)):
        return
    edits = _divide_range(ctx, rng) if rng is not None else None
    if edits is None or len(ctx.env.callers(fn)) != 1:
        why = "it is called more than once" if edits is not None else "its yields are not all in one `range(n)` loop"
        note(ctx, use.expr, f"not divided: the loop's steps are those of {label}, which are not divided here "
             f"({why}); divide its number of batches by hvd.size() and draw each rank's own")
        return
    draw = Draw("fixed", fn) if _cursor(fn) or not _randomness(ctx, fn) else Draw("random", fn, _randomness(ctx, fn))
    fixes, why = _per_rank(ctx, draw, loop, use, seen)
    if why:
        note(ctx, rng.node, f"not divided: {why}; draw each rank's batches from its own shard and divide the steps")
        return
    yield from fixes
    yield finding(ctx, "HVD042", rng.node, f"every rank runs all the steps of {label}",
                  Fix("Divide the loop's steps by hvd.size()", edits))


def _generator_fits(ctx: RuleContext) -> Iterator[Finding]:
    """``fit(Dataset.from_generator(gen), steps_per_epoch=n)`` (or ``fit(gen(), ...)``) with its steps divided, where
    ``gen`` draws from numpy's or Python's global random state that the program seeds once:
    every rank would draw the same batches; the seed gets ``+ hvd.rank()`` (HVD048), in place,
    or on a new line before the fit when a split is drawn from it first."""
    divided = [f.start for f in ctx.earlier if f.code == "HVD042" and f.fix is not None]
    for use in training_data(ctx):
        call = N.as_call(use.site.node)
        src = use.pipe.source if use.pipe is not None else None
        if use.kind != FIT or use.site.distributed or call is None:
            continue
        if src is not None and src.method == "from_generator":
            arg = src.keyword("generator") or src.positional(0)
            name = arg.value.value if arg is not None and arg.value.type == "name" else None
            at = src.node
        else:       # ``fit(gen(), steps_per_epoch=n)``: the generator object itself
            made = N.as_call(N.unparen(use.expr)) if use.expr is not None and src is None else None
            name = made.callee_dotted() if made is not None and made.index == 1 else None
            at = use.expr
        start, end = ctx.source.span(call.node)
        fn = ctx.env.function_named(name, at) if name else None
        if fn is None or not _is_generator(fn) or not any(start <= d < end for d in divided):
            continue
        kind = _randomness(ctx, fn)
        stmt = N.statement_of(call.node)
        seed = _global_seed(ctx, kind, stmt) if kind else None
        if seed is None or mentions_hvd(seed[0].node, ctx) or ctx.blocked("HVD048", seed[0].node):
            continue
        yield _seed_per_rank(ctx, seed[0], seed[1], Draw("random", fn, kind), stmt)


def _seeded_noise(ctx: RuleContext, use, seen: set) -> Iterator[Finding]:
    """A loop over a dataset whose step also draws from TensorFlow's global random state (a
    GAN's noise) seeded before it: the data is sharded, but every rank would draw the same
    noise, so the generator's gradient is one rank's, at N times the rate (re-review N4). The
    seed becomes per rank (HVD048) before the outermost loop of the step's function (the epochs'
    loop: reseeded inside it, every epoch would draw the same noise again)."""
    loop = use.expr.parent
    if loop is None or loop.type != "for_stmt":
        return
    noise = [d for d in _draws(ctx, loop, use.site) if d.kind == "random" and d.detail == "tensorflow"]
    while loop.parent is not None and N.func_scope_of(loop) is N.func_scope_of(loop.parent) and \
            (outer := N.conditional_ancestor(loop, N.func_scope_of(loop))) is not None and \
            outer.type in ("for_stmt", "while_stmt"):
        loop = outer
    seed = _global_seed(ctx, "tensorflow", loop) if noise else None
    if seed is None or ("seed", id(seed[0].node)) in seen or mentions_hvd(seed[0].node, ctx) \
            or ctx.blocked("HVD048", seed[0].node) or any(
                n.type == "string" and "RANK" in n.value for n in N.walk(seed[1].value)):
        return         # (a seed read from the launcher's HOROVOD_RANK / OMPI_COMM_WORLD_RANK is per rank)
    seen.add(("seed", id(seed[0].node)))
    yield _seed_per_rank(ctx, seed[0], seed[1], noise[0], loop, "the step's random input")


def _seed_generators(ctx: RuleContext) -> Iterator[Finding]:
    """``keras.random.SeedGenerator(1337)`` in a program that trains (a layer's dropout masks,
    a step's noise, drawn with ``seed=`` it): each rank trains on its own data, and with one
    seed every rank would draw the same masks and noise for it (review r41: keras-team/keras
    demo_custom_layer_backend_agnostic). Seeded per rank, as Horovod's examples seed
    TensorFlow; the weights stay equal (the broadcast and the averaged gradients)."""
    if not ctx.summary.sites:
        return
    for call in ctx.calls("SeedGenerator"):
        q = ctx.env.callee_qualname(call) or call.callee_dotted() or ""
        arg = call.keyword("seed") or call.positional(0)
        if not q.endswith("keras.random.SeedGenerator") or call.has_star() or arg is None \
                or arg.value.type not in ("number", "name") or mentions_hvd(call.node, ctx) \
                or ctx.blocked("HVD048", call.node):
            continue
        start, end = ctx.source.span(arg.value)
        yield finding(ctx, "HVD048", call.node, f"`SeedGenerator({arg.value.get_code(include_prefix=False)})` gives "
                      "every rank the same random draws (dropout masks, noise) for its own data",
                      Fix(RULES["HVD048"][1], [Edit(start, end, data_seeds.ranked(ctx, arg.value))]))


def _until_loops(ctx: RuleContext) -> None:
    """A step loop that runs until a condition (``while True: ... break``, ``while not done:``)
    has no step count to divide; when each of its steps draws fresh random data that no global
    seed fixes, every rank trains on batches of its own (a larger batch in all, the exit made
    collective by HVD080): said in the report as done that way."""
    for site in ctx.summary.sites:
        loop = site.driver
        if site.kind != TAPE or site.distributed or loop is None or loop.type != "while_stmt":
            continue
        draws = _draws(ctx, loop, site)
        if draws and all(d.kind == "random" and _global_seed(ctx, d.detail, loop) is None for d in draws):
            note(ctx, loop, "done, but by each rank drawing its own random batches: the loop runs until a condition, "
                 "so its steps are not divided")


def _divide_range(ctx: RuleContext, rng: N.Call) -> list[Edit] | None:
    args = rng.args
    if rng.has_star() or any(a.keyword is not None for a in args) or not 1 <= len(args) <= 3:
        return None
    if len(args) == 3:        # range(0, n, batch): each rank takes the batches of the first n / N
        zero = args[0].value.type == "number" and args[0].value.value == "0"
        return divide(ctx, args[1].value) if zero else None
    stop = args[-1].value
    if len(args) == 1 or (args[0].value.type == "number" and args[0].value.value == "0"):
        return divide(ctx, stop)
    start = args[0].value
    s = ctx.source.text
    start_text = s[slice(*ctx.source.span(start))]
    if stop.type == "arith_expr" and len(stop.children) == 3 and stop.children[1] == "+" \
            and stop.children[2].get_code(include_prefix=False) == start_text:
        count = stop.children[0]          # ``range(1, n + 1)``: n steps
        inner = s[slice(*ctx.source.span(count))]
    else:
        inner = f"{s[slice(*ctx.source.span(stop))]} - {start_text}"
    if count_needs_parens(inner):
        inner = f"({inner})"
    a, b = ctx.source.span(stop)
    return [Edit(a, b, f"{start_text} + max(1, {inner} // {ctx.hvd}.size())")]


def count_needs_parens(text: str) -> bool:
    return any(op in text for op in ("+", "-", " if ", " or ", " and "))


def _draws(ctx: RuleContext, loop, site) -> list[Draw]:
    """The batches a step of `loop` draws: in its body, or in the step function it calls."""
    bodies = [loop.children[-1]]
    outer = N.loop_around(loop)          # (an epoch loop that draws a fresh order for its batches)
    if outer is not None and outer.type == "for_stmt":
        bodies.append(outer.children[-1])
    if site.function is not None and not N.inside(site.function, loop):
        bodies.append(site.function)
    out: list[Draw] = []
    for body in bodies:
        for call in N.calls_in(body):
            draw = _draw(ctx, call) or _inline_draw(ctx, call)
            if draw is not None and all(d.node is not draw.node for d in out):
                out.append(draw)
    return out


def _inline_draw(ctx: RuleContext, call: N.Call) -> Draw | None:
    """A random draw made in the step itself (``x = tf.random.normal([32, 3])``,
    ``order = np.random.permutation(n)``): fresh data, or a fresh order, at every step."""
    kind = _random_kind(ctx, call)
    return Draw("random", call.node, kind) if kind else None


def _random_kind(ctx: RuleContext, call: N.Call) -> str:
    """"tensorflow" / "numpy" / "python": the global random state the call draws from ('' when
    it draws nothing: a seeding, a generator of its own, not a random call)."""
    if call.method in NOT_DRAWS or call.method in ("set_seed", "set_random_seed"):
        return ""
    q = _qualname(ctx, call)
    return ("tensorflow" if q.startswith("tensorflow.random.") else "numpy" if q.startswith("numpy.random.")
            else "python" if q.startswith("random.") and q.count(".") == 1 else "")


def _draw(ctx: RuleContext, call: N.Call) -> Draw | None:
    name = call.callee_dotted()
    if name == "next" and call.args:
        return _iterated(ctx, call.args[0].value, call.node)
    if name and "." not in name:
        fn = ctx.env.function_named(name, call.node)
        if fn is not None and _is_generator(fn) is False and _assigned_batch(call):
            if _cursor(fn):
                return Draw("fixed", fn)
            kind = _randomness(ctx, fn)
            return Draw("random", fn, kind) if kind else None
    return None


def _assigned_batch(call: N.Call) -> bool:
    """``x, y = get_batch()`` / ``batch = get_batch()``: the call's value is the batch."""
    stmt = N.statement_of(call.node)
    parts = N.assign_parts(stmt) if stmt is not None and stmt.type == "expr_stmt" else None
    return parts is not None and N.unparen(parts[1]) is call.node


def _iterated(ctx: RuleContext, expr, at) -> Draw | None:
    """What ``next(expr)`` reads: ``iter(ds)``, ``ds.as_numpy_iterator()``, a generator, or a
    name bound to one of those."""
    expr = N.unparen(expr)
    for _ in range(4):
        call = N.as_call(expr)
        if call is not None:
            if call.callee_dotted() == "iter" and call.args:
                return Draw("dataset", call.args[0].value)
            if call.method == "as_numpy_iterator" and call.index > 1:
                return Draw("dataset", call.node)
            name = call.callee_dotted()
            fn = ctx.env.function_named(name, at) if name and "." not in name else None
            if fn is not None and _is_generator(fn):
                kind = "" if _cursor(fn) else _randomness(ctx, fn)
                return Draw("random", fn, kind) if kind else Draw("fixed", fn)
            return None
        if expr.type != "name":
            return None
        b = _last_assignment(ctx, expr.value, at)
        if b is None:
            return None
        if b.role == "dataset":
            return Draw("dataset", expr)
        expr, at = N.unparen(b.value), b.stmt
    return None


def _last_assignment(ctx: RuleContext, name: str, at):
    for scope in ctx.env.scopes_for(at):
        cands = [b for b in ctx.env.bindings_of(name, scope) if b.stmt.start_pos < at.start_pos and b.value is not None]
        if cands:
            return cands[-1]
        if ctx.env.bindings_of(name, scope):
            return None
    return None


def _is_generator(fn) -> bool:
    return any(n.type in ("yield_expr", "keyword") and (n.type == "yield_expr" or n.value == "yield")
               and N.func_scope_of(n) is fn for n in N.walk(fn.children[-1]))


def _cursor(fn) -> bool:
    """``global data_index``: the function walks the data in order from call to call (word2vec's
    ``next_batch``), whatever it samples on the way: every rank reads the same data."""
    return any(n.type in ("global_stmt", "nonlocal_stmt") for n in N.walk(fn.children[-1]))


def _randomness(ctx: RuleContext, fn, depth: int = 0) -> str:
    """"numpy" / "python" when `fn` draws from that global random state, itself or through a
    function of the program it calls (``yield random_batch()``), else ""."""
    calls = list(N.calls_in(fn))
    found = next((k for k in (_random_kind(ctx, call) for call in calls) if k in ("numpy", "python")), "")
    for call in calls if not found and depth < 3 else ():
        target = ctx.env.call_target(call)
        found = _randomness(ctx, target, depth + 1) if target is not None and target is not fn else ""
        if found:
            break
    return found


def _per_rank(ctx: RuleContext, draw: Draw, loop, use, seen: set) -> tuple[list[Finding], str]:
    """The findings that make this draw differ per rank, or why it cannot be made to."""
    if draw.kind == "dataset":
        pipe = pipeline(ctx, draw.node, loop)
        if pipe is None or pipe.source is None:
            return [], "the batches come from a dataset this file does not build"
        if pipe.method("shard") or mentions_hvd(draw.node, ctx):
            return [], ""
        if _unseeded_shuffle(ctx, pipe, loop):
            return [], ""           # each rank shuffles in its own order
        q = ctx.env.callee_qualname(pipe.source) or ""
        if pipe.method("repeat") and not q.endswith(KNOWN_SIZE) and not q.endswith(KERAS_DATASETS):
            return _shard_repeated(ctx, pipe, seen)
        found = list(_shard(ctx, pipe, seen, use))
        if not found and any(_key(c) in seen for c in (pipe.source, *pipe.calls)):
            return [], ""           # (sharded for another step of the loop that draws the same batch)
        if not found:
            return [], "the dataset is read in the same order on every rank and cannot be sharded at its source"
        return found, ""
    fn = draw.node
    if draw.kind == "fixed":
        what = "generator" if _is_generator(fn) else "function"
        return [], f"the {what} `{fn.name.value}` gives the same batches on every rank (it reads the data in order)"
    seed = _global_seed(ctx, draw.detail, loop)
    if seed is None:
        return [], ""               # unseeded: each rank draws its own batches
    call, arg = seed
    if mentions_hvd(call.node, ctx) or ctx.blocked("HVD048", call.node):
        return [], ""
    start = ctx.source.span(call.node)[0]
    if any(f.start == start for f in data_seeds.check_rank_seeds(ctx)):
        return [], ""               # a reinforcement-learning program's seed: HVD046 makes it per rank
    return [_seed_per_rank(ctx, call, arg, draw, loop)], ""


def _shard_repeated(ctx: RuleContext, pipe, seen: set) -> tuple[list[Finding], str]:
    """A repeated pipeline whose size tf.data does not know (``TFRecordDataset(...)``): the
    divided ``range`` bounds every rank's steps, so a plain ``.shard(hvd.size(), hvd.rank())``
    after the source gives each rank its own records without an equal ``take``."""
    src = pipe.source
    key = (id(src.node), src.index)
    if key in seen or ctx.blocked("HVD041", src.node) or mentions_hvd(src.node, ctx):
        return [], ""
    seen.add(key)
    end = ctx.source.offset(src.trailer.end_pos)
    name = (ctx.env.callee_qualname(src) or "").replace("tensorflow.", "tf.")
    return [finding(ctx, "HVD041", src.node, f"every rank reads the same records from `{name}` in the same order",
                    Fix("Shard the records by rank (the divided step loop bounds every rank alike)",
                        [Edit(end, end, f".shard({ctx.hvd}.size(), {ctx.hvd}.rank())")]))], ""


def _unseeded_shuffle(ctx: RuleContext, pipe, loop) -> bool:
    shuffles = [c for c in pipe.method("shuffle") if c.keyword("seed") is None and len(c.args) < 2]
    if not shuffles:
        return False
    return not any(_qualname(ctx, c) in TF_SEEDS and c.node.start_pos < loop.start_pos
                   for name in ("set_seed", "set_random_seed") for c in ctx.calls(name))


def _global_seed(ctx: RuleContext, kind: str, loop):
    """The last seeding of the global state `kind` draws from, before the loop: at module level
    or in the loop's own function (``main()`` seeding, then training)."""
    wanted = NP_SEEDS if kind == "numpy" else TF_SEEDS if kind == "tensorflow" else PY_SEEDS
    scopes = (ctx.source.module, N.func_scope_of(loop))
    found = None
    for name in ("seed", "set_seed", "set_random_seed"):
        for c in ctx.calls(name):
            q = _qualname(ctx, c)
            both = q.endswith("utils.set_random_seed")          # seeds numpy, random and TensorFlow
            if (q in wanted or both) and c.node.start_pos < loop.start_pos and N.func_scope_of(c.node) in scopes:
                arg = c.keyword("seed") or c.positional(0)
                if arg is not None and not c.has_star() and (found is None or c.node.start_pos > found[0].node.start_pos):
                    found = (c, arg)
    return found


def _seed_per_rank(ctx: RuleContext, call: N.Call, arg, draw: Draw, loop, drawn_what: str = "the batches") -> Finding:
    """``np.random.seed(s)`` → ``np.random.seed(s + hvd.rank())``; when the program draws from
    the seeded state between the seeding and the loop (a split every rank must make alike), a
    new ``np.random.seed(s + hvd.rank())`` line right before the loop instead."""
    value = arg.value
    ranked = data_seeds.ranked(ctx, value)
    drawn = ("tensorflow.random.",) if draw.detail == "tensorflow" else ("numpy.random.", "random.")
    scope = N.func_scope_of(call.node) or ctx.source.module
    between = [c for c in N.calls_in(scope)
               if call.node.end_pos <= c.node.start_pos < loop.start_pos and N.func_scope_of(c.node) is scope
               and _qualname(ctx, c).startswith(drawn)
               and c.method not in NOT_DRAWS and c.method not in ("set_seed", "set_random_seed")]
    # TensorFlow derives a seeded shuffle's order (the program's, or the `seed=` the shard rules
    # give it) from the global seed too: seeded per rank in place, each rank would shuffle,
    # split and shard its own way; re-seeded right before the loop, the pipelines built before
    # it keep one order on every rank
    shuffles = draw.detail == "tensorflow" and bool(ctx.calls("shuffle") or ctx.calls("list_files"))
    what = f"`{draw.label}` draws {drawn_what} from the random state seeded here"
    if not between and not shuffles:
        start, end = ctx.source.span(value)
        return finding(ctx, "HVD048", call.node, what + f": every rank draws the same {drawn_what.split()[-1]}",
                       Fix(RULES["HVD048"][1], [Edit(start, end, ranked)]))
    callee = ctx.source.text[slice(ctx.source.offset(call.node.start_pos), ctx.source.offset(call.trailer.start_pos))]
    return finding(ctx, "HVD048", call.node, what + " (and what is drawn before the loop stays the same on every "
                   f"rank): every rank draws the same {drawn_what.split()[-1]}",
                   Fix(RULES["HVD048"][1], [ctx.insert_before_stmt(loop, f"{callee}({ranked})")]))


def _qualname(ctx: RuleContext, call: N.Call) -> str:
    """The callee's qualified name (numpy and random too, not only TensorFlow's)."""
    q = ctx.facts.effects.qualname(call) or call.callee_dotted() or ""
    return "numpy." + q[3:] if q.startswith("np.") else q
