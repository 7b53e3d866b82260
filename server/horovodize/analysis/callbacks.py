"""Keras callbacks given to ``fit``: what each one is (the broadcast, the metric average, one
that steers training, one that writes files) and which callbacks a ``fit(callbacks=...)`` gets,
through lists built over several statements, helpers that return them and rebindings.

`CallbackFacts` is a part of `HvdFacts` (it reads the facts' assignments, Horovod API calls and
rank guards). Requires: env, effects (the program's own callbacks that write).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..parse import nodes as N
from .roles import canonical

KERAS_CALLBACKS = "tensorflow.keras.callbacks."
STEERING = frozenset({"EarlyStopping", "ReduceLROnPlateau", "LearningRateScheduler", "TerminateOnNaN"})
WRITING = frozenset({"ModelCheckpoint", "TensorBoard", "CSVLogger", "BackupAndRestore"})


@dataclass
class CallbackEntry:
    """One callback that ends up in a ``fit(callbacks=...)`` list."""

    node: object            # the callback expression (element of a list, argument of append)
    kind: str               # broadcast | metric_average | steering | writing | horovod | other
    guarded: bool           # only rank 0 gets it (appended under a rank guard, or a rank ternary)
    stmt: object = None     # the statement adding it, when built over several statements
    rank_specific: bool = False   # its arguments depend on the rank (per-rank log dirs)
    site: object = None     # the call of the helper that returns it (``cbs = get_callbacks()``):
                            # each call of it makes the callback anew


@dataclass
class CallbackList:
    entries: list[CallbackEntry] = field(default_factory=list)
    literals: list = field(default_factory=list)    # list displays that build it
    complete: bool = True                           # every contribution was understood


class CallbackFacts:
    """The callbacks part of `HvdFacts` (see the module docstring)."""

    def callback_kind(self, node, at=None, depth: int = 0) -> str:
        call = N.as_call(node)
        if call is None:
            name = N.dotted(node)
            if name and depth < 3:
                # a name assigned once, or several times with callbacks of one kind
                # (`cp_callback = ModelCheckpoint(...)` twice in one script)
                values = [v for _s, v, op in self.assignments(name, at or node) if not op and v is not None]
                kinds = {self.callback_kind(v, v, depth + 1) for v in values}
                if len(kinds) == 1:
                    return kinds.pop()
            return "other"
        api = self.api(call)
        if api == "callbacks.BroadcastGlobalVariablesCallback":
            return "broadcast"
        if api == "callbacks.MetricAverageCallback":
            return "metric_average"
        if api is not None:
            return "horovod"
        q = canonical(self.env.callee_qualname(call)) or ""
        last = q.rsplit(".", 1)[-1] if q.startswith(KERAS_CALLBACKS) else ""
        if last in STEERING:
            return "steering"
        if last in WRITING:
            return "writing"
        if not q and self.effects.writing_callback(call.callee_dotted()):
            return "writing"      # the program's own callback whose methods only write
        if not q and depth < 3 and self._writing_base(call.callee_dotted()):
            return "writing"      # the program's own subclass of TensorBoard, ModelCheckpoint...
        if depth < 3 and self.returned_callback(call) is not None:
            return "writing"      # a helper of the program returning one (`create_model_checkpoint(name)`)
        return "other"

    def returned_callback(self, call):
        """The callback constructor call (``tf.keras.callbacks.ModelCheckpoint(...)``) whose
        writing callback the program's own function `call` runs returns, through a name bound
        in it (``create_tensorboard_callback(dir, name)`` returning ``tensorboard_callback``),
        when every ``return`` of it returns one; else None. (A helper returning a list of
        callbacks is followed by `callback_list` instead.)"""
        target = self.env.call_target(call)
        if target is None or target.type != "funcdef":
            return None
        returns = [r for r in N.walk(target) if r.type == "return_stmt"
                   and N.enclosing(r, {"funcdef", "lambdef"}) is target]
        made = []
        for r in returns:
            value = r.children[1] if len(r.children) > 1 else None
            inner = N.as_call(value) if value is not None else None
            if inner is None and value is not None and value.type == "name":
                values = [v for _s, v, op in self.assignments(value.value, r) if not op and v is not None]
                inner = N.as_call(values[0]) if len(values) == 1 else None
            if inner is None or inner.node is not N.unparen(inner.node) or self.env.call_target(inner) is not None \
                    or self.callback_kind(inner.node, inner.node, 3) != "writing":
                return None
            made.append(inner)
        return made[0] if made else None

    def schedule_function(self, call):
        """The function (``def`` or ``lambda``) a ``LearningRateScheduler(schedule)`` call
        sets the rate with: given inline, by the name of a local ``def``, or by a name bound
        once to a lambda (``schedule = lambda epoch: ...``); else None."""
        arg = call.keyword("schedule") or call.positional(0)
        value = N.unparen(arg.value) if arg is not None else None
        if value is not None and value.type == "name":
            fn = self.env.function_named(value.value, call.node)
            if fn is not None:
                return fn
            values = [v for _s, v, op in self.assignments(value.value, call.node) if not op and v is not None]
            value = N.unparen(values[0]) if len(values) == 1 else None
        return value if value is not None and value.type == "lambdef" else None

    def epoch_scheduler(self, fit):
        """The ``LearningRateScheduler`` among `fit`'s callbacks whose schedule reads the
        epoch it is given (``lambda epoch: 1e-4 * 10**(epoch/20)``: a learning-rate sweep, one
        rate per epoch) or the rate (``lambda epoch, lr: lr * 0.95``: a decay at each epoch's
        start), or None: such a fit's epochs are what the schedule counts."""
        arg = fit.keyword("callbacks") or (fit.positional(5) if fit.method == "fit" else None)
        for entry in self.callback_list(arg.value, fit.node).entries if arg is not None else ():
            if entry.kind != "steering":
                continue
            made = [N.as_call(entry.node)] if N.as_call(entry.node) is not None else [
                N.as_call(v) for _s, v, op in self.assignments(N.dotted(entry.node) or "", entry.node)
                if v is not None and not op]
            for call in made:
                q = (canonical(self.env.callee_qualname(call)) or "") if call is not None else ""
                fn = self.schedule_function(call) if q.endswith(".LearningRateScheduler") else None
                try:
                    params = [p.name.value for p in fn.get_params()] if fn is not None else []
                except Exception:  # noqa: BLE001 - an error-recovered signature
                    params = []
                if params and any(n.type == "name" and n.value in params[:2] for n in N.walk(fn.children[-1])):
                    return call
        return None

    def _writing_base(self, name: str | None) -> bool:
        """`name` is a class of the program derived from a Keras callback that writes
        (``class TensorBoardWithLearningRate(TensorBoard)``: it writes as its base does)."""
        cls = next((c for c in self.env.index.classdefs if name and c.name.value == name), None)
        if cls is None or cls.children[2] != "(" or cls.children[3].type == "operator":
            return False
        bases = cls.children[3].children if cls.children[3].type == "arglist" else [cls.children[3]]
        for base in bases:
            q = canonical(self.env.qualname(base)) if base.type in ("name", "atom_expr", "power") else None
            if q and q.startswith(KERAS_CALLBACKS) and q.rsplit(".", 1)[-1] in WRITING:
                return True
        return False

    def callback_list(self, value, at) -> CallbackList:
        """The callbacks a ``fit(callbacks=<value>)`` gets, through names built over several
        statements (``cbs = [...]``, ``cbs.append(x)`` under ``if hvd.rank() == 0:``,
        ``cbs += [...]``, ``cbs if hvd.rank() == 0 else []``)."""
        out = CallbackList()
        self._collect_callbacks(value, at, out, guarded=False, depth=0)
        return out

    def reaching_assignments(self, name: str, at):
        """The assignments (statement, value, op) of `name` whose list a read at `at` may see,
        and where the last plain rebinding in `at`'s block starts (`_last_rebinding`): those
        before `at` (all of them when `at` is in a loop), not the statement `at` is part of
        (``cbs = cbs + [x]`` reads the list bound before it). None when the name is not bound
        by statements of this file (a parameter)."""
        assigns = [a for a in self.assignments(name, at)
                   if a[0] is None or not a[0].start_pos <= at.start_pos < a[0].end_pos]
        if not assigns or any(s is None for s, _v, _o in assigns):
            return None
        since = _last_rebinding(assigns, at)
        return [(stmt, v, op) for stmt, v, op in assigns
                if not (stmt.start_pos > at.start_pos and not _in_loop(at) or since and stmt.start_pos < since)], since

    def callback_heads(self, value, at, depth: int = 0) -> list | None:
        """The list displays a ``fit(callbacks=<value>)`` list starts from: one per plain binding
        of the name that can reach `at` (``cbs = [...]``, and another ``cbs = [...]`` under an
        ``if``: two), through ``cbs = base + [...]`` to ``base``'s display. None when one of them
        is something else (a helper's return, a parameter, a tuple, a ternary) or is bound on
        some ranks only."""
        if value is None or depth > 4:
            return None
        t = value.type
        if t == "atom" and value.children[0] == "[":
            return [value]
        if t == "arith_expr" and value.children[1] == "+":
            return self.callback_heads(value.children[0], at, depth + 1)
        call = N.as_call(value)
        if call is not None:
            if call.callee_dotted() == "list" and len(call.args) == 1 and call.args[0].keyword is None:
                return self.callback_heads(call.args[0].value, at, depth + 1)
            return None
        name = N.dotted(value)
        found = self.reaching_assignments(name, at) if name is not None else None
        if found is None:
            return None
        heads = []
        for stmt, v, op in found[0]:
            if op:
                continue
            if self.under_rank_guard(stmt) or N.assign_parts(stmt) is None:
                return None
            more = self.callback_heads(v, stmt, depth + 1)
            if more is None:
                return None
            heads += [h for h in more if h not in heads]
        return heads or None

    def _collect_callbacks(self, value, at, out: CallbackList, guarded: bool, depth: int, site=None) -> None:
        if value is None or depth > 4:
            out.complete = False
            return
        t = value.type
        if t == "keyword" and value.value == "None":
            return
        if t == "atom" and value.children[0] in ("[", "("):
            if value.children[0] == "[":
                out.literals.append(value)
            for el in _elements(value):
                self._add_entry(el, out, guarded, None, site)
            return
        if t == "test":            # a if cond else b
            rank = self.is_rank_test(value.children[2])
            branches = []
            for branch in (value.children[0], value.children[4]):
                sub = CallbackList()
                self._collect_callbacks(branch, at, sub, guarded or rank, depth + 1, site)
                out.literals += sub.literals
                out.complete &= sub.complete
                branches.append(sub.entries)
            # a callback in both branches (`common + rank0 if hvd.rank() == 0 else common`) is on every rank
            both = {id(e.node) for e in branches[0]} & {id(e.node) for e in branches[1]}
            if both:            # their own guard only: collect again without the ternary's
                plain = CallbackList()
                self._collect_callbacks(value.children[0], at, plain, guarded, depth + 1, site)
                flags = {id(e.node): e.guarded for e in plain.entries}
                for e in branches[0]:
                    if id(e.node) in both:
                        e.guarded = flags.get(id(e.node), e.guarded)
            out.entries += branches[0] + [e for e in branches[1] if id(e.node) not in both]
            return
        if t == "arith_expr":
            for c in value.children:
                if c.type != "operator":
                    self._collect_callbacks(c, at, out, guarded, depth + 1, site)
            return
        call = N.as_call(value)
        if call is not None and call.callee_dotted() in ("list", "tuple") and call.args:
            self._collect_callbacks(call.args[0].value, at, out, guarded, depth + 1, site)
            return
        target = self.env.call_target(call) if call is not None else None
        if target is not None and target.type == "funcdef":
            # `callbacks=get_callbacks(args)`: the lists the helper returns (users' code)
            returns = [r for r in N.walk(target) if r.type == "return_stmt"
                       and N.enclosing(r, {"funcdef", "lambdef"}) is target]
            if not returns or any(len(r.children) < 2 for r in returns):
                out.complete = False
                return
            for r in returns:
                self._collect_callbacks(r.children[1], r, out, guarded or self.under_rank_guard(r), depth + 1,
                                        site or call.node)
            return
        name = N.dotted(value)
        if name is None:
            out.complete = False
            return
        found = self.reaching_assignments(name, at)
        if found is None:
            out.complete = False     # a parameter, or not built in this file
            return
        assigns, since = found
        scope = N.func_scope_of(self.assignments(name, at)[0][0])
        for stmt, v, op in assigns:
            g = guarded or self.under_rank_guard(stmt)
            self._collect_callbacks(v, stmt, out, g, depth + 1, site)
        for method in ("append", "extend", "insert"):
            for call in self.env.index.by_method.get(method, ()):
                if call.method != method or call.receiver_dotted() != name or N.func_scope_of(call.node) is not scope:
                    continue
                if call.node.start_pos > at.start_pos and not _in_loop(at) or since and call.node.start_pos < since:
                    continue
                stmt = N.statement_of(call.node)
                g = guarded or self.under_rank_guard(call.node)
                arg = call.positional(1 if method == "insert" else 0)
                if arg is None:
                    continue
                if method == "extend":
                    self._collect_callbacks(arg.value, call.node, out, g, depth + 1, site)
                else:
                    self._add_entry(arg.value, out, g, stmt, site)

    def _add_entry(self, node, out: CallbackList, guarded: bool, stmt, site=None) -> None:
        if node.type == "star_expr":
            out.complete = False
            return
        call = N.as_call(node)
        rank_specific = bool(call and any(self.rank_dependent(a.value) for a in call.args))
        out.entries.append(CallbackEntry(node, self.callback_kind(node, node), guarded, stmt, rank_specific, site))


def _last_rebinding(assigns: list, at):
    """Where the list a ``fit(callbacks=name)`` at `at` reads was last bound anew: the start of the
    last plain ``name = ...`` before it in `at`'s own block (one experiment's list rebound for the
    next: ``callbacks = [...]`` before each fit), so earlier lists and their appends are not it;
    None when every binding may reach it (a loop, or a rebinding under a condition)."""
    if _in_loop(at):
        return None
    block = N.simple_stmt_of(N.statement_of(at) or at)
    block = block.parent if block is not None else None
    last = None
    for stmt, _v, op in assigns:
        if op or stmt.start_pos > at.start_pos:
            continue
        holder = N.simple_stmt_of(stmt)
        if holder is not None and holder.parent is block:
            last = stmt.start_pos
    return last


def _in_loop(node) -> bool:
    return N.enclosing(node, {"for_stmt", "while_stmt"}) is not None


def _elements(atom) -> list:
    if len(atom.children) < 3:
        return []
    inner = atom.children[1]
    if inner.type in ("testlist_comp", "exprlist", "testlist"):
        if any(c.type in ("sync_comp_for", "comp_for") for c in inner.children):
            return []
        return [c for c in inner.children if not (c.type == "operator" and c.value == ",")]
    return [inner]
