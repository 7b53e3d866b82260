"""``tf.distribute`` in the program: the strategies it makes (or uses through a strategy
method). A program that already distributes its training gets no Horovod edit (HVD092):
two mechanisms would reduce the gradients twice and fight over devices.

Requires: analysis.env (call targets, index), analysis.roles. Provides: `strategy_uses`,
`strategy_problems`.
"""

from __future__ import annotations

from ..parse.scopes import Span
from .roles import SETUP, Problem

STRATEGY_METHODS = ("experimental_distribute_dataset", "distribute_datasets_from_function",
                    "experimental_distribute_datasets_from_function", "experimental_run_v2")


def strategy_uses(env) -> list[tuple[object, str]]:
    """(node, name) of each ``tf.distribute`` strategy made (or, when none is made here,
    used through a strategy method) in the file."""
    made = []
    for call in env.calls_where(lambda q: q.startswith(("tensorflow.distribute.", "tensorflow.keras.distribution."))):
        q = env.callee_qualname(call)
        last = q.rsplit(".", 1)[-1]
        if q.startswith("tensorflow.distribute.") and last.endswith("Strategy"):
            made.append((Span(call.node.children[0].start_pos, call.trailer.end_pos), q.replace("tensorflow.", "tf.", 1)))
        elif q.startswith("tensorflow.keras.distribution.") and last in ("DataParallel", "ModelParallel"):
            made.append((Span(call.node.children[0].start_pos, call.trailer.end_pos), "keras.distribution." + last))
    if made:
        return made
    for name in STRATEGY_METHODS:
        for call in env.index.by_method.get(name, ()):
            if call.method == name:
                return [(Span(call.node.children[0].start_pos, call.trailer.end_pos),
                         f"a tf.distribute strategy (`{call.receiver_dotted() or 'strategy'}.{name}`)")]
    return []


def strategy_problems(env) -> list[Problem]:
    """One restriction fact per strategy: it blocks everything (`everywhere`)."""
    out = []
    for node, name in strategy_uses(env):
        out.append(Problem("HVD092", node, strategy_message(name), SETUP, everywhere=True))
    return out


def strategy_message(name: str) -> str:
    shown = name if name.startswith("a ") else f"`{name}`"
    return (f"this program already distributes training with {shown}; Horovod is not added on top "
            "(two mechanisms would reduce gradients twice and fight over devices): no edit in this file")
