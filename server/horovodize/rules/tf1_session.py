"""TF1 graph-mode rules (Horovod's ``tensorflow_mnist.py`` / ``tensorflow_word2vec.py``):
pin one GPU per rank through the session config (HVD070; an Estimator's through
``RunConfig(session_config=)``), broadcast the initial variables right after the
initializer runs (HVD071), give a ``MonitoredTrainingSession`` the broadcast hook and
write its checkpoints on rank 0 only (HVD072), divide the step count (HVD073), save with
``Saver`` on rank 0 only (HVD074). A ``tf.train.XOptimizer(...)`` on which ``minimize`` is called
directly is scaled and wrapped in place (HVD010/HVD011).

Graph-mode pinning is the session config's ``visible_device_list``, not
``tf.config.set_visible_devices`` (HVD001 leaves that out for Session programs): a Session
numbers the GPUs it is given, so both would make rank 1 ask for a GPU it cannot see.

Requires: env, loop (``summary.graph`` from session.py).
"""

from __future__ import annotations

from typing import Iterator

from ..analysis.roles import TF1_OPTIMIZERS
from ..parse import nodes as N
from ..parse.source import Edit
from .base import Finding, Fix, RuleContext, finding, mentions_hvd, under_rank0_guard
from .estimator import _module_prefix as estimator_prefix
from .estimator import hook_edits, keyword_first, run_configs
from .optimizer import RULES as OPT_RULES
from .optimizer import _scale

RULES = {
    "HVD070": ("session-gpu-pinning", "Pin one GPU per rank in the session config"),
    "HVD071": ("session-broadcast", "Broadcast the initial variables after the initializer runs"),
    "HVD072": ("monitored-session", "Add hvd.BroadcastGlobalVariablesHook(0); checkpoint_dir on rank 0 only"),
    "HVD073": ("divide-session-steps", "Divide the step count by hvd.size()"),
    "HVD074": ("rank0-saver", "Save with Saver and write FileWriter summaries on rank 0 only"),
}
SESSION_GRAPH_POS, SESSION_CONFIG_POS = 1, 2   # Session(target='', graph=None, config=None)
MTS_CHECKPOINT_POS, MTS_HOOKS_POS = 2, 4   # MonitoredTrainingSession(master, is_chief, checkpoint_dir, scaffold, hooks)


def graph(ctx: RuleContext):
    g = getattr(ctx.summary, "graph", None)
    return g if g is not None and g.training else None


def check(ctx: RuleContext) -> Iterator[Finding]:
    yield from run_config_pinning(ctx)
    g = graph(ctx)
    if g is None:
        return
    yield from _pinning(ctx, g)
    yield from _broadcast(ctx, g)
    yield from _monitored(ctx, g)
    yield from _steps(ctx, g)
    yield from _saver(ctx)
    yield from _file_writers(ctx)
    yield from _minimize_inline(ctx)


# -- HVD070 ---------------------------------------------------------------------------------
def _pin_value(ctx: RuleContext) -> str:
    return f"str({ctx.hvd}.local_rank())"


def tf1_prefix(ctx: RuleContext, call: N.Call) -> str | None:
    """How this file spells the TF1 module at `call` (``tf``, ``tf.compat.v1``)."""
    callee = call.callee_dotted() or ""
    for suffix in (".train.MonitoredTrainingSession", ".train.MonitoredSession",
                   ".train.SingularMonitoredSession", ".InteractiveSession", ".Session"):
        if callee.endswith(suffix) and len(callee) > len(suffix):
            return callee[: -len(suffix)]
    tf = ctx.env.tf_alias()
    if tf is None:
        return None
    return tf if ctx.env.aliases.get(tf, "").startswith("tensorflow.compat.v1") else f"{tf}.compat.v1"


def _config_bindings(ctx: RuleContext) -> list:
    return [b for b in ctx.env.bindings if b.role == "other" and N.as_call(b.value) is not None
            and ctx.env.callee_qualname(N.as_call(b.value)) == "tensorflow.ConfigProto"]


