"""Horovod-misuse diagnostics (HVD200-HVD208): warnings on code that already uses Horovod.

Each looks at the Horovod facts (`hvd_facts`) and reports only what it can tell for sure;
a quick fix is attached where the repair is mechanical (and ``convert`` applies it):
HVD200 adds the missing ``hvd.init()``, HVD201 drops the second ``* hvd.size()``, HVD202
moves the tape's wrap above its ``gradient()``, HVD203 materialises the ``zip``, HVD204 gives
a steering callback to every rank. The other repairs are the conversion rules' own (HVD021/HVD050
broadcast, HVD011/HVD020 averaging, HVD04x division), which run on the same program.

Requires: env (bindings, index), loop (training sites), hvd_facts.
"""

from __future__ import annotations

from typing import Iterator

from ..analysis.hvd_facts import NEEDS_INIT, RANK_APIS, SIZE_APIS, is_main_guard
from ..analysis.hvd_reach import reach
from ..parse import nodes as N
from ..parse.source import Edit
from .base import SEVERITY_RESTRICTION, Finding, Fix, RuleContext

RULES = {
    "HVD200": ("call-before-init", "A Horovod call can run before hvd.init()"),
    "HVD201": ("lr-scaled-twice", "Learning rate scaled by hvd.size() more than once"),
    "HVD202": ("tape-wrapped-too-late", "DistributedGradientTape wraps a tape after its gradient() was taken"),
    "HVD203": ("zip-iterated-twice", "A zip of gradients and variables is iterated twice"),
    "HVD204": ("steering-callback-rank0", "A callback that steers training runs on rank 0 only"),
    "HVD205": ("no-initial-broadcast", "Distributed training without an initial broadcast"),
    "HVD206": ("gradients-not-averaged", "Horovod set up but gradients never averaged"),
    "HVD207": ("work-not-divided", "Every rank runs the whole dataset"),
    "HVD208": ("unequal-steps", "Ranks can run different numbers of collective steps"),
}
WARNINGS = tuple(RULES)
ALL_APIS = SIZE_APIS | RANK_APIS


def _warn(ctx: RuleContext, code: str, node, message: str, fix: Fix | None = None) -> Finding:
    start, end = ctx.source.span(node)
    return Finding(code, start, end, message, SEVERITY_RESTRICTION, fix)


def check(ctx: RuleContext) -> Iterator[Finding]:
    facts = ctx.facts
    if not facts.uses_horovod:
        return
    for rule in (_hvd200, _hvd201, _hvd202, _hvd203, _hvd204, _hvd205, _hvd206, _hvd207, _hvd208):
        yield from rule(ctx)


# -- HVD200 ----------------------------------------------------------------------------
def _hvd200(ctx: RuleContext) -> Iterator[Finding]:
    facts = ctx.facts
    needing = facts.calls(*NEEDS_INIT)
    if not facts.init_calls:
        if not needing and not facts.averages_gradients:
            return
        if _library_module(ctx, needing + facts.calls(*sorted(facts.api_calls))):
            return      # classes/functions run by an entry point elsewhere, which calls init
        first = (needing or facts.calls("DistributedOptimizer", "DistributedGradientTape"))[0]
        fix = None
        top = [i for i in facts.imports if N.func_scope_of(i).type == "file_input"]
        anchor = top[-1] if top and facts.module_name else None
        if anchor is not None:
            edit = ctx.insert_after_stmt(N.statement_of(anchor), f"{ctx.hvd}.init()", indent="")
            fix = Fix(f"Call {ctx.hvd}.init() after the Horovod import", [edit], needs_setup=False)
        yield _warn(ctx, "HVD200", first.node, "Horovod is used but `hvd.init()` is never called", fix)
        return
    for call in needing:
        if facts.before_init(call.node):
            yield _warn(ctx, "HVD200", call.node,
                        f"`{call.callee_dotted()}()` can run before `hvd.init()` (it raises: Horovod is not initialised)")


