"""TF1 graph-mode facts: sessions, what they run, and what bounds the training steps.

A graph-mode program trains by running a *train op* (the result of an optimizer's
``minimize`` / ``apply_gradients``) in a ``tf.compat.v1.Session`` or a
``MonitoredTrainingSession``. The rules HVD070–HVD074 need to know, per session: where it
is created (pinning, hooks, ``checkpoint_dir``), where its variables' initializer or a
``Saver.restore`` runs (the broadcast goes right after), which ``run`` calls fetch a train
op (the HVD103 loop site), and which loop drives them (the step count to divide). Shapes
the rules cannot place an edit for safely become `Problem`s (HVD-S1 … HVD-S3).

Requires: env. Provides: `analyze(env) -> Graph`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..parse import nodes as N
from ..parse.imports import import_bindings
from ..parse.scopes import header
from .env import Env
from .roles import LIBRARIES, Problem

SESSION_CLASSES = {"tensorflow.Session": "session", "tensorflow.InteractiveSession": "session",
                   "tensorflow.train.MonitoredTrainingSession": "monitored",
                   "tensorflow.train.MonitoredSession": "monitored",
                   "tensorflow.train.SingularMonitoredSession": "monitored"}
INITIALIZERS = ("global_variables_initializer", "initialize_all_variables")
TRAIN_METHODS = ("minimize", "apply_gradients")
# Rules every session problem stops: the pinning, the broadcast, the step division, and the
# optimizer rules (a scaled, averaged optimizer without the broadcast trains ranks apart).
SESSION_RULES = ("HVD001", "HVD070", "HVD071", "HVD072", "HVD073", "HVD074", "HVD010", "HVD011")


@dataclass(eq=False)
class Sess:
    kind: str                      # "session" | "monitored"
    call: N.Call                   # the constructor call
    name: str | None               # the name it is bound to (assignment or ``with ... as``)
    stmt: object                   # the assignment / with statement
    scope: object                  # funcdef or file_input
    inits: list = field(default_factory=list)      # statements running the initializer / a restore


@dataclass(eq=False)
class Run:
    call: N.Call                   # ``sess.run(train_op, ...)``
    session: Sess | None
    driver: object = None          # the for/while running it in its own function


@dataclass(eq=False)
class Graph:
    sessions: list[Sess] = field(default_factory=list)
    runs: list[Run] = field(default_factory=list)          # runs that fetch a train op
    train_ops: dict = field(default_factory=dict)          # name -> the minimize/apply call
    problems: list[Problem] = field(default_factory=list)
    foreign: list = field(default_factory=list)            # (run call, binding of a train op built elsewhere)

    @property
    def training(self) -> bool:
        return bool(self.runs)


def session_kind(env: Env, call: N.Call) -> str | None:
    return SESSION_CLASSES.get(env.callee_qualname(call) or "")


def analyze(env: Env) -> Graph:
    g = Graph()
    idx = env.index
    for call in env.calls_where(SESSION_CLASSES.__contains__):
        g.sessions.append(_session(call, session_kind(env, call)))
    if not env.horovod():
        g.problems += premade_problems(env)
    for name in TRAIN_METHODS:
        for call in idx.by_method.get(name, ()):
            if call.method != name or not call.is_whole():
                continue
            parent = call.node.parent
            if parent.type == "expr_stmt" and parent.children[-1] is call.node and parent.children[-2] == "=":
                target = N.dotted(parent.children[0])
                if target:
                    g.train_ops[target.rsplit(".", 1)[-1]] = call
    if not g.sessions and not g.train_ops:
        return g
    for call in idx.by_method.get("run", ()):
        if call.method != "run":
            continue
        if all(a.keyword in ("session", "feed_dict") for a in call.args):   # op.run(): the default session
            sess = _op_run_session(g, call) or _interactive(g, call)
            if sess is not None and sess.kind == "session" and _runs_initializer(env, call):
                sess.inits.append(N.statement_of(call.node))
            elif (call.receiver_dotted() or "").rsplit(".", 1)[-1] in g.train_ops:   # train_step.run(feed_dict=...)
                g.runs.append(Run(call, sess or _only_session(g), N.loop_around(call.node)))
            continue
        sess = _resolve(env, g, call)
        fetches = call.keyword("fetches") or call.positional(0)
        if fetches is None:
            continue
        if sess is not None and sess.kind == "session" and _is_initializer(env, fetches.value, call.node):
            sess.inits.append(N.statement_of(call.node))
            continue
        if _fetches_train_op(g, fetches.value):
            g.runs.append(Run(call, sess, N.loop_around(call.node)))
        elif sess is not None and not g.train_ops:
            g.foreign.extend(_foreign_train_ops(env, fetches.value, call))
    for call in idx.by_method.get("restore", ()):      # saver.restore(sess, path): broadcast after it
        first = call.positional(0) or call.keyword("sess")
        if call.method == "restore" and first is not None:
            for s in g.sessions:
                if s.kind == "session" and s.name and N.dotted(first.value) == s.name \
                        and N.func_scope_of(call.node) is s.scope:
                    s.inits.append(N.statement_of(call.node))
    _problems(env, g)
    return g


def _session(call: N.Call, kind: str) -> Sess:
    node = call.node
    parent = node.parent
    name, stmt = None, N.statement_of(node)
    if call.is_whole() and parent.type == "with_item" and len(parent.children) == 3:
        name = N.dotted(parent.children[2])
    elif call.is_whole() and parent.type == "expr_stmt" and parent.children[-1] is node and parent.children[-2] == "=":
        name = N.dotted(parent.children[0])
    return Sess(kind, call, name, stmt, N.func_scope_of(node))


def _resolve(env: Env, g: Graph, call: N.Call) -> Sess | None:
    """The session a ``X.run`` call runs in: the one bound to X in the same function, else
    the file's only session of that name; None when it is not a session or cannot be told."""
    receiver = call.receiver_dotted()
    if not receiver:
        return None
    scope = N.func_scope_of(call.node)
    named = [s for s in g.sessions if s.name == receiver]
    local = [s for s in named if s.scope is scope and s.call.node.start_pos < call.node.start_pos]
    if local:
        return local[-1]
    return named[0] if len(named) == 1 else None


