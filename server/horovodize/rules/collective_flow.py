"""Collective control flow (contract point 10, HVD080): a loop exit or a branch around the
training step must decide the same on every rank. A ``break`` or ``return`` out of a loop
that runs a collective (the averaged tape step, a Horovod-wrapped optimizer, ``fit``, an
allreduce), that loop's ``while`` test, or an ``if`` whose branch runs one, tested on a
value that differs between ranks (a running reward, a loss or metric of this rank's data,
anything drawn from ``env.step``, a random generator, the data) makes ranks run different
numbers of allreduces: the ones still training wait forever (or Horovod shuts down).

The fix makes the decision collective, in Horovod's idiom for metrics: each per-rank
operand ``v`` of a comparison in the test becomes its average over the ranks,
``hvd.allreduce(tf.cast(v, tf.float32), op=hvd.Average)`` (a tensor: ``tf.cast`` takes a
Python number, a NumPy scalar or a tensor, inside and outside ``tf.function``; the result
compares with Python and NumPy numbers). Every rank sees the same average, so all leave
the loop at the same iteration. Only comparisons are rewritten: a per-rank flag tested
bare (``while not done:``) is not (its average is not a decision).

Per-rank values are found by a flow-insensitive pass over the loop's function (and the
module): sources are the results of the training step (a call of a function that trains,
names assigned under a training tape), model calls, ``env.step``/``reset``, metric
``result()``, ``evaluate``/``predict``/``*_on_batch``/``fit``, random draws, ``next()`` and
the elements of a dataset; a value computed from one (``+=``, arithmetic, ``append``,
``statistics.mean``), or assigned under a per-rank test (``if val_loss < best: wait = 0``),
is per-rank; a Horovod collective's result is not. A constant, a
``range`` counter, a step counter, ``hvd.size()`` are the same on every rank.

Requires: env (bindings, call targets), loop (sites, functions that train), facts (Horovod
APIs already called).
"""

from __future__ import annotations

from typing import Iterator

from ..parse import nodes as N
from ..parse.source import Edit
from .base import Finding, Fix, Related, RuleContext, finding, report_note, under_rank0_guard

RULES = {"HVD080": ("per-rank-loop-exit", "Decide on the average over ranks")}
# Method calls whose result is this rank's own (data, environment, metric state).
SOURCE_METHODS = frozenset({"step", "reset", "result", "evaluate", "predict", "predict_on_batch",
                            "train_on_batch", "test_on_batch", "fit", "sample"})
RANDOM_PREFIXES = ("np.random.", "numpy.random.", "random.", "tf.random.")
# Horovod calls whose result is the same on every rank (it shields what flows into it).
SHARED_APIS = frozenset({"allreduce", "grouped_allreduce", "broadcast", "broadcast_object", "allgather",
                         "size", "local_size", "cross_size"})
COLLECTIVE_APIS = frozenset({"allreduce", "grouped_allreduce", "broadcast", "broadcast_object", "allgather",
                             "broadcast_variables", "broadcast_global_variables", "join", "alltoall"})
COMPARE = frozenset({"<", ">", "<=", ">=", "==", "!="})
APPENDERS = frozenset({"append", "extend", "insert", "add", "appendleft"})
LOOPS = ("for_stmt", "while_stmt")
# nodes that hold statements (what the per-rank pass walks through)
STATEMENTS = (N.COMPOUND - {"funcdef", "classdef", "decorated", "async_funcdef"}) | {
    "simple_stmt", "suite", "if_stmt", "else_clause", "except_clause", "case_block"}


def check(ctx: RuleContext) -> Iterator[Finding]:
    if not ctx.summary.sites and not ctx.facts.averages_gradients:
        return
    tf = ctx.env.tf_alias()
    if tf is None:
        return
    loops, branches = _around_collectives(ctx)
    tests: dict[int, tuple] = {}          # id(test) -> (test, its loop or if, a collective under it)
    for loop, witness in loops.values():
        if loop.type == "while_stmt":
            tests.setdefault(id(loop.children[1]), (loop.children[1], loop, witness))
        for test in _exit_tests(loop, loops):
            tests.setdefault(id(test), (test, loop, witness))
    for if_stmt, branch, witness in branches:
        for test in _tests_before(if_stmt, branch):
            tests.setdefault(id(test), (test, if_stmt, witness))
    flows: dict[int, _PerRank] = {}       # (each flow holds it: cleared after, no cycle to collect)
    try:
        yield from _hangs(ctx, tf, tests, flows)
    finally:
        flows.clear()


