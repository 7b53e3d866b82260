"""Which GradientTapes train: a tape's gradients are averaged (HVD020) only when they
reach an optimizer (``apply_gradients``, ``minimize``, Keras 3 ``optimizer.apply``) or a
hand-written descent step (``w.assign_sub(lr * g)``).

A WGAN-GP gradient-penalty tape, a saliency map or a printed gradient also calls
``tape.gradient``; averaging those would add a collective per step (and, inside a
``tf.function``, one the ranks may not all reach) for nothing. The flow is followed
through the file: assignments (tuple targets, comprehensions, ``for`` targets), calls to
local functions (argument to parameter), ``return`` to the callers, mutating methods
(``acc.append(g)``, ``acc[i].assign_add(g)``) into their receiver. Another tape's
``gradient`` is a barrier: the penalty's gradient flows into the critic's loss, whose
own gradient is what reaches the optimizer.

A tape whose ``gradient`` is never called in its scope (the tape handed elsewhere) keeps
the old answer, training, so nothing that used to be averaged silently stops being.

`optimizer_steps` lists the ``apply_gradients`` calls a tape's gradients reach, as written
(``self.checkpoint.optimizer.apply_gradients(...)`` too, whose receiver σ cannot name): the
steps whose variables HVD021 broadcasts once the tape is averaged.

Requires: env (index, call targets, parameters). Provides: `is_training_tape`, `optimizer_steps`,
`gradient_inside` (where a with block takes its gradients), `single_target`.
"""

from __future__ import annotations

from ..parse import nodes as N
from ..parse.scopes import is_name_use
from .env import Env

SINKS = ("apply_gradients", "minimize", "assign_sub")     # assign_sub: a hand-written SGD step
# Methods that put their argument into their receiver (the receiver then carries it).
MUTATORS = ("append", "extend", "insert", "assign", "assign_add", "add", "update", "write")
_LIMIT = 400            # flow steps per tape: a generous bound on pathological files


def is_training_tape(env: Env, tape) -> bool:
    """Do the gradients of `tape` (an env tape binding) reach an optimizer?"""
    memo = env.__dict__.setdefault("_training_tapes", {})
    key = id(tape)
    if key not in memo:
        try:
            memo[key] = _Flow(env).tape(tape)
        except (AttributeError, IndexError, ValueError, RecursionError):
            memo[key] = True      # an error-recovered tree: keep the old answer (wrap it)
    return memo[key]


def optimizer_steps(env: Env, tape, methods: tuple = ("apply_gradients",)) -> list:
    """The ``apply_gradients`` calls (or those of other `methods`: Keras 3's ``apply``) the
    gradients of `tape` reach (every path followed, not only the first that trains), in
    source order."""
    memo = env.__dict__.setdefault("_optimizer_steps", {})
    key = (id(tape), methods)
    if key not in memo:
        flow = _Flow(env, collect=True)
        try:
            flow.tape(tape)
        except (AttributeError, IndexError, ValueError, RecursionError):
            pass          # an error-recovered tree: what was found so far
        found = {id(c.node): c for c in flow.sinks if c.method in methods}
        memo[key] = sorted(found.values(), key=lambda c: c.node.start_pos)
    return memo[key]


