"""Rank-0 rules: side effects that must happen once, not once per rank — ``print``
(HVD030), ``checkpoint.save`` (HVD031), every file write (HVD032: ``x.write``,
``model.summary()``, ``model.save*``, ``tf.saved_model.save``, ``np.save*``, ``savefig``,
``pickle``/``json`` dumps, ``with open(path, "w"/"a")`` blocks, summary writers) — run
under ``if hvd.rank() == 0:``; a later read of what rank 0 wrote waits for it (HVD033,
a barrier: ``hvd.allreduce(tf.constant(0), name="barrier")``, since horovod.tensorflow
0.28 has no ``barrier()``).

A simple statement alone is guarded on its own line (``if hvd.rank() == 0: print(...)``):
one insertion, nothing re-indented. A ``with open(..., "w")`` block, or statements to guard
that follow each other in one block, get one ``if`` above them and one more indentation step
on each of their lines. A summary writer becomes a no-op writer on
the other ranks, so ``with writer.as_default():`` still runs everywhere.

Writes the lists miss are found by their effect (``facts.effects``: images, ``imageio``,
``plot_model``, ``shutil``, ``os.mkdir``/``makedirs`` -> ``exist_ok=True``), and reads wait
also for what a rank-0 callback wrote during ``fit`` and for writes in called functions.

Displays (``plt.show``, pyplot drawing, ``display``/``clear_output``, loops that only show)
are HVD030's too (`shown`), in the same runs as the prints and writes beside them.

Requires: env (checkpoint and model bindings), restrictions (R4: prints without side effects),
hvd_facts (callback lists, assignments), effects (what a call does).
"""

from __future__ import annotations

from typing import Iterator

from ..analysis.effects import path_of
from ..analysis.roles import COMPILE_STRINGS
from ..parse import nodes as N
from ..parse.source import Edit
from .base import (Finding, Fix, RuleContext, called_on_rank0_only, finding, guard_lines, may_run_before,
                   mentions_hvd, report_note, under_rank0_guard)
from .data_acquisition import local_rank0_blocks, local_rank0_only
from .written import (
    FOLDER_CALLS,
    WRITE_EFFECT,
    called_reads,
    checkpoint_of,
    display_guards,
    effect_reads,
    exist_ok,
    fit_writes,
    in_writing_callback,
    lift_writes,
    note,
    note_path,
    open_for_writing,
    path_matches,
    reached,
    writer_block,
)
from . import rank0_reads, read_back, shared_values
from .setup_imports import tf_name
from .shown import display_sites
from .tf1_session import _is_saver
from .written import norm_path as _norm

RULES = {
    "HVD030": ("rank0-print", "Print on rank 0 only"),
    "HVD031": ("rank0-checkpoint", "Save checkpoints on rank 0 only"),
    "HVD032": ("rank0-write", "Write files and summaries on rank 0 only"),
    "HVD033": ("barrier-before-read", "Wait for rank 0's write before reading it"),
    "HVD034": ("load-model-with-horovod", "Load the model with Horovod's optimizer class"),
}
MODEL_METHODS = ("summary", "save_weights", "save")
# Calls that write a file, by qualified name (tensorflow through σ) or by dotted callee.
WRITE_QUALNAMES = ("tensorflow.saved_model.save", "tensorflow.keras.models.save_model", "tensorflow.keras.save_model",
                   "tensorflow.keras.saving.save_model", "tensorflow.io.write_file")
WRITE_DOTTED = {"np.save", "np.savez", "np.savez_compressed", "np.savetxt", "numpy.save", "numpy.savez",
                "numpy.savez_compressed", "numpy.savetxt", "pickle.dump", "json.dump", "joblib.dump",
                "plt.savefig", "pyplot.savefig", "matplotlib.pyplot.savefig"}
WRITE_METHODS = ("savefig", "to_csv", "to_json", "to_pickle")
WRITER_QUALNAMES = ("tensorflow.summary.create_file_writer",)
# Point 7's note on the reads after a barrier: the other ranks read rank 0's files where rank 0
# wrote them (contract point 13). The paths and lines follow it (`shared_fs_note`); it is
# advisory, or a refusal with --require-local-fs (`engine.Analysis.require_local_fs`).
SHARED_FS = "done, but needs a shared filesystem: "
SHARED_FS_HOW = ("after each barrier every rank reads these files where rank 0 wrote them; on hosts without a "
                 "shared filesystem, read them on rank 0 only and broadcast the value, or copy the files to each host")
# The same note for the reads of files rank 0 wrote in an earlier run (a resumed job: no barrier).
SHARED_FS_RESUMED = ("a resumed run reads these files on every rank where rank 0 wrote them in an earlier run; on "
                     "hosts without a shared filesystem, read them on rank 0 only and broadcast the value, or copy "
                     "the files to each host")
# HVD033's quick fix when the value read is used on rank 0 only (`rank0_reads.rank0_uses`).
READ_ON_RANK0 = "Read rank 0's file on rank 0 only, where its value is used"
# Calls that read a file rank 0 may just have written (HVD033).
READ_QUALNAMES = ("tensorflow.keras.models.load_model", "tensorflow.keras.load_model",
                  "tensorflow.saved_model.load", "tensorflow.train.latest_checkpoint",
                  "tensorflow.keras.saving.load_model", "tensorflow.io.read_file",
                  "tensorflow.lite.Interpreter")
