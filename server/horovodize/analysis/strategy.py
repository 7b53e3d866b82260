"""``tf.distribute`` in the program: the strategies it makes (or uses through a strategy
method). A program that already distributes its training gets no Horovod edit (HVD092):
two mechanisms would reduce the gradients twice and fight over devices.

Requires: analysis.env (call targets, index), analysis.roles. Provides: `strategy_uses`,
`strategy_problems`.
"""

from __future__ import annotations

from ..parse.scopes import Span, conditional_ancestor
from .roles import SETUP, Problem

STRATEGY_METHODS = ("experimental_distribute_dataset", "distribute_datasets_from_function",
                    "experimental_distribute_datasets_from_function", "experimental_run_v2")


def strategy_uses(env) -> list[tuple[object, str, str]]:
    """(node, name, test) of each ``tf.distribute`` strategy made (or, when none is made here,
    used through a strategy method) in the file; `test`: the ``if`` it is made under, if any."""
    made = []
    for call in env.calls_where(lambda q: q.startswith(("tensorflow.distribute.", "tensorflow.keras.distribution."))):
        q = env.callee_qualname(call)
        last = q.rsplit(".", 1)[-1]
        span = Span(call.node.children[0].start_pos, call.trailer.end_pos)
        if q.startswith("tensorflow.distribute.") and last.endswith("Strategy"):
            made.append((span, q.replace("tensorflow.", "tf.", 1), _under(env, call.node)))
        elif q.startswith("tensorflow.keras.distribution.") and last in ("DataParallel", "ModelParallel"):
            made.append((span, "keras.distribution." + last, _under(env, call.node)))
    if made:
        return made
    for name in STRATEGY_METHODS:
        for call in env.index.by_method.get(name, ()):
            if call.method == name:
                return [(Span(call.node.children[0].start_pos, call.trailer.end_pos),
                         f"a tf.distribute strategy (`{call.receiver_dotted() or 'strategy'}.{name}`)", "")]
    return []


def strategy_problems(env) -> list[Problem]:
    """One restriction fact per strategy: it blocks everything (`everywhere`)."""
    out = []
    for node, name, test in strategy_uses(env):
        out.append(Problem("HVD092", node, strategy_message(name, test), SETUP, everywhere=True))
    return out


def _under(env, node) -> str:
    """```<test>` holds`` when the strategy is made only under an ``if`` (a flag, a device
    count), else ''."""
    cond = conditional_ancestor(node, env.source.module)
    if cond is None or cond.type != "if_stmt":
        return ""
    return f"`{' '.join(cond.children[1].get_code(include_prefix=False).split())}` holds"


def strategy_message(name: str, test: str = "") -> str:
    shown = name if name.startswith("a ") else f"`{name}`"
    if test:
        return (f"this program already distributes training with {shown} when {test}; "
                "Horovod is not added on top (two mechanisms would reduce gradients twice and fight over "
                "devices): no edit in this file; to convert the single-device path, remove that branch (the "
                "strategy, its scope and its batch scaling) and convert again")
    return (f"this program already distributes training with {shown}; Horovod is not added on top "
            "(two mechanisms would reduce gradients twice and fight over devices): no edit in this file; "
            "to convert, remove the strategy (its scope(), run() and batch scaling) and convert the "
            "single-device program")
