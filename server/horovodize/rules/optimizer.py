"""Optimizer rules: scale the learning rate by ``hvd.size()`` (HVD010), wrap the optimizer
in ``hvd.DistributedOptimizer`` for Keras and TF1 programs (HVD011), replace
``compile('adam')`` by a scaled, wrapped optimizer (HVD012), scale a schedule's initial
rate instead of the schedule object (HVD013). The optimizers given to the compile of a
model whose ``train_step`` averages through its tape stay plain (scaled only). On the keras3
target the wrapper is the program's own ``DistributedOptimizer`` (rules/keras3_adapters.py).

Requires: env (optimizer / schedule bindings), loop (Horovod module flavour).
"""

from __future__ import annotations

from typing import Iterator

from ..analysis.roles import COMPILE_STRINGS, KERAS_OPTIMIZERS, TF1_OPTIMIZERS
from ..parse import nodes as N
from ..parse.scopes import choices
from ..parse.source import Edit
from . import keras3_adapters, rank0_reads
from .base import Finding, Fix, RuleContext, finding, mentions_hvd, report_note
from .pipelines import chain_calls
from .tapes import compiles_tape_step, tape_loops_beside_fit, tape_optimizers
from ..analysis.session import legacy_spelling, model_to_estimator_optimizers

RULES = {
    "HVD010": ("scale-learning-rate", "Scale learning rate by hvd.size()"),
    "HVD011": ("distributed-optimizer", "Wrap optimizer in hvd.DistributedOptimizer"),
    "HVD012": ("compile-string-optimizer", "Use a scaled hvd.DistributedOptimizer instead of the optimizer name"),
    "HVD013": ("scale-schedule", "Scale the schedule's initial learning rate by hvd.size()"),
}

UNSCALED_HVD012 = "Use hvd.DistributedOptimizer instead of the optimizer name (the rate unscaled)"


def wraps_optimizer(ctx: RuleContext) -> bool:
    """Keras-fit and TF1 programs average gradients in the optimizer, tape programs in the tape."""
    return ctx.summary.hvd_module.endswith("keras") or ctx.summary.estimator or ctx.env.tf1 \
        or "Session" in ctx.summary.kinds          # TF1 graph mode (loop.SESSION)


def distributed_optimizer(ctx: RuleContext) -> tuple[str, list[Edit]]:
    """(the callee that wraps an optimizer, the edits it needs): ``hvd.DistributedOptimizer``,
    or on the keras3 target the program's own adapter (rules/keras3_adapters.py)."""
    if ctx.keras_target == "keras3":
        return keras3_adapters.use(ctx, "DistributedOptimizer")
    return f"{ctx.hvd}.DistributedOptimizer", []


def check(ctx: RuleContext) -> Iterator[Finding]:
    env = ctx.env
    by_tape = tape_optimizers(ctx) if tape_loops_beside_fit(ctx) else set()   # (their tape averages)
    by_tape |= _step_tape_optimizers(ctx)
    scaled: set = set()          # creations scaled once (a helper may be called from two bindings)
    for b in env.with_role():
        if b.role != "optimizer":
            continue
        created = creations(ctx, b.value) or [c for c in (N.as_call(b.value),) if c is not None]
        if not created:
            continue
        for call in created:
            if id(call.node) not in scaled:
                scaled.add(id(call.node))
                yield from _scale(ctx, call, b)
        call = created[0]
        if wraps_optimizer(ctx) and not _returns_own_binding(ctx, b.value) and id(b) not in by_tape and not ctx.facts.optimizer_wrapped(b.name, b.value) \
                and not ctx.blocked("HVD011", b.stmt, b):
            wrapper, adapter = distributed_optimizer(ctx)
            edit = ctx.insert_after_stmt(N.statement_of(b.stmt), f"{b.name} = {wrapper}({b.name})")
            yield finding(ctx, "HVD011", b.value, f"optimizer `{b.name}` does not average gradients across ranks",
                          Fix(RULES["HVD011"][1], adapter + _legacy(ctx, call) + [edit]))
    for call in ctx.calls("compile"):
        if call.is_whole():
            yield from _compile(ctx, call)
    yield from _loaded_models(ctx)
    yield from _assigned_rates(ctx)
    yield from _scheduler_rates(ctx)