READ_DOTTED = {"np.load", "numpy.load", "pickle.load", "json.load", "joblib.load", "open", "pd.read_csv"}
READ_METHODS = ("load_weights", "restore", "read", "restore_or_initialize")
PATH_KEYWORDS = ("filepath", "export_dir", "file", "fname", "path", "save_path", "filename", "model_path")


def classify(ctx: RuleContext, call: N.Call) -> str | None:
    """The rule code for a statement-level call, if it is a rank-0 side effect."""
    env = ctx.env
    if call.callee_dotted() == "print" and "print" not in env.functions:
        return "HVD030"
    method, receiver = call.method, call.receiver_dotted()
    if method == "save" and checkpoint_of(env, receiver, call.node):
        return "HVD031"
    if method == "write":
        return "HVD032"
    if method in MODEL_METHODS and receiver and (
        env.lookup(receiver, call.node, "model") or (method == "summary" and not call.args)
    ):
        return "HVD032"
    if writes_file(ctx, call):
        return "HVD032"
    return None


def writes_file(ctx: RuleContext, call: N.Call) -> bool:
    q = ctx.env.callee_qualname(call)
    dotted = call.callee_dotted()
    return q in WRITE_QUALNAMES or dotted in WRITE_DOTTED or (call.method in WRITE_METHODS and dotted not in READ_DOTTED)


def path_arg(ctx: RuleContext, call: N.Call):
    """The path a write or read call names (None when it names none)."""
    for kw in PATH_KEYWORDS:
        a = call.keyword(kw)
        if a is not None:
            return a.value
    dotted = call.callee_dotted()
    second = dotted in ("pickle.dump", "json.dump", "joblib.dump") or \
        ctx.env.callee_qualname(call) == "tensorflow.saved_model.save"
    a = call.positional(1 if second else 0)
    if a is not None and dotted in HANDLE_CALLS:
        # ``json.dump(obj, fh)`` writes through a handle: the path is the one its ``open``
        # names (``json.dump(obj, open(p, "w"))``); a bare handle is matched by its ``with``.
        inner = N.as_call(a.value)
        return path_arg(ctx, inner) if inner is not None and inner.callee_dotted() == "open" else None
    return a.value if a is not None else None


HANDLE_CALLS = ("pickle.dump", "json.dump", "pickle.load", "json.load")


def statement(call: N.Call):
    """The small statement when the call is the whole statement or an assignment's RHS."""
    if not call.is_whole():
        return None
    parent = call.node.parent
    if N.is_statement(call.node):
        return call.node
    if parent.type == "expr_stmt" and parent.children[-1] is call.node and parent.children[-2] == "=":
        return parent
    return None


WRITE_NAMES = ("save", "savez", "savez_compressed", "savetxt", "dump", "savefig", "save_model", "write_file",
               *WRITE_METHODS)
READ_NAMES = ("load_model", "load", "latest_checkpoint", "open", "read_csv", "read_file", "Interpreter", *READ_METHODS)


def check(ctx: RuleContext) -> Iterator[Finding]:
    yield from _plan(ctx)[0]


def put_on_rank0(ctx: RuleContext) -> list:
    """The statements this rule's guards put on rank 0: what they hold needs no rank test of
    its own (HVD051 leaves a ``verbose=`` there alone)."""
    return _plan(ctx)[1]


def _plan(ctx: RuleContext) -> tuple[list, list]:
    """The findings and the statements guarded, worked out once per analysis."""
    plan = ctx.__dict__.get("_rank0_plan")
    if plan is None:
        guarded: list = []
        plan = ctx.__dict__["_rank0_plan"] = (list(_check(ctx, guarded)), guarded)
    return plan


