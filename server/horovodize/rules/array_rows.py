"""In-memory arrays no bigger than one batch (contract point 5): nothing to divide.

``fit(x, y, epochs=200)`` on arrays of 6 literal rows, with fit's default ``batch_size=32``:
every epoch is one step on all of them. Each rank's own shuffle changes nothing there, so
with the epochs divided every rank would compute the same step, at N times the rate, half as
often. `one_batch` says so when the rows are known from the file (a list literal, or
``np.array([...])`` of one, bound once at module level) and the batch size is a literal or
fit's default. work_division then divides nothing there, and identical_data makes its note
"the same data on every rank" (which blocks a scaled rate).
Requires: base (the rule context), parse.nodes.
"""

from __future__ import annotations

from ..parse import nodes as N
from .base import RuleContext

FIT_BATCH_DEFAULT = 32
_ARRAY_MAKERS = ("numpy.array", "numpy.asarray", "np.array", "np.asarray", "tensorflow.constant",
                 "tensorflow.convert_to_tensor", "tf.constant", "tf.convert_to_tensor")


def one_batch(ctx: RuleContext, call: N.Call) -> str | None:
    """The point-5 remark for a fit whose ``x`` holds no more than one batch, else None."""
    arg = call.keyword("x") or call.positional(0)
    size = call.keyword("batch_size")
    if arg is None or (size is not None and size.value.type != "number"):
        return None
    batch = int(float(size.value.value)) if size is not None else FIT_BATCH_DEFAULT
    rows = _rows(ctx, arg.value)
    if rows is None or rows > batch:
        return None
    return (f"not divided: fit's arrays hold {rows} samples, no more than one batch of {batch}: each epoch is one "
            "step on all of them, and no rank's share or shuffle can differ from another's")


def _rows(ctx: RuleContext, value, at=None, depth: int = 0) -> int | None:
    """Rows of a list literal, or of ``np.array([...])`` / ``tf.constant`` / ``tf.expand_dims(x, -1)``
    of one, directly or through the module-level assignments of a name before `at` (``x = [...]``
    then ``x = np.array(x, dtype=...)``)."""
    if depth > 8:
        return None
    if value.type == "name":
        at = at if at is not None else value
        found = [b for b in ctx.env.bindings if b.name == value.value and b.scope is ctx.source.module
                 and b.stmt.start_pos < at.start_pos]
        if not found or found[-1].value is None or N.func_scope_of(at) is not ctx.source.module:
            return None
        last = found[-1]
        return _rows(ctx, last.value, last.stmt, depth + 1)
    call = N.as_call(value)
    if call is not None:
        q = ctx.facts.effects.qualname(call) or call.callee_dotted() or ""
        first = call.positional(0)
        axis = call.keyword("axis") or call.positional(1)
        if first is None or not (q in _ARRAY_MAKERS or q.endswith("expand_dims") and axis is not None and _not_first(axis.value)):
            return None
        return _rows(ctx, first.value, at or value, depth + 1)
    if value.type != "atom" or value.children[0].value != "[":
        return None
    inner = value.children[1] if len(value.children) == 3 else None
    if inner is None:
        return 0
    if inner.type != "testlist_comp":
        return 1
    if any(c.type in ("comp_for", "sync_comp_for", "star_expr") for c in inner.children):
        return None        # a comprehension or an unpacking: its length is not written down
    return sum(1 for c in inner.children if c.type != "operator" or c.value != ",")


def _not_first(axis) -> bool:
    """An ``axis`` that is not 0: -1 or a positive literal (the rows stay the rows)."""
    text = axis.get_code(include_prefix=False).replace(" ", "")
    return text.lstrip("-").isdigit() and text not in ("0", "-0")
