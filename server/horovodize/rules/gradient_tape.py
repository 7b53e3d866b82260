"""GradientTape rules: average gradients with ``hvd.DistributedGradientTape`` (HVD020) — only
for a tape whose gradients reach an optimizer (`gradflow`) — and broadcast the initial
state from rank 0 once, after the first ``apply_gradients`` (HVD021).

The seeds' broadcast uses a Python ``global`` flag, which ``@tf.function`` reads once at
trace time, and iterates ``zip(...)`` twice. Here the arguments are materialised with
``list(...)`` and the flag is a ``tf.Variable`` per site, defined after the set-up (per
instance or per call where the step can train several models, `_flag_home`):
``if not flag:`` becomes a ``tf.cond`` inside ``@tf.function`` and a plain test eagerly,
and the broadcast runs at each process's first step — also when only rank 0 restored a
checkpoint (the optimizer's step counter would differ across ranks and hang the collective).

Requires: env (tapes, optimizer bindings), loop (flavour), restrictions (R8).
"""

from __future__ import annotations

import re
from typing import Iterator

from ..analysis.callables import callee_name
from ..analysis.keras3 import optimizer_apply_uses
from ..analysis.gradflow import gradient_inside, is_training_tape, optimizer_steps, single_target
from ..analysis.roles import TF1_OPTIMIZERS
from ..parse import nodes as N
from ..parse.scopes import class_bases
from ..parse.source import Edit
from . import keras3_adapters
from .base import Finding, Fix, RuleContext, finding, report_note
from .setup_imports import after_setup, tf_name
from .tapes import in_keras_step, keras_step_tapes, tape_loops_beside_fit, tf_module_alias, wrapped

RULES = {
    "HVD020": ("distributed-gradient-tape", "Wrap the tape in hvd.DistributedGradientTape"),
    "HVD021": ("broadcast-initial-state", "Broadcast model and optimizer variables after the first step"),
}
GRADS = "hvd_grads_and_vars"
FLAG = "hvd_broadcast_done"


def applies(ctx: RuleContext) -> bool:
    return not ctx.summary.hvd_module.endswith("keras")


def check(ctx: RuleContext) -> Iterator[Finding]:
    if not applies(ctx):
        yield from _keras_step_tapes(ctx)
        alias = tf_module_alias(ctx)
        if alias is not None and tape_loops_beside_fit(ctx):   # fit and a tape loop in one program
            yield from _tapes(ctx, alias)
            yield from _apply_gradients(ctx, alias)
        return
    yield from _tapes(ctx, ctx.hvd)
    yield from _apply_gradients(ctx, ctx.hvd)


def _keras_step_tapes(ctx: RuleContext) -> Iterator[Finding]:
    alias = tf_module_alias(ctx)
    if alias is None:
        return
    for tape in keras_step_tapes(ctx):
        if ctx.blocked("HVD020", tape.stmt, tape):
            continue
        edit = _wrap_edit(ctx, tape, alias)
        if edit is not None:
            yield finding(ctx, "HVD020", tape.stmt,
                          f"gradients of tape `{tape.name}` in a Keras train_step are not averaged across ranks "
                          "(DistributedOptimizer averages only in minimize)",
                          Fix(_title(edit), _adapter(ctx, edit) + [edit]))


def _tapes(ctx: RuleContext, hvd: str) -> Iterator[Finding]:
    keras = ctx.summary.hvd_module.endswith("keras")
    for tape in ctx.env.tapes:
        with_stmt = N.enclosing(tape.stmt, {"with_stmt"})
        if with_stmt is None or "." in tape.name or wrapped(ctx, tape, with_stmt):
            continue
        if keras and in_keras_step(ctx, tape.stmt):
            continue   # a train_step's tape: _keras_step_tapes
        if not is_training_tape(ctx.env, tape):
            continue   # a penalty, saliency or printed gradient: no optimizer applies it
        if ctx.blocked("HVD020", tape.stmt, tape):
            continue
        edit = _wrap_edit(ctx, tape, hvd)
        if edit is not None:
            yield finding(ctx, "HVD020", tape.stmt, f"gradients of tape `{tape.name}` are not averaged across ranks",
                          Fix(_title(edit), _adapter(ctx, edit) + [edit]))