def _hangs(ctx: RuleContext, tf: str, tests: dict, flows: dict) -> Iterator[Finding]:
    for test, around, witness in sorted(tests.values(), key=lambda t: t[0].start_pos):
        if under_rank0_guard(test, ctx) or ctx.blocked("HVD080", test):
            continue
        scope = N.func_scope_of(test)
        flow = flows.get(id(scope)) or _PerRank(ctx, scope, flows)
        operands = [op for op in _compared(test) if flow.expr(op)]
        if not operands:
            if flow.expr(test):
                _note(ctx, test)
            continue
        edits: list[Edit] = []
        for op in operands:
            edits += ctx.wrap(op, f"{ctx.hvd}.allreduce({tf}.cast(", f", {tf}.float32), op={ctx.hvd}.Average)")
        names = ", ".join(f"`{ctx.source.code(op)}`" for op in operands[:2])
        what = "leaves the loop" if around.type in LOOPS else "runs the training step"
        message = (f"{names} differs between ranks: each rank {what} on its own value, and the others "
                   "wait in the allreduce (hang)")
        related = [Related(*ctx.source.span(witness), "this runs a collective every rank must reach")]
        yield finding(ctx, "HVD080", test, message, Fix(RULES["HVD080"][1], edits), related=related)


def _note(ctx: RuleContext, test) -> None:
    """A per-rank test this rule cannot rewrite (a flag, not a comparison): the report says
    point 10 is not done, and why."""
    report_note(ctx, 10, test, f"`{ctx.source.code(test)}` differs between ranks and is not a comparison: make the "
                f"decision collective by hand (e.g. `{ctx.hvd}.broadcast_object(flag, root_rank=0)` of rank 0's flag)")


def _around_collectives(ctx: RuleContext):
    """The loops that run a collective ({id: (loop, the collective)}) and the ``if`` branches
    that do ([(if_stmt, branch, the collective)]), in the collective's own function: a
    training site, a Horovod collective already in the program, a call of a function that
    trains."""
    points = [s.node for s in ctx.summary.sites]
    points += [c.node for api in COLLECTIVE_APIS for c in ctx.facts.api_calls.get(api, ())]
    for fn, tl in ctx.summary.functions.items():
        if tl:
            points += [c.node for c in ctx.env.callers(fn)]
    loops: dict[int, tuple] = {}
    branches: dict[int, tuple] = {}
    for point in sorted(points, key=lambda n: n.start_pos):
        cur = point
        while cur.parent is not None and cur.type not in ("funcdef", "lambdef", "classdef"):
            parent = cur.parent
            if parent.type in LOOPS:
                loops.setdefault(id(parent), (parent, point))
            elif parent.type == "if_stmt" and cur.type in ("suite", "simple_stmt") and cur is not parent.children[1]:
                branches.setdefault(id(cur), (parent, cur, point))
            cur = parent
    return loops, list(branches.values())


def _exit_tests(loop, loops: dict) -> list:
    """The tests that decide a ``break`` (out of `loop` itself) or a ``return`` (out of the
    function, `loop` being the outermost loop around it that runs a collective)."""
    out = []
    scope = N.enclosing(loop, {"funcdef", "lambdef", "classdef"})
    for node in N.walk(loop):
        # (parso keeps a bare ``break`` / ``return`` as its keyword leaf)
        kind = node.value if node.type == "keyword" and node.value in ("break", "return") else \
            "return" if node.type == "return_stmt" else None
        if kind is None or node.parent is None or (node.type == "keyword" and node.parent.type == "return_stmt"):
            continue
        if kind == "break" and N.loop_around(node) is not loop:
            continue
        if kind == "return":
            if N.enclosing(node, {"funcdef", "lambdef", "classdef"}) is not scope:
                continue
            outer = [lp for lp in _loops_around(node) if id(lp) in loops]
            if not outer or outer[-1] is not loop:
                continue
        out += _governing_tests(node, loop)
    return out


def _loops_around(node) -> list:
    """The for/while statements around `node` in its function, innermost first."""
    out, cur = [], node.parent
    while cur is not None and cur.type not in ("funcdef", "classdef", "lambdef", "file_input"):
        if cur.type in LOOPS:
            out.append(cur)
        cur = cur.parent
    return out