def _check(ctx: RuleContext, put: list) -> Iterator[Finding]:
    downloads = local_rank0_blocks(ctx)   # HVD044's downloads, on local rank 0 only
    blocks = [b for b in _write_blocks(ctx) if not any(N.inside(b[0], d) for d in downloads)]
    inside_block = [b for b, _ in blocks] + downloads
    handles = [h for h in _handle_blocks(ctx) if not any(N.inside(h[0], d) for d in downloads)]
    for _first, _last, _call, lines in handles:
        inside_block += lines
    displays, shown_regions = display_sites(ctx, statement, guard_block)   # plt.show, display loops (HVD030)
    inside_block += shown_regions
    names = dict.fromkeys(("print", "write", *MODEL_METHODS, *WRITE_NAMES))
    candidates = [c for name in names for c in ctx.calls(name)]
    writes = []          # (path text, scope, node) of every write done on rank 0
    guarded = []         # (statement line, call, code, message, its own guard's edits)
    for call in sorted(candidates, key=lambda c: c.node.start_pos):
        code = classify(ctx, call)
        if code is None:
            continue
        stmt = statement(call)
        if stmt is None or (code in ("HVD030", "HVD032") and stmt is not call.node):
            continue  # `ta = ta.write(i, v)` is a value (TensorArray), not a side effect
        if any(N.inside(stmt, d) for d in downloads):
            continue
        if code != "HVD030":
            _note_write(ctx, call, writes)
        if any(N.inside(stmt, b) for b in inside_block) or in_writing_callback(ctx, call):
            continue          # (a callback that runs on rank 0 only needs no guard inside)
        if under_rank0_guard(stmt, ctx) or ctx.blocked(code, call.node):
            continue
        edit = ctx.guard_rank0(stmt)
        if edit is None:
            continue
        what = {"HVD030": "print runs on every rank", "HVD031": "every rank saves the checkpoint",
                "HVD032": f"`{call.method or call.callee_dotted()}` runs on every rank"}[code]
        if N.alone_on_line(stmt):
            guarded.append((N.simple_stmt_of(stmt) or stmt, call, code, what, [edit]))
        else:
            yield finding(ctx, code, call.node, what, Fix(RULES[code][1], [edit]))
    for stmt, call in blocks:
        _note_write(ctx, call, writes)
        if under_rank0_guard(stmt, ctx) or ctx.blocked("HVD032", call.node) or in_writing_callback(ctx, call):
            continue
        guarded.append((stmt, call, "HVD032", "every rank opens the file for writing", guard_block(ctx, stmt)))
    on_rank0 = [g[0] for g in guarded + displays]     # statements these guards put on rank 0
    put += on_rank0
    first_guards = guarded + displays
    for first, last, call, lines in handles:
        _note_write(ctx, call, writes)
        if under_rank0_guard(first, ctx) or ctx.blocked("HVD032", call.node):
            continue
        on_rank0 += lines
        put += lines
        yield finding(ctx, "HVD032", call.node, "every rank opens the file for writing (and empties it)",
                      Fix(RULES["HVD032"][1], guard_block(ctx, first, last)))
    yield from _training_log_files(ctx, inside_block)
    yield from _summary_writers(ctx)
    guarded: list = []
    yield from _effect_writes(ctx, inside_block, writes, guarded)
    fit_writes(ctx, writes)
    lift_writes(ctx, writes)
    shown = [d for d in display_guards(ctx, writes, statement) if not any(N.inside(d[0], r) for r in shown_regions)]
    yield from _one_guard_per_block(ctx, shown)
    put += [g[0] for g in shown]
    read_guards: list = []       # reads moved to rank 0 with the evaluations that use them
    yield from _barriers(ctx, writes, inside_block + guarded + [g[0] for g in shown + displays], on_rank0,
                         read_guards)
    put += [g[0] for g in read_guards]
    # (after the barriers: a read moved to rank 0 shares one guard with the prints next to it)
    yield from _one_guard_per_block(ctx, first_guards + read_guards)
    yield from shared_values.check(ctx)
    yield from _load_models(ctx)


def _write_blocks(ctx: RuleContext):
    """``with open(path, "w") as f:`` statements (each with its open call) that do nothing but
    write: a block that also trains (a log file open around the epochs) must run on every
    rank, so only the writes inside it are guarded."""
    for item, _owner in ctx.env.index.with_items:
        call = N.as_call(item.children[0])
        if call is None or not open_for_writing(call):
            continue
        stmt = N.enclosing(item, {"with_stmt"})
        if stmt is not None and len([c for c in stmt.children if c.type == "with_item"]) <= 1 \
                and not _trains(ctx, stmt):
            yield stmt, call
    for call in ctx.calls("open"):
        with_stmt = call.node.parent
        if with_stmt is not None and with_stmt.type == "with_stmt" and open_for_writing(call) \
                and not _trains(ctx, with_stmt):
            yield with_stmt, call


# What a statement between ``f = open(p, "w")`` and ``f.close()`` may do with the handle.
HANDLE_WRITES = ("write", "writelines", "flush")


def _handle_blocks(ctx: RuleContext) -> Iterator[tuple]:
    """(first, last, open call, lines) of ``f = open(p, "w")``, the statements after it that only
    write to `f` or print (loops and tests around such writes too) and ``f.close()``: the lines
    run on rank 0 as one block (r38 review, zhuge20100104/tf: the writes alone were guarded, and
    rank 1's open emptied the file rank 0 wrote). `f` must not be used elsewhere."""
    for call in ctx.calls("open"):
        stmt = N.statement_of(call.node)
        parts = N.assign_parts(stmt) if stmt is not None else None
        if not open_for_writing(call) or parts is None or parts[1] is not call.node or \
                parts[0][0].type != "name" or not N.alone_on_line(stmt) or N.simple_stmt_of(stmt) is None:
            continue
        handle, first = parts[0][0].value, N.simple_stmt_of(stmt)
        lines, nxt = [first], first.get_next_sibling()
        while nxt is not None and nxt.type not in ("newline", "endmarker") and \
                nxt.get_code(include_prefix=False).strip() != f"{handle}.close()":
            lines.append(nxt)
            nxt = nxt.get_next_sibling()
        if nxt is None or nxt.type in ("newline", "endmarker") or len(lines) < 2:
            continue
        lines.append(nxt)
        if all(_writes_only(ctx, line, handle) for line in lines[1:-1]) and not any(
                not any(N.inside(ref, line) for line in lines) and N.func_scope_of(ref) is N.func_scope_of(stmt)
                for ref in ctx.env.index.names.get(handle, ())):
            yield first, nxt, call, lines


def _writes_only(ctx: RuleContext, node, handle: str) -> bool:
    """Every small statement in `node` is ``<handle>.write(...)`` (``writelines``, ``flush``) or
    ``print(...)``; compound statements around them test and loop, and mention no Horovod."""
    if node.type in N.COMPOUND:
        if node.type not in ("for_stmt", "if_stmt", "while_stmt") or mentions_hvd(node, ctx):
            return False
        suites = [c for c in node.children if c.type == "suite" or (c.type == "simple_stmt" and c is node.children[-1])]
        return all(_writes_only(ctx, line, handle) for suite in suites
                   for line in (suite.children if suite.type == "suite" else [suite])
                   if line.type not in ("newline", "endmarker", "operator") and not line.type == "indent")
    if node.type != "simple_stmt":
        return False
    for small in node.children:
        if small.type in ("newline",) or small.type == "operator":
            continue
        call = N.as_call(small)
        if call is None or not (call.callee_dotted() == "print" or call.method in HANDLE_WRITES and
                                call.receiver_dotted() == handle):
            return False
    return True


