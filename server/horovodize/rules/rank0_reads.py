"""Reads of rank 0's files that can run on rank 0 alone, and branches each host takes from its
own disk (contract point 13). `rank0_uses`: the name bound by ``name = <read>`` that no other
rank needs (its uses are rank 0's, or evaluations that can move there with it: ``new =
load_model(p); new.evaluate(...)``), with those evaluations; `file_dependent`: a statement under
a test of the filesystem (``if os.path.exists(p):``), where a collective would wait forever on
the hosts that skip it, and `shared_test`, the edits that make rank 0's answer to it every
rank's. Requires: base (rank guards, Horovod mentions), the name index.
"""

from __future__ import annotations

from ..parse import nodes as N
from ..parse.source import Edit
from .base import RuleContext, mentions_hvd, under_rank0_guard

# Tests that read the filesystem (a branch taken differently on each host without a shared one).
FILE_TESTS = ("os.path.exists", "os.path.isfile", "os.path.isdir", "os.listdir", "glob.glob", "gfile.exists",
              "latest_checkpoint", "os.scandir")
# Calls that read a file's contents (a test made of one is as host-dependent).
FILE_READS = {"open", "np.load", "numpy.load", "json.load", "pickle.load", "joblib.load", "pd.read_csv"}


# Model methods that compute or show something from the weights and train nothing: a statement
# that only calls these on a model rank 0 read (no ``callbacks=``, where Horovod's collectives
# would be) can move to rank 0 with the read (contract point 13: a read that serves an evaluation).
EVALUATION_METHODS = frozenset({"evaluate", "predict", "predict_on_batch", "predict_classes", "predict_proba",
                                "test_on_batch", "summary", "count_params", "get_config", "to_json"})


def rank0_uses(ctx: RuleContext, stmt, on_rank0: list) -> tuple[str, list] | None:
    """(name, evaluations) of ``name = <read>`` when no rank but 0 needs the value: every later
    use of it runs on rank 0 (in a statement this conversion guards, a print, or under a rank-0
    guard) or is an evaluation that can move there (`_evaluation`), and no function reads it.
    Then the read runs on rank 0, which wrote the file, with the evaluations, each (statement,
    call) in the list (contract point 13: no barrier, no shared filesystem). None otherwise."""
    if N.name_assignment(stmt) is None or not N.alone_on_line(stmt):
        return None
    moved: list = []
    if not _only_rank0_uses(ctx, stmt.children[0], stmt, on_rank0, moved, 0):
        return None
    return stmt.children[0].value, moved


def _only_rank0_uses(ctx: RuleContext, target, stmt, on_rank0: list, moved: list, depth: int) -> bool:
    """Every use of the name `target` binds in `stmt`, up to its next binding in that block, runs
    on rank 0 or is an evaluation added to `moved` (a value it computes in turn used on rank 0
    only, `depth` levels down). A use before `stmt` in a loop around it reads the last pass's value."""
    scope = N.func_scope_of(stmt)
    block = (N.simple_stmt_of(stmt) or stmt).parent
    refs = [ref for ref in ctx.env.index.names.get(target.value, ()) if _variable(ref)]
    if any(N.func_scope_of(ref) is not scope for ref in refs):
        return False      # a function or class that reads it may run later, on every rank
    loop = N.loop_around(stmt)
    for ref in sorted(refs, key=lambda leaf: leaf.start_pos):
        if ref is target or N.inside(ref, stmt) or ref.start_pos < stmt.start_pos and not (
                loop is not None and N.inside(ref, loop)):
            continue
        at = N.statement_of(ref)
        holder = N.simple_stmt_of(at) if at is not None else None
        if ref.start_pos > stmt.start_pos and holder is not None and holder.parent is block and \
                (bound := N.name_assignment(at)) is not None and bound[0] is ref:
            # bound anew in the same block (the next experiment's ``model = ...``): what follows
            # is another value, if the new one is not made from the read one
            if any(leaf.type == "name" and leaf.value == target.value for leaf in N.walk(bound[1])):
                return False
            break
        if any(N.inside(ref, s) for s in on_rank0) or any(N.inside(ref, s) for s, _ in moved) or \
                at is not None and under_rank0_guard(at, ctx):
            continue
        if ref.start_pos < stmt.start_pos or depth > 2 or not _evaluation(ctx, at, target.value, on_rank0, moved, depth):
            return False
    return True


def _variable(leaf) -> bool:
    """A name leaf that is a variable, not an attribute (``m.loss``) or a keyword (``loss=``)."""
    parent = leaf.parent
    if parent.type == "trailer" and parent.children[0] == ".":
        return False
    return not (parent.type == "argument" and parent.children[0] is leaf and len(parent.children) > 2
                and parent.children[1] == "=")


