"""Reads of rank 0's files that need no shared filesystem (HVD033, contract point 13): rank 0
reads the file it wrote and the others get what it read by a collective, with no barrier.
A plain value (``x = <read>``: ``latest_checkpoint``, ``os.listdir``, ``np.load``, json/pickle
loads) becomes ``x = hvd_tf.broadcast_object(<read> if hvd.rank() == 0 else None,
root_rank=0)``, and a file's block that only binds what it reads (``with open(p) as f: text =
f.read()``; ``f = open(p)`` ... ``f.close()``) runs on rank 0, its names broadcast after it;
weights read into a model or a ``tf.train.Checkpoint`` (``load_weights``, ``restore``) run under
``if hvd.rank() == 0:``, followed by ``broadcast_variables`` of what they filled, less what a
later ``fit``'s callback or tape loop's first-step broadcast carries.
Anything else (``load_model``: see HVD033.md) keeps the barrier.

Provides `rewrite` (the finding for one read, or None), `in_rank0_value` (a read in this
form) and `fills_state` (a statement that restores weights). Requires: shared_values (horovod.tensorflow's name; a Keras set-up binds it when an edit
names it, `setup_imports.placed`), written (`checkpoint_of`), analysis.loop (training sites).
"""

from __future__ import annotations

from ..analysis.loop import FIT, TAPE
from ..analysis.roles import REBUILT_MODELS
from ..parse import nodes as N
from ..parse.source import Edit
from .base import (Finding, Fix, RuleContext, finding, guard_lines, may_run_before, mentions_hvd,
                   report_note, under_rank0_guard)
from . import shared_values
from .written import checkpoint_of

VALUE = "Read rank 0's file on rank 0 and broadcast the value"
STATE = "Restore on rank 0 and broadcast the variables"
STATE_CARRIED = "Restore on rank 0 only (the broadcast of the training that follows shares it)"
# Calls whose value is plain Python/NumPy data, picklable (by qualified name or dotted callee).
VALUE_QUALNAMES = ("tensorflow.train.latest_checkpoint",)
VALUE_DOTTED = {"os.listdir", "glob.glob", "glob", "np.load", "numpy.load", "json.load", "pickle.load",
                "joblib.load", "pd.read_csv", "pandas.read_csv", "imageio.imread", "plt.imread", "open"}
STATE_METHODS = ("load_weights", "restore", "restore_or_initialize")
# Reads whose value names files (a folder's listing, the newest checkpoint's prefix): broadcast
# only when every later use stays where the files are not read on every rank (`_names_only`).
PATH_VALUES = ("os.listdir", "glob.glob", "glob", "tensorflow.train.latest_checkpoint")
# Calls a file name may pass through without being read (its length, its text, a joined path).
NAME_CALLS = frozenset({"len", "print", "int", "str", "float", "bool", "sorted", "max", "min", "os.path.join",
                        "os.path.basename", "os.path.dirname", "os.path.splitext", "os.path.split"})
# Of these, the calls whose value is no longer a file name (a count, a truth value, a number).
NOT_NAMES = frozenset({"len", "print", "int", "float", "bool"})
CHECKPOINTS = ("tensorflow.train.Checkpoint", "tensorflow.compat.v2.train.Checkpoint")
MANAGER = "tensorflow.train.CheckpointManager"


def rewrite(ctx: RuleContext, call: N.Call, stmt, reads: frozenset = frozenset()) -> Finding | None:
    """The HVD033 finding that reads `call`'s file on rank 0 only and shares what it read, or
    None when no such form fits (the caller then places a barrier). `reads`: the ids of the call
    nodes the caller handles as reads of rank 0's files."""
    mod = shared_values.module(ctx)
    if mod is None or ctx.env.tf1 or ctx.facts.uses_horovod or _in_tf_function(stmt):
        return None
    if call.method in STATE_METHODS:
        return _state(ctx, call, stmt, mod)
    if call.callee_dotted() == "open":
        block = _read_block(ctx, call, stmt)
        if block is not None:
            return _shared_block(ctx, call, mod, *block)
    outer = next((c for c in N.calls_in(stmt) if c.method in STATE_METHODS and N.inside(call.node, c.trailer)), None)
    if outer is not None:      # ``checkpoint.restore(tf.train.latest_checkpoint(d))``: one read on rank 0
        return _state(ctx, outer, stmt, mod)
    return _value(ctx, call, stmt, mod, reads)


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


def fills_state(stmt) -> bool:
    """`stmt` restores weights or a checkpoint (``status = ckpt.restore(p)``): the variables it
    fills are every rank's, whoever uses the value it returns."""
    return any(c.method in STATE_METHODS for c in N.calls_in(stmt))