def _interactive(g: Graph, call: N.Call) -> Sess | None:
    """``sess = tf.InteractiveSession()`` earlier in the same function: the default session of
    ``op.run()`` outside any ``with``."""
    scope = N.func_scope_of(call.node)
    found = [s for s in g.sessions if s.scope is scope and s.call.node.start_pos < call.node.start_pos
             and (s.call.callee_dotted() or "").endswith("InteractiveSession")]
    return found[-1] if found else None


def _only_session(g: Graph) -> Sess | None:
    plain = [s for s in g.sessions if s.kind == "session"]
    return plain[0] if len(plain) == 1 else None


def _foreign_train_ops(env: Env, value, call: N.Call) -> list:
    """``train_op = cifar10.train(loss, step)`` then ``sess.run(train_op)``: the optimizer is
    built in another project module (a T1 shape: the loop is not in one file)."""
    modules = {local: full for node in env.index.imports for local, full in import_bindings(node)}
    out = []
    for n in N.walk(value):
        if n.type != "name":
            continue
        b = env.lookup(n.value, call.node)
        inner = N.as_call(b.value) if b is not None and b.value is not None else None
        root = (inner.callee_dotted() or "").split(".", 1)[0] if inner is not None else ""
        full = modules.get(root, "") if root else ""
        if full and full.split(".", 1)[0] not in LIBRARIES and "." in (inner.callee_dotted() or ""):
            out.append((call, b))
    return out