def _training_log_files(ctx: RuleContext, guarded: list) -> Iterator[Finding]:
    """``with open(log, "w") as f:`` around training: every rank runs the block, the other
    ranks write to ``os.devnull`` (nothing reaches the disk, the file is not truncated)."""
    os_name = next((name for name, q in ctx.env.aliases.items() if q == "os"), None)
    devnull = f"{os_name}.devnull" if os_name else '"/dev/null"'
    for item, _owner in ctx.env.index.with_items:
        call = N.as_call(item.children[0])
        stmt = N.enclosing(item, {"with_stmt"})
        if call is None or stmt is None or any(N.inside(stmt, b) for b in guarded) or not open_for_writing(call):
            continue      # (inside a block already run by one rank: a download's, a rank-0 guard's)
        path = call.keyword("file") or call.positional(0)
        if path is None or mentions_hvd(path.value, ctx) or under_rank0_guard(stmt, ctx) or \
                ctx.blocked("HVD032", call.node):
            continue
        value = path.value
        low = value.type in ("test", "lambdef", "namedexpr_test")
        edits = ctx.wrap(value, "(" if low else "", f"{')' if low else ''} if {ctx.hvd}.rank() == 0 else {devnull}")
        yield finding(ctx, "HVD032", call.node, "every rank writes the same file",
                      Fix("Write the file on rank 0 only (os.devnull elsewhere)", edits))


def _trains(ctx: RuleContext, stmt) -> bool:
    """The statement holds a training step or its loop, or calls a function that trains."""
    start, end = stmt.start_pos, stmt.end_pos
    inside = lambda n: n is not None and start <= n.start_pos and n.end_pos <= end  # noqa: E731
    for site in ctx.summary.sites:
        if inside(site.node) or inside(site.driver):
            return True
    for call in N.calls_in(stmt):
        target = ctx.env.call_target(call)
        if target is not None and ctx.summary.functions.get(target):
            return True
    return False


def _one_guard_per_block(ctx: RuleContext, guarded: list) -> Iterator[Finding]:
    """Statements to guard that follow each other in one block get one ``if hvd.rank() == 0:``
    around them all, as a person writes it (a statement alone keeps its own one-line guard).
    Each finding of a run carries the run's edits: its quick fix alone guards the run, and
    the whole-file conversion applies the shared edits once."""
    runs: list[list] = []
    for item in sorted(guarded, key=lambda g: g[1].node.start_pos):
        line = item[0]
        last = runs[-1][-1][0] if runs else None
        if last is not None and (line is last or (line.parent is last.parent and line.get_previous_sibling() is last
                                                  and not _apart(line))):
            runs[-1].append(item)
        else:
            runs.append([item])
    for run in runs:
        edits = run[0][4] if len({id(g[0]) for g in run}) == 1 else guard_block(ctx, run[0][0], run[-1][0])
        for _line, call, code, what, _own, *title in run:
            yield finding(ctx, code, call.node, what, Fix(title[0] if title else RULES[code][1], edits))


def _apart(stmt) -> bool:
    """A blank line before `stmt`: the run ends there (the user's paragraph break; a notebook's
    cells are joined by one, and a block must not cross cells). A comment line stays inside."""
    return any(not line.strip() for line in stmt.get_first_leaf().prefix.split("\n")[:-1])


def guard_block(ctx: RuleContext, stmt, last=None) -> list[Edit]:
    """``if hvd.rank() == 0:`` above a statement (through the sibling `last`), which moves one
    step right (`base.guard_lines`)."""
    return guard_lines(ctx, stmt, last, f"{ctx.hvd}.rank() == 0")


def _note_write(ctx: RuleContext, call: N.Call, writes: list) -> None:
    path = path_arg(ctx, call)
    if path is not None:
        writes.append((_norm(ctx.source.code(path)), N.func_scope_of(call.node), call.node))
    elif call.method == "save" and checkpoint_of(ctx.env, call.receiver_dotted(), call.node):
        writes.append(("", N.func_scope_of(call.node), call.node))   # a CheckpointManager's own dir


def _summary_writers(ctx: RuleContext) -> Iterator[Finding]:
    tf = ctx.env.tf_alias()
    for call in ctx.calls("create_file_writer"):
        if ctx.env.callee_qualname(call) not in WRITER_QUALNAMES or tf is None:
            continue
        parent = call.node.parent
        assigned = parent.type == "expr_stmt" and parent.children[-1] is call.node and call.is_whole()
        if ctx.blocked("HVD032", call.node) or under_rank0_guard(call.node, ctx) or call.has_star():
            continue
        start, end = ctx.source.span(call.node)
        noop = f" if {ctx.hvd}.rank() == 0 else {tf}.summary.create_noop_writer()"
        if assigned:
            edits = [Edit(end, end, noop)]
        elif not call.is_whole() or parent.type in ("with_item", "with_stmt", "arglist", "argument"):
            # `with tf.summary.create_file_writer(d).as_default():`, `f(tf.summary.create_file_writer(d))`
            end = ctx.source.span(call.close_paren)[1]
            edits = [Edit(start, start, "("), Edit(end, end, noop + ")")]
        else:
            continue
        yield finding(ctx, "HVD032", call.node, "every rank writes the same summaries",
                      Fix("Write summaries on rank 0 only (a no-op writer elsewhere)", edits))