def _library_module(ctx: RuleContext, calls) -> bool:
    """Every Horovod call is inside a function or class, and nothing at module level runs one
    of them (no ``__main__`` guard, no module-level call of a local function or class): a
    module of a package (a Learner class, a trainer mixin) whose entry point is elsewhere."""
    if any(N.enclosing(c.node, {"funcdef", "lambdef", "classdef"}) is None for c in calls):
        return False
    for n in ctx.source.module.children:
        if n.type == "if_stmt" and is_main_guard(n):
            return False
    for call, _owner in ctx.env.index.calls:
        if N.enclosing(call.node, {"funcdef", "lambdef", "classdef"}) is None and ctx.env.call_target(call) is not None:
            return False
    for n in ctx.source.module.children:
        if n.type == "classdef" or n.type == "funcdef":
            continue
        for leaf in N.walk(n):
            if leaf.type == "name" and any(leaf.value == getattr(d.name, "value", None)
                                           for d in ctx.source.module.children if d.type in ("classdef", "funcdef")):
                return False    # a local class or function used at module level
    return True


# -- HVD201 ----------------------------------------------------------------------------
def _lr_args(ctx: RuleContext):
    """Learning-rate arguments of optimizer and schedule constructors."""
    for b in ctx.env.bindings:
        if b.role not in ("optimizer", "lr_schedule"):
            continue
        call = N.as_call(b.value)
        if call is None:
            continue
        arg = call.keyword("learning_rate") or call.keyword("lr") or call.keyword("initial_learning_rate") \
            or call.positional(0)
        if arg is not None:
            yield arg.value


def _hvd201(ctx: RuleContext) -> Iterator[Finding]:
    facts = ctx.facts
    for value in _lr_args(ctx):
        n = facts.size_factor(value)
        if n < 2:
            continue
        fix = None
        if value.type == "term" and len(value.children) >= 3 and value.children[-2] == "*" \
                and facts.api_of_node(value.children[-1]) in SIZE_APIS:
            start = ctx.source.offset(value.children[0].start_pos)
            end = ctx.source.offset(value.children[-3].end_pos)
            vstart, vend = ctx.source.span(value)
            fix = Fix("Scale by hvd.size() once", [Edit(vstart, vend, ctx.source.text[start:end])])
        yield _warn(ctx, "HVD201", value,
                    f"learning rate is multiplied by `hvd.size()` {n} times along its dataflow: "
                    "N ranks train with an N-times too large rate", fix)


# -- HVD202 ----------------------------------------------------------------------------
def _hvd202(ctx: RuleContext) -> Iterator[Finding]:
    facts = ctx.facts
    for call in facts.calls("DistributedGradientTape"):
        arg = call.positional(0) or call.keyword("gradtape")
        name = N.dotted(arg.value) if arg is not None else None
        if not name:
            continue
        scope = N.func_scope_of(call.node)
        grads = [c for c in ctx.calls("gradient", scope) if c.receiver_dotted() == name]
        before = [c for c in grads if c.node.start_pos < call.node.start_pos]
        after = [c for c in grads if c.node.start_pos > call.node.end_pos]
        if before and not after:
            yield _warn(ctx, "HVD202", call.node,
                        f"`{name}` is wrapped after its `gradient()` was taken (line {before[-1].node.start_pos[0]}): "
                        "those gradients are not averaged; wrap the tape before `gradient()`",
                        _move_wrap_fix(ctx, call, name, before[0]))