LOADED = "Wrap the loaded model's optimizer in hvd.DistributedOptimizer"
# The wrapper is made from the optimizer's config; a Keras 2.11+ optimizer (one with ``build``)
# then takes the file's state, its step count and moments (measured, TF 2.15: HDF5 and .keras
# carry them, a SavedModel only the step count); a legacy one starts them again.
LOADED_WRAP = ("hvd_restored = {m}.optimizer\n"
               "{m}.optimizer = {wrapper}(hvd_restored)\n"
               "if hasattr({m}.optimizer, \"build\"):  # (the state the file restored: step count, moments)\n"
               "{u}{m}.optimizer.build({m}.trainable_variables)\n"
               "{u}for hvd_var, hvd_value in zip({m}.optimizer.variables, hvd_restored.variables):\n"
               "{u}{u}hvd_var.assign(hvd_value)")


def _loaded_models(ctx: RuleContext) -> Iterator[Finding]:
    """HVD011 for a model loaded with its optimizer (``model = load_model(p)``, a job resumed
    from a file) that ``fit`` trains with no compile between: the optimizer Keras rebuilds from
    the file averages nothing. ``model.optimizer = hvd.DistributedOptimizer(model.optimizer)``
    after the load (measured, TF 2.15 / Horovod 0.28.1, HDF5, .keras and SavedModel: equal
    weights on 2 ranks; ``hvd.load_model`` left a plain optimizer; the wrapper is made from
    the optimizer's config, then given the file's state: `LOADED_WRAP`)."""
    from ..analysis.loop import FIT

    if not ctx.summary.hvd_module.endswith("keras") or ctx.env.tf1:
        return
    done = set()
    for site in ctx.summary.sites:
        fit = N.as_call(site.node)
        name = fit.receiver_dotted() if site.kind == FIT and fit is not None else None
        if not name or "." in name:
            continue
        scope = N.func_scope_of(fit.node)
        bound = [b for b in ctx.env.bindings if b.name == name and b.scope is scope and b.stmt.end_pos <= fit.node.start_pos]
        load = N.as_call(bound[-1].value) if bound else None
        if load is None or id(load.node) in done or ctx.env.callee_qualname(load) != "tensorflow.keras.load_model" or \
                (load.keyword("compile") is not None and load.keyword("compile").value.get_code().strip() == "False"):
            continue
        if any(other.kind == FIT and other.node.start_pos < load.node.start_pos for other in ctx.summary.sites):
            continue      # a file this program saved: its optimizer is Horovod's class (HVD034)
        between = [c for c in ctx.calls("compile") if c.receiver_dotted() == name and
                   bound[-1].stmt.end_pos <= c.node.start_pos < fit.node.start_pos]
        if between or mentions_hvd(bound[-1].stmt, ctx) or ctx.facts.uses_horovod or \
                f"{name}.optimizer =" in ctx.source.text or ctx.blocked("HVD011", load.node):
            continue
        done.add(id(load.node))
        wrapper, adapter = distributed_optimizer(ctx)
        # under a test of the files (``if os.path.exists(p):``) the other hosts keep the model
        # the program compiled: the wrap alone (the state copy there left run 2 hanging, rr38)
        wrap = f"{name}.optimizer = {wrapper}({name}.optimizer)" if rank0_reads.file_dependent(
            ctx, N.statement_of(bound[-1].stmt), set()) else LOADED_WRAP.format(m=name, wrapper=wrapper,
                                                                               u=ctx.source.indent_unit)
        edit = ctx.insert_after_stmt(N.statement_of(bound[-1].stmt), wrap)
        yield finding(ctx, "HVD011", load.node, f"`{name}` is loaded with the optimizer saved in its file, which does "
                      "not average gradients across ranks", Fix(LOADED, adapter + [edit]))