def is_barrier(stmt) -> bool:
    code = stmt.get_code(include_prefix=False)
    return "allreduce" in code and "barrier" in code or ".join()" in code


def _reads(ctx: RuleContext):
    for name in dict.fromkeys(READ_NAMES):
        for call in ctx.calls(name):
            q = ctx.env.callee_qualname(call)
            dotted = call.callee_dotted()
            if q in READ_QUALNAMES or dotted == f"{ctx.hvd}.load_model" or \
                    dotted in READ_DOTTED and not (dotted == "open" and open_for_writing(call)):
                yield call
            elif call.method in READ_METHODS and (call.method != "read" or call.args):
                yield call


def _barriers(ctx: RuleContext, writes: list, guarded: list, on_rank0: list,
              read_guards: list) -> Iterator[Finding]:
    """HVD033's barriers, and point 7's note naming every read of rank 0's files on every rank
    after one (`shared_fs_note`; a read in a statement `on_rank0` guards, a print, is not one).
    A read whose value only rank 0 uses joins `read_guards` with the evaluations it moves there
    (guards in `_one_guard_per_block`'s form), instead of a barrier."""
    if not writes:
        return
    # (the set-up binds tensorflow when the program does not: ``hvd.allreduce(0)`` fails, an int
    # has no dtype)
    zero = f"{ctx.env.tf_alias() or tf_name(ctx)}.constant(0)"
    done = set()
    shared = []         # (path text, line) of each read after a barrier, on every rank (point 13)
    first = None        # the first read given a barrier here
    listed = []         # (path text, scope) of the reads in `shared` that matched a write
    shared_by_rank0 = set()     # statements `read_back` reads on rank 0 and broadcasts
    resumes = []        # (path text, line) of each read of an earlier run's files on every rank
    resume_first = None     # the first of them
    reads = {id(c.node): (c, [path_arg(ctx, c)]) for c in (*_reads(ctx), *effect_reads(ctx))}
    for call, paths in called_reads(ctx):
        reads.setdefault(id(call.node), (call, paths))
    handled = frozenset(reads)     # (a file name that only reaches these stays a name: `read_back`)
    for call, paths in sorted(reads.values(), key=lambda r: r[0].node.start_pos):
        found = [(_norm(ctx.source.code(p)), reached(ctx, p)) for p in paths if p is not None]
        scope = N.func_scope_of(call.node)
        stmt = N.statement_of(call.node)
        same_files = [w for w in writes if w[1] is scope and (
            any(path_matches(text, w[0]) or w[0] in texts for text, texts in found)
            or not w[0] and call.method in ("restore", "restore_or_initialize"))]
        match = [w for w in same_files if w[2].start_pos < call.node.start_pos or may_run_before(ctx, w[2], call.node)]
        test = None     # (a resumed read's shared test of the filesystem, `rank0_reads.shared_test`)
        # a read above every write of its files in its scope, and outside any loop that writes
        # them: a resumed job reads what rank 0 wrote in an earlier run (only rank 0's host has it)
        resumed = [] if match else [w for w in same_files if w[2].start_pos > call.node.start_pos]
        if under_rank0_guard(stmt, ctx) or ctx.blocked("HVD033", call.node):
            continue
        if any(N.inside(call.node, b) for b in guarded):
            continue      # read on rank 0 only, after its own write
        if called_on_rank0_only(ctx, scope):
            continue      # a collective that only rank 0 reaches would wait forever
        if stmt.parent is None:
            continue      # an error-recovered tree (the buffer does not parse)
        if id(stmt) in shared_by_rank0 or read_back.in_rank0_value(ctx, call.node):
            continue      # rank 0 reads it and broadcasts the value (`read_back`)
        # a later read in a folder an earlier one listed (``load_weights(os.path.join(
        # checkpoint_dir, names[-1]))`` after ``os.listdir(checkpoint_dir)``) also reads rank 0's files
        shown = [] if match else [(text, p) for p in paths if p is not None for text in (_norm(ctx.source.code(p)),)
                                  if any(s is scope and (t == text or t in reached(ctx, p)) for t, s in listed)]
        if any(N.inside(call.node, s) for s in on_rank0):
            continue      # the print around it runs on rank 0, which wrote the file: no barrier
        elif match and id(stmt) not in done and not read_back.fills_state(stmt) and not _waits(stmt) and \
                (uses := rank0_reads.rank0_uses(ctx, stmt, on_rank0)) and (edit := ctx.guard_rank0(stmt)) is not None:
            done.add(id(stmt))        # read where it is used: rank 0, no barrier, no shared filesystem
            name, moved = uses
            read_guards.append((N.simple_stmt_of(stmt) or stmt, call, "HVD033", f"`{name}` is read back from rank "
                                "0's file and used on rank 0 only", [edit], READ_ON_RANK0))
            read_guards += [(N.simple_stmt_of(at) or at, use, "HVD033", f"`{name}`, read on rank 0 only, is used "
                             f"by `{use.method}` there", [ctx.guard_rank0(at)], READ_ON_RANK0) for at, use in moved]
            continue
        elif (match or shown) and id(stmt) not in done and (bcast := read_back.rewrite(ctx, call, stmt, handled)):
            # rank 0 reads it and the others get the value by a collective: no barrier, no
            # shared filesystem (contract point 13)
            shared_by_rank0.add(id(stmt))
            if match:
                listed.append((_norm(_shown_path(ctx, call, paths, match)), scope))
            yield bcast
            continue
        elif resumed and id(stmt) not in done and (bcast := read_back.rewrite(ctx, call, stmt, handled)) and (
                bcast.fix.title == read_back.STATE_CARRIED or not rank0_reads.file_dependent(ctx, stmt, shared_by_rank0)
                or (test := rank0_reads.shared_test(ctx, stmt, shared_by_rank0, shared_values.module(ctx)))):
            # rank 0 reads its earlier run's files and the others get what it read: ranks resume
            # from one state, with no shared filesystem (contract point 13); under a test of
            # the files (``if os.path.exists(p):``) every rank takes rank 0's branch
            shared_by_rank0.add(id(stmt))
            listed.append((_norm(_shown_path(ctx, call, paths, resumed)), scope))
            if bcast.fix.title != read_back.STATE_CARRIED:
                if test:
                    bcast.fix.edits += test
                    bcast.message += "; every rank takes the branch rank 0's files decide"
                yield bcast   # (a restore the training's first broadcast shares is right as it is)
            continue
        elif resumed and not shown:
            resume_first = resume_first or call
            resumes.append((_shown_path(ctx, call, paths, resumed), call.node.start_pos[0]))
            listed.append((_norm(resumes[-1][0]), scope))
            continue
        elif not match:
            if shown:
                shared.append((_short(ctx.source.code(shown[0][1])), call.node.start_pos[0]))
        elif (manager := _manager_latest(ctx, call, paths)) is not None:
            # after rank 0's save: the manager's record of its own saves, on rank 0 only
            report_note(ctx, 2, call.node, f"ranks restore different checkpoints: `{_short(ctx.source.code(call.node))}` "
                        f"restores `{manager}{LATEST}`, the manager's own record of its saves (and of what its "
                        "directory held when it was made), and only rank 0 saves: the other ranks restore an older "
                        "checkpoint or none, shared filesystem or not; broadcast rank 0's restored variables after "
                        "it (`hvd.broadcast_variables(..., root_rank=0)`)")
        else:
            text = _shown_path(ctx, call, paths, match)
            shared.append((text, call.node.start_pos[0]))
            listed.append((_norm(text), scope))
        if not match:
            continue
        if id(stmt) in done:
            continue      # a second read of one statement: its barrier is in place
        prev = stmt.get_previous_sibling()
        if prev is not None and prev.type == "simple_stmt" and is_barrier(prev):
            continue
        if prev is not None and prev.type in ("newline",) or stmt.parent.type == "simple_stmt":
            stmt = stmt.parent if stmt.parent.type == "simple_stmt" else stmt
            prev = stmt.get_previous_sibling()
            if prev is not None and is_barrier(prev):
                continue
        last = max(match, key=lambda w: w[2].start_pos)[2]
        if any(is_barrier(s) or id(s) in done for s in _between(stmt, last)):
            continue      # a barrier (in the program, or one inserted above) already waits
        done.add(id(N.statement_of(call.node)))
        done.add(id(stmt))
        barrier = f'{ctx.hvd}.allreduce({zero}, name="barrier")'
        sess = _graph_session(ctx, call)
        edit = ctx.insert_before_stmt(stmt, f"{sess}.run({barrier})" if sess else barrier)
        yield finding(ctx, "HVD033", call.node, "reads what rank 0 writes, before rank 0 has written it",
                      Fix(RULES["HVD033"][1], [edit]))
        first = first or call
    if first is not None and shared:       # one note, at the first read that waits: every such read's path and line
        note(ctx, first, shared_fs_note(shared))
    if resumes:
        note(ctx, resume_first, shared_fs_note(resumes, SHARED_FS_RESUMED))