def _in_tf_function(stmt) -> bool:
    """Inside a function decorated with ``tf.function`` (no Python collective there)."""
    fn = N.func_scope_of(stmt)
    holder = fn.parent if fn is not None else None
    return holder is not None and holder.type == "decorated" and any(
        "function" in d.get_code(include_prefix=False) for d in N.walk(holder.children[0]) if d.type == "decorator")


# -- a value: x = broadcast_object(<read> if rank 0 else None) ------------------------------
def _value(ctx: RuleContext, call: N.Call, stmt, mod: str, reads: frozenset) -> Finding | None:
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
    if (q in PATH_VALUES or dotted in PATH_VALUES) and not _names_only(ctx, stmt, reads):
        return None
    low = value.type in ("test", "lambdef", "namedexpr_test")
    start, end = ctx.source.span(value)
    edits = [Edit(start, start, f"{mod}.broadcast_object({'(' if low else ''}"),
             Edit(end, end, f"{')' if low else ''} if {ctx.hvd}.rank() == 0 else None, root_rank=0)")]
    name = stmt.children[0].value
    return finding(ctx, "HVD033", call.node, f"`{name}` is read back from rank 0's file on every rank: on another "
                   "host it is not there", Fix(VALUE, edits))


def _names_only(ctx: RuleContext, stmt, reads: frozenset) -> bool:
    """Every later use of the file names `stmt` binds keeps them names: in a read the caller
    handles (`reads`: shared from rank 0 in turn, or listed), under a rank guard, or through
    `NAME_CALLS`; not iterated nor given to other code (``tf.data.Dataset.from_tensor_slices(
    files)`` would read them on every rank, from its own disk). No function may see the name."""
    target = stmt.children[0]
    scope = N.func_scope_of(stmt)
    for ref in ctx.env.index.names.get(target.value, ()):
        if ref is target or ref.start_pos < stmt.start_pos:
            continue
        if N.func_scope_of(ref) is not scope:
            return False
        at = N.statement_of(ref)
        if at is not None and under_rank0_guard(at, ctx):
            continue
        cur = ref
        while cur is not at and cur.parent is not None:
            parent = cur.parent
            if parent.type in ("for_stmt", "comp_for", "sync_comp_for") and cur is not parent.children[1]:
                return False       # iterated: each name is then used by code not seen here
            if N.is_call_trailer(parent):
                called = next((c for c in N.calls_in(parent.parent) if c.trailer is parent), None)
                if called is not None and id(called.node) in reads:
                    break          # a read of rank 0's files the caller handles
                if called is None or called.callee_dotted() not in NAME_CALLS:
                    return False
                if called.callee_dotted() in NOT_NAMES:
                    break          # (what reaches further is a number or a truth value)
            cur = parent
    return True


# -- a file's block: if rank 0: <open, read into names>; names = broadcast_object(names) -----
def _read_block(ctx: RuleContext, call: N.Call, stmt) -> tuple | None:
    """(first, last, names) of the statements that open `call`'s file and only bind names from
    what they read: ``with open(p) as f:`` and its body (``text = f.read()``, ``config =
    json.load(f)``), or ``f = open(p)``, the assignments after it and ``f.close()``. None when
    another statement, a nested block or the handle itself (a name bound to it, a later use)
    is in it."""
    if stmt.type == "with_stmt":
        item = stmt.children[1]
        if item.type != "with_item" or item.children[0] is not call.node or item.children[2].type != "name":
            return None            # (one item, ``as <name>``)
        handle, first, last = item.children[2].value, stmt, stmt
        body = stmt.children[-1]
        lines = [c for c in body.children if c.type != "newline"] if body.type == "suite" else [body]
    elif (bound := N.name_assignment(stmt)) is not None and bound[1] is call.node and N.alone_on_line(stmt):
        handle, first = bound[0].value, N.simple_stmt_of(stmt)
        lines = []
        nxt = first.get_next_sibling()
        while nxt is not None and nxt.type == "simple_stmt" and not _closes(nxt, handle):
            lines.append(nxt)
            nxt = nxt.get_next_sibling()
        if nxt is None or not _closes(nxt, handle) or not lines:
            return None
        last = nxt
    else:
        return None
    names = []
    for line in lines:
        bound = N.name_assignment(line.children[0]) if line.type == "simple_stmt" and len(line.children) == 2 else None
        if bound is None or bound[1].type == "name" or not _plain(ctx, bound[1]):
            return None
        names.append(bound[0].value)
    scope = N.func_scope_of(stmt)
    if not names or handle in names or any(ref.start_pos > last.end_pos and N.func_scope_of(ref) is scope
                                           for ref in ctx.env.index.names.get(handle, ())):
        return None
    return first, last, list(dict.fromkeys(names))