def _move_wrap_fix(ctx: RuleContext, wrap: N.Call, name: str, first_gradient: N.Call) -> Fix | None:
    """Move ``tape = hvd.DistributedGradientTape(tape)`` up to the line before the statement
    taking the first gradient, when both are statements of the same block, the wrap rebinds
    the tape's own name and is alone on its lines (else the repair is not mechanical)."""
    stmt = N.statement_of(wrap.node)
    parts = N.assign_parts(stmt) if stmt is not None and stmt.type == "expr_stmt" else None
    if parts is None or len(parts[0]) != 1 or N.dotted(parts[0][0]) != name or parts[1] is not wrap.node:
        return None
    simple, target = stmt.parent, N.statement_of(first_gradient.node)
    if simple.type != "simple_stmt" or len(simple.children) != 2 or target is None:
        return None
    target = target.parent if target.parent.type == "simple_stmt" else target
    if target.parent is not simple.parent:
        return None
    text, src = ctx.source.text, ctx.source
    start = src.line_start(src.offset(simple.start_pos))
    end = src.line_end(src.offset(simple.get_last_leaf().start_pos))
    if text[start:src.offset(stmt.start_pos)].strip() or src.offset(simple.start_pos) != src.offset(stmt.start_pos):
        return None
    line = text[src.offset(stmt.start_pos):src.offset(simple.get_last_leaf().start_pos)].rstrip()  # its comment too
    if "\n" in line or "\r" in line:
        return None                         # a wrap over several lines: not moved mechanically
    return Fix(f"Wrap `{name}` before its gradient() is taken",
               [ctx.insert_before_stmt(target, line), Edit(start, end, "")], needs_setup=False)


# -- HVD203 ----------------------------------------------------------------------------
def _hvd203(ctx: RuleContext) -> Iterator[Finding]:
    for call in ctx.env.index.by_method.get("zip", ()):       # (``name = zip(...)``, in source order)
        stmt = call.node.parent
        if stmt is not None and stmt.type == "annassign":
            stmt = stmt.parent
        if stmt is None or stmt.type != "expr_stmt" or call.callee_dotted() != "zip" or not call.is_whole():
            continue
        parts = N.assign_parts(stmt)
        if parts is None or parts[1] is not call.node or len(parts[0]) != 1 or parts[0][0].type != "name":
            continue
        name = parts[0][0].value
        scope = N.func_scope_of(stmt)
        uses = [leaf for leaf in ctx.env.index.names.get(name, ())
                if leaf.start_pos > stmt.end_pos and N.func_scope_of(leaf) is scope and _is_read(leaf)]
        rebinds = [s for s, _o in ctx.env.index.assignments if s is not stmt and s.start_pos > stmt.start_pos
                   and N.func_scope_of(s) is scope and any(N.dotted(t) == name for t in (N.assign_parts(s) or ([],))[0])]
        if rebinds:
            uses = [u for u in uses if u.start_pos < rebinds[0].start_pos]
        if len(uses) < 2 or not _about_gradients(ctx, uses):
            continue
        start, end = ctx.source.span(call.node)
        fix = Fix("Materialise the zip with list(...)", [Edit(start, start, "list("), Edit(end, end, ")")])
        yield _warn(ctx, "HVD203", call.node,
                    f"`{name}` is a zip iterator used {len(uses)} times: the second use sees nothing "
                    "(an empty broadcast, or no gradients applied)", fix)


def _is_read(leaf) -> bool:
    parent = leaf.parent
    attribute = parent.type == "trailer" and parent.children[0] == "."
    return not (attribute or (parent.type == "argument" and parent.children[0] is leaf and len(parent.children) > 1
                              and parent.children[1] == "="))


def _about_gradients(ctx: RuleContext, uses) -> bool:
    """One of the uses is given to apply_gradients or a Horovod call."""
    for leaf in uses:
        call = N.call_with_argument(leaf)
        cur = leaf
        while call is None and cur.parent is not None and cur.parent.type not in ("simple_stmt", "suite"):
            cur = cur.parent
            call = N.call_with_argument(cur)
        if call is not None and (call.method == "apply_gradients" or ctx.facts.api(call) is not None):
            return True
    return False


# -- HVD204 ----------------------------------------------------------------------------
def _fit_calls(ctx: RuleContext):
    from .keras_fit import fit_calls
    return list(fit_calls(ctx))