LATEST = ".latest_checkpoint"


def _manager_latest(ctx: RuleContext, call: N.Call, paths: list) -> str | None:
    """The CheckpointManager whose ``latest_checkpoint`` a restore reads (``ckpt.restore(
    manager.latest_checkpoint)``, here or in the program's function `call` runs)."""
    fn = ctx.env.call_target(call)
    inner = [c.positional(0) or c.keyword("save_path") for c in ctx.calls("restore", fn)] if fn is not None else []
    for p in [*paths, *(a.value for a in inner if a is not None)]:
        d = N.dotted(p) if p is not None else None
        if d and d.endswith(LATEST) and checkpoint_of(ctx.env, d[:-len(LATEST)], p):
            return d[:-len(LATEST)]
    return None


def _waits(stmt) -> bool:
    """A barrier right above `stmt`'s line: the program (or an earlier conversion) reads after it."""
    prev = (N.simple_stmt_of(stmt) or stmt).get_previous_sibling()
    return prev is not None and prev.type == "simple_stmt" and is_barrier(prev)


def shared_fs_note(shared: list, how: str = SHARED_FS_HOW) -> str:
    """``done, but needs a shared filesystem: `checkpoint_dir` (line 12), `"m.h5"` (line 20); ...``"""
    listed = ", ".join(f"`{text}` (line {line})" for text, line in dict.fromkeys(shared))
    return f"{SHARED_FS}{listed}; {how}"