def _evaluation(ctx: RuleContext, at, name: str, on_rank0: list, moved: list, depth: int) -> bool:
    """`at` evaluates the model `name` and nothing else needs it on the other ranks: alone on
    its line, every mention of `name` the receiver of an `EVALUATION_METHODS` call, no call of the
    program's own functions or of Horovod, no ``callbacks=``; an expression, or names bound
    from it that only rank 0 uses in turn. Adds (`at`, its call on `name`) to `moved`."""
    parts = N.assign_parts(at) if at is not None else None
    if at is None or not N.alone_on_line(at) or at.type not in ("atom_expr", "power") and (
            parts is None or len(parts[0]) != 1) or mentions_hvd(at, ctx):
        return False
    uses = []
    for leaf in N.walk(parts[1] if parts else at):
        if leaf.type == "keyword" and leaf.value in ("yield", "await", "lambda"):
            return False
        if leaf.type == "name" and leaf.value == name:
            after = leaf.parent.children[2] if leaf.parent.type in ("atom_expr", "power") and \
                len(leaf.parent.children) > 2 and leaf.parent.children[0] is leaf else None
            call = N.trailer_call(after) if after is not None else None
            if call is None or call.method not in EVALUATION_METHODS:
                return False
            uses.append(call)
    if not uses or any(ctx.env.call_target(c) is not None or c.keyword("callbacks") for c in N.calls_in(at)):
        return False
    trial = [*moved, (at, uses[0])]
    leaves = [leaf for leaf in N.walk(parts[0][0]) if not hasattr(leaf, "children")] if parts else []
    if any(leaf.type != "name" and leaf.value not in ",()[]" for leaf in leaves):
        return False      # (names, unpacked or not: no attribute, item or star target)
    for target in leaves:
        if target.type == "name" and not _only_rank0_uses(ctx, target, at, on_rank0, trial, depth + 1):
            return False
    moved[:] = trial
    return True


def file_dependent(ctx: RuleContext, stmt, shared_by_rank0: set) -> bool:
    """`stmt` runs under a test that reads the filesystem (``if os.path.exists(p):``, ``if
    manager.latest_checkpoint:``, or a name bound from such a read and not broadcast by rank 0):
    without a shared filesystem the hosts take different branches, and a collective put there
    would wait forever on the hosts that skip it."""
    return bool(_file_tests(ctx, stmt, shared_by_rank0))


def _file_tests(ctx: RuleContext, stmt, shared_by_rank0: set) -> list:
    """The ``if``/``while`` statements of `stmt`'s function around it whose test reads files."""
    scope = N.func_scope_of(stmt)
    found = []
    cur = stmt.parent
    while cur is not None and cur is not scope:
        if cur.type in ("if_stmt", "while_stmt") and _reads_files(ctx, cur.children[1], stmt, shared_by_rank0):
            found.append(cur)
        cur = cur.parent
    return found


def _reads_files(ctx: RuleContext, test, before, shared_by_rank0: set, depth: int = 0) -> bool:
    code = test.get_code(include_prefix=False)
    if any(t in code for t in FILE_TESTS) or any(c.callee_dotted() in FILE_READS or c.method in (
            "exists", "is_file", "is_dir", "glob", "iterdir") for c in N.calls_in(test)):
        return True
    if depth > 1:
        return False
    for leaf in N.walk(test):
        if leaf.type != "name":
            continue
        for ref in ctx.env.index.names.get(leaf.value, ()):
            at = N.statement_of(ref)
            if ref.start_pos < before.start_pos and at is not None and at.type == "expr_stmt" and \
                    at.children[0] is ref and id(at) not in shared_by_rank0 and \
                    _reads_files(ctx, at.children[-1], before, shared_by_rank0, depth + 1):
                return True
    return False


def shared_test(ctx: RuleContext, stmt, shared_by_rank0: set, mod: str) -> list | None:
    """The edits that give every rank rank 0's answer to the one test of the filesystem `stmt`
    runs under: ``if <mod>.broadcast_object((<test>) if hvd.rank() == 0 else None, root_rank=0):``
    (a resumed job's ``if os.path.exists(p):``). None when the test is not an ``if``'s only test
    (an ``elif`` chain, a loop's), mentions Horovod, or another test above it reads files too."""
    found = _file_tests(ctx, stmt, shared_by_rank0)
    if len(found) != 1 or found[0].type != "if_stmt" or any(c == "elif" for c in found[0].children) or \
            mentions_hvd(found[0].children[1], ctx):
        return None
    test = found[0].children[1]
    low = test.type in ("test", "lambdef", "namedexpr_test")     # (binds looser than ``x if c else y``)
    start, end = ctx.source.span(test)
    return [Edit(start, start, f"{mod}.broadcast_object({'(' if low else ''}"),
            Edit(end, end, f"{')' if low else ''} if {ctx.hvd}.rank() == 0 else None, root_rank=0)")]