def _hvd204(ctx: RuleContext) -> Iterator[Finding]:
    seen, found = set(), []
    for call in _fit_calls(ctx):
        arg = call.keyword("callbacks") or call.positional(5)
        if arg is None:
            continue
        for entry in ctx.facts.callback_list(arg.value, call.node).entries:
            if entry.kind == "steering" and entry.guarded and id(entry.node) not in seen:
                seen.add(id(entry.node))
                found.append(entry)
    moving = {id(e.stmt) for e in found if e.stmt is not None}
    for entry in found:
        name = (N.as_call(entry.node).callee_dotted() if N.as_call(entry.node) else None) or "callback"
        yield _warn(ctx, "HVD204", entry.node,
                    f"`{name.rsplit('.', 1)[-1]}` steers training but runs on rank 0 only: the other ranks "
                    "keep training (and wait in allreduce forever when rank 0 stops); give it to every rank",
                    _unguard_fix(ctx, entry.stmt, moving))


def _unguard_fix(ctx: RuleContext, stmt, moving: set) -> Fix | None:
    """Move ``callbacks.append(<steering>)`` from the body of ``if hvd.rank() == 0:`` to just
    above that ``if`` (a guard left empty goes). Only for a statement alone on its lines,
    directly in the ``if`` branch of a rank test that is itself on every rank; a rank ternary
    or an early return is not a mechanical move."""
    if stmt is None or stmt.parent is None or stmt.parent.type != "simple_stmt":
        return None
    simple = stmt.parent
    if len(simple.children) != 2:
        return None
    facts, src = ctx.facts, ctx.source
    block = simple.parent
    guard = block.parent if block.type == "suite" else block
    if block.type == "if_stmt":
        block = simple                      # `if hvd.rank() == 0: callbacks.append(...)` on one line
    if guard is None or guard.type != "if_stmt" or guard.children[3] is not block and guard.children[3] is not simple:
        return None
    if not facts.is_rank_test(guard.children[1]) or facts.under_rank_guard(guard):
        return None
    others = [c for c in block.children if c.type not in ("newline", "endmarker")] if block.type == "suite" else []
    if len(others) > 1 and all(id(c.children[0]) in moving for c in others):
        return None                         # every statement leaves: moving one by one would empty the if
    text = src.text
    g_start = src.line_start(src.offset(guard.start_pos))
    indent = src.indent_of(guard)
    if src.offset(guard.start_pos) != g_start + len(indent):
        return None                         # the if shares its line with other code
    title = "Give the callback to every rank"
    s_start = src.line_start(src.offset(stmt.start_pos))
    s_end = src.line_end(src.offset(simple.get_last_leaf().start_pos))
    if block is simple:
        if len(guard.children) != 4:
            return None
        # `if hvd.rank() == 0: callbacks.append(...)`: drop the `if ...: ` before the statement
        return Fix(title, [Edit(g_start + len(indent), src.offset(stmt.start_pos), "")], needs_setup=False)
    deeper = src.indent_of(stmt)
    lines = _lines(text, s_start, s_end)
    if text[s_start:src.offset(stmt.start_pos)].strip() or not deeper.startswith(indent) or \
            any(text[a:b].strip() and not text.startswith(deeper, a) for a, b in lines):
        return None
    if len(guard.children) == 4 and len(others) == 1:
        # the guard holds nothing else: its header line goes and the statement moves out a level
        edits = [Edit(a, b, "") for a, b in _lines(text, g_start, s_start)]
        cut = len(deeper) - len(indent)
        edits += [Edit(a + len(indent), a + len(indent) + cut, "") for a, b in lines if text[a:b].strip()]
        return Fix(title, edits, needs_setup=False)
    if len(others) < 2:
        return None                         # an if/else whose branch would be left empty
    moved = "".join(indent + text[a + len(deeper):b] if text[a:b].strip() else text[a:b] for a, b in lines)
    if not moved.endswith(("\n", "\r")):
        moved += src.newline
    return Fix(title, [Edit(g_start, g_start, moved)] + [Edit(a, b, "") for a, b in lines], needs_setup=False)