def _op_run_session(g: Graph, call: N.Call) -> Sess | None:
    """The session an ``op.run()`` runs in: ``session=sess``, else the innermost
    ``with tf.Session() as sess:`` around it (a Session is the default one in its block)."""
    arg = call.keyword("session")
    if arg is not None:
        name = N.dotted(arg.value)
        named = [s for s in g.sessions if s.name == name and s.scope is N.func_scope_of(call.node)]
        return named[-1] if named else None
    cur = call.node.parent
    while cur is not None and cur.type not in ("funcdef", "file_input"):
        if cur.type == "with_stmt":
            for s in g.sessions:
                if s.stmt is cur:
                    return s
        cur = cur.parent
    return None


def _runs_initializer(env: Env, call: N.Call) -> bool:
    """``init.run()`` with ``init = tf.global_variables_initializer()``, or the call inline."""
    receiver = "".join(p.get_code(include_prefix=False) for p in call.receiver_parts)
    if any(i in receiver for i in INITIALIZERS):
        return True
    b = env.lookup(call.receiver_dotted(), call.node) if call.receiver_dotted() else None
    return b is not None and b.value is not None and any(i in b.value.get_code(include_prefix=False) for i in INITIALIZERS)


def _is_initializer(env: Env, value, at) -> bool:
    text = value.get_code(include_prefix=False)
    if any(i in text for i in INITIALIZERS):
        return True
    name = N.dotted(value)
    b = env.lookup(name, at) if name else None
    return b is not None and b.value is not None and any(i in b.value.get_code(include_prefix=False) for i in INITIALIZERS)


def _fetches_train_op(g: Graph, value) -> bool:
    for n in N.walk(value):
        if n.type == "name" and n.value in g.train_ops:
            return True
        if n.type == "trailer" and len(n.children) == 2 and n.children[0] == "." and n.children[1].value in g.train_ops:
            return True
    return False


def range_bound(loop) -> object | None:
    """The `n` of ``for _ in range(n):`` (the count to divide), else None."""
    if loop is None or loop.type != "for_stmt":
        return None
    call = N.as_call(loop.children[3])
    if call is None or call.callee_dotted() != "range" or call.has_star() or len(call.args) != 1 \
            or call.args[0].keyword is not None:
        return None
    return call.args[0].value


def should_stop_loop(loop) -> bool:
    """``while not mon_sess.should_stop():`` — bounded by the session's stop hooks."""
    return loop is not None and loop.type == "while_stmt" and "should_stop()" in loop.children[1].get_code()


def _problems(env: Env, g: Graph) -> None:
    if env.horovod():
        return          # already distributed by hand: its own shape is not second-guessed
    reported: set[int] = set()
    for call, b in g.foreign[:1]:
        g.problems.append(Problem(
            "T1", call.node,
            f"`{call.receiver_dotted()}.run` trains with `{b.name}`, built by "
            f"`{N.as_call(b.value).callee_dotted()}` in another module: the optimizer to scale and wrap "
            "is not in this file (convert that module's optimizer, then this loop)",
            SESSION_RULES, region=env.source.module, related=[(b.stmt, f"`{b.name}` is built here")]))
    for run in g.runs:
        sess = run.session
        if sess is None:
            maker = _made_by(run.call)
            why = (f"comes from `{maker}`, a session this conversion does not manage (Supervisor, "
                   "SessionManager, a helper): use `tf.compat.v1.train.MonitoredTrainingSession` or a "
                   "`tf.compat.v1.Session` created in this file") if maker else (
                "is created elsewhere (another function, an attribute or a parameter) and the file has "
                "more than one session of that name or none")
            g.problems.append(Problem(
                "S1", run.call.node,
                f"`{run.call.receiver_dotted()}` runs the training step but the session {why}: the pinning "
                "and the broadcast after its initializer cannot be placed; create the session in the function that runs the step",
                SESSION_RULES, region=env.source.module))
            continue
        if sess.kind == "session" and not sess.inits and id(sess) not in reported:
            reported.add(id(sess))
            g.problems.append(Problem(
                "S2", sess.call.node,
                f"session `{sess.name or 'Session()'}` trains, but no `run` of the variables' initializer "
                "(`global_variables_initializer()`) or `Saver.restore` on it is found in the function that "
                "creates it: the initial broadcast has no place to go; run the initializer right after creating the session",
                SESSION_RULES, region=env.source.module, related=[(run.call.node, "the training step")]))
        loop = run.driver
        if loop is None or range_bound(loop) is not None or should_stop_loop(loop) \
                or "size()" in loop.children[1].get_code() or id(loop) in reported:
            continue
        reported.add(id(loop))
        g.problems.append(Problem(
            "S3", N.statement_of(run.call.node) if loop is None else _header_span(loop),
            "the loop running the training step is not `for _ in range(n)` nor "
            "`while not sess.should_stop()`: its step count cannot be divided by hvd.size() "
            "with every rank running the same number of steps; bound it by a step count (`for _ in range(n)`)",
            SESSION_RULES, region=env.source.module, related=[(run.call.node, "the training step")]))


