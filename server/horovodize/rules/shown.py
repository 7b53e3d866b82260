"""Display on rank 0 only (HVD030's display sites): statements that only show something —
``plt.show()``, the ``matplotlib.pyplot`` calls that build the figure (``plt.imshow``,
``plt.subplot``, ``plt.axis``, ...), IPython's ``display(...)`` and ``clear_output(...)`` — and
``for`` loops whose body only shows and prints (an ``imshow``/``show`` loop over test images).
Every rank would open a window, or fill a notebook with N copies; Horovod's users show
once, from rank 0.

Where the display sits inside a function (tensorflow/docs' ``generate_and_save_images``),
the statements of the body are guarded, not the call site: the call site often sits in the
training loop and the function may compute too; the body's display-only statements are
guarded where they are, grouped with the prints and writes beside them into one
``if hvd.rank() == 0:`` by `rank0_guards`.

A statement is display-only when it is a call statement (not an assignment: a name it bound
would be missing on the other ranks) and no call in it writes or runs a collective
(``facts.effects``). Inside a display loop, an assignment whose names nothing reads after the
loop (``ax = plt.subplot(...)``, an augmented image to show) belongs to the display too. A
display of a file rank 0 wrote is `written.display_guards`'s.

Requires: rules.base, analysis.effects (through ``facts.effects``). Provides:
`display_sites` -> (line, call, code, message, edits, title) items for `rank0_guards`.
"""

from __future__ import annotations

from ..analysis.effects import COLLECTIVE, DISPLAY, WRITE
from ..parse import nodes as N
from ..parse.imports import import_bindings
from .base import RuleContext, under_rank0_guard
from .pipelines import pipeline
from .written import in_writing_callback

PYPLOT = "matplotlib.pyplot."
# pyplot calls that write or read a file rather than only drawing: HVD032/HVD033's
NOT_DRAWING = ("savefig", "imsave", "imread", "close")
TITLE = "Display on rank 0 only"


def display_sites(ctx: RuleContext, statement, guard_block) -> tuple[list, list]:
    """Display-only statements, loops and function bodies to guard on rank 0, each as
    ``(line, call, "HVD030", message, [edits], title)``, and the regions they guard (a loop,
    a function's body) for the other guards to leave alone; `statement` and `guard_block` are
    rank0_guards' (the small statement a call is the whole of; the edits of a block guard)."""
    fx = ctx.facts.effects
    out: list = []
    taken: list = []
    roots = _display_roots(ctx)
    if not roots:
        return out, taken   # (no matplotlib or IPython import: nothing displays; keystroke cost)
    for fn, first, last, call in _display_functions(ctx, roots):
        taken.append(first.parent)
        why = f"`{fn.name.value}` only shows, prints or saves output (`{call.callee_dotted()}`), on every rank"
        out.append((first, call, "HVD030", why, guard_block(ctx, first, last), TITLE))
    for call, _owner in ctx.env.index.calls:
        if (call.callee_dotted() or "").partition(".")[0] not in roots:
            continue
        stmt = statement(call)
        if stmt is not call.node or not _shows(ctx, call) or any(N.inside(call.node, t) for t in taken):
            continue
        if fx.shown_paths(call) or under_rank0_guard(call.node, ctx) or ctx.blocked("HVD030", call.node) \
                or in_writing_callback(ctx, call):
            continue         # (a file rank 0 wrote: display_guards; a rank-0 callback: guarded already)
        loop = _display_loop(ctx, call.node, statement)
        if loop is not None:
            if under_rank0_guard(loop, ctx):
                continue
            taken.append(loop)
            out.append((loop, call, "HVD030", f"the loop only shows (`{call.callee_dotted()}`), on every rank",
                        guard_block(ctx, loop), TITLE))
            continue
        if not _only_shows(ctx, call.node) or not N.alone_on_line(call.node):
            continue
        edit = ctx.guard_rank0(call.node)
        if edit is None:
            continue
        verb = "shows" if ctx.facts.effects.kind(call) == DISPLAY else "draws a figure"
        out.append((N.simple_stmt_of(call.node) or call.node, call, "HVD030",
                    f"`{call.callee_dotted()}` {verb} on every rank", [edit], TITLE))
    return out, taken


def _display_functions(ctx: RuleContext, roots: set):
    """(funcdef, first, last, display call) of each function (not a method) whose body only
    shows, prints, computes locally and writes files (keras-io's ``plot_latent_space``,
    tensorflow/docs' ``generate_and_save_images``): its whole body (after the docstring) goes
    under one guard. Not when it returns or yields a value, declares a global, defines a
    function, runs a collective, already tests the rank, iterates a tf.data dataset (a peek
    at a batch: `_iterates_dataset`), or a print in it must run everywhere (HVD-R4)."""
    fx = ctx.facts.effects
    for fn in ctx.env.index.funcdefs:
        if ctx.env.is_method(fn) or under_rank0_guard(fn, ctx) or ctx.blocked("HVD030", fn):
            continue
        body = fn.children[-1]
        if body.type != "suite":
            continue
        stmts = [c for c in body.children if c.type not in ("newline", "indent", "dedent")]
        if stmts and stmts[0].type == "simple_stmt" and stmts[0].children[0].type == "string":
            stmts = stmts[1:]      # the docstring stays the docstring
        if not stmts:
            continue
        shown = None
        ok = True
        for node in N.walk(body):
            t = node.type
            if t in ("funcdef", "classdef", "lambdef", "global_stmt", "nonlocal_stmt", "yield_expr") or \
                    (t == "return_stmt" and len(node.children) > 1) or \
                    (t == "if_stmt" and "rank()" in node.children[1].get_code(include_prefix=False)) or \
                    (t == "for_stmt" and _iterates_dataset(ctx, node)):
                ok = False
                break
        if not ok:
            continue
        for call in N.calls_in(body):
            if COLLECTIVE in fx.of_call(call) or ctx.blocked("HVD030", call.node):
                ok = False
                break
            if shown is None and (call.callee_dotted() or "").partition(".")[0] in roots and _shows(ctx, call) \
                    and not fx.shown_paths(call):
                shown = call
        if ok and shown is not None:
            yield fn, stmts[0], stmts[-1], shown


