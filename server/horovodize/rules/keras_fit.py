"""Keras ``fit`` rules: broadcast the initial state with
``hvd.callbacks.BroadcastGlobalVariablesCallback(0)`` first, then
``hvd.callbacks.MetricAverageCallback()`` (as Horovod's guide does; not when the ``History``
fit returns is dumped to JSON: its averaged logs are numpy float32), steering callbacks on every
rank and writing callbacks on rank 0 only (HVD050); progress output on rank 0 only (HVD051):
``verbose`` of ``fit``/``evaluate``/``predict`` and of the steering callbacks that run on every
rank (``EarlyStopping(verbose=1)``), and ``tqdm``/``trange`` bars (``disable=hvd.rank() != 0``).

``fit_generator`` (deprecated, still in Keras 2.15) is treated as ``fit``, with its own
positions of ``verbose`` and ``callbacks``.

Requires: env (model bindings, or a name the file calls ``compile`` on), loop (flavour).
"""

from __future__ import annotations

import re
from typing import Iterator

from ..analysis.bindings import holds_other_model
from ..parse import nodes as N
from ..parse.imports import import_bindings, import_names
from ..parse.source import Edit
from .base import Finding, Fix, RuleContext, finding, mentions_hvd, report_note, under_rank0_guard
from . import keras3_adapters
from .keras_target import METRIC_AVERAGE, metric_average_class
from .rank0_guards import put_on_rank0
from .setup_imports import after_setup, tf_name

RULES = {
    "HVD050": ("broadcast-callback", "Broadcast initial variables with a Horovod callback"),
    "HVD051": ("rank0-verbose", "Show progress on rank 0 only"),
}
# Keras Model.fit(x, y, batch_size, epochs, verbose, callbacks, ...)
VERBOSE_POS, CALLBACKS_POS = 4, 5
# where ``verbose`` sits among the positionals of the other progress-printing model methods
OTHER_VERBOSE_POS = {"evaluate": 3, "predict": 2}
# callbacks that run on every rank (they steer training) and print when verbose
STEERING_VERBOSE = ("EarlyStopping", "ReduceLROnPlateau", "LearningRateScheduler")
TQDM = frozenset({"tqdm", "trange", "tqdm.tqdm", "tqdm.trange", "tqdm.auto.tqdm", "tqdm.auto.trange",
                  "tqdm.notebook.tqdm", "tqdm.notebook.trange"})
LOW_PRECEDENCE = ("test", "lambdef", "namedexpr_test")


# Keras 2 Model.fit_generator(generator, steps_per_epoch, epochs, verbose, callbacks, ...)
GENERATOR_VERBOSE_POS, GENERATOR_CALLBACKS_POS = 3, 4


def fit_calls(ctx: RuleContext, generators: bool = False) -> Iterator[N.Call]:
    """Every ``model.fit(...)`` on something the file knows to be a Keras model, not on a
    scikit-learn or statsmodels object the same name holds there (and, with
    `generators`, every ``model.fit_generator(...)``: deprecated, still in Keras 2.15)."""
    compiled = {c.receiver_dotted() for c in ctx.calls("compile")}
    calls = ctx.calls("fit") + ctx.calls("fit_generator") if generators else ctx.calls("fit")
    for call in sorted(calls, key=lambda c: c.node.start_pos) if generators else calls:
        receiver = call.receiver_dotted()
        if call.method not in ("fit", "fit_generator"):
            continue
        if receiver and (ctx.env.lookup(receiver, call.node, "model") or receiver in compiled) \
                and not holds_other_model(ctx.env, receiver, call.node):
            yield call


def _positions(call: N.Call) -> tuple[int, int]:
    """(verbose, callbacks) positional indexes of a fit or fit_generator call."""
    if call.method == "fit_generator":
        return GENERATOR_VERBOSE_POS, GENERATOR_CALLBACKS_POS
    return VERBOSE_POS, CALLBACKS_POS


def model_calls(ctx: RuleContext, method: str) -> Iterator[N.Call]:
    """Every ``model.<method>(...)`` on something the file knows to be a Keras model."""
    compiled = {c.receiver_dotted() for c in ctx.calls("compile")}
    for call in ctx.calls(method):
        receiver = call.receiver_dotted()
        if call.method == method and receiver and (ctx.env.lookup(receiver, call.node, "model") or receiver in compiled) \
                and not holds_other_model(ctx.env, receiver, call.node):
            yield call