ALLREDUCE_TITLE = "Average the gradients with hvd.allreduce where they are taken"


def _title(edit: Edit) -> str:
    """The fix says what it does: wrap the tape, or (gradients taken inside the ``with``
    block) average the gradients right after they are taken."""
    return ALLREDUCE_TITLE if ".allreduce(" in edit.new_text else RULES["HVD020"][1]


def _wrap_edit(ctx: RuleContext, tape, hvd: str) -> Edit | None:
    """``tape = hvd.DistributedGradientTape(tape)`` right after the ``with`` block.

    Gradients taken inside the block: a DistributedGradientTape made there fails on a
    non-persistent tape ("gradient() cannot be invoked within the GradientTape context"),
    so the gradients are averaged right after they are taken instead (None when they go
    into something other than one name: HVD-T2 says so)."""
    with_stmt = N.enclosing(tape.stmt, {"with_stmt"})
    outer = with_stmt.parent if with_stmt.parent.type == "async_stmt" else with_stmt
    inner = gradient_inside(tape, with_stmt)
    if inner is None and ctx.keras_target == "keras3" and _in_library(ctx, with_stmt):
        # (a module the entry imports cannot see the entry's adapter: its gradients are averaged
        # where they are taken, with the hvd the project gives that module)
        inner = _gradient_after(ctx, tape, with_stmt)
        if inner is None:
            return None
    if inner is None:
        wrapper = TAPE_ADAPTER if ctx.keras_target == "keras3" else f"{hvd}.DistributedGradientTape"
        return ctx.insert_after_stmt(outer, f"{tape.name} = {wrapper}({tape.name})")
    target = single_target(inner)
    if target is None:
        return None
    return ctx.insert_after_stmt(inner, f"{target} = [None if g is None else {hvd}.allreduce(g) for g in {target}]")


TAPE_ADAPTER = "DistributedGradientTape"


def _in_library(ctx: RuleContext, node) -> bool:
    """`node` is in another module of a linked program (project/link.py), not the entry."""
    at = ctx.source.offset(node.start_pos)
    return any(start <= at < end for start, end in ctx.env.library_spans)


def _gradient_after(ctx: RuleContext, tape, with_stmt):
    """The first statement after the with block, in its function, that takes `tape`'s gradients."""
    scope = N.func_scope_of(with_stmt)
    for call in ctx.calls("gradient"):
        if call.receiver_dotted() == tape.name and call.node.start_pos >= with_stmt.end_pos \
                and N.func_scope_of(call.node) is scope:
            stmt = N.statement_of(call.node)
            while stmt.parent is not None and stmt.parent.type == "simple_stmt":
                stmt = stmt.parent
            return stmt
    return None


def _adapter(ctx: RuleContext, edit: Edit) -> list[Edit]:
    """The keras3 target's ``DistributedGradientTape`` adapter (rules/keras3_adapters.py), for a
    wrap `edit` that calls it (Horovod's own fails on Keras 3 variables)."""
    if ctx.keras_target != "keras3" or f"{TAPE_ADAPTER}(" not in edit.new_text:
        return []
    return keras3_adapters.use(ctx, TAPE_ADAPTER)[1]


def gradient_sites(ctx: RuleContext) -> Iterator[tuple[N.Call, object, str]]:
    """(call, binding, optimizer text) of every ``opt.apply_gradients(...)`` on a known
    optimizer, or on one that a training tape's gradients reach, as written
    (`tape_steps`: ``self.checkpoint.optimizer``, ``self.optimizer`` handed in by another
    module). The binding is None when σ cannot name the optimizer."""
    stepped = tape_steps(ctx)
    calls = ctx.calls("apply_gradients")
    if ctx.keras_target == "keras3":       # Keras 3's ``opt.apply(grads, vars)`` too
        calls = sorted(calls + optimizer_apply_uses(ctx.env), key=lambda c: c.node.start_pos)
    for call in calls:
        receiver = call.receiver_dotted()
        b = ctx.env.lookup(receiver, call.node, "optimizer")
        if b is None and not _optimizer_parameter(ctx, receiver, call.node) \
                and not (receiver and (id(call.node), call.index) in stepped):
            continue
        yield call, b, receiver


