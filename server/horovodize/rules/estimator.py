"""Estimator rules (TF1, ``tensorflow.compat.v1``): ``hooks`` gain
``hvd.BroadcastGlobalVariablesHook(0)`` (HVD060); only rank 0 writes ``model_dir`` (HVD061),
``RunConfig(model_dir=)`` included. Premade Estimators (``DNNClassifier(optimizer=...)``)
get their optimizer scaled and distributed (HVD010/HVD011) whether it is given by name, as a
class, an instance or a lambda, or left to the default. A ``RunConfig`` without
``session_config`` gets Horovod's pinning, ``ConfigProto`` with ``allow_growth`` and
``visible_device_list=str(hvd.local_rank())`` (HVD070 in tf1_session.py, as Horovod's estimator
example): the Estimator builds its own session from it, so HVD001 then leaves out ``tf.config``
pinning (``pinned_by_run_config``).

Requires: env (estimator bindings).
"""

from __future__ import annotations

from typing import Iterator

from ..analysis.roles import TF1_OPTIMIZERS
from ..parse import nodes as N
from ..parse.source import Edit
from .base import Finding, Fix, RuleContext, finding, mentions_hvd

RULES = {
    "HVD060": ("broadcast-hook", "Add hvd.BroadcastGlobalVariablesHook(0) to the hooks"),
    "HVD061": ("rank0-model-dir", "Write the model directory on rank 0 only"),
}
HOOKS_POS = 1          # Estimator.train(input_fn, hooks=None, steps=None, ...)
ATOMIC = ("name", "atom", "atom_expr", "power")
LOW_PRECEDENCE = ("test", "lambdef", "namedexpr_test")


def train_calls(ctx: RuleContext) -> Iterator[N.Call]:
    for call in ctx.calls("train"):
        if ctx.env.lookup(call.receiver_dotted(), call.node, "estimator"):
            yield call


def _is_list_literal(node) -> bool:
    return node.type == "atom" and node.children[0] == "["


def hook_edits(ctx: RuleContext, call: N.Call, arg, hook: str, first: bool = False) -> list[Edit]:
    """Add `hook` to a ``hooks`` argument (missing, None, a list, or any iterable expression);
    no edit when it already mentions Horovod. Shared with ``MonitoredTrainingSession`` (HVD072)."""
    if arg is None:     # `first`: before the first keyword (the end is where other rules insert)
        return keyword_first(ctx, call, f"hooks=[{hook}]") if first else ctx.add_keyword(call, f"hooks=[{hook}]")
    if mentions_hvd(arg.value, ctx):
        return []
    if arg.value.type == "keyword" and arg.value.value == "None":   # hooks=None
        start, end = ctx.source.span(arg.value)
        return [Edit(start, end, f"[{hook}]")]
    if _is_list_literal(arg.value):
        return ctx.wrap(arg.value, "", f" + [{hook}]")
    # a name, tuple or expression: any iterable, or None at run time;
    # `h if c else None or []` would bind as `h if c else (None or [])`
    before, after = ("list((", ") or [])") if arg.value.type in LOW_PRECEDENCE else ("list(", " or [])")
    return ctx.wrap(arg.value, before, f"{after} + [{hook}]")


def check(ctx: RuleContext) -> Iterator[Finding]:
    hvd = ctx.hvd
    for call in train_calls(ctx):
        if call.has_star() or ctx.blocked("HVD060", call.node):
            continue
        hook = f"{hvd}.BroadcastGlobalVariablesHook(0)"
        edits = hook_edits(ctx, call, call.keyword("hooks") or call.positional(HOOKS_POS), hook)
        if not edits:
            continue
        yield finding(ctx, "HVD060", call.node, "Estimator training does not broadcast the initial variables",
                      Fix(RULES["HVD060"][1], edits))
    for b in ctx.env.with_role():
        if b.role != "estimator":
            continue
        call = N.as_call(b.value)
        arg = call.keyword("model_dir") if call else None
        if arg is None or mentions_hvd(arg.value, ctx) or ctx.blocked("HVD061", b.stmt, b):
            continue
        value = arg.value
        yield finding(ctx, "HVD061", value, "every rank writes checkpoints to model_dir",
                      Fix(RULES["HVD061"][1], ctx.rank0_value(value)))
    yield from premade_sites(ctx)
    yield from run_config_sites(ctx)