def _scheduler_rates(ctx: RuleContext) -> Iterator[Finding]:
    """``LearningRateScheduler(schedule)`` sets the rate at each epoch to what ``schedule``
    returns: a local function (or a lambda) whose returns do not read the rate it is given
    (its second parameter) replaces the scaled rate, so each value it returns is scaled."""
    if _scaled_elsewhere(ctx):
        return
    for call in ctx.calls("LearningRateScheduler"):
        fn = ctx.facts.schedule_function(call)
        if fn is None or ctx.blocked("HVD010", call.node):
            continue
        params = [p.name.value for p in fn.get_params()]
        reads_rate = len(params) > 1 and any(n.type == "name" and n.value == params[1] for n in N.walk(fn.children[-1]))
        returns = [fn.children[-1]] if fn.type == "lambdef" else \
            [r.children[1] for r in ctx.env.index.returns.get(id(fn), []) if len(r.children) >= 2]
        if reads_rate or not returns or any(mentions_hvd(v, ctx) or ctx.facts.contains_size(v) for v in returns):
            continue
        what = f"`{fn.name.value}`" if fn.type == "funcdef" else "the schedule's lambda"
        yield finding(ctx, "HVD010", call.node, f"the rate {what} returns replaces the optimizer's scaled "
                      "rate at each epoch and is not scaled by the number of ranks",
                      Fix(RULES["HVD010"][1], [e for v in returns for e in ctx.scale(v, "*")]))


def _reads_rate(ctx: RuleContext, value, owner: str, at) -> bool:
    """`value` reads the optimizer's own rate, in place (``opt.lr * 0.1``) or through a name
    assigned from it (``cur = K.get_value(opt.lr)``, then ``cur * 0.1``): scaled already."""
    if owner + "." in value.get_code(include_prefix=False):
        return True
    names = {n.value for n in N.walk(value) if n.type == "name"}
    return any(owner + "." in v.get_code(include_prefix=False)
               for name in names for _s, v, _op in ctx.facts.assignments(name, at) if v is not None)


def _assigned_rates(ctx: RuleContext) -> Iterator[Finding]:
    """``optimizer.lr.assign(value)`` (a warm-up or cosine schedule written by hand, each
    step), ``K.set_value(model.optimizer.lr, value)`` or ``optimizer.learning_rate = value``:
    the value replaces the scaled rate the optimizer was made with, so it is scaled too,
    unless it is computed from the optimizer's own rate (``opt.lr * 0.5``: scaled already);
    likewise the step of ``assign_sub``/``assign_add`` (a linear decay of the scaled rate)."""
    if _scaled_elsewhere(ctx):
        return
    sets = [(c.receiver_dotted() or "", arg.value, c.node, c.method)
            for m in ("assign", "assign_sub", "assign_add") for c in ctx.calls(m)
            if (arg := c.positional(0) or c.keyword("value")) is not None]
    sets += [(_dotted(c.positional(0).value), c.positional(1).value, c.node, "assign") for c in ctx.calls("set_value")
             if c.positional(0) is not None and c.positional(1) is not None]
    # ``x.lr = v`` / ``x.learning_rate = v``, found from the name index (not by asking every
    # assignment of the file): the attribute is the target's last trailer
    targets = [leaf.parent.parent for attr in ("lr", "learning_rate") for leaf in ctx.env.index.names.get(attr, ())
               if leaf.parent is not None and leaf.parent.type == "trailer" and leaf.parent.children[0] == "."
               and leaf.parent.parent is not None and leaf.parent is leaf.parent.parent.children[-1]]
    sets += [(_dotted(t), t.parent.children[2], t.parent, "assign") for t in targets
             if t.parent is not None and t.parent.type == "expr_stmt" and len(t.parent.children) == 3
             and t.parent.children[0] is t and t.parent.children[1] == "="]
    for target, value, at, method in sets:
        owner, _, attr = target.rpartition(".")
        if attr not in ("lr", "learning_rate") or not _optimizer_named(ctx, owner, at):
            continue
        if ctx.facts.contains_size(value) or mentions_hvd(value, ctx) \
                or _reads_rate(ctx, value, owner, at) or ctx.blocked("HVD010", at):
            continue
        what = "the rate `{}` is set to here" if method == "assign" else "the step by which `{}` changes its rate here"
        yield finding(ctx, "HVD010", value, what.format(owner) + " is not scaled by the number of ranks "
                      "(it acts on the scaled rate the optimizer was made with)",
                      Fix(RULES["HVD010"][1], ctx.scale(value, "*")))