def _display_roots(ctx: RuleContext) -> set:
    """The local names bound to matplotlib or IPython (the roots of a display call), and the
    bare ``display``/``clear_output`` a notebook has without an import."""
    roots = {local for node in ctx.env.imports for local, full in import_bindings(node)
             if full.split(".")[0] in ("matplotlib", "IPython")}
    return roots | {"display", "clear_output"} - set(ctx.env.functions) if roots or _bare(ctx) else roots


def _bare(ctx: RuleContext) -> bool:
    return bool(ctx.calls("display") or ctx.calls("clear_output"))


def _shows(ctx: RuleContext, call: N.Call) -> bool:
    """A display call: the effects' DISPLAY kind, or pyplot drawing a figure."""
    fx = ctx.facts.effects
    if fx.kind(call) == DISPLAY:
        return True
    q = fx.qualname(call)
    return q.startswith(PYPLOT) and q[len(PYPLOT):].split(".")[0] not in NOT_DRAWING


def _only_shows(ctx: RuleContext, node) -> bool:
    """No call in `node` writes or runs a collective (computing a prediction to show is fine)."""
    fx = ctx.facts.effects
    return not any(fx.of_call(c) & {WRITE, COLLECTIVE} for c in N.calls_in(node))


def _display_loop(ctx: RuleContext, node, statement):
    """The outermost ``for`` around `node` (in its function) whose body only shows and prints,
    or None."""
    found = None
    cur = N.enclosing(node, {"for_stmt", "funcdef", "classdef"})
    while cur is not None and cur.type == "for_stmt":
        if not _loop_only_shows(ctx, cur, statement):
            break
        found = cur
        cur = N.enclosing(cur, {"for_stmt", "funcdef", "classdef"})
    return found


def _loop_only_shows(ctx: RuleContext, loop, statement) -> bool:
    if len(loop.children) > 6 or not _only_shows(ctx, loop.children[3]):   # (a for ... else)
        return False
    if _iterates_dataset(ctx, loop):
        return False
    body = loop.children[-1]
    stmts = [s for s in body.children if s.type not in ("newline", "indent", "dedent")] \
        if body.type == "suite" else [body]
    for s in stmts:
        if s.type == "for_stmt":
            if not _loop_only_shows(ctx, s, statement):
                return False
            continue
        if s.type != "simple_stmt":
            return False
        for small in s.children:
            if small.type == "newline" or (small.type == "operator" and small.value == ";"):
                continue
            if _local_assignment(ctx, small, loop):
                continue
            call = ctx.env.as_call(small)
            if call is None or statement(call) is not call.node:
                return False
            if not (_shows(ctx, call) or (call.callee_dotted() == "print" and "print" not in ctx.env.functions)):
                return False
            if not _only_shows(ctx, small):
                return False
    return True


def _iterates_dataset(ctx: RuleContext, loop) -> bool:
    """``for images, labels in train_ds.take(1):`` iterates a tf.data dataset: each iteration
    draws its shuffle's next order, so on rank 0 alone it would put rank 0's epochs out of step
    with the others' (shards of one order overlap): the loop runs on every rank, in a display
    loop or a display function (only what it shows is guarded)."""
    found = pipeline(ctx, loop.children[3], loop)
    return found is not None and found.source is not None


def _local_assignment(ctx: RuleContext, small, loop) -> bool:
    """``ax = plt.subplot(...)`` / ``augmented = augment(image)`` in a display loop: names only
    that loop uses (none read after it in its scope, so the other ranks miss nothing), bound
    by a call-free or effect-free value (no write, no collective)."""
    if small.type != "expr_stmt" or len(small.children) != 3 or small.children[1].type != "operator" \
            or small.children[1].value != "=" or not _only_shows(ctx, small.children[2]):
        return False
    target = small.children[0]
    names = {target.value} if target.type == "name" else \
        {c.value for c in target.children if c.type == "name"} if target.type in ("testlist_star_expr", "exprlist") \
        and all(c.type == "name" or c.type == "operator" and c.value == "," for c in target.children) else None
    if not names:
        return False
    scope = N.enclosing(loop, {"funcdef", "classdef"}) or ctx.source.module
    end = loop.end_pos
    return not any(leaf.start_pos > end and (scope is ctx.source.module or N.inside(leaf, scope))
                   and not _bound_here(leaf) for name in names for leaf in ctx.env.index.names.get(name, ()))


def _bound_here(leaf) -> bool:
    """`leaf` is the target of a plain ``name = ...`` (bound again, not read)."""
    stmt = leaf.parent
    return stmt is not None and stmt.type == "expr_stmt" and stmt.children[0] is leaf and \
        stmt.children[1].type == "operator" and stmt.children[1].value == "="