def _shown_path(ctx: RuleContext, call: N.Call, paths: list, match: list) -> str:
    """The read's path as the source writes it, short: the path (or, failing that, the argument)
    that matched a write; a ``restore`` of a checkpoint written with no path, its argument; else the call."""
    named = [p for p in paths if p is not None] + [a.value for a in call.args if not a.star]
    if _is_saver(ctx, call) and call.positional(1) is not None:
        named = [call.positional(1).value]      # ``saver.restore(sess, save_path)``
    hit = [p for p in named if any(path_matches(_norm(ctx.source.code(p)), w[0]) or w[0] in reached(ctx, p)
                                   for w in match)]
    if not hit and call.method == "restore" and call.args:
        hit = [call.args[-1].value]       # a checkpoint written with no path (``manager.save()``)
    return _short(ctx.source.code((hit or [call.node])[0]))


def _short(code: str) -> str:
    """An expression's text on one line, cut at 48 characters."""
    text = " ".join(code.split())
    return text if len(text) <= 48 else text[:45] + "..."


def _graph_session(ctx: RuleContext, call: N.Call) -> str | None:
    """In TF1 graph mode an allreduce only builds an op: the barrier must be run by the
    session around the read (``with tf.Session() as sess:``), else no rank waits."""
    graph = ctx.summary.graph if ctx.summary is not None else None
    if graph is None or not ctx.env.tf1:
        return None
    around = [s for s in graph.sessions if s.name and s.stmt.type == "with_stmt" and N.inside(call.node, s.stmt)]
    return max(around, key=lambda s: s.stmt.start_pos).name if around else None


def _between(stmt, write_node):
    """Sibling statements between the write's statement and `stmt` in the same block."""
    parent = stmt.parent
    out = []
    for child in getattr(parent, "children", ()):
        if child is stmt:
            break
        if child.start_pos > write_node.start_pos:
            out.append(child)
    return out


# -- HVD034 ----------------------------------------------------------------------------------
LOAD_MODEL = ("tensorflow.keras.models.load_model", "tensorflow.keras.load_model", "tensorflow.keras.saving.load_model")


def _load_models(ctx: RuleContext) -> Iterator[Finding]:
    """A Keras model compiled with ``hvd.DistributedOptimizer`` is saved with Horovod's optimizer
    class (module ``horovod._keras``, same class name): ``tf.keras.models.load_model`` cannot
    find it, and ``hvd.load_model`` (0.28.1) maps names to factories that the ``.keras``
    format rejects. Mapping the name to the class the program trains with works for both
    formats and keeps the loaded optimizer distributed."""
    fit = _fit_model(ctx)
    if fit is None:
        return
    model, fit_call = fit
    for call in ctx.calls("load_model"):
        if ctx.env.callee_qualname(call) not in LOAD_MODEL or call.has_star() or call.keyword("custom_objects"):
            continue
        if ctx.env.lookup(model, call.node, "model") is None or ctx.blocked("HVD034", call.node):
            continue
        # only a load of what this program saved after training, with the trained model still
        # bound (``model = load_model(p)`` before any fit reads a file made elsewhere, and
        # `type(model.optimizer)` would read the name it is binding)
        load_stmt = N.statement_of(call.node)
        if call.node.start_pos < fit_call.start_pos or not any(
                b.name == model and b.stmt.end_pos <= load_stmt.start_pos for b in ctx.env.bindings):
            continue
        compiled = call.keyword("compile")
        if compiled is not None and compiled.value.get_code(include_prefix=False).strip() == "False":
            continue      # (no optimizer is rebuilt)
        fn = N.func_scope_of(call.node)
        if fn.type == "funcdef" and any(b.name == model and b.scope is fn for b in ctx.env.bindings) and \
                f"global {model}" not in fn.get_code():
            # ``def load(p): model = load_model(p)``: there `model` is the local being bound, and
            # `type(model.optimizer)` would raise UnboundLocalError; the class the program
            # compiled with, by its name (the optimizer comes back plain: right for evaluating)
            named = _compiled_class(ctx, model, fit_call)
            if named is None or ctx.keras_target == "keras3":
                note(ctx, call, f"`{model}` is a local of this function, so the Horovod optimizer class the "
                     f"trained `{model}` was saved with cannot be named here: pass custom_objects= mapping its name "
                     "to a Keras optimizer class (e.g. {\"RMSprop\": tf.keras.optimizers.RMSprop})")
                continue
            yield finding(ctx, "HVD034", call.node, f"the model is saved with Horovod's optimizer class, and `{model}` "
                          "is this function's own name: the class is named as the program compiles it",
                          Fix(RULES["HVD034"][1], ctx.add_keyword(call, f'custom_objects={{"{named[0]}": {named[1]}}}')))
            continue
        if _deleted_between(ctx, model, fit_call, load_stmt):
            # ``del model`` before the load: `type(model.optimizer)` would read no model
            note(ctx, call, f"`{model}` is deleted before this load_model, so the Horovod optimizer class it was "
                 f"saved with cannot be named here: pass compile=False, or custom_objects= with the optimizer "
                 f"class saved before the `del {model}`")
            continue
        cls = f"type({model}.optimizer)"
        edits = ctx.add_keyword(call, f"custom_objects={{{cls}.__name__: {cls}}}")
        yield finding(ctx, "HVD034", call.node,
                      "the model is saved with Horovod's optimizer class: load_model cannot rebuild it",
                      Fix(RULES["HVD034"][1], edits))