def _optimizer_named(ctx: RuleContext, owner: str, at) -> bool:
    """`owner` holds an optimizer: a name bound to one, or a Keras model's ``.optimizer``."""
    return bool(owner) and (owner.endswith(".optimizer") or ctx.env.lookup(owner, at, "optimizer") is not None)


def _dotted(node) -> str:
    """``a.b.c`` of a name or attribute chain without calls or subscripts, else ""."""
    text = node.get_code(include_prefix=False) if node is not None else ""
    return text if text.replace(".", "").replace("_", "").isalnum() and not text[:1].isdigit() else ""


def creations(ctx: RuleContext, value, depth: int = 0) -> list[N.Call]:
    """The optimizer constructors behind a binding's value: the call itself, each branch of
    ``Adam(...) if x else SGD(...)``, or what a local helper returns (``get_optimizer()``
    returning ``tf.keras.optimizers.Adam(lr)``, followed through helpers up to 4 deep)."""
    env = ctx.env
    value = N.unparen(value)
    picks = choices(value) if depth < 4 else []          # a if c else b, {"adam": a, ...}[name]
    if picks:
        return [c for pick in picks for c in creations(ctx, pick, depth + 1)]
    call = env.as_call(value)
    if call is None:
        return []
    if (env.role_of_call(call) or ("",))[0] == "optimizer":
        return [call]
    fn = env.call_target(call) if depth < 4 else None
    if fn is None:
        return []
    out = []
    for ret in env.index.returns.get(id(fn), []):
        if len(ret.children) >= 2 and ret.children[1].type != "testlist_star_expr":
            out += creations(ctx, ret.children[1], depth + 1)
    return out


def _returns_own_binding(ctx: RuleContext, value) -> bool:
    """``optimizer = get_optimizer()`` where the helper returns its own optimizer binding
    (``opt = Adam(...); return opt``): that binding is wrapped where it is created, so the
    value is wrapped already (a second wrapper would average every gradient twice)."""
    call = ctx.env.as_call(N.unparen(value))
    fn = ctx.env.call_target(call) if call is not None else None
    if fn is None:
        return False
    for ret in ctx.env.index.returns.get(id(fn), []):
        if len(ret.children) >= 2 and ret.children[1].type == "name":
            if any(g.role == "optimizer" for g in ctx.env.bindings_of(ret.children[1].value, fn)):
                return True
    return False