def tape_steps(ctx: RuleContext) -> dict:
    """(id(node), index) -> call of each ``apply_gradients`` a training tape's gradients reach
    (`gradflow.optimizer_steps`): once the tape is averaged, the variables they update must
    start the same on every rank, whatever holds the optimizer (a ``tf.train.Checkpoint``
    attribute, a Trainer's ``self.optimizer`` set from a parameter of another module)."""
    cached = getattr(ctx, "_tape_steps", None)
    if cached is None:
        cached = {}
        methods = ("apply_gradients", "apply") if ctx.keras_target == "keras3" else ("apply_gradients",)
        for tape in ctx.env.tapes:
            if is_training_tape(ctx.env, tape):
                for call in optimizer_steps(ctx.env, tape, methods):
                    cached[(id(call.node), call.index)] = call
        ctx._tape_steps = cached
    return cached


def _optimizer_parameter(ctx: RuleContext, name: str | None, at) -> bool:
    """``def train_step(model, optimizer, ...)``: the optimizer handed in by the caller.

    A parameter of the enclosing function that the function does not rebind, in a file
    that creates an optimizer somewhere (the binding, if any, is then None).
    """
    fn = N.enclosing(at, {"funcdef"})
    if not name or "." in name or fn is None:
        return False
    if name not in {p.name.value for p in fn.get_params()} or ctx.env.lookup(name, at) is not None:
        return False
    return any(b.role == "optimizer" for b in ctx.env.with_role())


def statement_form(call: N.Call):
    """The statement when the call is an expression statement or a direct assignment RHS (R8)."""
    if not call.is_whole():
        return None
    parent = call.node.parent
    if N.is_statement(call.node):
        stmt = call.node
    elif parent.type == "expr_stmt" and parent.children[-1] is call.node and parent.children[-2] == "=":
        stmt = parent
    else:
        return None
    return stmt if N.alone_on_line(stmt) else None


def _apply_gradients(ctx: RuleContext, hvd: str) -> Iterator[Finding]:
    sites = []
    keras = ctx.summary.hvd_module.endswith("keras")
    placed: set = set()         # the steps that get a broadcast or need none
    for call, binding, receiver in gradient_sites(ctx):
        if keras and in_keras_step(ctx, call.node):
            placed.add((id(call.node), call.index))
            continue   # fit runs train_step: the broadcast callback (HVD050) starts it
        stmt = statement_form(call)
        scope = N.func_scope_of(call.node)
        if ctx.blocked("HVD021", call.node, binding) or _broadcasts(ctx, scope) or _tf1_optimizer(ctx, binding):
            placed.add((id(call.node), call.index))     # (a restriction refuses; broadcast already; TF1: HVD060)
            continue
        if stmt is None:
            continue
        if call.method == "apply":          # Keras 3: ``opt.apply(grads, variables)``
            arg = call.keyword("trainable_variables") or call.positional(1)
        else:
            arg = call.keyword("grads_and_vars") or call.positional(0)
        anchor = after_setup(ctx, call.node)
        if arg is not None and anchor is not None:
            sites.append((call, receiver, stmt, arg, anchor))
            placed.add((id(call.node), call.index))
    _unplaced(ctx, placed)
    src, unit = ctx.source, ctx.source.indent_unit
    tf = tf_name(ctx)
    keras3 = ctx.keras_target == "keras3"
    groups = _one_step(sites)
    for group, name in zip(groups, _fresh_names(ctx, FLAG, len(groups))):
        grads = iter(_fresh_names(ctx, GRADS, len(group)))      # (one per optimizer of the step)
        made = f"{tf}.Variable(False, trainable=False)"
        flag, edit = _flag_home(ctx, group[0][0].node, name, made) or \
            (name, Edit(group[0][4], group[0][4], ctx.lines(f"{name} = {made}", "")))
        edits = [edit]
        body = [f"if not {flag}:"]
        seen: set = set()
        for call, receiver, stmt, arg, _anchor in group:
            name = next(grads)
            start, end = src.span(arg.value)
            if call.method == "apply":      # (a list or a property: read again, as written)
                body.append(f"{unit}{hvd}.broadcast_variables([v.value for v in {src.text[start:end]}], root_rank=0)")
            else:
                edits += [ctx.insert_before_stmt(stmt, f"{name} = list({src.text[start:end]})"), Edit(start, end, name)]
                value = ".value" if keras3 else ""
                body.append(f"{unit}{hvd}.broadcast_variables([v{value} for _, v in {name}], root_rank=0)")
            if receiver not in seen:      # (an optimizer applied twice in the step: its variables once)
                seen.add(receiver)
                if keras3:                # a Keras 3 variable's tf.Variable (docs/stacks.md)
                    body.append(f"{unit}{hvd}.broadcast_variables([v.value for v in {receiver}.variables], root_rank=0)")
                else:
                    body.append(f"{unit}{hvd}.broadcast_variables({receiver}.variables() if callable({receiver}.variables) "
                                f"else {receiver}.variables, root_rank=0)")
        body.append(f"{unit}{flag}.assign(True)")
        edits.append(ctx.insert_after_stmt(group[-1][2], "\n".join(body)))
        for call, receiver, *_rest in group:     # each site's quick fix alone is the whole step's
            yield finding(ctx, "HVD021", call.node, f"variables of `{receiver}` and the model are not broadcast from rank 0",
                          Fix(RULES["HVD021"][1], edits))