class _Flow:
    def __init__(self, env: Env, collect: bool = False):
        self.env = env
        self.seen: set = set()
        self.steps = 0
        # collect: record every sink reached and keep looking (`optimizer_steps`)
        self.sinks: list | None = [] if collect else None

    def tape(self, tape) -> bool:
        scope = N.func_scope_of(tape.stmt)
        grads = [c for c in self.env.index.by_method.get("gradient", ())
                 if c.method == "gradient" and c.receiver_dotted() == tape.name
                 and N.func_scope_of(c.node) is scope]
        if not grads:
            return True
        return any(self.value(c.node) for c in grads)

    # -- following a value upwards ------------------------------------------------------
    def value(self, node) -> bool:
        """Does the value of expression `node` reach a sink?"""
        if id(node) in self.seen or self.steps > _LIMIT:
            return False
        self.seen.add(id(node))
        self.steps += 1
        child, cur = node, node.parent
        while cur is not None:
            t = cur.type
            if t == "trailer" and N.is_call_trailer(cur):
                call = N.Call(cur.parent, cur.parent.children.index(cur))
                verdict = self.argument(call, child)
                if verdict is not None:
                    return verdict
                child, cur = call.node, call.node.parent      # the call's result carries it on
                continue
            if t == "expr_stmt":
                return self.assigned(cur, child)
            if t == "return_stmt":
                return self.returned(cur)
            if t == "for_stmt" and len(cur.children) > 3 and cur.children[3] is child:
                return any(self.name(n, cur) for n in _target_names(cur.children[1]))
            if t in ("simple_stmt", "suite", "file_input", "funcdef", "classdef", "lambdef",
                     "if_stmt", "while_stmt", "with_stmt", "decorator"):
                return False
            child, cur = cur, cur.parent
        return False

    def argument(self, call: N.Call, child):
        """The verdict when the value is (in) an argument of `call`, or None to keep going."""
        method = call.method
        if method in SINKS or (method == "apply" and _optimizer_like(self.env, call)):
            if self.sinks is not None:
                self.sinks.append(call)
                return False      # (this path ends here; the others are followed too)
            return True
        if method == "gradient":
            return False           # a new gradient (of a loss the value is part of): a barrier
        if method in MUTATORS:
            receiver = call.receiver_dotted()
            root = _root_name(call) if receiver is None else receiver
            if root:
                return self.name(root, call.node)
        target = self.env.call_target(call)
        if target is not None and target.type == "funcdef":
            param = _parameter_for(self.env, target, call, child)
            if param is not None and self.name(param, target.children[-1], scope=target):
                return True
            return self.value(call.node) if _returns_something(self.env, target) else False
        return None

    def assigned(self, stmt, child) -> bool:
        ch = stmt.children
        if len(ch) >= 2 and ch[1].type == "operator" and ch[1].value.endswith("=") and ch[1].value != "=":
            return self.name(N.dotted(ch[0]) or "", stmt)          # ``acc += g``
        parts = N.assign_parts(stmt)
        if parts is None:
            return False
        targets, value = parts
        if not _inside(child, value):
            return False
        names = [n for tg in targets for n in _target_names(tg)]
        return any(self.name(n, stmt) for n in names)

    def returned(self, ret) -> bool:
        fn = N.enclosing(ret, {"funcdef", "lambdef"})
        if fn is None or fn.type != "funcdef":
            return False
        return any(self.value(call.node) for call in self.env.callers(fn))

    # -- following a name to its uses ---------------------------------------------------
    def name(self, name: str, at, scope=None) -> bool:
        """Does any use of `name` (bound at `at`) reach a sink?"""
        if not name:
            return False
        scope = scope or (N.enclosing(at, {"classdef"}) if name.startswith("self.") else N.func_scope_of(at))
        key = (name, id(scope))
        if key in self.seen:
            return False
        self.seen.add(key)
        root, _, attr = name.partition(".")
        for leaf in self.env.index.names.get(root, ()):
            if not is_name_use(leaf) or not _inside(leaf, scope):
                continue
            node = leaf
            if attr:
                nxt = leaf.get_next_sibling()
                if nxt is None or nxt.type != "trailer" or nxt.children[0] != "." or nxt.children[1].value != attr:
                    continue
                node = _prefix(leaf.parent, 2)
            elif not name.startswith("self") and scope.type == "file_input" and _shadowed(self.env, leaf, root):
                continue
            if _is_target(node):
                continue
            if self.value(node):
                return True
        return False


def _prefix(atom, n):
    """``self.x`` of ``self.x[i].assign_add(g)``: the atom itself when nothing follows."""
    return atom if len(atom.children) == n else _Part(atom, n)


class _Part:
    """The first `n` children of an atom_expr, standing in for the node while walking up."""

    def __init__(self, atom, n):
        self.parent, self.type, self.atom, self.n = atom, "part", atom, n
        self.children = atom.children[:n]


def _is_target(node) -> bool:
    """Is `node` the assignment's target (``grads = ...``), not a use?"""
    leaf = node.atom if isinstance(node, _Part) else node
    cur = leaf
    while cur.parent is not None and cur.parent.type in ("testlist_star_expr", "atom", "exprlist", "testlist_comp"):
        cur = cur.parent
    parent = cur.parent
    if isinstance(node, _Part):
        return False
    if parent is not None and parent.type == "expr_stmt":
        ch = parent.children
        return len(ch) >= 3 and any(ch[i] is cur for i in range(0, len(ch) - 1, 2)) and ch[1] == "="
    if parent is not None and parent.type == "for_stmt" and parent.children[1] is cur:
        return True
    return False