def _scale(ctx: RuleContext, call: N.Call, binding=None) -> Iterator[Finding]:
    if ctx.blocked("HVD010", call.node, binding) or _scaled_elsewhere(ctx):
        return
    lr = call.keyword("learning_rate") or call.keyword("lr")
    if lr is None and call.positional(0) is not None:
        lr = call.positional(0)
    name = f"`{binding.name}`" if binding else "optimizer"
    if lr is None:
        if call.has_star():
            return
        default = _default_lr(ctx, call)
        if default is None:
            return
        edits = ctx.add_keyword(call, f"learning_rate={default} * {ctx.hvd}.size()")
        yield finding(ctx, "HVD010", call.node, f"learning rate of {name} is not scaled by the number of ranks",
                      Fix(RULES["HVD010"][1], edits))
        return
    if ctx.facts.contains_size(lr.value) or mentions_hvd(lr.value, ctx):
        return
    schedule = _schedule_call(ctx, lr.value)
    if schedule is not None:
        yield from _scale_schedule(ctx, schedule, lr.value)
        return
    if lr.value.type == "lambdef":
        return
    yield finding(ctx, "HVD010", lr.value, f"learning rate of {name} is not scaled by the number of ranks",
                  Fix(RULES["HVD010"][1], _lr_keyword(ctx, call, lr) + ctx.scale(lr.value, "*")))


def _lr_keyword(ctx: RuleContext, call: N.Call, lr: N.Arg) -> list[Edit]:
    """``lr=`` of a Keras optimizer becomes ``learning_rate=``: Keras 2.11+ optimizers drop
    ``lr`` with a warning (``Adam(lr=0.004).learning_rate`` is 0.001 on TF 2.15), so the
    scaled rate would never be used; the legacy optimizers take both."""
    q = ctx.env.callee_qualname(call) or ""
    dotted = call.callee_dotted() or ""
    spelled = ctx.env.aliases.get(dotted.partition(".")[0], "") + "." + dotted    # (the qualname drops `legacy`)
    if lr.keyword != "lr" or "keras.optimizers" not in q or "legacy" in spelled.split("."):
        return []
    name = lr.node.children[0]
    start, end = ctx.source.span(name)
    return [Edit(start, end, "learning_rate")]


def _default_lr(ctx: RuleContext, call: N.Call) -> str | None:
    q = ctx.env.callee_qualname(call) or ""
    last = q.rsplit(".", 1)[-1]
    return KERAS_OPTIMIZERS.get(last) if last in KERAS_OPTIMIZERS else TF1_OPTIMIZERS.get(last)


SCHEDULE_BASE = "tensorflow.keras.optimizers.schedules.LearningRateSchedule"
# Keras schedules whose learning rate is not their first argument.
SCHEDULE_RATE_ARG = {"PiecewiseConstantDecay": ("values", 1)}
WARMUP_TARGETS = ("warmup_target",)     # CosineDecay(initial, steps, warmup_target=..., warmup_steps=...)


def _schedule_call(ctx: RuleContext, value) -> N.Call | None:
    """The schedule constructor behind an optimizer's learning rate (a call or a name bound to one)."""
    call = N.as_call(value)
    if call is None:
        name = N.dotted(value)
        b = ctx.env.lookup(name, value) if name else None   # user schedules bind as plain values
        call = N.as_call(b.value) if b else None
    if call is None:
        return None
    if (ctx.env.role_of_call(call) or ("",))[0] == "lr_schedule" or call.callee_dotted() in _schedule_classes(ctx):
        return call
    return None


def _schedule_classes(ctx: RuleContext) -> dict[str, object]:
    """Classes of this file deriving ``LearningRateSchedule`` (directly or through another one)."""
    cached = getattr(ctx, "_schedule_classes", None)
    if cached is not None:
        return cached
    out: dict[str, object] = {}
    ctx._schedule_classes = out
    if SCHEDULE_BASE.rsplit(".", 1)[-1] not in ctx.source.text:
        return out                        # (no class can name it as its base)
    for node in ctx.classdefs():
        supers = node.get_super_arglist()
        bases = [] if supers is None else (
            [c for c in supers.children if c.type != "operator"] if supers.type == "arglist" else [supers])
        if any(ctx.env.qualname(b) == SCHEDULE_BASE or N.dotted(b) in out for b in bases):
            out[node.name.value] = node
    return out


