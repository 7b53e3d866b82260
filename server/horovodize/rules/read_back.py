"""Reads of rank 0's files that need no shared filesystem (contract point 13, HVD033): where
the fix is local and clear, rank 0 reads the file it wrote and the other ranks get the value
by a collective, instead of a barrier and every rank reading the file from its own disk.

* a plain value read from it and used on every rank (``latest =
  tf.train.latest_checkpoint(d)``, ``names = sorted(os.listdir(d))``, ``np.load``,
  ``json.load``, ``pickle.load``): ``x = hvd_tf.broadcast_object(<read> if hvd.rank() == 0
  else None, root_rank=0)``;
* weights read into an existing model or checkpoint (``model.load_weights(p)``,
  ``checkpoint.restore(p)``): ``if hvd.rank() == 0:`` on the read, then
  ``hvd_tf.broadcast_variables(<its variables>, root_rank=0)``; the variables a broadcast the
  conversion places anyway carries (``BroadcastGlobalVariablesCallback`` of a later ``fit``,
  the first-step broadcast of a later tape loop: models and optimizers) are left out, and with
  nothing left the guard alone is the edit.

Anything else (a Keras model loaded with ``load_model``: its pickle is rebuilt without
Horovod's optimizer class; a read in a called function; a ``with open(...)`` block) keeps the
barrier and point 7's "needs a shared filesystem".

Provides `rewrite` (the finding for one read, or None) and `in_rank0_value` (a read inside
``<read> if hvd.rank() == 0 else None``: rank 0's own). Requires: base (the rule context),
shared_values (the name of horovod.tensorflow; a Keras program's set-up binds it when an edit
names it: `setup_imports.placed`), written (the checkpoint a name holds), analysis.loop
(training sites), parse.nodes.
"""

from __future__ import annotations

from ..analysis.loop import FIT, TAPE
from ..parse import nodes as N
from ..parse.source import Edit
from .base import Finding, Fix, RuleContext, finding, mentions_hvd
from . import shared_values
from .written import checkpoint_of

VALUE = "Read rank 0's file on rank 0 and broadcast the value"
STATE = "Restore on rank 0 and broadcast the variables"
STATE_CARRIED = "Restore on rank 0 only (the broadcast of the training that follows shares it)"
# Calls whose value is plain Python/NumPy data, picklable (by qualified name or dotted callee).
VALUE_QUALNAMES = ("tensorflow.train.latest_checkpoint",)
VALUE_DOTTED = {"os.listdir", "glob.glob", "glob", "np.load", "numpy.load", "json.load", "pickle.load",
                "joblib.load", "pd.read_csv", "pandas.read_csv", "imageio.imread", "plt.imread", "open"}
STATE_METHODS = ("load_weights", "restore")
CHECKPOINTS = ("tensorflow.train.Checkpoint", "tensorflow.compat.v2.train.Checkpoint")


def rewrite(ctx: RuleContext, call: N.Call, stmt) -> Finding | None:
    """The HVD033 finding that reads `call`'s file on rank 0 only and shares what it read, or
    None when no such form fits (the caller then places a barrier)."""
    mod = shared_values.module(ctx)
    if mod is None or ctx.env.tf1 or ctx.facts.uses_horovod or _in_tf_function(stmt):
        return None
    if call.method in STATE_METHODS:
        return _state(ctx, call, stmt, mod)
    outer = next((c for c in N.calls_in(stmt) if c.method in STATE_METHODS and N.inside(call.node, c.trailer)), None)
    if outer is not None:      # ``checkpoint.restore(tf.train.latest_checkpoint(d))``: one read on rank 0
        return _state(ctx, outer, stmt, mod)
    return _value(ctx, call, stmt, mod)


def in_rank0_value(ctx: RuleContext, node) -> bool:
    """`node` is inside ``<expr> if hvd.rank() == 0 else None`` (this rule's own form)."""
    cur = node
    while cur.parent is not None and not N.is_statement(cur):
        parent = cur.parent
        if parent.type == "test" and len(parent.children) == 5 and cur is parent.children[0] and \
                "rank()" in parent.children[2].get_code(include_prefix=False):
            return True
        cur = parent
    return False


def _in_tf_function(stmt) -> bool:
    """Inside a function decorated with ``tf.function`` (no Python collective there)."""
    fn = N.func_scope_of(stmt)
    holder = fn.parent if fn is not None else None
    return holder is not None and holder.type == "decorated" and any(
        "function" in d.get_code(include_prefix=False) for d in N.walk(holder.children[0]) if d.type == "decorator")