# -- premade Estimators: their optimizers, and RunConfig(model_dir=) -----------------------
# family -> (optimizer keyword, default name, rate given to a name (TF1), rate given to a name (TF2)).
# The rates are tensorflow_estimator 2.15's: a name is built with these (None = the class default).
PREMADE = {
    "DNN": (("optimizer", "Adagrad", "0.05", None),),
    "Linear": (("optimizer", "Ftrl", "0.2", "0.2"),),
    "Baseline": (("optimizer", "Ftrl", "0.3", "0.3"),),
    "DNNLinearCombined": (("linear_optimizer", "Ftrl", "linear", "linear"),
                          ("dnn_optimizer", "Adagrad", "0.001", "0.001")),
}
TF1_NAMES = {"Adagrad": "AdagradOptimizer", "Adam": "AdamOptimizer", "Ftrl": "FtrlOptimizer",
             "RMSProp": "RMSPropOptimizer", "SGD": "GradientDescentOptimizer"}
KERAS_NAMES = {"Adagrad": "Adagrad", "Adam": "Adam", "Ftrl": "Ftrl", "RMSProp": "RMSprop", "SGD": "SGD"}
KERAS_LEGACY_DEFAULTS = {"Adagrad": "0.001", "Adam": "0.001", "Ftrl": "0.001", "RMSprop": "0.001", "SGD": "0.01"}


def premade_family(cls: str) -> str | None:
    for suffix in ("Classifier", "Regressor", "Estimator"):
        if cls.endswith(suffix) and cls[: -len(suffix)] in PREMADE:
            return cls[: -len(suffix)]
    return None


def is_tf1(ctx: RuleContext, call: N.Call) -> bool:
    """``tf.compat.v1.estimator.X`` (graph-mode optimizers) rather than TF2's X (Keras ones)."""
    dotted = call.callee_dotted() or ""
    root = dotted.split(".", 1)[0]
    return (ctx.env.aliases.get(root, "") + "." + dotted).replace(".", "/").find("compat/v1") >= 0


def _module_prefix(ctx: RuleContext, call: N.Call) -> str | None:
    dotted = call.callee_dotted() or ""
    if ".estimator." in dotted:
        return dotted.split(".estimator.", 1)[0]
    return ctx.env.tf_alias()


def premade_sites(ctx: RuleContext) -> Iterator[Finding]:
    from .optimizer import RULES as OPT_RULES
    from .optimizer import _scale
    env, hvd = ctx.env, ctx.hvd
    for b in env.with_role():
        call = N.as_call(b.value) if b.role == "estimator" else None
        family = premade_family(b.detail or "") if call is not None else None
        if family is None or call.has_star():
            continue
        v1 = is_tf1(ctx, call)
        wrapped = None
        prefix = _module_prefix(ctx, call)
        # keywords given first: an added keyword goes where a wrapped last argument ends
        for keyword, default, rate1, rate2 in sorted(PREMADE[family], key=lambda k: call.keyword(k[0]) is None):
            arg = call.keyword(keyword)
            value = arg.value if arg is not None else None
            if value is not None and mentions_hvd(value, ctx):
                continue
            if ctx.blocked("HVD010", b.stmt, b) or ctx.blocked("HVD011", b.stmt, b):
                continue
            inner = N.as_call(value.children[-1]) if value is not None and value.type == "lambdef" else N.as_call(value)
            if inner is not None and (env.role_of_call(inner) or ("",))[0] == "optimizer":
                yield from _scale(ctx, inner)                # an instance (or a lambda building one)
                wrapped = finding(ctx, "HVD011", inner.node, f"the Estimator's {keyword} does not average gradients",
                                  Fix(OPT_RULES["HVD011"][1], ctx.wrap(inner.node, f"{hvd}.DistributedOptimizer(", ")")))
                yield wrapped
                continue
            name = None
            if value is None:
                name = default
            elif value.type == "string" and value.get_code(include_prefix=False)[:1] in "'\"":
                name = value.value.strip("'\"")
            cls, rate = None, None
            if name is not None and name in TF1_NAMES and prefix:
                if v1:
                    cls = f"{prefix}.train.{TF1_NAMES[name]}"
                    rate = rate1
                else:
                    cls = f"{prefix}.keras.optimizers.legacy.{KERAS_NAMES[name]}"
                    rate = rate2 or KERAS_LEGACY_DEFAULTS[KERAS_NAMES[name]]
            elif value is not None and value.type in ("name", "atom_expr", "power") and inner is None:
                q = env.qualname(value) or ""
                last = q.rsplit(".", 1)[-1]
                if q.startswith("tensorflow.train.") and TF1_OPTIMIZERS.get(last):   # a class: built with no arguments
                    cls, rate = N.dotted(value), TF1_OPTIMIZERS[last]
            if cls is None:
                continue
            if rate == "linear":              # DNNLinearCombined: min(0.005, 1/sqrt(#linear columns))
                cols = call.keyword("linear_feature_columns")
                if cols is None:
                    continue                  # no linear part: that optimizer is never used
                rate = f"min(0.005, 1.0 / len({cols.value.get_code(include_prefix=False)}) ** 0.5)"
            text = f"{hvd}.DistributedOptimizer({cls}(learning_rate={rate} * {hvd}.size()))"
            if value is None:
                edits = keyword_first(ctx, call, f"{keyword}={text}")
                node = call.node
                if wrapped is not None:     # after the ")" that closes a wrapped last argument
                    wrapped.fix.edits += edits
                    continue
            else:
                start, end = ctx.source.span(value)
                edits, node = [Edit(start, end, text)], value
            yield finding(ctx, "HVD011", node,
                          f"the Estimator's {keyword} ({name or N.dotted(value)}) is neither scaled nor distributed",
                          Fix("Use a scaled hvd.DistributedOptimizer", edits))