def _governing_tests(node, stop) -> list:
    """The ``if``/``elif`` tests that decide whether `node` runs, up to `stop`."""
    out, cur = [], node
    while cur.parent is not None and cur.parent is not stop:
        parent = cur.parent
        if parent.type == "if_stmt" and cur is not parent.children[1]:
            out += _tests_before(parent, cur)
        cur = parent
    return out


def _tests_before(if_stmt, branch) -> list:
    """The tests of an ``if`` chain evaluated before `branch` runs (its own included)."""
    ch = if_stmt.children
    tests = []
    for i, child in enumerate(ch):
        if child is branch:
            break
        if i >= 1 and ch[i - 1] in ("if", "elif"):
            tests.append(child)
    return tests


def _compared(test) -> list:
    """The operands of numeric comparisons in `test` (not inside a lambda or a call)."""
    out = []
    todo = [test]          # (a stack, not a recursive closure: that is a cycle for the collector)
    while todo:
        node = todo.pop()
        if node.type == "comparison":
            ops = node.children[1::2]
            if all(getattr(op, "value", None) in COMPARE for op in ops):
                out.extend(node.children[0::2])
            continue
        if node.type in ("or_test", "and_test", "not_test", "atom"):
            todo.extend(reversed(node.children))
    return out


class _PerRank:
    """Names of one scope that hold a per-rank value (see the module docstring)."""

    def __init__(self, ctx: RuleContext, scope, flows: dict):
        self.ctx = ctx
        self.scope = scope
        self.flows = flows
        self.names: set[str] = set()
        self.assigned: set[str] = set()
        self.tapes = [s.node for s in ctx.summary.sites if s.node.type == "with_stmt"]
        flows[id(scope)] = self      # (a name from the module asks the module's flow)
        facts = []
        self._collect(scope.children[-1] if scope.type == "funcdef" else scope, facts)
        # a worklist: a fact is asked again only when a name it reads became per-rank
        readers: dict[str, list[int]] = {}
        for i, (_targets, value, _kind, conds) in enumerate(facts):
            stack = [value, *conds]
            while stack:
                node = stack.pop()
                if node.type == "name":
                    readers.setdefault(node.value, []).append(i)
                else:
                    stack += getattr(node, "children", ())
        todo = list(range(len(facts)))
        while todo:
            targets, value, kind, conds = facts[todo.pop()]
            if all(t in self.names for t in targets):
                continue
            if kind == "source" or (kind == "iter" and self.iterable(value)) or \
                    (kind == "value" and self.expr(value)) or any(self.expr(c) for c in conds):
                for name in set(targets) - self.names:
                    self.names.add(name)
                    todo += readers.get(name, ())

    # -- what the scope assigns --------------------------------------------------------
    def _collect(self, node, facts: list) -> None:
        for child in getattr(node, "children", ()):
            t = child.type
            if t in ("funcdef", "classdef", "lambdef", "decorated", "async_funcdef"):
                continue
            if t == "expr_stmt":
                self._assignment(child, facts)
            elif t == "for_stmt":
                names = _names(child.children[1])
                self.assigned |= set(names)
                iterable = child.children[3]
                call = N.as_call(iterable)
                if call is not None and call.callee_dotted() == "enumerate" and call.positional(0) is not None:
                    target = child.children[1]
                    parts = [c for c in target.children if c != ","] if target.type == "exprlist" else []
                    if len(parts) == 2:       # ``for i, batch in enumerate(data)``: i counts
                        names = _names(parts[1])
                        iterable = call.positional(0).value
                facts.append((names, iterable, "iter", self._conds(child)))
            elif t in ("atom_expr", "power"):
                call = N.as_call(child)
                if call is not None and call.method in APPENDERS and call.args:
                    target = call.receiver_dotted()
                    if target and "." not in target:
                        facts.append(([target], call.trailer, "value", self._conds(child)))
            if t in STATEMENTS:
                self._collect(child, facts)    # (statements only: not into expressions)

    def _assignment(self, stmt, facts: list) -> None:
        parts = N.assign_parts(stmt)
        under_tape = bool(self.tapes) and any(N.inside(stmt, w) for w in self.tapes)
        if parts is not None:
            targets, value = parts
            names = [n for t in targets for n in _names(t)]
            self.assigned |= set(names)
            source = under_tape and not all(leaf.type in ("number", "string", "keyword", "operator")
                                            for leaf in _leaves(value))
            facts.append((names, value, "source" if source else "value", self._conds(stmt)))
        elif len(stmt.children) == 3 and stmt.children[1].type == "operator" and stmt.children[1].value.endswith("="):
            names = _names(stmt.children[0])          # ``x += v``: x keeps its own taint too
            self.assigned |= set(names)
            facts.append((names, stmt.children[2], "value", self._conds(stmt)))

    def _conds(self, stmt) -> list:
        """The ``if`` tests deciding whether `stmt` runs (in this scope): a value assigned
        under a per-rank test is per-rank (``if val_loss < best: wait = 0``)."""
        return _governing_tests(stmt, self.scope)

    # -- per-rank expressions ----------------------------------------------------------
    def name(self, name: str) -> bool:
        if name in self.names:
            return True
        module = self.ctx.source.module
        if self.scope is module or name in self.assigned:
            return False
        flow = self.flows.get(id(module))
        if flow is None:
            flow = _PerRank(self.ctx, module, self.flows)
        return name in flow.names

    def iterable(self, node) -> bool:
        """Iterating `node` gives this rank's own elements: its data, or a per-rank value."""
        if self.expr(node):
            return True
        root = node.children[0] if node.type in ("atom_expr", "power") else node
        return root.type == "name" and self.ctx.env.lookup(root.value, node, "dataset") is not None

    def expr(self, node) -> bool:
        t = node.type
        if t == "name":
            return self.name(node.value)
        if t in ("number", "string", "keyword", "operator", "lambdef"):
            return False
        if t in ("atom_expr", "power"):
            return self._chain(node)
        if t == "argument":
            ch = node.children
            return self.expr(ch[-1]) if len(ch) == 3 and ch[1] == "=" else any(self.expr(c) for c in ch)
        return any(self.expr(c) for c in getattr(node, "children", ()))

    def _chain(self, node) -> bool:
        """``a.b(x)[i].c()``: per-rank when a call in it is a source or takes a per-rank
        value, or its root is per-rank; a Horovod collective's result is shared."""
        ctx = self.ctx
        children = node.children
        last_shared = -1
        for i, child in enumerate(children):
            if i and N.is_call_trailer(child):
                call = N.Call(node, i)
                if ctx.facts.api(call) in SHARED_APIS:
                    last_shared = i
        if last_shared >= 0:
            rest = children[last_shared + 1:]
            return any(self._trailer(c) for c in rest)
        if children[0].type != "name" and self.expr(children[0]):
            return True
        if children[0].type == "name" and children[0].value != "await" and self.name(children[0].value):
            return True
        for i, child in enumerate(children):
            if not (i and N.is_call_trailer(child)):
                if i and self._trailer(child):
                    return True
                continue
            call = N.Call(node, i)
            if self._source(call):
                return True
            if any(self.expr(a.value) for a in call.args):
                return True
        return False

    def _trailer(self, trailer) -> bool:
        if trailer.type != "trailer" or trailer.children[0] == ".":
            return False
        return any(self.expr(c) for c in trailer.children[1:-1])

    def _source(self, call: N.Call) -> bool:
        ctx = self.ctx
        if call.method in SOURCE_METHODS:
            return True
        dotted = call.callee_dotted() or ""
        if dotted == "next" or dotted.startswith(RANDOM_PREFIXES):
            return True
        if dotted and "." not in dotted and ctx.env.lookup(dotted, call.node, "model") is not None:
            return True       # ``model(x)``: this rank's predictions
        if dotted.startswith("self.") and ctx.env.lookup(dotted, call.node, "model") is not None:
            return True
        target = ctx.env.call_target(call)
        return target is not None and bool(ctx.summary.functions.get(target))


def _names(target) -> list[str]:
    """Plain names bound by an assignment or ``for`` target (``a``, ``a, (b, c)``, ``[a, b]``)."""
    if target.type == "name":
        return [target.value]
    if target.type in ("exprlist", "testlist_star_expr", "testlist", "atom", "testlist_comp", "star_expr"):
        return [n for c in target.children for n in _names(c)]
    return []


def _leaves(node) -> Iterator:
    if not hasattr(node, "children"):
        yield node
        return
    for child in node.children:
        yield from _leaves(child)
