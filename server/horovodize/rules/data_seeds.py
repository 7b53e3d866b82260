"""The same split on every rank (contract point 5, HVD045): a random split of the data made
before training without a seed gives each rank its own split, so one rank's validation rows
are another rank's training rows and the averaged validation loss is optimistic (seen: 80%
of each rank's validation rows trained on by the other rank at 2 ranks).

Seeded with a fixed value, the same on every rank (the minimal edit):

* ``train_test_split(...)`` (scikit-learn) -> ``random_state=42`` added;
* ``df.sample(frac=...)`` (pandas, shuffling rows before ``np.split``) -> ``random_state=42``;
* ``np.random.permutation(...)`` / ``np.random.shuffle(x)`` ->
  ``np.random.default_rng(42).permutation(...)`` (a generator of its own: the program's
  other draws from numpy's global state are unchanged).

Only before the first training step, outside any loop (a shuffle each epoch that picks a
rank's batches should differ per rank), and not after the program seeds numpy's global state
(``np.random.seed``, ``keras.utils.set_random_seed``), which makes every rank draw the same.

Requires: env (qualified names), loop summary (where training starts).
"""

from __future__ import annotations

from typing import Iterator

from ..parse import nodes as N
from ..parse.source import Edit
from .base import Finding, Fix, RuleContext, finding, mentions_hvd

RULES = {"HVD045": ("same-split-on-every-rank", "Seed the random split so every rank makes the same one")}
SEED = 42
NP_DRAWS = ("permutation", "shuffle")
GLOBAL_SEEDS = ("numpy.random.seed", "np.random.seed", "set_random_seed")   # keras.utils / tf.keras.utils


def check(ctx: RuleContext) -> Iterator[Finding]:
    if not ctx.summary.sites:
        return                         # nothing trains: nothing is converted
    start = min(s.node.start_pos for s in ctx.summary.sites if s.node is not None)
    seeded = [c.node.start_pos for name in ("seed", "set_random_seed") for c in ctx.calls(name)
              if _qualname(ctx, c).endswith(GLOBAL_SEEDS)]
    for name in ("train_test_split", "sample", *NP_DRAWS):
        for call in ctx.calls(name):
            edits, what = _seed(ctx, call)
            if edits is None or call.node.start_pos >= start or _in_loop(call.node):
                continue
            if any(p < call.node.start_pos for p in seeded) or mentions_hvd(call.node, ctx) \
                    or ctx.blocked("HVD045", call.node):
                continue
            yield finding(ctx, "HVD045", call.node, f"{what} without a seed: each rank makes its own split",
                          Fix(RULES["HVD045"][1], edits))


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
    if call.method == "sample":
        if call.keyword("frac") is None or call.keyword("random_state") is not None:
            return None, ""        # pandas' sample(frac=...) only (a distribution's sample(n) is not a split)
        return ctx.add_keyword(call, f"random_state={SEED}"), "`sample(frac=...)` shuffles the rows"
    if call.method in NP_DRAWS and q in (f"numpy.random.{call.method}", f"np.random.{call.method}"):
        name = call.trailer.get_previous_sibling()      # the ``.permutation`` trailer
        at = ctx.source.offset(name.children[1].start_pos)
        return [Edit(at, at, f"default_rng({SEED}).")], f"`np.random.{call.method}`"
    return None, ""


def _in_loop(node) -> bool:
    cur = node.parent
    while cur is not None and cur.type not in ("funcdef", "classdef"):
        if cur.type in ("for_stmt", "while_stmt", "comp_for", "sync_comp_for"):
            return True
        cur = cur.parent
    return False