def check(ctx: RuleContext) -> Iterator[Finding]:
    fits = list(fit_calls(ctx, generators=True))
    lists = _callback_lists(ctx, fits)
    for call in fits:
        if call.has_star():
            _unpacked(ctx, call)
            continue
        yield from _callbacks(ctx, call, lists)
        yield from _verbose(ctx, call, _positions(call)[0])
    if not ctx.summary.sites:
        return
    for method, pos in OTHER_VERBOSE_POS.items():
        for call in model_calls(ctx, method):
            if not call.has_star() and not under_rank0_guard(call.node, ctx):
                yield from _verbose(ctx, call, pos, f"every rank prints {method} progress")
    yield from _steering_verbose(ctx)
    yield from _tqdm(ctx)


def _unpacked(ctx: RuleContext, call: N.Call) -> None:
    """``model.fit(**params)``: its callbacks and verbose come from the unpacked arguments,
    which the conversion does not edit; the report says so (points 2, 6, 7) instead of
    "nothing to change"."""
    if ctx.blocked("HVD050", call.node) or ctx.facts.uses_horovod:   # (by hand: its params may hold them)
        return
    what = call.node.get_code(include_prefix=False).split("(", 1)[0]
    text = (f"`{what}(...)` takes its arguments unpacked (`*`/`**`), which the conversion does not edit: add "
            f"{ctx.hvd}.callbacks.BroadcastGlobalVariablesCallback(0) first in its callbacks and verbose=0 on "
            "ranks other than 0, or pass callbacks= and verbose= by name")
    for point in (2, 6, 7):
        report_note(ctx, point, call.node, text)


def _steering_verbose(ctx: RuleContext) -> Iterator[Finding]:
    """``EarlyStopping(verbose=1)`` runs on every rank (it steers training): its messages
    are rank 0's (a writing callback such as ``ModelCheckpoint`` is on rank 0 only, HVD050)."""
    for name in STEERING_VERBOSE:
        for call in ctx.calls(name):
            q = ctx.env.callee_qualname(call) or ""
            arg = call.keyword("verbose")
            if not q.endswith("callbacks." + name) or arg is None or under_rank0_guard(call.node, ctx):
                continue
            yield from _verbose(ctx, call, None, f"every rank prints {name}'s messages", keep_missing=True)


def _tqdm(ctx: RuleContext) -> Iterator[Finding]:
    """A ``tqdm``/``trange`` bar on rank 0 only: ``disable=hvd.rank() != 0``."""
    hvd = ctx.hvd
    tqdm_names = _imported_from(ctx, "tqdm")
    if not tqdm_names:
        return
    for name in ("tqdm", "trange"):
        for call in ctx.calls(name):
            dotted = call.callee_dotted()
            if dotted not in TQDM or call.has_star() or under_rank0_guard(call.node, ctx) \
                    or ctx.blocked("HVD051", call.node):
                continue
            if dotted.split(".")[0] not in tqdm_names:
                continue          # not imported from tqdm (a local function named tqdm)
            arg = call.keyword("disable")
            if arg is None:
                edits = ctx.add_keyword(call, f"disable={hvd}.rank() != 0")
            elif mentions_hvd(arg.value, ctx) or ctx.facts.rank_dependent(arg.value) \
                    or arg.value.get_code(include_prefix=False) == "True":
                continue
            else:
                edits = _paren(ctx, arg.value, "", f" or {hvd}.rank() != 0")
            yield finding(ctx, "HVD051", call.node, "every rank draws the progress bar",
                          Fix("Show the progress bar on rank 0 only", edits))


def _arg(call: N.Call, name: str, pos: int):
    return call.keyword(name) or call.positional(pos)


def _paren(ctx: RuleContext, node, text_before="", text_after="") -> list[Edit]:
    """Rewrite an argument value as one replacement, not a prefix and a suffix insertion.

    A suffix insertion at the end of the last argument would share its offset with the
    other rule's ``, keyword=...`` insertion at that point, and the order of insertions
    at one offset is the order of the findings: ``verbose=0`` followed by a new
    ``callbacks=`` came out as ``verbose=0, callbacks=[...] if hvd.rank() == 0 else 0``.
    A replacement of ``[start, end)`` always sorts before an insertion at ``end``.
    """
    start, end = ctx.source.span(node)
    value = ctx.source.text[start:end]
    if node.type in LOW_PRECEDENCE:
        value = f"({value})"
    return [Edit(start, end, f"{text_before}{value}{text_after}")]