def _shadowed(env: Env, leaf, name: str) -> bool:
    """A module name used inside a function that binds (or takes) the same name."""
    fn = N.enclosing(leaf, {"funcdef"})
    return fn is not None and (name in env.param_names(fn) or bool(env.bindings_of(name, fn)))


def _target_names(target) -> list[str]:
    """``a`` / ``a, (b, c)`` / ``self.x`` / ``acc[i]`` (its root) of an assignment target."""
    if target.type == "name":
        return [target.value]
    if target.type in ("testlist_star_expr", "exprlist", "testlist_comp", "atom"):
        return [n for c in target.children if c.type != "operator" for n in _target_names(c)]
    if target.type == "star_expr":
        return _target_names(target.children[1])
    d = N.dotted(target)
    if d is not None:
        return [d] if d.count(".") <= 1 else [d.split(".")[0]]
    if target.type in ("atom_expr", "power") and target.children[0].type == "name":
        first = target.children[0].value
        if first == "self" and len(target.children) > 1 and target.children[1].type == "trailer" \
                and target.children[1].children[0] == ".":
            return [f"self.{target.children[1].children[1].value}"]
        return [first]
    return []


def _root_name(call: N.Call) -> str | None:
    """``acc`` / ``self.acc`` of ``acc[i].assign_add(g)``."""
    first = call.node.children[0]
    if first.type != "name":
        return None
    ch = call.node.children
    if first.value == "self" and len(ch) > 2 and ch[1].type == "trailer" and ch[1].children[0] == ".":
        return f"self.{ch[1].children[1].value}"
    return first.value


def _optimizer_like(env: Env, call: N.Call) -> bool:
    """Keras 3's ``optimizer.apply(grads, vars)``: the receiver is an optimizer."""
    receiver = call.receiver_dotted() or ""
    if env.lookup(receiver, call.node, "optimizer") is not None:
        return True
    return receiver.rsplit(".", 1)[-1].lower().endswith(("optimizer", "opt"))


def _parameter_for(env: Env, fn, call: N.Call, child) -> str | None:
    """The parameter of `fn` that the argument holding `child` is passed to."""
    params = env.param_names(fn)
    bound = env.is_method(fn) and call.method is not None and call.receiver_dotted() not in env.all_classes
    positional = 0
    for arg in call.args:
        if _inside(child, arg.node):
            if arg.star:
                return None
            if arg.keyword is not None:
                return arg.keyword if arg.keyword in params else None
            i = positional + (1 if bound else 0)
            return params[i] if i < len(params) else None
        if arg.keyword is None and not arg.star:
            positional += 1
    return None


def _returns_something(env: Env, fn) -> bool:
    return any(len(r.children) > 1 for r in env.index.returns.get(id(fn), ()))


def _inside(node, ancestor) -> bool:
    cur = node.atom if isinstance(node, _Part) else node
    while cur is not None:
        if cur is ancestor:
            return True
        cur = cur.parent
    return False


__all__ = ["is_training_tape", "optimizer_steps"]


def single_target(stmt) -> str | None:
    """`grads` of ``grads = tape.gradient(...)``."""
    small = stmt.children[0] if stmt.type == "simple_stmt" else stmt
    parts = N.assign_parts(small) if small.type == "expr_stmt" else None
    if parts and len(parts[0]) == 1 and parts[0][0].type == "name":
        return parts[0][0].value
    return None


def gradient_inside(tape, with_stmt):
    """The statement of the with block that calls ``tape.gradient`` (gradients taken inside
    the block): they are averaged right after it, since wrapping after the block is too late."""
    suite = with_stmt.children[-1]
    for call in N.calls_in(suite):
        if call.method == "gradient" and call.receiver_dotted() == tape.name:
            stmt = N.statement_of(call.node)
            while stmt.parent is not None and stmt.parent.type == "simple_stmt":
                stmt = stmt.parent
            if N.enclosing(stmt, {"funcdef", "lambdef"}) is N.enclosing(with_stmt, {"funcdef", "lambdef"}):
                return stmt
    return None