def _user_rate_param(ctx: RuleContext, cls) -> tuple[str, int] | None:
    """(name, positional index) of the learning-rate parameter of a schedule class's ``__init__``.

    Only a parameter *named* like a learning rate qualifies: the first argument of a custom
    schedule is often something else (``d_model``, ``warmup_steps``).
    """
    classes = _schedule_classes(ctx)
    seen = set()
    while cls is not None and id(cls) not in seen:
        seen.add(id(cls))
        for fn in cls.iter_funcdefs():
            if fn.name.value != "__init__":
                continue
            params = [p.name.value for p in fn.get_params()][1:]   # without self
            for i, name in enumerate(params):
                if name in ("lr", "learning_rate") or "learning_rate" in name or name.endswith("_lr"):
                    return name, i
            return None
        supers = cls.get_super_arglist()
        cls = classes.get(N.dotted(supers)) if supers is not None and supers.type != "arglist" else None
    return None


def _scale_schedule(ctx: RuleContext, schedule: N.Call, used_at) -> Iterator[Finding]:
    if ctx.blocked("HVD013", schedule.node):
        return
    local = _schedule_classes(ctx).get(schedule.callee_dotted() or "")
    if local is not None:
        param = _user_rate_param(ctx, local)
        if param is None:
            return  # cannot tell which argument is the rate; never multiply the schedule object
        keyword, pos = param
    else:
        cls = (ctx.env.callee_qualname(schedule) or "").rsplit(".", 1)[-1]
        keyword, pos = SCHEDULE_RATE_ARG.get(cls, ("initial_learning_rate", 0))
    arg = schedule.keyword(keyword) or schedule.positional(pos)
    if arg is None or ctx.facts.contains_size(arg.value) or mentions_hvd(arg.value, ctx):
        return
    edits = _scale_rates(ctx, arg.value) if keyword == "values" else ctx.scale(arg.value, "*")
    for rate in WARMUP_TARGETS:      # CosineDecay's warm-up ends at a rate too: scaled alike
        target = schedule.keyword(rate) if local is None else None
        if target is not None and target.value.get_code(include_prefix=False) != "None" \
                and not mentions_hvd(target.value, ctx):
            edits = edits + ctx.scale(target.value, "*")
    yield finding(ctx, "HVD013", arg.value, "initial rate of the learning-rate schedule is not scaled by the number of ranks",
                  Fix(RULES["HVD013"][1], edits))


def _scale_rates(ctx: RuleContext, value) -> list[Edit]:
    """Scale every rate of a list of rates (``[0.1, 0.01]`` element-wise, else a comprehension)."""
    if value.type == "atom" and value.children[0] in ("[", "(") and len(value.children) == 3:
        inner = value.children[1]
        items = inner.children if inner.type == "testlist_comp" else [inner]
        elems = [c for c in items if not (c.type == "operator" and c.value == ",")]
        if elems and all(e.type not in ("star_expr", "sync_comp_for", "comp_for") for e in elems):
            return [edit for e in elems for edit in ctx.scale(e, "*")]
    return ctx.wrap(value, f"[rate * {ctx.hvd}.size() for rate in ", "]")


def _scaled_elsewhere(ctx: RuleContext) -> bool:
    """The program sets its rate from ``hvd.size()`` after construction: a Horovod warm-up or
    schedule callback with a scaled ``initial_lr``, ``opt.lr.assign(lr * hvd.size())``,
    ``K.set_value(model.optimizer.lr, ...)`` (Horovod's elastic examples)."""
    facts = ctx.facts
    if not facts.uses_horovod:
        return False
    for api in ("callbacks.LearningRateWarmupCallback", "callbacks.LearningRateScheduleCallback"):
        for call in facts.calls(api):
            arg = call.keyword("initial_lr")
            if arg is not None and facts.contains_size(arg.value):
                return True
    for method in ("assign", "set_value"):
        for call in ctx.calls(method):
            target = call.receiver_dotted() if method == "assign" else N.dotted((call.positional(0) or call).node) if call.args else None
            value = call.positional(0 if method == "assign" else 1)
            if target and target.rsplit(".", 1)[-1] in ("lr", "learning_rate") and value is not None \
                    and facts.contains_size(value.value):
                return True
    return False