# -- a value: x = broadcast_object(<read> if rank 0 else None) ------------------------------
def _value(ctx: RuleContext, call: N.Call, stmt, mod: str) -> Finding | None:
    q, dotted = ctx.env.callee_qualname(call), call.callee_dotted()
    if q not in VALUE_QUALNAMES and dotted not in VALUE_DOTTED:
        return None
    if stmt.type != "expr_stmt" or len(stmt.children) != 3 or stmt.children[1] != "=" or \
            stmt.children[0].type != "name" or not N.alone_on_line(stmt):
        return None
    value = stmt.children[2]
    if dotted == "open" and call.node is value:
        return None            # (a file handle: nothing to broadcast)
    if not N.inside(call.node, value) or mentions_hvd(value, ctx) or \
            any(leaf.type == "keyword" and leaf.value in ("yield", "await", "lambda") for leaf in N.walk(value)):
        return None
    for inner in N.calls_in(value):
        if ctx.env.call_target(inner) is not None:
            return None        # the program's own function: it may reach a collective
        if inner.method in STATE_METHODS or inner.callee_dotted() in ("np.load", "numpy.load") and \
                ".npz" in ctx.source.code(inner.node):
            return None        # (an .npz archive is read lazily from its open file: not picklable)
    low = value.type in ("test", "lambdef", "namedexpr_test")
    start, end = ctx.source.span(value)
    edits = [Edit(start, start, f"{mod}.broadcast_object({'(' if low else ''}"),
             Edit(end, end, f"{')' if low else ''} if {ctx.hvd}.rank() == 0 else None, root_rank=0)")]
    name = stmt.children[0].value
    return finding(ctx, "HVD033", call.node, f"`{name}` is read back from rank 0's file on every rank: on another "
                   "host it is not there", Fix(VALUE, edits))


# -- weights: if rank 0: restore; broadcast_variables(...) ----------------------------------
def _state(ctx: RuleContext, call: N.Call, stmt, mod: str) -> Finding | None:
    if stmt is not call.node or not N.alone_on_line(stmt) or call.has_star():
        return None            # (``status = ckpt.restore(p)``: the status is used on every rank)
    receiver = call.receiver_dotted()
    objects = _restored(ctx, call, receiver)
    if objects is None:
        return None
    carried = _carried(ctx, stmt)
    parts = []
    for role, name in objects:
        if role in ("model", "optimizer") and (name in carried or role in carried):
            continue
        parts.append({"model": f"{name}.variables", "optimizer": f"{name}.variables()"}.get(role, name))
    singles = [p for p in parts if "." not in p]
    parts = [p for p in parts if "." in p] + ([f"[{', '.join(singles)}]"] if singles else [])
    guard = ctx.guard_rank0(stmt)
    if guard is None:
        return None
    edits = [guard]
    if parts:
        edits.append(ctx.insert_after_stmt(N.simple_stmt_of(stmt),
                                           f"{mod}.broadcast_variables({' + '.join(parts)}, root_rank=0)"))
    what = "the weights" if call.method == "load_weights" else "the checkpoint"
    return finding(ctx, "HVD033", call.node, f"every rank reads {what} rank 0 saved: on another host the file is "
                   "not there", Fix(STATE if parts else STATE_CARRIED, edits))


def _restored(ctx: RuleContext, call: N.Call, receiver: str | None) -> list | None:
    """(role, name) of each object the read fills: the model of ``load_weights``, each object
    a ``tf.train.Checkpoint(...)`` tracks (models, optimizers, ``tf.Variable``s). None when one
    of them is something else (its state could not be named here)."""
    env = ctx.env
    if call.method == "load_weights":
        return [("model", receiver)] if receiver and env.lookup(receiver, call.node, "model") else None
    ckpt = checkpoint_of(env, receiver, call.node)
    made = N.as_call(ckpt.value) if ckpt is not None else None
    if made is None or env.callee_qualname(made) not in CHECKPOINTS or not made.args:
        return None            # (a manager's ``restore_or_initialize``, a TF1 Saver: not this form)
    out = []
    for arg in made.args:
        name = N.dotted(arg.value)
        if arg.star or arg.keyword is None or name is None:
            return None
        found = env.lookup(name, call.node)
        if found is not None and found.role in ("model", "optimizer"):
            out.append((found.role, name))
        elif found is not None and _is_variable(ctx, found):
            out.append(("variable", name))
        else:
            return None
    return out


def _is_variable(ctx: RuleContext, binding) -> bool:
    made = N.as_call(binding.value)
    return made is not None and ctx.env.callee_qualname(made) == "tensorflow.Variable"


def _carried(ctx: RuleContext, stmt) -> set:
    """What a broadcast the conversion places after `stmt` carries anyway: the model a later
    ``fit`` trains (its callback broadcasts the model's and its optimizer's variables: "optimizer"),
    or every model and optimizer when a tape loop follows (its first-step broadcast)."""
    out: set = set()
    scope = N.func_scope_of(stmt)
    for site in ctx.summary.sites:
        at = site.driver or site.node
        if at is None or at.start_pos < stmt.end_pos:
            continue
        if site.kind == FIT and N.func_scope_of(site.node) is scope:
            fit = N.as_call(site.node)
            if fit is not None and fit.receiver_dotted():
                out |= {fit.receiver_dotted(), "optimizer"}
        elif site.kind == TAPE:
            # its first-step broadcast runs once: after `stmt` only if no step runs before it
            fn = site.function
            before = [c for c in (ctx.env.callers(fn) if fn is not None else ()) if c.node.start_pos < stmt.end_pos]
            if not before:
                out |= {"model", "optimizer"}
    return out