def _made_by(call: N.Call) -> str | None:
    """``sv.managed_session()`` for ``with sv.managed_session() as sess: ... sess.run(...)``
    (or ``sess = sm.prepare_session(...)``): the call that made the receiver, in its function."""
    name = call.receiver_dotted()
    scope = N.func_scope_of(call.node)
    for node in N.walk(scope):
        if node.type == "with_item" and len(node.children) == 3 and N.dotted(node.children[2]) == name:
            made = N.as_call(node.children[0])
        elif node.type == "expr_stmt" and len(node.children) == 3 and node.children[1] == "=" \
                and N.dotted(node.children[0]) == name:
            made = N.as_call(node.children[2])
        else:
            continue
        if made is not None and made.callee_dotted():
            return made.callee_dotted() + "()"
    return None


def _header_span(loop):
    return header(loop)


def premade_problems(env: Env) -> list[Problem]:
    """Premade Estimators the conversion cannot distribute: boosted trees grow each rank's own
    ensemble (no gradients to average); a TF2 premade Estimator accepts a new Keras optimizer
    only by converting it to a legacy one, which it cannot do once ``hvd.DistributedOptimizer``
    wraps it ("Please set your optimizer as an instance of tf.keras.optimizers.legacy.Optimizer",
    seen on TF 2.15)."""
    out = []
    for b in env.with_role():
        call = N.as_call(b.value) if b.role == "estimator" else None
        if call is None:
            continue
        if b.detail == "model_to_estimator":
            out += _model_to_estimator_problems(env, b, call)
            continue
        if (b.detail or "").startswith("BoostedTrees"):
            out.append(Problem(
                "T2", call.node, f"`{b.detail}` trains gradient-boosted trees: each rank would grow its own "
                "ensemble; Horovod averages optimizer gradients, which boosted trees do not have",
                SESSION_RULES + ("HVD060", "HVD061"), region=env.source.module))
            continue
        dotted = call.callee_dotted() or ""
        root = dotted.split(".", 1)[0]
        if "compat.v1" in env.aliases.get(root, "") + "." + dotted:
            continue                  # TF1 premade Estimators take tf.train optimizers
        for kw in ("optimizer", "dnn_optimizer", "linear_optimizer"):
            arg = call.keyword(kw)
            value = arg.value if arg is not None else None
            inner = N.as_call(value) if value is not None else None
            if inner is None and value is not None and N.dotted(value):
                ob = env.lookup(N.dotted(value), call.node, "optimizer")
                inner = N.as_call(ob.value) if ob is not None else None
            q = env.callee_qualname(inner) if inner is not None else None
            if q and q.startswith("tensorflow.keras.optimizers.") and "legacy" not in (inner.callee_dotted() or ""):
                out.append(Problem(
                    "T2", value, f"TF2 `{b.detail}` takes legacy Keras optimizers only: wrapped in "
                    "hvd.DistributedOptimizer, this one is refused at train time (it is no longer converted "
                    f"to a legacy one); use `tf.keras.optimizers.legacy.{q.rsplit('.', 1)[-1]}`",
                    SESSION_RULES + ("HVD060", "HVD061"), region=env.source.module,
                    related=[(inner.node, "the optimizer")]))
    return out