def _closes(line, handle: str) -> bool:
    return line.type == "simple_stmt" and line.children[0].get_code(include_prefix=False) == f"{handle}.close()"


def _plain(ctx: RuleContext, value) -> bool:
    """`value` is plain data read from a file: no Horovod call, no call of the program's own
    functions (they may reach a collective), no restore, no generator or lambda."""
    if mentions_hvd(value, ctx) or any(leaf.type == "keyword" and leaf.value in ("yield", "await", "lambda")
                                       for leaf in N.walk(value)):
        return False
    return not any(ctx.env.call_target(c) is not None or c.method in STATE_METHODS for c in N.calls_in(value))


def _shared_block(ctx: RuleContext, call: N.Call, mod: str, first, last, names: list) -> Finding | None:
    """``text = None``, the block under ``if hvd.rank() == 0:``, then ``text =
    hvd_tf.broadcast_object(text, root_rank=0)`` (a tuple of the names when there are several)."""
    if under_rank0_guard(first, ctx):
        return None
    both = ", ".join(names)
    shared = names[0] if len(names) == 1 else f"({both})"
    edits = [ctx.insert_before_stmt(first, " = ".join(names) + " = None"),
             *guard_lines(ctx, first, last, f"{ctx.hvd}.rank() == 0"),
             ctx.insert_after_stmt(last, f"{both} = {mod}.broadcast_object({shared}, root_rank=0)")]
    what = f"`{names[0]}` is" if len(names) == 1 else f"{', '.join(f'`{n}`' for n in names)} are"
    return finding(ctx, "HVD033", call.node, f"{what} read back from rank 0's file on every rank: on another "
                   "host it is not there", Fix(VALUE, edits))


# -- weights: if rank 0: restore; broadcast_variables(...) ----------------------------------
def _state(ctx: RuleContext, call: N.Call, stmt, mod: str) -> Finding | None:
    uses = _status_uses(ctx, call, stmt) if stmt is not call.node else []
    if uses is None or not N.alone_on_line(stmt) or call.has_star():
        return None
    receiver = call.receiver_dotted()
    objects = _restored(ctx, call, receiver)
    if objects is None:
        return None
    names, roles = _carried(ctx, stmt)
    parts = []
    for role, name in objects:
        if role == "iterator":
            report_note(ctx, 2, call.node, f"done, but the position of the iterator `{name}` is restored on rank 0 "
                        "only: the other ranks read their share of the data from its start")
            continue
        if name in names or role in roles:
            continue
        parts.append((role, {"model": f"{name}.variables", "optimizer": f"{name}.variables()"}.get(role, name)))
    singles = [text for role, text in parts if role == "variable"]
    parts = [text for role, text in parts if role != "variable"] + ([f"[{', '.join(singles)}]"] if singles else [])
    after = N.simple_stmt_of(stmt) or stmt     # (a bare last line without a line break: the statement)
    for role, name in objects:
        if role == "model" and f"{name}.variables" in parts:
            built = _built_after(ctx, name, after)
            if built is not None:
                after = built         # (a model built after its load_weights: its variables exist only then)
            elif not _built_before(ctx, name, stmt):
                return None           # variables made at a later first call: nothing to broadcast here
    guards = [ctx.guard_rank0(at) for at in (stmt, *uses)]
    if None in guards:
        return None
    edits = guards[:1]
    if parts:
        edits.append(ctx.insert_after_stmt(after, f"{mod}.broadcast_variables({' + '.join(parts)}, root_rank=0)"))
    edits += guards[1:]         # (after the broadcast: a check on the next line starts where it ends)
    what = "the weights" if call.method == "load_weights" else "the checkpoint"
    return finding(ctx, "HVD033", call.node, f"every rank reads {what} rank 0 saved: on another host the file is "
                   "not there", Fix(STATE if parts else STATE_CARRIED, edits))


# A restore's status (``status = ckpt.restore(p)``): the checks rank 0 alone can make of it.
STATUS_METHODS = ("assert_consumed", "assert_existing_objects_matched", "assert_nontrivial_match", "expect_partial")