class _Lists:
    """The callbacks of every fit (`HvdFacts.callback_list`) and, for each list display and each
    callback made once (or each call of the helper making it), the fits it reaches."""

    def __init__(self):
        self.of: dict[int, object] = {}          # id(fit node) -> CallbackList
        self.reach: dict[int, list] = {}         # id(display or callback) -> [fit calls]

    def add(self, key, call: N.Call) -> None:
        fits = self.reach.setdefault(id(key), [])
        if call not in fits:
            fits.append(call)


def _callback_lists(ctx: RuleContext, fits: list) -> _Lists:
    lists = _Lists()
    for call in fits:
        arg = None if call.has_star() else _arg(call, "callbacks", _positions(call)[1])
        if arg is None or arg.value.type == "keyword" and arg.value.value == "None":
            continue
        cbs = lists.of[id(call.node)] = ctx.facts.callback_list(arg.value, call.node)
        for literal in cbs.literals:
            lists.add(literal, call)
        for entry in cbs.entries:
            lists.add(entry.site or entry.node, call)
    return lists


def _own(ctx: RuleContext, call: N.Call, made, lists: _Lists, first_served: bool = False) -> bool:
    """The callbacks made at `made` (a list display, a callback, the call of a helper returning
    them) serve the model of `call` alone: made in the call itself, or every fit they reach is
    a fit of that same model object. Horovod's ``BroadcastGlobalVariablesCallback`` broadcasts
    once per instance (``broadcast_done``), so one instance given to the fit of a second model
    (one list for two experiments; a list made before a loop that builds a model per fold)
    leaves that model with each rank's own weights. With `first_served` (a broadcast the
    program already has), the fits after `call` do not count: the instance is `call`'s first."""
    if N.inside(made, call.node):
        return True
    fits = lists.reach.get(id(made), [call])
    return all(_same_model(ctx, call, other, made, not first_served) for other in fits
               if other is call or not first_served or other.node.start_pos < call.node.start_pos)


def _same_model(ctx: RuleContext, a: N.Call, b: N.Call, made, strict: bool = True) -> bool:
    """Fits `a` and `b` (maybe the same call, run again in a loop) train one model object with
    the callbacks made at `made`: one receiver name in one function, bound by no statement
    between them, nor in a loop around either that does not make the callbacks anew, nor
    (`strict`, the callbacks made outside the function) anywhere in the function, which may
    run again with another model (not held against a broadcast the program already has: the
    callers that would are not in sight)."""
    receiver = a.receiver_dotted()
    scope = N.func_scope_of(a.node)
    if receiver is None or receiver != b.receiver_dotted() or N.func_scope_of(b.node) is not scope:
        return False
    binds = _bindings(ctx, receiver, a.node)
    if binds is None:
        return False
    if strict and N.func_scope_of(made) is not scope and binds and scope.type != "file_input":
        return False
    lo, hi = sorted((a.node.start_pos, b.node.start_pos))
    if any(lo < p < hi for p in binds):
        return False
    for fit in (a, b):
        loop = N.loop_around(fit.node)
        while loop is not None and not N.inside(made, loop):
            if any(loop.start_pos <= p < loop.end_pos for p in binds):
                return False
            loop = N.loop_around(loop)
    return True


def _bindings(ctx: RuleContext, receiver: str, at) -> list | None:
    """Where `receiver`, read at `at`, is bound in its function (assignments, loop targets,
    ``with ... as``, parameters) or, for ``self.x``, in its class: start positions; None for a
    receiver this cannot follow (``a.b`` other than ``self.x``)."""
    if "." in receiver:
        if not receiver.startswith("self.") or receiver.count(".") != 1:
            return None
        return [stmt.start_pos for stmt, _v, _op in ctx.facts.assignments(receiver, at) if stmt is not None]
    scope = N.func_scope_of(at)
    return [leaf.start_pos for leaf in ctx.env.index.names.get(receiver, ())
            if leaf.is_definition() and N.func_scope_of(leaf) is scope]