def _step_tape_optimizers(ctx: RuleContext) -> set:
    """ids of the optimizer bindings given by name to the compile of a model whose
    train_step averages through its tape (`compiles_tape_step`): they stay plain."""
    out = set()
    for call in ctx.calls("compile"):
        if call.is_whole() and compiles_tape_step(ctx, call):
            for a in call.args:
                if not a.star and a.value.type == "name":
                    b = ctx.env.lookup(a.value.value, call.node, "optimizer")
                    if b is not None:
                        out.add(id(b))
    return out


def _compile(ctx: RuleContext, call: N.Call) -> Iterator[Finding]:
    arg = call.keyword("optimizer") or call.positional(0)
    # a model whose train_step averages through hvd.DistributedGradientTape gets plain (scaled)
    # optimizers: DistributedGradientTape alone, as Horovod's idiom has it (REVIEW.md section 4)
    plain = compiles_tape_step(ctx, call)
    # A custom `compile(d_optimizer=Adam(...), g_optimizer=Adam(...))` (keras-io's GAN guide)
    # takes optimizers under other names: each one built inline is scaled and distributed too,
    # else the train_step applies gradients that no rank averages.
    for other in call.args:      # (Arg objects are made per lookup: compared by node)
        if (arg is None or other.node is not arg.node) and not other.star and _inline_optimizer(ctx, other.value) is not None:
            yield from _inline(ctx, _inline_optimizer(ctx, other.value), plain)
    if arg is None:
        return
    value = arg.value
    if value.type in ("string",) and not value.get_code(include_prefix=False).startswith(("f", "F", "b", "B")):
        name = value.value.strip("'\"").lower()
        cls = COMPILE_STRINGS.get(name)
        if cls is None or ctx.blocked("HVD012", value):
            return
        keras = ctx.env.keras_alias() or f"{ctx.env.tf_alias() or 'tf'}.keras"
        lr = KERAS_OPTIMIZERS[cls]
        start, end = ctx.source.span(value)
        legacy = "legacy." if id(value) in _for_model_to_estimator(ctx)[0] else ""
        text = f"{keras}.optimizers.{legacy}{cls}(learning_rate={lr} * {ctx.hvd}.size())"
        adapter: list[Edit] = []
        if not plain:
            wrapper, adapter = distributed_optimizer(ctx)
            text = f"{wrapper}({text})"
            # (--no-scale-lr: the engine takes the alternative, the named optimizer only wrapped)
            unscaled = Fix(UNSCALED_HVD012, adapter + [Edit(start, end, f"{wrapper}({keras}.optimizers.{legacy}{cls}())")])
        if plain:   # (the train_step's tape averages: the named optimizer is only scaled, HVD010's change)
            yield finding(ctx, "HVD010", value, f"learning rate of optimizer '{name}' given by name is not scaled "
                          "by the number of ranks (the train_step's DistributedGradientTape averages the gradients)",
                          Fix(RULES["HVD010"][1], [Edit(start, end, text)]))
            return
        found = finding(ctx, "HVD012", value, f"optimizer '{name}' given by name is neither scaled nor distributed",
                        Fix(RULES["HVD012"][1], adapter + [Edit(start, end, text)]))
        found.alternatives = [unscaled]
        yield found
        return
    inner = _inline_optimizer(ctx, value)
    if inner is not None:
        yield from _inline(ctx, inner, plain)
    elif not plain and _unfollowed(ctx, value, call):
        report_note(ctx, 3, value, f"{UNAVERAGED}: the optimizer given to compile, "
                    f"`{value.get_code(include_prefix=False)}`, is not one the conversion can follow (a name from "
                    "the command line, getattr, optimizers.get): nothing would average the gradients; build it in "
                    "the program (`tf.keras.optimizers.SGD(learning_rate=...)`) and convert again")