def _pinning(ctx: RuleContext, g) -> Iterator[Finding]:
    hvd, pin = ctx.hvd, _pin_value(ctx)
    for b in _config_bindings(ctx):
        if mentions_hvd(b.value, ctx) or ctx.blocked("HVD070", b.stmt, b):
            continue
        existing = _assigned_device_list(ctx, b)
        if existing is not None:
            if mentions_hvd(existing, ctx):
                continue
            start, end = ctx.source.span(existing)
            edits = [Edit(start, end, pin)]
        else:
            edits = [ctx.insert_after_stmt(N.statement_of(b.stmt), f"{b.name}.gpu_options.visible_device_list = {pin}")]
        yield finding(ctx, "HVD070", b.value, f"every rank's session config `{b.name}` sees every GPU",
                      Fix(RULES["HVD070"][1], edits))
    for s in g.sessions:
        call = s.call
        if call.has_star() or ctx.blocked("HVD070", call.node):
            continue
        arg = call.keyword("config") or (call.positional(SESSION_CONFIG_POS) if s.kind == "session" else None)
        prefix = tf1_prefix(ctx, call)
        if arg is None:
            if prefix is None:
                continue
            text = f"config={prefix}.ConfigProto(gpu_options={prefix}.GPUOptions(visible_device_list={pin}))"
            yield finding(ctx, "HVD070", call.node, "the session sees every GPU on every rank",
                          Fix(RULES["HVD070"][1], keyword_first(ctx, call, text)))
            continue
        inline = N.as_call(arg.value)
        if inline is None or ctx.env.callee_qualname(inline) != "tensorflow.ConfigProto" \
                or mentions_hvd(arg.value, ctx) or inline.has_star():
            continue            # a name: pinned where it is bound (above)
        gpu = inline.keyword("gpu_options")
        if gpu is None and prefix is not None:
            edits = keyword_first(ctx, inline, f"gpu_options={prefix}.GPUOptions(visible_device_list={pin})")
        elif gpu is not None and N.as_call(gpu.value) is not None and not N.as_call(gpu.value).keyword(
                "visible_device_list") and not N.as_call(gpu.value).has_star():
            edits = ctx.add_keyword(N.as_call(gpu.value), f"visible_device_list={pin}")
        else:
            continue
        yield finding(ctx, "HVD070", inline.node, "the session config sees every GPU on every rank",
                      Fix(RULES["HVD070"][1], edits))
    del hvd


def run_config_pinning(ctx: RuleContext) -> Iterator[Finding]:
    """An Estimator's ``RunConfig`` without ``session_config`` gets Horovod's pinning."""
    for call in run_configs(ctx):
        if call.keyword("session_config") is not None or ctx.blocked("HVD070", call.node):
            continue        # the user's own session config: theirs to pin (its binding is HVD070's)
        prefix = estimator_prefix(ctx, call)
        if prefix is None:
            continue
        v1 = prefix if "compat.v1" in (ctx.env.aliases.get(prefix.split(".")[0], "") + "." + prefix) \
            else f"{prefix}.compat.v1"
        text = (f"session_config={v1}.ConfigProto(gpu_options={v1}.GPUOptions("
                f"allow_growth=True, visible_device_list=str({ctx.hvd}.local_rank())))")
        yield finding(ctx, "HVD070", call.node, "the Estimator's sessions see every GPU on every rank",
                      Fix(RULES["HVD070"][1], keyword_first(ctx, call, text)))


def _assigned_device_list(ctx: RuleContext, b):
    """The value of ``<config>.gpu_options.visible_device_list = ...`` in the binding's scope."""
    want = f"{b.name}.gpu_options.visible_device_list"
    for node, _owner in ctx.env.index.assignments:
        parts = N.assign_parts(node)
        if parts and len(parts[0]) == 1 and N.dotted(parts[0][0]) == want \
                and N.func_scope_of(node) is N.func_scope_of(b.stmt):
            return parts[1]
    return None


# -- HVD071 ---------------------------------------------------------------------------------
def _broadcast(ctx: RuleContext, g) -> Iterator[Finding]:
    hvd = ctx.hvd
    done = {id(s) for s in g.sessions if _broadcasts(ctx, s)}
    for s in g.sessions:
        if s.kind != "session" or not s.inits or id(s) in done or not s.name:
            continue
        if not any(r.session is s for r in g.runs):
            continue
        inits = _own_inits(s)
        if not inits:
            continue
        last = max(inits, key=lambda n: n.end_pos)
        anchor = _outside_branches(last, s)
        if ctx.blocked("HVD071", anchor):
            continue
        text = f"{s.name}.run({hvd}.broadcast_global_variables(0))"
        graph_arg = s.call.keyword("graph") or s.call.positional(SESSION_GRAPH_POS)
        if graph_arg is not None and s.stmt.type != "with_stmt":
            # `Session(graph=g)` outside its `with`: the broadcast ops must be built in g
            text = f"with {graph_arg.value.get_code(include_prefix=False)}.as_default(): {text}"
        edit = ctx.insert_after_stmt(anchor, text)
        yield finding(ctx, "HVD071", last, f"session `{s.name}` starts each rank from its own initial variables",
                      Fix(RULES["HVD071"][1], [edit]))