def _lines(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """(start, end) of each line between two line starts, line breaks included: whole-line
    edits one line at a time (minimal, and CRLF kept)."""
    out = []
    pos = start
    while pos < end:
        nl = min([i for i in (text.find("\r\n", pos), text.find("\n", pos), text.find("\r", pos)) if i >= 0] or [len(text)])
        stop = nl + (2 if text.startswith("\r\n", nl) else 1) if nl < len(text) else nl
        out.append((pos, min(stop, end)))
        pos = stop
    return out


# -- HVD205 / HVD206 ---------------------------------------------------------------------
def _trains(ctx: RuleContext) -> list:
    """Nodes where the program trains: fit calls, apply_gradients, Estimator train."""
    out = [c.node for c in _fit_calls(ctx)]
    out += [c.node for c in ctx.calls("apply_gradients")]
    out += [c.node for c in ctx.calls("minimize") if c.method == "minimize"]
    return sorted(out, key=lambda n: n.start_pos)


def _hvd205(ctx: RuleContext) -> Iterator[Finding]:
    facts = ctx.facts
    averaging = facts.calls("DistributedOptimizer", "DistributedGradientTape")
    if not averaging:
        return
    if facts.broadcasts or ctx.calls("BroadcastGlobalVariablesHook"):
        yield from _broadcast_on_rank0_only(ctx)
        return
    for call in _fit_calls(ctx):
        arg = call.keyword("callbacks") or call.positional(5)
        if arg is not None and not facts.callback_list(arg.value, call.node).complete:
            return      # callbacks built elsewhere (an imported helper): the broadcast may be there
    yield _warn(ctx, "HVD205", averaging[0].node,
                "gradients are averaged but the initial state is never broadcast from rank 0: ranks start "
                "from different weights and stay apart")


def _broadcast_on_rank0_only(ctx: RuleContext) -> Iterator[Finding]:
    """The only broadcast is a callback given to rank 0 alone (``callbacks=[Broadcast...]
    if hvd.rank() == 0 else None``, seen in users' code): the other ranks never join it."""
    facts = ctx.facts
    entries = []
    for call in _fit_calls(ctx):
        arg = call.keyword("callbacks") or call.positional(5)
        if arg is not None:
            entries += [e for e in facts.callback_list(arg.value, call.node).entries if e.kind == "broadcast"]
    guarded = [e for e in entries if e.guarded]
    if not guarded or len(guarded) < len(entries):
        return
    nodes = {id(e.node) for e in entries}
    if any(id(c.node) not in nodes for c in facts.broadcasts):
        return          # another broadcast (or the callback bound to a name): not for sure
    yield _warn(ctx, "HVD205", guarded[0].node,
                "the broadcast callback is given to rank 0 only: the other ranks never join the broadcast "
                "(rank 0 waits for them) and start from their own weights; give it to every rank")


def _hvd206(ctx: RuleContext) -> Iterator[Finding]:
    facts = ctx.facts
    if not facts.init_calls or facts.averages_gradients:
        return
    trains = _trains(ctx)
    if not trains or _optimizer_from_elsewhere(ctx):
        return
    yield _warn(ctx, "HVD206", facts.init_calls[0].node,
                "Horovod is initialised but no gradient is averaged (no DistributedOptimizer, "
                "DistributedGradientTape or allreduce): every rank trains its own model")


def _optimizer_from_elsewhere(ctx: RuleContext) -> bool:
    """The optimizer the program trains with is built outside this file (``opt =
    make_optimizer(...)`` imported from the project, a parameter): it may well be a
    ``DistributedOptimizer`` there, so HVD206 cannot tell for sure."""
    values = []
    for call, _owner in ctx.env.index.calls:
        if call.method == "compile":
            arg = call.keyword("optimizer") or call.positional(0)
            if arg is not None:
                values.append(arg.value)
        elif call.method in ("apply_gradients", "minimize") and call.receiver_parts:
            values.append(call.receiver_parts[-1] if len(call.receiver_parts) == 1 else call.node)
    return any(_opaque(ctx, v, 0) for v in values)


def _opaque(ctx: RuleContext, node, depth: int) -> bool:
    if depth > 5:
        return True
    if node.type == "name":
        assigns = ctx.facts.assignments(node.value, node)
        if not assigns:
            return node.value not in ctx.env.aliases      # a global of unknown origin
        return any(stmt is None or v is None or _opaque(ctx, v, depth + 1) for stmt, v, _op in assigns)
    call = N.as_call(node)
    if call is None or call.method in ("apply_gradients", "minimize"):
        return False
    if ctx.env.call_target(call) is not None:
        return False                                  # built in this file: its averaging would be seen
    q = ctx.env.callee_qualname(call) or ""
    return not q.startswith(("tensorflow", "keras", "horovod")) and call.callee_dotted() is not None


# -- HVD207 / HVD208 ---------------------------------------------------------------------
def _divides(ctx: RuleContext) -> bool:
    """Something already gives each rank its share: a size()/rank()-dependent value in a data
    or step position (shard, take, steps, epochs, a per-rank file or slice, a range bound)."""
    facts = ctx.facts
    if _divides_directly(ctx):
        return True           # (what the walk below finds first when the code was converted)
    asked: set = set()          # ancestors already walked (and so every ancestor of theirs)
    for node in reach(facts, ALL_APIS):       # (only these nodes can carry such a value)
        cur = node.parent
        while cur is not None and id(cur) not in asked:
            asked.add(id(cur))
            if cur.type == "subscript":
                if facts.flows_from(cur, ALL_APIS):
                    return True
            else:
                call = N.trailer_call(cur)
                if call is not None and _may_divide(ctx, call) and any(
                        arg.keyword not in _NOT_WORK and not _an_object(ctx, arg.value)
                        and facts.flows_from(arg.value, ALL_APIS) for arg in call.args):
                    return True
            cur = cur.parent
    return False


_OBJECTS = ("optimizer", "lr_schedule", "model", "checkpoint", "tape", "estimator")
_WRAPPERS = ("DistributedOptimizer", "DistributedGradientTape", "PartialDistributedOptimizer", "PartialDistributedGradientTape")


def _an_object(ctx: RuleContext, value) -> bool:
    """`value` reads a model, optimizer, checkpoint... (``opt``, ``opt.variables``): built
    with a size()-scaled learning rate, it still counts no work (``callable(opt.variables)``
    in a broadcast, ``tf.train.Checkpoint(opt=opt)`` would otherwise hide HVD207)."""
    first = value.children[0] if value.type in ("atom_expr", "power") else value
    if first.type != "name":
        return False
    b = ctx.env.lookup(first.value, value)
    if b is None:
        return False
    if b.role in _OBJECTS:
        return True
    made = N.as_call(b.value) if b.value is not None else None     # ``hvd.DistributedOptimizer(...)``
    return made is not None and (ctx.facts.api(made) in _WRAPPERS
                                 or (ctx.env.role_of_call(made) or ("",))[0] in _OBJECTS)


_NOT_WORK = ("learning_rate", "lr", "initial_lr", "verbose", "root_rank", "optimizer", "callbacks")


def _may_divide(ctx: RuleContext, call: N.Call) -> bool:
    """A call whose arguments can divide work (not a Horovod call, an optimizer, a print...)."""
    if ctx.facts.api(call) is not None:
        return False
    if (ctx.env.role_of_call(call) or ("",))[0] in ("optimizer", "lr_schedule"):
        return False
    method = call.method or call.callee_dotted() or ""
    return method not in ("set_visible_devices", "print", "str", "format", "Variable", "assign", "set_value", "compile")


def _divides_directly(ctx: RuleContext) -> bool:
    """A size()/rank() call written inside a subscript or an argument that `_divides`
    counts (``ds.shard(hvd.size(), hvd.rank())``): the same answer without following any
    dataflow through the file."""
    for api in ALL_APIS:
        for found in ctx.facts.api_calls.get(api, ()):
            if not found.is_whole():
                continue          # (``hvd.size().numpy()``: the dataflow walk decides)
            cur = found.node
            while cur.parent is not None and cur.type not in ("simple_stmt", "suite", "file_input"):
                parent = cur.parent
                if parent.type == "subscript":
                    return True
                call = N.trailer_call(parent)
                if call is not None and _may_divide(ctx, call):
                    for arg in call.args:
                        if arg.keyword not in _NOT_WORK and \
                                arg.node.start_pos <= found.node.start_pos and found.node.end_pos <= arg.node.end_pos:
                            return True
                cur = parent
    return False


def _hvd207(ctx: RuleContext) -> Iterator[Finding]:
    facts = ctx.facts
    if not facts.averages_gradients or facts.elastic:
        return
    data = [b for b in ctx.env.with_role() if b.role == "dataset"]
    fits = [c for c in _fit_calls(ctx) if c.positional(0) is not None or c.keyword("x") is not None]
    if not (data or fits) or _divides(ctx):
        return
    sources = [b.value for b in data] + [(c.positional(0) or c.keyword("x")).value for c in fits]
    if all(_synthetic(ctx, v) for v in sources):
        return          # random tensors (a synthetic benchmark): each rank's own batches are the point
    if any(_from_elsewhere(ctx, v) for v in sources):
        return          # built by an imported project loader, which may divide it
    node = fits[0].node if fits else data[0].value
    yield _warn(ctx, "HVD207", node,
                "every rank trains on the whole dataset for the whole number of steps: N ranks do N times "
                "the work; shard the data by rank or divide the steps by hvd.size()")


SYNTHETIC = ("tensorflow.random.", "numpy.random.", "tensorflow.keras.backend.random_")
REAL_DATA = ("load", "load_data", "list_files", "TFRecordDataset", "TextLineDataset", "from_generator",
             "flow_from_directory", "image_dataset_from_directory", "read_csv", "open", "listdir")


def _synthetic(ctx: RuleContext, node) -> bool:
    """Random tensors (``tf.random.uniform``, ``np.random.rand``) flow into `node` and nothing
    that reads files or a dataset does: Horovod's synthetic benchmarks."""
    kinds = set()
    _data_kinds(ctx, node, kinds, 0, set())
    return kinds == {"synthetic"}


LIBRARIES = ("tensorflow", "keras", "numpy", "horovod", "tensorflow_datasets", "os", "sys", "math", "pandas", "PIL")


def _imported_from_project(ctx: RuleContext, call: N.Call) -> bool:
    """`call` reaches a function imported from a module that is not a known library
    (``from myproject.data import make_dataset``)."""
    root = call.node.children[0]
    if root.type != "name":
        return False
    imported = ctx.__dict__.get("_hvd_imported")
    if imported is None:
        from ..parse.imports import import_bindings
        imported = {}
        for node in ctx.env.imports:
            if node.type == "import_from":
                for local, full in import_bindings(node):
                    imported[local] = full
        ctx.__dict__["_hvd_imported"] = imported
    full = imported.get(root.value)
    return full is not None and not full.split(".")[0] in LIBRARIES


def _from_elsewhere(ctx: RuleContext, node) -> bool:
    kinds = set()
    _data_kinds(ctx, node, kinds, 0, set())
    return "elsewhere" in kinds


def _data_kinds(ctx: RuleContext, node, kinds: set, depth: int, seen: set) -> None:
    for n in N.walk(node):
        call = N.as_call(n) if n.type in ("atom_expr", "power") else None
        if call is not None:
            q = ctx.env.callee_qualname(call) or ""
            last = (call.method or call.callee_dotted() or "").rsplit(".", 1)[-1]
            if last in REAL_DATA or q.startswith("tensorflow_datasets."):
                kinds.add("real")
            elif q.startswith(SYNTHETIC):
                kinds.add("synthetic")
            elif _imported_from_project(ctx, call):
                kinds.add("elsewhere")      # the project's own loader: it may shard inside
        elif n.type == "name" and _is_read(n) and depth < 6:
            key = (n.value, id(N.func_scope_of(n)))
            if key in seen:
                continue
            seen.add(key)
            assigns = ctx.facts.assignments(n.value, n)
            if any(stmt is None for stmt, _v, _op in assigns):
                kinds.add("unknown")        # a parameter: its data comes from the caller
            for _stmt, v, _op in assigns:
                if v is not None:
                    _data_kinds(ctx, v, kinds, depth + 1, seen)


def _hvd208(ctx: RuleContext) -> Iterator[Finding]:
    facts = ctx.facts
    shards = [c for c in ctx.calls("shard") if c.method == "shard" and any(
        facts.flows_from(a.value, ALL_APIS) for a in c.args)]
    if not shards or facts.calls("join"):
        return
    if ctx.calls("repeat") or ctx.calls("take"):
        return          # an equal bound: every rank takes (or repeats to) the same count
    for call in _fit_calls(ctx):
        if call.keyword("steps_per_epoch") is not None:
            return
    yield _warn(ctx, "HVD208", shards[0].node,
                "the data is sharded by rank but nothing bounds the steps: shards that differ by one batch "
                "make one rank wait in allreduce forever; bound every rank by the same take(n) or steps_per_epoch",
                _equal_take_fix(ctx, shards[0]))


KNOWN_SIZE = ("Dataset.from_tensor_slices", "Dataset.from_tensors", "Dataset.range")
SIZE_LOSING = frozenset({"filter", "from_generator", "interleave", "flat_map", "TFRecordDataset", "list_files",
                         "TextLineDataset", "unbatch", "rejection_resample", "take_while", "load"})


def _equal_take_fix(ctx: RuleContext, shard: N.Call) -> Fix | None:
    """``X.shard(n, i)`` -> ``X.apply(lambda ds: ds.shard(n, i).take(ds.cardinality() // hvd.size()))``:
    every rank takes the same number of elements (the smallest shard's), as HVD041 does. Only
    when tf.data knows the size before the shard (a ``from_tensor_slices``/``range`` source, no
    ``filter`` or generator on the way); otherwise ``cardinality()`` is unknown and no bound is safe."""
    kinds: set = set()
    _pipeline_sources(ctx, shard.receiver_parts, kinds, 0, set())
    if kinds != {"known"} or shard.has_star():
        return None
    trailer_dot = shard.node.children[shard.index - 1]
    start = ctx.source.offset(trailer_dot.start_pos)
    end = ctx.source.offset(shard.trailer.end_pos)
    args = ctx.source.text[ctx.source.offset(shard.trailer.start_pos):end]
    hvd = ctx.hvd
    text = f".apply(lambda ds: ds.shard{args}.take(ds.cardinality() // {hvd}.size()))"
    return Fix("Bound every rank by the same take(n)", [Edit(start, end, text)], needs_setup=False)


def _pipeline_sources(ctx: RuleContext, parts, kinds: set, depth: int, seen: set) -> None:
    for part in parts:
        for n in N.walk(part):
            call = N.as_call(n) if n.type in ("atom_expr", "power") else None
            if call is not None:
                q = ctx.env.callee_qualname(call) or ""
                last = (call.method or call.callee_dotted() or "").rsplit(".", 1)[-1]
                if q.endswith(KNOWN_SIZE):
                    kinds.add("known")
                elif last in SIZE_LOSING:
                    kinds.add("unknown")
            elif n.type == "name" and _is_read(n) and depth < 6 and n is part.get_first_leaf():
                key = (n.value, id(N.func_scope_of(n)))
                if key in seen:
                    continue
                seen.add(key)
                assigns = ctx.facts.assignments(n.value, n)
                if any(stmt is None for stmt, _v, _op in assigns):
                    kinds.add("unknown")        # a parameter: built by the caller
                for stmt, v, _op in assigns:
                    if v is not None and stmt is not None and stmt.start_pos < part.start_pos:
                        _pipeline_sources(ctx, [v], kinds, depth + 1, seen)