def keyword_first(ctx: RuleContext, call: N.Call, text: str) -> list[Edit]:
    """Add ``keyword=value`` before the first keyword argument: the end of the last argument
    is where other rules already insert (``model_dir=d if hvd.rank() == 0 else None``)."""
    first = next((a for a in call.args if a.keyword is not None), None)
    if first is None:
        return ctx.add_keyword(call, text)
    src = ctx.source
    start = src.offset(first.node.start_pos)
    line = src.line_start(start)
    if not src.text[line:start].strip():          # one argument per line
        return [Edit(start, start, f"{text},{ctx.nl}{src.text[line:start]}")]
    return [Edit(start, start, f"{text}, ")]


def run_config_sites(ctx: RuleContext) -> Iterator[Finding]:
    """``RunConfig(model_dir=...)`` is where an Estimator writes too (HVD061)."""
    if not any(b.role == "estimator" for b in ctx.env.with_role()):
        return
    for call in ctx.calls("RunConfig"):
        if not (ctx.env.callee_qualname(call) or "").endswith("estimator.RunConfig"):
            continue
        arg = call.keyword("model_dir")
        if arg is None or mentions_hvd(arg.value, ctx) or ctx.blocked("HVD061", call.node) \
                or (arg.value.type == "keyword" and arg.value.value == "None"):
            continue
        value = arg.value
        yield finding(ctx, "HVD061", value, "every rank writes checkpoints to the RunConfig's model_dir",
                      Fix(RULES["HVD061"][1], ctx.rank0_value(value)))


# -- GPU pinning through RunConfig(session_config=...) (HVD070) -----------------------------
def run_configs(ctx: RuleContext) -> Iterator[N.Call]:
    if not any(b.role == "estimator" for b in ctx.env.with_role()):
        return
    for call in ctx.calls("RunConfig"):
        if (ctx.env.callee_qualname(call) or "").endswith("estimator.RunConfig") and not call.has_star():
            yield call


def pinned_by_run_config(ctx: RuleContext) -> bool:
    """The program's Estimators run through a ``RunConfig``: pinning belongs in its
    ``session_config`` (a session numbers the GPUs it is given; with ``tf.config`` pinning
    too, rank 1 would ask for a GPU it cannot see). Read by HVD001. Not when an Estimator is
    built here without a ``config`` (``RunConfig()`` made and never passed): it keeps
    ``tf.config`` pinning."""
    if not any(True for _ in run_configs(ctx)):
        return False
    for b in ctx.env.with_role():
        call = N.as_call(b.value) if b.role == "estimator" else None
        if call is None or ".estimator." not in "." + (ctx.env.callee_qualname(call) or ""):
            continue            # built elsewhere (a factory function's return)
        if call.keyword("config") is None and not call.has_star() \
                and sum(1 for a in call.args if a.keyword is None) < 3:   # Estimator(model_fn, model_dir, config)
            return False
    return True