UNBROADCAST = "not broadcast from rank 0"


def _unplaced(ctx: RuleContext, placed: set) -> None:
    """A training tape's ``apply_gradients`` that gets no broadcast (its optimizer is not a
    name or attribute the broadcast can use, or it takes its gradients in a form HVD021 cannot
    rewrite): averaging the gradients alone leaves every rank on its own initial weights, so
    point 2 is not done and the conversion is refused (contract point 8), never "nothing to
    change" (`engine.Analysis.blocking_notes`)."""
    if ctx.facts.uses_horovod:
        return          # (a program distributed by hand: HVD205 says so)
    for key, call in tape_steps(ctx).items():
        if key in placed or ctx.blocked("HVD021", call.node):
            continue
        start = ctx.source.span(call.node)[0]
        what = ctx.source.text[start:ctx.source.offset(call.trailer.start_pos)] + "(...)"
        yourself = ("`hvd.broadcast_variables([v.value for v in model.weights + optimizer.variables], root_rank=0)`"
                    if ctx.keras_target == "keras3" else
                    "`hvd.broadcast_variables(model.variables, root_rank=0)` and the optimizer's variables")
        report_note(ctx, 2, call.node,
                    f"{UNBROADCAST}: the tape's averaged gradients reach `{what}`, whose model and optimizer "
                    "variables the conversion cannot broadcast after the first step (the optimizer is not held in a "
                    "name or attribute, or the call is not a statement of its own); hold the optimizer in a name "
                    "and call apply_gradients on its own line, or broadcast them yourself after the first step "
                    f"({yourself})")


def _one_step(sites: list) -> list[list]:
    """The sites of one training step: ``apply_gradients`` statements in one block (a GAN's
    generator and discriminator) share one flag and one broadcast after the last of them, of
    every model's variables and every optimizer's (Horovod's idiom: one broadcast after the
    first step)."""
    groups: list[list] = []
    for site in sites:
        block = (N.simple_stmt_of(site[2]) or site[2]).parent
        if groups and (N.simple_stmt_of(groups[-1][-1][2]) or groups[-1][-1][2]).parent is block:
            groups[-1].append(site)
        else:
            groups.append([site])
    return groups


