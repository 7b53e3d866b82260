"""Paths that every rank computes for itself but must share (contract point 7): a name
assigned from the clock, a uuid, the process id or a fresh temporary directory
(``t = time.time()``, ``log_dir = "logs/" + datetime.now().strftime(...)``) that names what
rank 0 writes and what the ranks read back after the barrier. Each rank's value differs, so
the others read a path nobody wrote; rank 0's value is broadcast to all of them
(``t = hvd_tf.broadcast_object(time.time(), root_rank=0)``), before either use.

Provides `sites` (the assignments to share, computed once per context; the set-up reads it
to bind horovod.tensorflow in a Keras program) and `check` (their HVD033 findings).
Requires: base (the rule context), tapes (the horovod.tensorflow alias), written (the names a
path reaches, the open-for-writing test), parse.nodes.
"""

from __future__ import annotations

from typing import Iterator

from ..parse import nodes as N
from .base import Finding, Fix, RuleContext, called_on_rank0_only, finding, mentions_hvd, under_rank0_guard
from .tapes import tf_module_alias
from .written import open_for_writing, reached

# Calls whose value differs from one process to the next, by dotted callee.
PER_PROCESS = frozenset({
    "time.time", "time.time_ns", "time.strftime", "time.localtime", "time.ctime", "time.asctime",
    "datetime.now", "datetime.datetime.now", "datetime.utcnow", "datetime.datetime.utcnow",
    "datetime.today", "datetime.datetime.today", "date.today", "datetime.date.today",
    "uuid.uuid1", "uuid.uuid4", "os.getpid", "tempfile.mkdtemp", "tempfile.mktemp",
})
_NAMES = tuple(dict.fromkeys(d.rsplit(".", 1)[1] for d in PER_PROCESS))
WRITE_NAMES = ("save", "save_weights", "save_model", "savefig", "savez", "savez_compressed", "savetxt", "dump",
               "to_csv", "write_file", "ModelCheckpoint", "CheckpointManager", "export_saved_model", "open")
READ_NAMES = ("load_model", "load_weights", "load", "restore", "latest_checkpoint", "read_csv", "read_file",
              "open", "listdir", "glob")


def sites(ctx: RuleContext) -> list:
    """(statement, value) of each per-process assignment whose name reaches both a write and a
    later read, and that every rank runs; computed once per context."""
    cached = ctx.__dict__.get("_shared_values")
    if cached is None:
        cached = ctx.__dict__["_shared_values"] = _find(ctx)
    return cached


def _find(ctx: RuleContext) -> list:
    if ctx.env.tf1 or ctx.facts.uses_horovod:
        return []          # graph mode: broadcast_object needs the program's session; a program
                           # with Horovod already may run the assignment on rank 0 only
    assigned = {}
    for name in _NAMES:
        for call in ctx.calls(name):
            if call.callee_dotted() not in PER_PROCESS:
                continue
            stmt = N.statement_of(call.node)
            if stmt is None or stmt.type != "expr_stmt" or len(stmt.children) != 3 or \
                    stmt.children[1] != "=" or stmt.children[0].type != "name":
                continue
            value = stmt.children[2]
            if mentions_hvd(value, ctx) or "broadcast_object" in ctx.source.code(value) or \
                    under_rank0_guard(stmt, ctx) or called_on_rank0_only(ctx, N.func_scope_of(stmt)):
                continue      # (a collective that only rank 0 reaches would wait forever)
            assigned[id(stmt)] = (stmt, value)
    if not assigned:
        return []
    writes = [(c.node.start_pos, _sources(ctx, c, assigned)) for n in WRITE_NAMES for c in ctx.calls(n)
              if n != "open" or open_for_writing(c)]
    found = {}
    for name in READ_NAMES:
        for call in ctx.calls(name):
            if name == "open" and open_for_writing(call):
                continue
            for key in _sources(ctx, call, assigned):
                if any(key in keys and pos < call.node.start_pos for pos, keys in writes):
                    found[key] = assigned[key]
    return sorted(found.values(), key=lambda s: s[0].start_pos)


def _sources(ctx: RuleContext, call: N.Call, assigned: dict) -> set:
    """The per-process assignments (ids) whose names a call's arguments are computed from,
    a few assignments deep (`written.reached`)."""
    names = set().union(*(reached(ctx, a.value) for a in call.args))
    return {key for key, (stmt, _value) in assigned.items() if stmt.children[0].value in names}


def module(ctx: RuleContext) -> str | None:
    """The name that holds horovod.tensorflow (which has ``broadcast_object``; the Keras
    module has not): the program's own, or the one the set-up binds."""
    if ctx.summary is None or not ctx.summary.hvd_module.endswith("keras"):
        return ctx.hvd
    return tf_module_alias(ctx)


def check(ctx: RuleContext) -> Iterator[Finding]:
    mod = module(ctx)
    if mod is None:
        return
    for stmt, value in sites(ctx):
        if ctx.blocked("HVD033", stmt):
            continue
        name = stmt.children[0].value
        yield finding(ctx, "HVD033", value,
                      f"`{name}` differs on each rank (clock, uuid, process id) and names a file rank 0 writes "
                      f"and every rank reads back: the others would read a path nobody wrote",
                      Fix("Use rank 0's value on every rank",
                          ctx.wrap(value, f"{mod}.broadcast_object(", ", root_rank=0)")))