def _callbacks(ctx: RuleContext, call: N.Call, lists: _Lists) -> Iterator[Finding]:
    """Callbacks as Horovod's guide orders them: the broadcast first, callbacks that steer
    training (EarlyStopping, ReduceLROnPlateau, ...) on every rank, callbacks that write
    (ModelCheckpoint, TensorBoard, CSVLogger, BackupAndRestore) on rank 0 only — for a list
    given inline or built over several statements (`ctx.facts.callback_list`).

    Each fit gets a broadcast callback of its own model (`_own`): in the list displays it starts
    from when they serve that model alone, else ahead of the list at the call."""
    if ctx.blocked("HVD050", call.node):
        return
    hvd, facts = ctx.hvd, ctx.facts
    broadcast = f"{hvd}.callbacks.BroadcastGlobalVariablesCallback(0)"
    adapter: list[Edit] = []       # the keras3 target: the adapter class's (rules/keras3_adapters.py)
    if ctx.keras_target == "keras3":
        name, adapter = keras3_adapters.use(ctx, "BroadcastGlobalVariablesCallback")
        broadcast = f"{name}(0)"
    # an elastic state broadcasts on every (re)start: its warm-up fit(callbacks=None) is right
    elastic = any(facts.api(c).startswith("elastic.") for c in facts.broadcasts)
    arg = _arg(call, "callbacks", _positions(call)[1])
    # the metrics averaged over the ranks at each epoch's end, as Horovod's guide has it (the
    # History, the progress rank 0 shows, the logs a steering callback reads), unless the History
    # is serialised (Horovod's averaged logs are numpy float32: json.dump would fail)
    averaged = not _history_serialised(ctx, call)
    if not averaged:
        report_note(ctx, 6, call.node, "done, but without MetricAverageCallback: the History this fit returns is "
                    "dumped to JSON or YAML, and Horovod's averaged logs are numpy float32, which json.dump "
                    "rejects; each rank's History and progress show its own share's metrics")
    edits: list[Edit] = []
    spent = False           # the list's broadcast already ran for another model
    if arg is None or arg.value.type == "keyword" and arg.value.value == "None":
        if not elastic:
            first = broadcast
            if averaged:
                average, edits = _metric_average(ctx)
                first += f", {average}" if average else ""
            if arg is None:
                edits += ctx.add_keyword(call, f"callbacks=[{first}]")
            else:
                start, end = ctx.source.span(arg.value)
                edits.append(Edit(start, end, f"[{first}]"))
    else:
        cbs = lists.of[id(call.node)]
        broadcasts = [e for e in cbs.entries if e.kind == "broadcast"]
        own = [e for e in broadcasts if _own(ctx, call, e.site or e.node, lists, first_served=True)]
        spent = bool(broadcasts) and not own
        has_broadcast = elastic or bool(own) or (not cbs.complete and mentions_hvd(arg.value, ctx))
        heads = _heads(ctx, arg.value, call, cbs)
        base = heads if heads and all(_own(ctx, call, h, lists) for h in heads) else None
        if not has_broadcast:
            # The user's callbacks see metrics averaged over the ranks, so a steering callback
            # (EarlyStopping on `loss`, ReduceLROnPlateau) decides the same on every rank.
            first = [broadcast]
            if (cbs.entries or not cbs.complete or averaged) and \
                    not any(e.kind == "metric_average" for e in cbs.entries):
                average, class_edits = _metric_average(ctx)
                first += [average] if average else []
                edits += class_edits
            if base is not None:
                for head in base:
                    edits += _prepend(ctx, head, first)
            elif heads and cbs.complete:
                # lists that other models' fits share: this fit's own broadcast ahead of it
                edits += _paren(ctx, arg.value, f"[{', '.join(first)}] + ")
            elif _one_callback(ctx, arg.value):
                # `callbacks=EarlyStopping(...)`: Keras takes one callback alone; list() of it would fail
                start, end = ctx.source.span(arg.value)
                writer = _writer(ctx, arg.value)
                head, tail = (f"[{', '.join(first)}, *([", f"] if {ctx.hvd}.rank() == 0 else [])]") if writer \
                    else (f"[{', '.join(first)}, ", "]")
                edits += [Edit(start, start, head), Edit(end, end, tail)]
                cbs = type(cbs)()           # (its rank-0 guard is in the list just made)
            else:  # composition unknown here: broadcast first, the user's callbacks on every rank
                edits += _paren(ctx, arg.value, f"[{', '.join(first)}] + list(", " or [])")
        for entry in cbs.entries:
            # (an append of a writing callback goes on rank 0 whatever else the list holds: one
            # that starts from a caller's list, ``callbacks = self.callbacks or []``, included)
            if entry.kind == "writing" and not entry.guarded and not entry.rank_specific and (
                    cbs.complete or base is not None or entry.stmt is not None):
                edits += _rank0_entry(ctx, entry)
    if not edits:
        return
    if any(broadcast in e.new_text for e in edits):
        edits = adapter + edits
    message = ("fit does not broadcast the initial variables from rank 0"
               if any(broadcast in e.new_text for e in edits)
               else "a callback that writes files runs on every rank")
    if spent and any(broadcast in e.new_text for e in edits):
        message = ("the broadcast callback in its list already ran for another model (Horovod's callback "
                   "broadcasts once): this model would start from each rank's own weights")
    yield finding(ctx, "HVD050", call.node, message, Fix(RULES["HVD050"][1], edits))