def _flag_home(ctx: RuleContext, at, name: str, made: str) -> tuple[str, Edit] | None:
    """(the flag as the step reads it, the edit that makes it) where a module-level flag
    would be shared by every model the step trains (a Trainer instantiated per model, a
    ``train(model)`` called twice): the step is a method of a plain class with an
    ``__init__`` (``self.<name>``, made first thing there), or a function nested in another
    one that no tf.function traces (a local made before the step's ``def``). None: the
    flag stays at module level (a step of the module, or of a Keras class, which would
    track the variable as the model's own)."""
    fn = N.enclosing(at, {"funcdef"})
    outer = N.enclosing(fn, {"funcdef", "classdef"}) if fn is not None else None
    if outer is None:
        return None
    defn = fn.parent if fn.parent.type == "decorated" else fn
    if outer.type == "funcdef":
        if _traced(ctx, outer):
            return None        # (a tf.function cannot make a variable at each trace)
        prev = defn.get_previous_sibling()
        if prev is None or prev.type in ("newline", "operator"):
            return name, ctx.insert_before_stmt(defn, f"{name} = {made}")
        return name, ctx.insert_after_stmt(prev, f"{name} = {made}", ctx.source.indent_of(defn))
    init = ctx.env.method(outer.name.value, "__init__") if _plain_class(ctx, outer) else None
    params = fn.get_params()
    if init is None or not params or init.children[-1].type != "suite" or defn is not fn and \
            any(d in defn.children[0].get_code() for d in ("staticmethod", "classmethod")):
        return None
    first = next((s for s in init.children[-1].children[1:] if not _docstring(s)), None)
    if first is None:
        return None
    me = init.get_params()[0].name.value if init.get_params() else "self"
    return f"{params[0].name.value}.{name}", ctx.insert_before_stmt(first, f"{me}.{name} = {made}")


def _plain_class(ctx: RuleContext, cls, depth: int = 0) -> bool:
    """A class whose bases are ``object`` or plain classes of the file (no Keras layer or
    ``tf.Module``, which would track a variable attribute as a weight of the model)."""
    for base in class_bases(cls):
        d = N.dotted(base)
        local = ctx.env.all_classes.get(d) if d else None
        if d != "object" and (local is None or local is cls or depth > 8 or not _plain_class(ctx, local, depth + 1)):
            return False
    return True


def _traced(ctx: RuleContext, fn) -> bool:
    """`fn` decorated with a ``tf.function`` or handed to one (``tf.function(train)``)."""
    if fn.parent.type == "decorated" and re.search(r"\bfunction\b", fn.parent.children[0].get_code()):
        return True
    return any(callee_name(ctx.env, c) == "tensorflow.function" and c.positional(0) is not None
               and N.dotted(c.positional(0).value) == fn.name.value for c in ctx.calls("function"))


def _docstring(stmt) -> bool:
    return stmt.type == "simple_stmt" and stmt.children[0].type in ("string", "strings")


def _fresh_names(ctx: RuleContext, base: str, n: int) -> list[str]:
    """`n` names the file does not use: `base`, `base_2`, ... (one flag per training step:
    a flag shared by two steps would let the first one's broadcast stop the second's)."""
    used = ctx.env.index.names
    names, k = [], 1
    while len(names) < n:
        name = base if k == 1 else f"{base}_{k}"
        if name not in used:
            names.append(name)
        k += 1
    return names


def _tf1_optimizer(ctx: RuleContext, binding) -> bool:
    """TF1 optimizers (``tf.train.XOptimizer``) have no ``iterations`` and run in graph mode;
    their initial state is broadcast by ``hvd.BroadcastGlobalVariablesHook`` (HVD060)."""
    if ctx.summary.estimator:
        return True
    if binding is None:
        return ctx.env.tf1
    return binding.detail in TF1_OPTIMIZERS


def _broadcasts(ctx: RuleContext, scope) -> bool:
    """The program already broadcasts its initial state: ``broadcast_variables`` here, or any
    Horovod broadcast in the file (an elastic state, a ``first_batch`` step elsewhere)."""
    return bool(ctx.calls("broadcast_variables", scope)) or bool(ctx.facts.broadcasts)