# A point-3 note that starts so blocks the conversion (engine.BLOCKING_NOTES).
UNAVERAGED = "not averaged"


def _unfollowed(ctx: RuleContext, value, at: N.Call, depth: int = 0) -> bool:
    """The optimizer argument of a compile is a value no rule follows to an optimizer: a
    setting (``args.optimizer``, a string in a variable), ``getattr(tf.keras.optimizers, name)(...)``
    or ``tf.keras.optimizers.get(x)`` (a parameter or anything else: left as it is)."""
    value = N.unparen(value)
    if mentions_hvd(value, ctx) or depth > 3:
        return False
    if value.type in ("string", "strings"):
        return depth > 0                   # (a literal in compile itself: HVD012's)
    if value.type == "name":
        if ctx.env.lookup(value.value, at.node, "optimizer") is not None:
            return False
        values = [v for _s, v, _op in ctx.facts.assignments(value.value, at.node)]
        return bool(values) and all(_unfollowed(ctx, v, at, depth + 1) for v in values)
    call = N.as_call(value)
    if call is not None:
        head = chain_calls(value)[-1]       # (``getattr(tf.keras.optimizers, name)(...)``: the getattr)
        return not creations(ctx, value) and ((call.callee_dotted() or "").endswith("optimizers.get")
                                              or head.callee_dotted() == "getattr")
    return value.type in ("atom_expr", "power") and N.dotted(value) is not None and \
        N.dotted(value).split(".")[0] in ("args", "FLAGS", "flags", "config", "cfg", "opts", "hparams")


def _inline_optimizer(ctx: RuleContext, value) -> N.Call | None:
    """An optimizer constructed right in a call's argument list."""
    inner = N.as_call(value)
    if inner is None or (ctx.env.role_of_call(inner) or ("",))[0] != "optimizer":
        return None
    return inner


def _inline(ctx: RuleContext, inner: N.Call, plain: bool = False) -> Iterator[Finding]:
    yield from _scale(ctx, inner)
    if not plain and wraps_optimizer(ctx) and not ctx.facts.optimizer_wrapped(None, inner.node) and not ctx.blocked("HVD011", inner.node):
        wrapper, adapter = distributed_optimizer(ctx)
        yield finding(ctx, "HVD011", inner.node, "optimizer does not average gradients across ranks",
                      Fix(RULES["HVD011"][1], adapter + _legacy(ctx, inner) + ctx.wrap(inner.node, f"{wrapper}(", ")")))


def _for_model_to_estimator(ctx: RuleContext) -> tuple[set, dict]:
    """(ids of optimizer names, {id of constructor node: (leaf, class)}) compiled into a model
    that ``model_to_estimator`` turns into an Estimator: it rebuilds a new Keras optimizer as a
    legacy one and drops the Horovod wrapper, so these become ``optimizers.legacy.X``."""
    cached = ctx.__dict__.get("_m2e")
    if cached is not None:
        return cached
    names, ctors = set(), {}
    for b in ctx.env.with_role():
        call = N.as_call(b.value) if b.role == "estimator" and b.detail == "model_to_estimator" else None
        if call is None:
            continue
        for _c, value, inner in model_to_estimator_optimizers(ctx.env, call):
            if value.type == "string":
                names.add(id(value))
            elif inner is not None and legacy_spelling(ctx.env, inner) is not None:
                ctors[id(inner.node)] = legacy_spelling(ctx.env, inner)
    ctx._m2e = names, ctors
    return ctx._m2e


def _legacy(ctx: RuleContext, inner: N.Call) -> list[Edit]:
    """``legacy.`` before the class of a new Keras optimizer model_to_estimator would rebuild."""
    site = _for_model_to_estimator(ctx)[1].get(id(inner.node))
    if site is None:
        return []
    at = ctx.source.offset(site[0].start_pos)
    return [Edit(at, at, "legacy.")]