def _status_uses(ctx: RuleContext, call: N.Call, stmt) -> list | None:
    """``status = ckpt.restore(p)`` (``.expect_partial()`` after it too): the statements that use
    `status` after it, each ``status.assert_consumed()`` and the like alone on its line, which
    run on rank 0 with the restore (the other ranks have no status). None when `stmt` is not
    such an assignment or `status` is used otherwise (kept, passed on, read by a function)."""
    bound = N.name_assignment(stmt)
    if bound is None or bound[1] is not call.node:
        return None
    target = bound[0]
    scope = N.func_scope_of(stmt)
    uses = []
    for ref in ctx.env.index.names.get(target.value, ()):
        if ref is target or ref.start_pos < stmt.start_pos:
            continue
        at = N.statement_of(ref)
        used = N.as_call(at) if at is not None else None
        if N.func_scope_of(ref) is not scope or used is None or used.node is not at or \
                used.receiver_dotted() != target.value or used.method not in STATUS_METHODS:
            return None
        uses.append(at)
    return uses


# A model's methods that build it, or (``summary``) fail unless it is built: one that ran
# before a read means the model has its variables there.
_BUILDS = ("build", "fit", "predict", "evaluate", "train_on_batch", "test_on_batch", "predict_on_batch", "summary")


def _built_after(ctx: RuleContext, name: str, after):
    """The statement right after `after`'s run of statements that builds model `name`
    (``gen_model.build(input_shape=...)``, the Packt text generator), when the statements
    between only read or restore it. None otherwise."""
    siblings = after.parent.children if after.parent is not None else []
    for nxt in siblings[siblings.index(after) + 1:] if after in siblings else ():
        calls = list(N.calls_in(nxt)) if nxt.type == "simple_stmt" else None
        if not calls:
            return None
        if any(c.receiver_dotted() == name and c.method == "build" for c in calls):
            return nxt
        if any(c.callee_dotted() == name or c.receiver_dotted() == name for c in calls):
            return None
    return None


def _built_before(ctx: RuleContext, name: str, stmt) -> bool:
    """Model `name` has variables at `stmt`: a Keras application, a functional ``Model(inputs,
    outputs)``, a ``Sequential`` given its input shape or a ``model_from_json`` (built as they
    are made), or a model built, called or trained before it. A subclass, or a Sequential with
    no input shape, makes its variables at its first call (a load_weights before that restores
    only then). A build counts where it runs before `stmt` (`may_run_before`: in a function
    called before it too, not one only called after it), found from the index of calls by name."""
    binding = ctx.env.lookup(name, stmt, "model")
    made = N.as_call(binding.value) if binding is not None and binding.value is not None else None
    q = (ctx.env.callee_qualname(made) or "") if made is not None else ""
    text = made.node.get_code(include_prefix=False) if made is not None else ""
    if ".applications." in q or q.endswith((".Model", ".models.Model")) or q in REBUILT_MODELS or \
            q.endswith("Sequential") and ("input_shape" in text or "Input(" in text or "InputLayer" in text):
        return True
    start = binding.stmt.end_pos if binding is not None else (0, 0)
    called = [c for c in ctx.calls(name.rsplit(".", 1)[-1]) if c.callee_dotted() == name]
    used = [c for method in _BUILDS for c in ctx.calls(method) if c.receiver_dotted() == name]
    return any(c.node.start_pos >= start and may_run_before(ctx, c.node, stmt, again=False) for c in called + used)


def _restored(ctx: RuleContext, call: N.Call, receiver: str | None) -> list | None:
    """(role, name) of each object the read fills: the model of ``load_weights``, each object
    a ``tf.train.Checkpoint(...)`` tracks (models, optimizers, ``tf.Variable``s), also the one
    a manager's ``restore_or_initialize`` restores. None when one of them is something else
    (its state could not be named here)."""
    env = ctx.env
    if call.method == "load_weights":
        return [("model", receiver)] if receiver and env.lookup(receiver, call.node, "model") else None
    ckpt = checkpoint_of(env, receiver, call.node)
    made = N.as_call(ckpt.value) if ckpt is not None else None
    if made is not None and call.method == "restore_or_initialize":
        # the manager's checkpoint (an ``init_fn`` would run on rank 0 alone: not this form)
        arg = made.positional(0) or made.keyword("checkpoint")
        if env.callee_qualname(made) != MANAGER or made.keyword("init_fn") is not None or arg is None:
            return None
        ckpt = checkpoint_of(env, N.dotted(arg.value), call.node)
        made = N.as_call(ckpt.value) if ckpt is not None else None
    if made is None or env.callee_qualname(made) not in CHECKPOINTS or not made.args:
        return None            # (a TF1 Saver, a manager's restore of a checkpoint not named here)
    out = []
    for arg in made.args:
        name = N.dotted(arg.value)
        inline = N.as_call(arg.value)
        if arg.star or arg.keyword is None:
            return None
        if inline is not None and env.callee_qualname(inline) == "tensorflow.Variable" and ckpt.name.isidentifier():
            out.append(("variable", f"{ckpt.name}.{arg.keyword}"))   # ``Checkpoint(step=tf.Variable(1))``
            continue
        found = env.lookup(name, call.node) if name is not None else None
        if found is not None and found.role in ("model", "optimizer"):
            out.append((found.role, name))
        elif found is not None and _is_variable(ctx, found):
            out.append(("variable", name))
        elif name is not None and _is_iterator(ctx, name, call.node):
            out.append(("iterator", name))     # (its position: rank 0's alone, `_state` notes it)
        else:
            return None
    return out