def _compiled_class(ctx: RuleContext, model: str, fit_node) -> tuple[str, str] | None:
    """(class name, class expression) of the optimizer `model`'s compile before `fit_node` makes:
    ``compile(optimizer=keras.optimizers.RMSprop(...))`` or a name bound to such a call gives
    ``("RMSprop", "keras.optimizers.RMSprop")``; ``compile(optimizer="rmsprop")`` the tensorflow
    module's class. None when it is not one of these."""
    compiles = [c for c in ctx.calls("compile") if c.receiver_dotted() == model and c.node.start_pos < fit_node.start_pos]
    arg = (compiles[-1].keyword("optimizer") or compiles[-1].positional(0)) if compiles else None
    if arg is None:
        return None
    value = arg.value
    if value.type == "string":
        name = COMPILE_STRINGS.get(value.value.strip("'\"").lower())
        return (name, f"{tf_name(ctx)}.keras.optimizers.{name}") if name else None
    if value.type == "name":
        bound = ctx.env.lookup(value.value, value, "optimizer")
        value = bound.value if bound is not None else value
    made = N.as_call(value)
    dotted = made.callee_dotted() if made is not None else None
    if dotted is None or (ctx.env.role_of_call(made) or ("",))[0] != "optimizer":
        return None
    return dotted.rsplit(".", 1)[-1], dotted


def _deleted_between(ctx: RuleContext, name: str, start, stmt) -> bool:
    """``del <name>`` in `stmt`'s scope after `start` and before `stmt`."""
    scope = N.func_scope_of(stmt) or ctx.source.module
    return any(node.type == "del_stmt" and start.start_pos < node.start_pos < stmt.start_pos
               and N.func_scope_of(node) in (scope, None)
               and any(leaf.type == "name" and leaf.value == name for leaf in N.walk(node.children[1]))
               for node in N.walk(scope))


def _fit_model(ctx: RuleContext):
    """(dotted name, fit call node) of the model a Keras-flavoured Horovod program trains with ``fit``."""
    from ..analysis.loop import FIT

    if not (ctx.summary.hvd_module or "").endswith("keras"):
        return None
    for site in ctx.summary.sites:
        call = N.as_call(site.node)
        if site.kind == FIT and call is not None and call.receiver_dotted():
            return call.receiver_dotted(), call.node
    return None


# -- writes recognised by what they do (contract point 7) -----------------------------------
def _effect_writes(ctx: RuleContext, blocks: list, writes: list, guarded: list) -> Iterator[Finding]:
    """Writes the lists above miss, found by their effect (`analysis.effects`): ``PIL``
    ``img.save(path)``, ``imageio`` writers, ``plot_model``, ``shutil``/``os`` moves and
    removals, writes in the program's own functions. A statement is guarded on rank 0; a
    ``with <writer> as w:`` block that only writes moves under one guard (its statements
    appended to `guarded`); ``os.mkdir``/``os.makedirs`` become ``os.makedirs(...,
    exist_ok=True)`` on every rank (a folder other ranks may write into or read from must
    exist everywhere). A write left on every rank is a note for the report (point 7 not done)."""
    fx = ctx.facts.effects
    seen = set(local_rank0_only(ctx))   # the data folder's cleaning: HVD044 runs it on local rank 0
    for call in fx.calls_of(WRITE_EFFECT):
        if id(call.node) in seen:
            continue
        seen.add(id(call.node))
        if classify(ctx, call) is not None or open_for_writing(call) or \
                ctx.env.callee_qualname(call) in WRITER_QUALNAMES:
            continue           # the list's rules above handle it
        if any(N.inside(call.node, b) for b in blocks) or in_writing_callback(ctx, call):
            continue           # a guarded block, or a callback HVD050 adds on rank 0 only
        path = path_of(call)
        if path is not None and (mentions_hvd(path, ctx) or ctx.facts.rank_dependent(path)):
            continue           # a per-rank path: every rank writes its own
        if under_rank0_guard(call.node, ctx) or ctx.blocked("HVD032", call.node):
            continue
        name = call.callee_dotted() or call.method or "write"
        q = fx.qualname(call)
        if _is_saver(ctx, call) and call.is_whole() and statement(call) is not None:
            if path is not None:
                note_path(ctx, call, path, writes)   # a read of it still waits
            continue           # a TF1 Saver: HVD074 guards it (whether or not the file also uses TF2 names)
        if q in FOLDER_CALLS or (call.method == "mkdir" and not q):
            edits = exist_ok(ctx, call, q)
            if edits is not None:
                if edits:
                    yield finding(ctx, "HVD032", call.node, f"`{name}` fails on every rank but the first",
                                  Fix("Create the folder on every rank, existing or not", edits))
                continue
        if path is not None:
            note_path(ctx, call, path, writes)
        with_stmt = writer_block(call)
        if with_stmt is not None and not _trains(ctx, with_stmt) and not under_rank0_guard(with_stmt, ctx):
            guarded.append(with_stmt)
            yield finding(ctx, "HVD032", call.node, f"every rank writes with `{name}`",
                          Fix(RULES["HVD032"][1], guard_block(ctx, with_stmt)))
            continue
        stmt = statement(call)
        edit = ctx.guard_rank0(stmt) if stmt is call.node else None
        if edit is None:
            note(ctx, call, f"`{name}` writes a file on every rank (not a statement of its own: guard it by hand)")
            continue
        yield finding(ctx, "HVD032", call.node, f"`{name}` writes a file on every rank",
                      Fix(RULES["HVD032"][1], [edit]))
