"""The facts the restriction checks need about how the rewritten objects are created:
creation count and condition, aliasing, reassignment, creation inside a call (R2, R3,
R5-R7, R9, R10). Recorded once as `Problem`s on the `Env` and read by both
`restrictions` (which reports them) and the rules (through `Blocker`).

Part of the environment pass (the last step of `env.build_env`).

Requires: parse (nodes, scopes), analysis.roles; the built `Env`. Provides:
`restriction_facts`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..parse import nodes as N
from ..parse.scopes import Span, header, is_name_use, mentions, outermost_function
from .uniform import same_on_every_rank, uniform_conditions
from .roles import (
    REACH,
    ROLE_RULES,
    SETUP,
    Binding,
    Problem,
    member_role,
    rules_for_roles,
    site_role,
)

if TYPE_CHECKING:                 # (annotations only: env imports this module)
    from .env import Env


# -- restriction facts ---------------------------------------------------------------------
def restriction_facts(env: Env) -> None:
    """Facts for R2, R3, R5, R6, R7, R9, R10 (reported and explained by restrictions.py)."""
    _r2_r3(env)
    created = ("optimizer", "dataset", "checkpoint")     # (only their groups have facts)
    groups: dict[tuple, list[Binding]] = {}
    for b in env.with_role():
        if b.role in created:
            key = (b.name, id(b.scope))
            if key not in groups:
                groups[key] = env.bindings_of(b.name, b.scope)
    # in the order of each group's first binding, as a walk over all bindings meets them
    first = {id(group[0]): group for group in groups.values()}
    for b in env.bindings:
        if not first:
            break
        group = first.pop(id(b), None)
        if group is not None:
            _creation_facts(env, group)
    _aliases(env)
    _inline_creations(env)
    _r9(env)


# Modules of TensorFlow bound to a name by an assignment: calls through them resolve to their
# qualified names like an import's, so the rules find and rewrite what is created there.
MODULE_ALIASES = frozenset({"tensorflow.keras", "tensorflow.keras.layers", "tensorflow.keras.optimizers",
                            "tensorflow.keras.callbacks", "tensorflow.keras.models", "tensorflow.keras.losses"})


def _r2_r3(env: Env) -> None:
    for name, stmt in env.module_aliases.items():
        what = "by a call, not an import" if N.dotted(N.assign_parts(stmt)[1]) is None else f"to `{name}` by an assignment"
        env.problems.append(Problem("R2", stmt, f"the tensorflow module is bound {what}; "
                                    "sites reached through it are not rewritten; bind it only by `import tensorflow as tf`", SETUP))
    # `tf = something` re-binding the tensorflow module name.
    for b in env.module_bindings():
        if b.name in env.tf_names and b.name not in env.module_aliases \
                and b.name in env.aliases and env.aliases[b.name].startswith("tensorflow"):
            env.problems.append(Problem("R2", b.stmt, f"the tensorflow module name `{b.name}` is re-bound by an assignment, so "
                                        f"what `{b.name}.` reaches is not known; give the other value another name", SETUP))
    for name, stmt in env.member_aliases.items():
        q = env.aliases.get(name)
        if q in MODULE_ALIASES:
            continue     # ``keras = tf.keras``: a module; what is reached through it resolves (env.aliases)
        roles = set(REACH.get(q, ()))
        r = member_role(q)
        if r is not None and not q.startswith("tensorflow.data."):
            roles.add(r[0])              # ``Adam = tf.optimizers.Adam``; not ``AUTOTUNE = tf.data.AUTOTUNE``
        if q == "tensorflow.GradientTape":
            roles.add("tape")
        sites = []
        for call in _calls_through(env, name):
            role = site_role(env, call)
            if role is None:
                continue
            roles.add(role)
            sites.append(call.node)
            b = env.binding_for_value(call.node)
            if b is not None:
                sites.append(b)
        if not roles:
            continue
        src = N.dotted(N.assign_parts(stmt)[1])
        related = [(n, f"created through `{name}` here") for n in sites if not isinstance(n, Binding)][:3]
        env.problems.append(Problem(
            "R3", stmt, f"`{name}` aliases the tensorflow member `{src}`; what is created through it is not rewritten "
            f"(creations are recognised by their qualified name); write `{src}(...)` where it is called",
            rules_for_roles(roles), sites=sites, related=related))


def _calls_through(env: Env, name: str):
    """Calls whose callee starts with the name `name` (``Adam(...)``, ``keras.optimizers.SGD(...)``)."""
    for leaf in env.index.names.get(name, []):
        parent = leaf.parent
        if parent is None or parent.type not in ("atom_expr", "power") or parent.children[0] is not leaf:
            continue
        for i in range(1, len(parent.children)):
            if N.is_call_trailer(parent.children[i]):
                yield N.Call(parent, i)
                break


def _creation_facts(env: Env, group: list[Binding]) -> None:
    made = [b for b in group if b.role in ("optimizer", "dataset", "checkpoint")]
    if not made:
        return
    role = made[0].role
    blocks = ROLE_RULES[role]
    code_once = "R10" if role == "checkpoint" else "R5"
    first = made[0]
    creations = [b for b in made if not mentions(b.value, b.name)]
    sites = [b for b in group if b.role == role]
    def problem(code, b, msg, related=()):
        env.problems.append(Problem(code, b.stmt, msg, blocks, first, sites=list(sites), related=list(related)))
    counted = []
    for b in creations:
        if b.conditional is not None and role != "checkpoint" and not _train_mode_branch(b) \
                and not (role == "optimizer" and _same_branch_on_every_rank(env, b)):
            what = "a conditional expression" if b.conditional is b.value else "a condition"
            msg = f"optimizer `{b.name}` is chosen by a test that may differ between ranks; test only constants or " \
                "flags, or create it once" if role == "optimizer" else f"{role} `{b.name}` is created under {what} " \
                "(a branch would stay unconverted); create it once, unconditionally"
            problem("R7", b, msg,
                    [(header(b.conditional), "the condition")] if b.conditional is not b.value else [])
        elif b.loop is not None:
            problem(code_once, b, f"{role} `{b.name}` is created inside a loop, once per iteration, and "
                    "each new one would need the rules again; create it once, before the loop",
                    [(header(b.loop), "the loop")])
        else:
            counted.append(b)
    if role == "optimizer" and not _tape_trained(env):
        counted = counted[:1]    # each creation is scaled and wrapped where it is made (rules/optimizer.py)
    elif role == "optimizer":
        counted = [b for b in counted if b.conditional is None]     # (one branch runs: one creation)
    for b in counted[1:]:
        if role == "optimizer":
            problem(code_once, b, f"optimizer `{b.name}` is created again in a program with a GradientTape step, "
                    "whose broadcast after the first step runs once and would miss the later optimizer's state; "
                    "give each creation its own name and training loop", [(counted[0].stmt, "first created here")])
            continue
        problem(code_once, b, f"{role} `{b.name}` is created more than once and the rules rewrite one "
                "creation of a name; give each creation its own name", [(counted[0].stmt, "first created here")])
    start = first.stmt.start_pos
    for other in group:
        if other.role == role or other.stmt.start_pos <= start:
            continue
        if other.role == "other" and mentions(other.value, other.name):
            continue   # ``opt = hvd.DistributedOptimizer(opt)``, ``ds = shard(ds)``: a wrapper, not a new value
        code = "R6" if role != "checkpoint" else "R10"
        env.problems.append(Problem(code, other.stmt, f"{role} variable `{other.name}` is reassigned to another value, "
                                    "which the rules on the first would miss; give that value another name",
                                    blocks, first, sites=list(sites), related=[(first.stmt, "created here")]))


def _aliases(env: Env) -> None:
    """``opt2 = opt`` (R5) / ``ckpt2 = ckpt`` (R10): a second name for one object. A
    checkpoint's second name bound once is no problem: HVD031 (its only rule) follows it
    (`rank0_guards.checkpoint_of`: ``mgr = self.manager; mgr.save()`` saves on rank 0)."""
    for b in env.renames():
        src = b.value_dotted()
        target = env.lookup(src, b.stmt, params=False)
        if target is None or target.role not in ("optimizer", "dataset", "checkpoint"):
            continue
        if target.role == "checkpoint" and len(env.bindings_of(b.name, b.scope)) == 1:
            continue
        code = "R10" if target.role == "checkpoint" else "R5"
        group = env.bindings_of(target.name, target.scope)
        env.problems.append(Problem(code, b.stmt, f"{target.role} `{src}` is aliased as `{b.name}`, and a rule "
                                    "acting through one name misses the other; use one name",
                                    ROLE_RULES[target.role], target,
                                    sites=[g for g in group if g.role == target.role],
                                    related=[(target.stmt, "created here")]))


INLINE_USES = {"optimizer": ("apply_gradients", "minimize"), "dataset": ("take",), "checkpoint": ("save", "write")}


def _inline_creations(env: Env) -> None:
    """A dataset/optimizer/checkpoint created without an assignment (R5/R10) where a rule
    would have acted on it: ``tf.train.Checkpoint(m=m).save(p)``, ``train(tf.keras.optimizers.Adam())``."""
    for call in env.calls_where(_inline_role):
        role = member_role(env.callee_qualname(call))
        if env.binding_for_value(call.node) is not None:
            continue
        if not call.is_whole():
            nxt = call.node.children[call.index + 1] if call.index + 1 < len(call.node.children) else None
            meth = nxt.children[1].value if nxt is not None and nxt.type == "trailer" and nxt.children[0] == "." else None
            if meth not in INLINE_USES[role[0]]:
                continue
            reason = f"`.{meth}` is called on it directly"
        else:
            if role[0] != "optimizer" or not _is_argument(env, call):
                continue
            reason = "it is passed as an argument"
        code = "R10" if role[0] == "checkpoint" else "R5"
        start = call.node.children[0]
        node = Span(start.start_pos, call.trailer.end_pos)
        env.problems.append(Problem(code, node, f"`{call.callee_dotted()}(...)` creates {_a(role[0])} without an "
                                    f"assignment ({reason}), and the rules rewrite an assigned creation; assign it to a name first",
                                    ROLE_RULES[role[0]], sites=[call.node]))


def _inline_role(q: str) -> bool:
    role = member_role(q)
    return role is not None and role[0] in INLINE_USES


def _a(word: str) -> str:
    return ("an " if word[0] in "aeiou" else "a ") + word


def _is_argument(env: Env, call: N.Call) -> bool:
    """An inline optimizer passed to something other than ``compile`` or a Horovod wrapper."""
    outer = N.call_with_argument(call.node)
    if outer is None:
        return False
    if outer.method == "compile":
        return False
    q = env.callee_qualname(outer) or ""
    if (member_role(q) or ("",))[0] == "estimator":
        return False            # a premade Estimator's optimizer= (rules/estimator.py wraps it in place)
    # (Horovod's wrapper, or the keras3 target's adapter of that name, a function of the program)
    return not q.startswith("horovod") and (outer.method or outer.callee_dotted()) != "DistributedOptimizer"


def _r9(env: Env) -> None:
    """A global optimizer used by a function defined before it, or changed inside one."""
    module = env.source.module
    for b in env.with_role():
        if b.role != "optimizer" or b.scope is not module:
            continue
        group = [g for g in env.bindings_of(b.name, module) if g.role == "optimizer"]
        if b is not group[0]:
            continue
        reported = set()
        for leaf in env.index.names.get(b.name, []):
            fn = N.enclosing(leaf, {"funcdef"})
            if fn is None or not is_name_use(leaf) or id(fn) in reported or fn.end_pos > b.stmt.start_pos:
                continue
            outer = outermost_function(fn)
            if outer.end_pos > b.stmt.start_pos or _local_in(env, b.name, fn):
                continue
            reported.add(id(fn))
            env.problems.append(Problem(
                "R9", b.stmt, f"global optimizer `{b.name}` is defined after `{fn.name.value}`, which uses it, so the "
                "broadcast after its first step has no optimizer to read; define it before the function",
                ("HVD021",), region=fn, related=[(leaf, f"`{fn.name.value}` uses `{b.name}` here")]))
    # ``global opt`` + an assignment inside a function: the optimizer changes after its creation.
    for b in env.module_bindings():
        if b.role not in ("optimizer", "other"):
            continue
        fn = N.enclosing(b.stmt, {"funcdef"})
        if fn is None:
            continue
        group = [g for g in env.bindings_of(b.name, module) if g.role == "optimizer"]
        if not group or (b.role == "other" and b.stmt.start_pos < group[0].stmt.start_pos):
            continue
        env.problems.append(Problem("R9", b.stmt, f"global optimizer `{b.name}` is assigned inside `{fn.name.value}`, "
                                    "so which value trains is decided at run time; create it once, or pass it as an argument",
                                    ROLE_RULES["optimizer"], group[0], sites=list(group),
                                    related=[(group[0].stmt, "created here")] if group[0] is not b else []))


def _local_in(env: Env, name: str, fn) -> bool:
    """Is `name` a parameter or a local variable of `fn` (so not the global)?"""
    if name in env.param_names(fn):
        return True
    if env.bindings_of(name, fn):
        return not any(g.type == "global_stmt" and any(getattr(c, "value", None) == name for c in g.children)
                       for g in env.index.globals if N.enclosing(g, {"funcdef"}) is fn)
    return False


def _same_branch_on_every_rank(env: Env, b: Binding) -> bool:
    """An optimizer chosen by a test that is the same on every rank (a constant, a flag, a
    default argument: uniform.py): every branch's creation is scaled and wrapped, and every
    rank takes the same one."""
    if b.conditional is b.value:
        test = b.value.children[2] if len(b.value.children) == 5 else None
        if test is None or not same_on_every_rank(env, test):
            return False
    return uniform_conditions(env, b.stmt, b.scope)


def _tape_trained(env: Env) -> bool:
    """Does the program apply gradients itself (a GradientTape step)? There the broadcast
    after the first step runs once per step function (a flag), so an optimizer created
    again after training started would keep a state no rank sent: several unconditional
    creations of one name still block."""
    return bool(env.calls_with_method("apply_gradients"))


def _train_mode_branch(b: Binding) -> bool:
    """An Estimator ``model_fn``'s ``if mode == tf.estimator.ModeKeys.TRAIN:`` (Horovod's own
    TF1 Estimator example): the optimizer exists only where training happens and the rules'
    edits stay in that branch, so it is not R7's conditional creation."""
    cond = b.conditional
    if b.role != "optimizer" or cond is None or cond.type != "if_stmt" or cond.children[0] != "if":
        return False
    test = cond.children[1].get_code(include_prefix=False).replace(" ", "")
    return "ModeKeys.TRAIN" in test and "!=" not in test and "not" not in test \
        and b.stmt.start_pos < cond.children[3].end_pos        # in the first branch