def _is_iterator(ctx: RuleContext, name: str, at) -> bool:
    """`name` is bound by ``name = iter(<dataset>)`` in `at`'s scope before it."""
    scope = N.func_scope_of(at)
    for ref in ctx.env.index.names.get(name, ()):
        stmt = N.statement_of(ref)
        bound = N.name_assignment(stmt) if stmt is not None and ref.start_pos < at.start_pos else None
        made = N.as_call(bound[1]) if bound is not None and bound[0] is ref else None
        if made is not None and made.callee_dotted() == "iter" and N.func_scope_of(ref) is scope:
            return True
    return False


def _is_variable(ctx: RuleContext, binding) -> bool:
    made = N.as_call(binding.value)
    return made is not None and ctx.env.callee_qualname(made) == "tensorflow.Variable"


def _carried(ctx: RuleContext, stmt) -> tuple[set, set]:
    """(names, roles) a broadcast the conversion places after `stmt` carries anyway: the model a
    later ``fit`` of the same function trains (its callback broadcasts that model's variables and
    its optimizer's: role "optimizer"), or every model and optimizer when the tape loops' one
    first-step broadcast comes after it (no tape step can run before `stmt`)."""
    names, roles = set(), set()
    scope = N.func_scope_of(stmt)
    tapes = [site for site in ctx.summary.sites if site.kind == TAPE]
    for site in ctx.summary.sites:
        fit = N.as_call(site.node) if site.kind == FIT else None
        if fit is not None and fit.receiver_dotted() and site.node.start_pos > stmt.end_pos and \
                N.func_scope_of(site.node) is scope and not _bound_between(ctx, fit.receiver_dotted(), stmt, site.node) \
                and not _callbacks_used_before(ctx, fit, stmt):
            names.add(fit.receiver_dotted())
            roles.add("optimizer")
    if tapes and not any(_steps_before(ctx, site, stmt) for site in tapes):
        roles |= {"model", "optimizer"}
    return names, roles


def _callbacks_used_before(ctx: RuleContext, fit: N.Call, stmt) -> bool:
    """The fit's ``callbacks=<name>`` list was given to a fit that ran before `stmt`: the
    BroadcastGlobalVariablesCallback in it broadcasts once, at that earlier fit's first batch,
    and not again for what `stmt` restored."""
    arg = fit.keyword("callbacks")
    name = N.dotted(arg.value) if arg is not None else None
    if name is None:
        return False
    for site in ctx.summary.sites:
        other = N.as_call(site.node) if site.kind == FIT else None
        given = other.keyword("callbacks") if other is not None else None
        if given is not None and N.dotted(given.value) == name and other.node.start_pos < stmt.start_pos:
            return True
    return False


def _bound_between(ctx: RuleContext, name: str, stmt, node) -> bool:
    """``name = ...`` after `stmt` and before `node`: the fit there trains another model (the next
    experiment's ``model = create_model()``), whose broadcast does not carry what `stmt` read."""
    for ref in ctx.env.index.names.get(name, ()):
        at = N.statement_of(ref)
        if stmt.end_pos <= ref.start_pos < node.start_pos and at is not None and \
                (parts := N.assign_parts(at)) is not None and any(t is ref for t in parts[0]):
            return True
    return False


def _steps_before(ctx: RuleContext, site, stmt) -> bool:
    """A step of the tape loop `site` can run before `stmt`: its loop starts before it, its
    function is called before it, or `stmt` runs again after a step (`may_run_before`: a
    function that restores and then trains, called twice; a restore in the epoch loop)."""
    at = site.driver or site.node
    fn = site.function
    return at.start_pos < stmt.end_pos or any(c.node.start_pos < stmt.end_pos
                                              for c in (ctx.env.callers(fn) if fn is not None else ())) or \
        any(may_run_before(ctx, node, stmt) for node in dict.fromkeys((at, site.node)))
