"""Bindings: which names hold an object of a role, found from assignments, ``with`` items,
member aliases (``Adam = tf.optimizers.Adam``) and Keras model classes, keyed by scope.

Part of the environment pass (`env.build_env` calls these in source order).

Requires: parse (nodes, scopes), analysis.roles; the `Env` being built. Provides:
`member_aliases`, `collect_classes`, `bound_names`, `bind_assignment`, `bind_with_item`;
once it is built, `reaching` and `holds_other_model` (what a name holds at a call).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..incremental import keep
from ..parse import nodes as N
from ..parse.imports import import_bindings
from ..parse.scopes import (
    TERNARY,
    choices,
    class_bases,
    conditional_ancestor,
    is_module_import_call,
    loop_ancestor,
)
from .roles import Binding

if TYPE_CHECKING:                 # (annotations only: env imports this module)
    from ..parse.index import Index
    from .env import Env


# -- member aliases (R2, R3) -------------------------------------------------------------
def member_aliases(env: Env) -> None:
    """``Adam = tf.optimizers.Adam`` / ``keras = tf.keras`` / ``t = tf``: resolved, so the
    sites reached through them are found, and recorded for R2/R3 (which block them)."""
    for stmt, name, value, src in env.index.kept("member_aliases", _alias_candidates):
        if src is None:                 # ``t = importlib.import_module("tensorflow")``
            env.module_aliases[name] = stmt
            env.aliases[name] = "tensorflow"
            env.tf_names.add(name)
            continue
        q = env.qualname(value)
        if not q or not q.startswith("tensorflow") or src == name:
            continue
        if q == "tensorflow":            # ``t = tf``, ``tf = tf.compat.v1``: the module itself
            root, _, rest = src.partition(".")
            full = env.aliases[root] + ("." + rest if rest else "")
            env.module_aliases[name] = stmt
            env.tf_names.add(name)
            env.aliases[name] = full
            env.tf1 = env.tf1 or full.startswith("tensorflow.compat.v1")
        elif "." in src:
            env.member_aliases[name] = stmt
            env.aliases[name] = q
    env._callee_q.clear()      # the aliases are final from here on
    env._alias_gen = keep.alias_generation(env)


def _alias_candidates(index: Index) -> list:
    """(stmt, name, value, dotted value or None for a module import call) of the
    ``name = a.b`` / ``name = import_module(...)`` assignments: the statement alone decides."""
    out = []
    for stmt, _owner in index.assignments:
        parts = N.assign_parts(stmt)
        if parts is None:
            continue
        targets, value = parts
        if len(targets) != 1 or targets[0].type != "name":
            continue
        src = N.dotted(value)
        if src is not None or is_module_import_call(value):
            out.append((stmt, targets[0].value, value, src))
    return out


def collect_classes(env: Env) -> None:
    """Keras model subclasses, directly or through another summarised class (in order)."""
    for node, name, bases in env.index.kept("class_shapes", _class_shapes):
        env.all_classes[name] = node
        local = []
        for d in bases:
            if d in env.all_classes and d != name:
                local.append(d)
            if d in env.classes or env._resolve(d) in ("tensorflow.keras.Model", "tensorflow.keras.Sequential"):
                env.classes[name] = node
        env.class_bases[name] = local


def _class_shapes(piece: Index) -> list:
    """(classdef, name, dotted name of each base) of a piece's classes (`Index.kept`)."""
    return [(node, node.name.value, [N.dotted(value) for value in class_bases(node)]) for node in piece.classdefs]