def _made_once(ctx: RuleContext, value):
    """The value a name is bound to, when it is a name bound once before `value`, else None."""
    if value.type != "name":
        return None
    found = [b for b in ctx.env.bindings if b.name == value.value and b.stmt.start_pos < value.start_pos]
    return N.unparen(found[0].value) if len(found) == 1 and found[0].value is not None else None


def _writer(ctx: RuleContext, value) -> bool:
    """The one callback `value` makes (or names) writes files (TensorBoard, ModelCheckpoint,
    CSVLogger, a callback of the file that writes): rank 0's alone."""
    value = _made_once(ctx, value) or value
    return ctx.facts.callback_kind(value, value) == "writing"


def _one_callback(ctx: RuleContext, value) -> bool:
    """`value` constructs one Keras callback (``tf.keras.callbacks.EarlyStopping(...)``, a class
    of the file deriving from a ``Callback``), not a list of them."""
    if value.type == "name":         # ``cb = tf.keras.callbacks.TensorBoard(...)``; ``callbacks=cb``
        made = _made_once(ctx, value)
        return made is not None and _one_callback(ctx, made)
    call = N.as_call(value)
    if call is None or call.node is not value:
        return False
    q = ctx.env.callee_qualname(call) or ""
    if ".callbacks." in q:
        return True
    cls = next((c for c in ctx.env.index.classdefs if c.name.value == call.callee_dotted()), None)
    bases = cls.children[3] if cls is not None and cls.children[2] == "(" else None
    return bases is not None and bases.type != "operator" and "Callback" in bases.get_code()


def _metric_average(ctx: RuleContext) -> tuple[str | None, list[Edit]]:
    """The metric-average callback and the edits it needs: Horovod's on the tf.keras target; on
    the tf_keras target (TF >= 2.16) Horovod's dies (it calls Keras 3's backend), so a small
    class goes once after the set-up (`keras_target.metric_average_class`), or none when there
    is no module-level set-up to put it after."""
    if ctx.keras_target == "keras3":
        name, edits = keras3_adapters.use(ctx, "MetricAverageCallback")
        return f"{name}()", edits
    if ctx.keras_target != "tf_keras":
        return f"{ctx.hvd}.callbacks.MetricAverageCallback()", []
    at = after_setup(ctx)
    if at is None:
        return None, []
    name = METRIC_AVERAGE
    while name in ctx.env.index.names:
        name += "_"
    keras = next((local for node in ctx.env.imports if node.parent.parent is ctx.source.module
                  for local, full in import_bindings(node)
                  if full in ("tf_keras", "keras", "keras_core", "tensorflow.keras")), None)
    text = metric_average_class(name, keras or f"{tf_name(ctx)}.keras", ctx.hvd, tf_name(ctx),
                                ctx.source.indent_unit)
    blank = re.match(r"(?:[ \t]*(?:\r\n|\r|\n))*", ctx.source.text[at:]).group().count("\n") if at < len(ctx.source.text) else 2
    text += "\n" * max(0, 2 - blank)       # two blank lines below it, with the file's own
    return f"{name}()", [Edit(at, at, ctx.lines(text, ""))]


def _history_serialised(ctx: RuleContext, call: N.Call) -> bool:
    """``history = model.fit(...)`` whose ``history`` is dumped to JSON/YAML after the statement:
    Horovod's averaged logs are numpy float32 (``json.dump`` raises TypeError), so that History
    keeps the rank's own Python floats."""
    stmt = call.node.parent
    if stmt is None or stmt.type != "expr_stmt" or stmt.children[-1] is not call.node or len(stmt.children) != 3 \
            or stmt.children[1] != "=" or stmt.children[0].type != "name":
        return False
    name = stmt.children[0].value
    reads = [leaf for leaf in ctx.env.index.names.get(name, ()) if leaf.start_pos > stmt.end_pos and not _rebinds(leaf)]
    return any(_serialised(leaf) for leaf in reads)