def _own_inits(s) -> list:
    """The initializer runs of a ``with Session() as sess:`` inside its own block: two
    sessions bound to one name one after the other (a first training, then a restore)
    each get their broadcast (the second session's ``saver.restore(sess, ...)`` is not
    the first one's initializer)."""
    if s.stmt.type != "with_stmt":
        return list(s.inits)
    return [n for n in s.inits if N.inside(n, s.stmt)]


def _broadcasts(ctx: RuleContext, s) -> bool:
    for call in ctx.calls("broadcast_global_variables"):
        if call.method == "broadcast_global_variables" and N.func_scope_of(call.node) is s.scope:
            return True
    return False


def _outside_branches(stmt, s):
    """``if ckpt: saver.restore(...) else: sess.run(init)``: the broadcast goes after the
    ``if``/``try`` (still inside the session's ``with``), so it runs on either path."""
    cur = stmt
    while cur.parent is not None:
        up = N.enclosing(cur, {"if_stmt", "try_stmt", "with_stmt", "for_stmt", "while_stmt", "funcdef", "file_input"})
        if up is None or up.type not in ("if_stmt", "try_stmt"):
            return cur
        cur = up
    return cur


# -- HVD072 ---------------------------------------------------------------------------------
def _monitored(ctx: RuleContext, g) -> Iterator[Finding]:
    hvd = ctx.hvd
    for s in g.sessions:
        call = s.call
        if s.kind != "monitored" or call.has_star() or ctx.blocked("HVD072", call.node):
            continue
        if ctx.env.callee_qualname(call) == "tensorflow.train.MonitoredTrainingSession":
            arg = call.keyword("hooks") or call.positional(MTS_HOOKS_POS)
            edits = hook_edits(ctx, call, arg, f"{hvd}.BroadcastGlobalVariablesHook(0)", first=True)
            if edits:
                yield finding(ctx, "HVD072", call.node, "the monitored session does not broadcast the initial variables",
                              Fix(RULES["HVD072"][1], edits))
            for kw, pos in (("checkpoint_dir", MTS_CHECKPOINT_POS), ("summary_dir", None)):
                d = call.keyword(kw) or (call.positional(pos) if pos is not None else None)
                if d is None or mentions_hvd(d.value, ctx) or (d.value.type == "keyword" and d.value.value == "None"):
                    continue
                yield finding(ctx, "HVD072", d.value, f"every rank writes checkpoints to {kw}",
                              Fix(RULES["HVD072"][1], ctx.rank0_value(d.value)))


# -- HVD073 ---------------------------------------------------------------------------------
def divide(ctx: RuleContext, value) -> list[Edit]:
    """``max(1, <value> // hvd.size())``: each rank's share of the steps, never 0."""
    start, end = ctx.source.span(value)
    inner = ctx.source.text[start:end]
    if value.type not in ("name", "number", "atom", "atom_expr", "power", "term", "factor"):
        inner = f"({inner})"
    return [Edit(start, end, f"max(1, {inner} // {ctx.hvd}.size())")]


def _steps(ctx: RuleContext, g) -> Iterator[Finding]:
    from ..analysis.session import range_bound
    for call in ctx.calls("StopAtStepHook"):
        if ctx.env.callee_qualname(call) != "tensorflow.train.StopAtStepHook" or ctx.blocked("HVD073", call.node):
            continue
        for kw, pos in (("num_steps", 0), ("last_step", 1)):
            arg = call.keyword(kw) or call.positional(pos)
            if arg is None or mentions_hvd(arg.value, ctx) or (arg.value.type == "keyword" and arg.value.value == "None"):
                continue
            yield finding(ctx, "HVD073", arg.value, f"every rank runs all {kw} steps",
                          Fix(RULES["HVD073"][1], divide(ctx, arg.value)))
    seen: set[int] = set()
    for run in g.runs:
        n = range_bound(run.driver)
        if n is None or id(n) in seen or mentions_hvd(n, ctx) or ctx.blocked("HVD073", run.driver):
            continue
        seen.add(id(n))
        yield finding(ctx, "HVD073", n, "every rank runs every training step of this loop",
                      Fix(RULES["HVD073"][1], divide(ctx, n)))


# -- HVD074 ---------------------------------------------------------------------------------
def _is_saver(ctx: RuleContext, call: N.Call) -> bool:
    receiver = call.receiver_dotted()
    if receiver is None:          # tf.train.Saver().save(...)
        if call.index >= 2 and N.is_call_trailer(call.node.children[call.index - 2]):
            inner = N.Call(call.node, call.index - 2)
            return ctx.env.callee_qualname(inner) == "tensorflow.train.Saver"
        return False
    for b in ctx.env.bindings:
        if b.name == receiver and b.role == "other" and N.as_call(b.value) is not None \
                and ctx.env.callee_qualname(N.as_call(b.value)) == "tensorflow.train.Saver":
            return True
    return False