# -- assignments -----------------------------------------------------------------------
def bind_assignment(env: Env, stmt, owner, memo: dict, roles: keep.StaticRoles):
    """Add the statement's bindings; the names its roles read from other bindings (None
    when no role was read from them)."""
    shape = _shape_of(env, memo, stmt, owner)
    if shape is _NOT_BOUND:
        return None
    value, call, targets = shape
    static = roles.of(call, stmt, memo) if call is not None and targets else keep.DYNAMIC
    if static is not keep.DYNAMIC:
        for target in targets:
            _bind(env, stmt, value, target, static)
        return None
    if not targets or (call is None and not choices(value)):
        for target in targets:           # (a plain value: no role)
            _bind(env, stmt, value, target, None)
        return None
    kept = roles.kept(stmt, memo)
    if kept is not None:
        for target, role in zip(targets, kept[1]):
            _bind(env, stmt, value, target, role)
        return kept[0]
    found = []
    with keep.reading(env) as deps:
        for target in targets:   # (each target's role is found after the previous is bound)
            if call is not None:
                role = env.role_of_call(call, stmt) or _returned_role(env, call)
            else:
                role = _ternary_role(env, value, stmt)
            found.append(role)
            _bind(env, stmt, value, target, role)
    roles.keep(stmt, memo, targets, found, deps)
    return deps


def _bind(env: Env, stmt, value, target, role) -> None:
    name, scope, stop, plain = target
    if role is not None:
        cond = value if value.type in TERNARY else conditional_ancestor(stmt, stop)
        b = Binding(name, role[0], stmt, value, scope, cond, role[1], env.tf1, loop=loop_ancestor(stmt, stop))
        env.add_binding(b)
        return
    # Not a constructor: keep the assignment as a plain binding for R3/R5/R6 facts.
    env.add_binding(plain)


def _shape_of(env: Env, memo: dict, stmt, owner):
    """The statement's `_assignment_shape`, made once while its piece lives."""
    shape = memo.get(id(stmt))
    if shape is None:
        shape = memo[id(stmt)] = _assignment_shape(env, stmt, owner)
    return shape


def bound_names(env: Env, piece: Index) -> tuple[set, set]:
    """(the names the piece's assignments bind, those of them other top-level statements
    can see: module- and class-level, ``global``, ``self.x``), kept in its memo (the
    shapes are made on the way). A function's locals are seen only inside the statement
    that holds the function, so a new local changes no answer kept for another statement."""
    names = piece.memo.get("bound_names")
    if names is None:
        every, outer = set(), set()
        memo = piece.memo
        for stmt, owner in piece.assignments:
            shape = _shape_of(env, memo, stmt, owner)
            if shape is not _NOT_BOUND:
                for name, scope, _stop, _plain in shape[2]:
                    every.add(name)
                    if scope is None or scope.type != "funcdef":
                        outer.add(name)
        names = piece.memo["bound_names"] = (every, outer)
    return names


_NOT_BOUND = object()


def _assignment_shape(env: Env, stmt, owner):
    """What the statement alone decides (kept in its piece's memo while it is unchanged):
    the value, its call, and per bound target (name, scope, where its conditions stop,
    its plain binding). `_binding_scope` reads the ``global`` statements of the enclosing
    function, which are in the same top-level statement."""
    parts = N.assign_parts(stmt)
    if parts is None:
        return _NOT_BOUND
    targets, value = parts
    call = env.as_call(N.unparen(value))
    out = []
    for target in targets:
        name = N.dotted(target)
        if name is None:
            continue
        scope = _binding_scope(env, name, stmt, owner)
        if scope is None:
            continue
        stop = scope if scope.type != "classdef" else N.enclosing(stmt, {"funcdef"}) or scope
        out.append((name, scope, stop, Binding(name, "other", stmt, value, scope)))
    return value, call, out


def _ternary_role(env: Env, value, at):
    """``opt = Adam() if x else SGD()`` (or ``{"adam": Adam(), "sgd": SGD()}[name]``): the role
    the branches (or either) construct."""
    for branch in choices(value):
        call = env.as_call(branch)
        role = env.role_of_call(call, at) if call is not None else None
        if role is not None:
            return role
    return None


def _binding_scope(env: Env, name: str, stmt, owner):
    if name.startswith("self."):
        if name.count(".") != 1:
            return None
        return N.enclosing(stmt, {"classdef"})
    if "." in name:
        return None
    if owner.type == "classdef":
        return owner              # a class attribute: not visible as a bare name elsewhere
    if owner.type == "lambdef":
        return None
    if owner.type == "funcdef" and name in env.global_names.get(id(owner), ()):
        return env.source.module  # ``global opt`` makes the assignment a module binding
    return N.func_scope_of(stmt)