LEGACY_KERAS = {"Adadelta", "Adagrad", "Adam", "Adamax", "Ftrl", "Nadam", "RMSprop", "SGD"}


def model_to_estimator_optimizers(env: Env, call: N.Call):
    """(compile call, optimizer value, constructor call or None) of each ``model.compile``
    that builds the model `call` (``model_to_estimator(keras_model=model)``) turns into an
    Estimator, in source order before it."""
    arg = call.keyword("keras_model") or call.positional(0)
    model = N.dotted(arg.value) if arg is not None else None
    for c in env.index.by_method.get("compile", ()):
        if c.method != "compile" or c.receiver_dotted() != model or c.node.start_pos > call.node.start_pos:
            continue
        opt = c.keyword("optimizer") or c.positional(0)
        if opt is None:
            continue
        inner = N.as_call(opt.value)
        if inner is None and N.dotted(opt.value):
            ob = env.lookup(N.dotted(opt.value), c.node, "optimizer")
            inner = N.as_call(ob.value) if ob is not None else None
        yield c, opt.value, inner


def legacy_spelling(env: Env, inner: N.Call) -> tuple[object, str] | None:
    """(name leaf, class) where ``legacy.`` goes to make a new Keras optimizer constructor
    (``tf.keras.optimizers.Adam``) the legacy one; None when it is not spelled that way."""
    q = env.callee_qualname(inner)
    dotted = inner.callee_dotted() or ""
    cls = dotted.rsplit(".", 1)[-1]
    if not (q and q.startswith("tensorflow.keras.optimizers.")) or "legacy" in dotted:
        return None
    if not dotted.endswith(".optimizers." + cls) or cls not in LEGACY_KERAS or inner.index < 2:
        return None
    last = inner.node.children[inner.index - 1]       # the ``.Adam`` trailer
    return last.children[1], cls


def _model_to_estimator_problems(env: Env, b, call: N.Call) -> list[Problem]:
    """``model_to_estimator`` rebuilds a new Keras optimizer as a legacy one from its config:
    a wrapped one silently loses ``hvd.DistributedOptimizer`` (ranks drift apart; seen on
    TF 2.15 with 2 ranks). The compiled optimizer must be a ``tf.keras.optimizers.legacy`` one:
    an optimizer name (``"adam"``) or ``tf.keras.optimizers.Adam(...)`` is converted to it
    (rules/optimizer.py); any other spelling of a new optimizer blocks."""
    from .roles import COMPILE_STRINGS
    out = []
    for c, value, inner in model_to_estimator_optimizers(env, call):
        shown = None
        if value.type == "string":
            if value.value.strip("'\"").lower() not in COMPILE_STRINGS:
                shown = value.get_code(include_prefix=False)
        else:
            q = env.callee_qualname(inner) if inner is not None else None
            if q and q.startswith("tensorflow.keras.optimizers.") and "legacy" not in (inner.callee_dotted() or "") \
                    and legacy_spelling(env, inner) is None:
                shown = inner.callee_dotted()
        if shown is not None:
            out.append(Problem(
                "T2", value, f"`model_to_estimator` rebuilds the compiled optimizer {shown} as a legacy Keras "
                "optimizer, which drops hvd.DistributedOptimizer (ranks would train apart); compile the model "
                "with a `tf.keras.optimizers.legacy.X(...)` optimizer",
                SESSION_RULES + ("HVD060", "HVD061", "HVD012"), region=env.source.module,
                related=[(call.node, "the Estimator is made from the model here")]))
    return out