def _saver(ctx: RuleContext) -> Iterator[Finding]:
    hvd = ctx.hvd
    for call in ctx.calls("save"):
        if call.method != "save" or not call.is_whole() or not _is_saver(ctx, call):
            continue
        parent = call.node.parent
        if under_rank0_guard(call.node, ctx) or ctx.blocked("HVD074", call.node):
            continue
        if N.is_statement(call.node):
            edit = ctx.guard_rank0(call.node)
            edits = [edit] if edit is not None else []
        elif parent.type == "expr_stmt" and parent.children[-1] is call.node:
            edits = ctx.wrap(call.node, "", f" if {hvd}.rank() == 0 else None")
        else:
            continue
        if edits:
            yield finding(ctx, "HVD074", call.node, "every rank writes the Saver checkpoint",
                          Fix(RULES["HVD074"][1], edits))


WRITER_METHODS = ("add_summary", "add_graph", "add_run_metadata", "add_meta_graph", "add_event",
                  "add_session_log", "flush", "close", "reopen")


def _file_writers(ctx: RuleContext) -> Iterator[Finding]:
    """``writer = tf.summary.FileWriter(logdir, sess.graph)``: made on rank 0 only (``... if
    hvd.rank() == 0 else None``) when every use of `writer` in its function is a statement
    ``writer.add_summary(...)`` / ``flush()`` / ``close()``, each then guarded too. A writer
    used any other way (passed on, stored) is left alone: a guard there would be a guess."""
    hvd = ctx.hvd
    for b in ctx.env.bindings:
        call = N.as_call(b.value) if b.role == "other" else None
        if call is None or ctx.env.callee_qualname(call) != "tensorflow.summary.FileWriter" or "." in b.name:
            continue
        if mentions_hvd(b.value, ctx) or under_rank0_guard(b.stmt, ctx) or ctx.blocked("HVD074", b.stmt):
            continue
        scope = b.scope
        uses, ok = [], True
        for leaf in ctx.env.index.names.get(b.name, []):
            if N.func_scope_of(leaf) is not scope or leaf.start_pos <= b.stmt.start_pos:
                continue
            trailer = leaf.get_next_sibling()
            atom = leaf.parent
            method = trailer.children[1].value if trailer is not None and trailer.type == "trailer" \
                and trailer.children[0] == "." else None
            if method in WRITER_METHODS and atom.type in ("atom_expr", "power") and N.is_statement(atom) \
                    and atom.children[0] is leaf:
                uses.append(atom)
            elif leaf.parent.type == "expr_stmt" and leaf.parent.children[0] is leaf:
                ok = False          # rebound
            else:
                ok = False
        if not ok:
            continue
        edits = ctx.wrap(b.value, "", f" if {hvd}.rank() == 0 else None")
        for use in uses:
            if not under_rank0_guard(use, ctx):
                edit = ctx.guard_rank0(use)
                if edit is None:
                    break
                edits.append(edit)
        else:
            yield finding(ctx, "HVD074", b.value, f"every rank writes the same event files with `{b.name}`",
                          Fix(RULES["HVD074"][1], edits))


# -- HVD010 / HVD011 on ``tf.train.XOptimizer(...).minimize(...)`` ---------------------------
def _minimize_inline(ctx: RuleContext) -> Iterator[Finding]:
    hvd = ctx.hvd
    for name in ("minimize", "compute_gradients", "apply_gradients"):
        for call in ctx.calls(name):
            if call.method != name or call.index < 2 or not N.is_call_trailer(call.node.children[call.index - 2]):
                continue
            inner = N.Call(call.node, call.index - 2)
            q = ctx.env.callee_qualname(inner) or ""
            if not q.startswith("tensorflow.train.") or q.rsplit(".", 1)[-1] not in TF1_OPTIMIZERS:
                continue
            yield from _scale(ctx, inner)
            if ctx.blocked("HVD011", call.node):
                continue
            start = ctx.source.offset(call.node.start_pos)
            end = ctx.source.offset(inner.trailer.end_pos)
            yield finding(ctx, "HVD011", inner.node, "optimizer does not average gradients across ranks",
                          Fix(OPT_RULES["HVD011"][1], [Edit(start, start, f"{hvd}.DistributedOptimizer("),
                                                       Edit(end, end, ")")]))