def _returned_role(env: Env, call: N.Call, depth: int = 0):
    """``model = build_model()`` where build_model returns a Keras model/optimizer/dataset."""
    fn = env.call_target(call) if depth < 4 else None
    if fn is None:
        return None
    for ret in env.index.returns.get(id(fn), []):
        if len(ret.children) < 2:
            continue
        value = ret.children[1]
        inner = env.as_call(value)
        if inner is not None:
            role = env.role_of_call(inner, ret) or _returned_role(env, inner, depth + 1)
            if role:
                return role
        elif value.type == "name":
            if env._deps is not None:
                env._deps.append(value.value)
            b = next((b for b in env.bindings_of(value.value, fn) if b.role != "other"), None)
            if b is not None:
                return b.role, b.detail
    return None


def bind_with_item(env: Env, item) -> None:
    if len(item.children) < 3:
        return
    call = env.as_call(item.children[0])
    target = N.dotted(item.children[2])
    if call is not None and target and env.callee_qualname(call) == "tensorflow.GradientTape":
        b = Binding(target, "tape", item, item.children[0], N.func_scope_of(item))
        env.tapes.append(b)
        env._by_value.setdefault(id(item.children[0]), b)


# -- the value a name holds at a call ------------------------------------------------------
# Libraries whose objects have a ``fit`` of their own: a name holding one is not a Keras model
# there, whatever the same name holds elsewhere (``model = ARIMA(...); model = model.fit()``).
OWN_FIT = frozenset({"sklearn", "statsmodels", "xgboost", "lightgbm", "catboost", "pmdarima", "prophet",
                     "scipy", "sktime", "hmmlearn", "imblearn", "umap", "gensim", "cuml", "lifelines"})


def reaching(env: Env, name: str, at):
    """The assignment of the bare `name` whose value `name` holds at node `at`: the last one
    before it in `at`'s own function (or module), in a block that also holds `at`; None
    when there is none or a branch, loop or ``global`` makes it unsure."""
    scope = N.func_scope_of(at)
    if env._deps is not None:
        env._deps.append(name)
    found = None
    for b in env.bindings_of(name, scope):
        if b.stmt.end_pos > at.start_pos:        # (``model = model.fit()``: the one before)
            break
        found = b
    if found is None:
        return None
    line = found.stmt.parent
    block = line.parent if line is not None and line.type == "simple_stmt" else line
    return found if block is not None and block.type in ("suite", "file_input") and N.inside(at, block) else None


def holds_other_model(env: Env, name: str | None, at, depth: int = 0) -> bool:
    """`name` holds, at `at`, an object whose ``fit`` is not Keras's: made by a library of
    `OWN_FIT` (or a method of such an object, ``res = arima.fit()``), or an instance of a
    local class that is not a Keras model and defines ``fit``."""
    if not name or "." in name or depth > 4:
        return False
    b = reaching(env, name, at)
    if b is None or b.role != "other":
        return False
    call = env.as_call(N.unparen(b.value))
    root = call.node.children[0] if call is not None else None
    if root is None or root.type != "name":
        return False
    if env._deps is not None:
        env._deps.append(root.value)
    module = _imported(env).get(root.value)
    if module is not None:
        return module in OWN_FIT
    cls = env.instance_class(b)
    if cls is not None:
        return cls not in env.classes and env.method(cls, "fit") is not None
    return call.method is not None and holds_other_model(env, root.value, b.stmt, depth + 1)


def _imported(env: Env) -> dict:
    """Local name -> the top-level package the file's imports bind it from."""
    found = env.__dict__.get("_imported")
    if found is None:
        found = env.__dict__["_imported"] = {local: full.split(".")[0] for node in env.imports
                                             for local, full in import_bindings(node)}
    return found