SERIALISERS = ("json.dump", "json.dumps", "yaml.dump", "yaml.safe_dump")


def _serialised(leaf) -> bool:
    """The name is (part of) an argument of a JSON/YAML dump."""
    node = leaf.parent
    while node is not None and node.type not in ("simple_stmt", "suite", "file_input"):
        call = N.as_call(node)
        if call is not None and call.callee_dotted() in SERIALISERS:
            return True
        node = node.parent
    return False


def _rebinds(leaf) -> bool:
    """The name is the target of a plain assignment (``history = other``), not a read."""
    parent = leaf.parent
    return parent is not None and parent.type == "expr_stmt" and parent.children[0] is leaf \
        and len(parent.children) > 1 and parent.children[1] == "="


def _heads(ctx: RuleContext, value, call: N.Call, cbs) -> list | None:
    """The list displays the callbacks start from (the broadcast goes first in them): inline, or
    each ``cbs = [...]`` that every rank runs and that can reach the fit (`HvdFacts.callback_heads`)."""
    if value.type == "atom" and value.children[0] == "[":
        return [value]
    if not cbs.complete or N.dotted(value) is None:
        return None
    return ctx.facts.callback_heads(value, call.node)


def _prepend(ctx: RuleContext, literal, items: list[str]) -> list[Edit]:
    src = ctx.source
    text = ", ".join(items)
    open_end = src.offset(literal.children[0].end_pos)
    elements = [] if len(literal.children) < 3 else [literal.children[1]]
    if not elements:
        return [Edit(open_end, open_end, text)]
    first = literal.children[1]
    first = first.children[0] if first.type in ("testlist_comp",) else first
    first_start = src.offset(first.start_pos)
    if src.line_start(first_start) != src.line_start(open_end) and not src.text[open_end:src.line_end(open_end)].strip():
        # one element per line: a line of its own right after the bracket (above any comment)
        line = src.line_end(open_end)
        indent = src.indent_of(first)
        return [Edit(line, line, "".join(f"{indent}{item},{ctx.nl}" for item in items))]
    return [Edit(open_end, open_end, f"{text}, ")]


def _rank0_entry(ctx: RuleContext, entry) -> list[Edit]:
    """A writing callback on rank 0 only: its ``append`` statement under a guard, or the list
    element unpacked from ``[cb] if hvd.rank() == 0 else []``."""
    hvd = ctx.hvd
    if entry.stmt is not None:
        edit = ctx.guard_rank0(entry.stmt)
        return [edit] if edit is not None else []
    start, end = ctx.source.span(entry.node)
    return [Edit(start, end, f"*([{ctx.source.text[start:end]}] if {hvd}.rank() == 0 else [])")]


def _imported_from(ctx: RuleContext, package: str) -> set[str]:
    """Local names the file's imports bind to `package` or something in it."""
    out = set()
    for node in ctx.env.imports:
        if node.type == "import_name":
            for dotted_node, alias in import_names(node):
                full = dotted_node.get_code(include_prefix=False).replace(" ", "")
                if full == package or full.startswith(package + "."):
                    out.add(alias or full.split(".")[0])
        else:
            out |= {local for local, full in import_bindings(node) if full.split(".")[0] == package}
    return out


def _verbose(ctx: RuleContext, call: N.Call, pos: int | None = VERBOSE_POS,
             message: str = "every rank prints fit progress", keep_missing: bool = False) -> Iterator[Finding]:
    if ctx.blocked("HVD051", call.node) or any(N.inside(call.node, s) for s in put_on_rank0(ctx)):
        return          # (a print of evaluate(...) that HVD030 puts on rank 0)
    hvd = ctx.hvd
    arg = call.keyword("verbose") or (call.positional(pos) if pos is not None else None)
    if arg is None and keep_missing:
        return
    if arg is None:
        edits = ctx.add_keyword(call, f"verbose=1 if {hvd}.rank() == 0 else 0")
    elif ctx.facts.rank_dependent(arg.value) or mentions_hvd(arg.value, ctx) \
            or arg.value.get_code(include_prefix=False) in ("0", "False"):
        return  # already rank-dependent, or silent on every rank
    else:
        edits = _paren(ctx, arg.value, "", f" if {hvd}.rank() == 0 else 0")
    yield finding(ctx, "HVD051", call.node, message, Fix(RULES["HVD051"][1], edits))
