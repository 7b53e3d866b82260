"""Restriction checks (seed 2.1: R1–R10, seed 3.1: T1–T5): when a rule cannot be
applied safely. Each violation is a warning on the offending construct, names the rules
it blocks, and those rules produce no edit there (`Blocker`). A violation that blocks the
Horovod set-up (HVD001/HVD002) blocks every rule of a file that is not yet distributed.

What each restriction blocks:

* R1 nested TensorFlow or Horovod import — the set-up, when it relies on that import (a
  late one at module level is not a violation: the set-up follows it);
* R2 tensorflow bound other than by an import — the set-up (so everything);
* R3 ``Adam = tf.optimizers.Adam`` — the rules on what is created through the alias;
* R4 ``print`` with a side effect — HVD030 on that print;
* R5/R10 created twice, in a loop, without an assignment, or aliased; R6 reassigned;
  R7 created under a condition — the rules on that optimizer/dataset/checkpoint;
* R8 ``apply_gradients`` not a statement / assignment RHS — HVD021 there (not for a TF1
  optimizer or in an Estimator program: nothing is inserted after that call);
* R9 global optimizer defined after a function using it — HVD021 in that function;
  changed inside a function — the optimizer rules;
* T1 loop continues in another file — the optimizer rules on what is handed over;
* T2 ``minimize`` loop — the optimizer rules (a ``tf.distribute`` strategy is HVD092,
  rules/stack_traps.py, and blocks everything);
* T3 one model, fit and a tape loop; or fit and an Estimator — everything (fit and a tape
  loop on different models convert: rules/tapes.py); a tape whose gradients reach no
  optimizer (gradflow) is not a loop, so it never makes T3;
* T4 training function used as a value (not through a known higher-order call:
  callables.py), T5 defined / run under a condition — the loop rules of that function
  or branch (a loop run under a test the same on every rank, uniform.py, is no T5:
  every branch converts).

A violation that stops any synchronisation rule (learning-rate scaling, distributed
optimizer or tape, initial broadcast) stops all of them in the file (`_whole_loop`).

Requires: env (its `Problem` facts for R2, R3, R5–R7, R9, R10), loop (for T-checks).
Provides: `check(env, summary) -> list[Problem]` and `Blocker`.
"""

from __future__ import annotations

from ..parse import nodes as N
from ..parse.imports import from_module_text, from_names, import_bindings
from ..parse.scopes import (
    Span,
    conditional_ancestor,
    header,
    is_main_guard,
    is_name_use,
)
from .callables import is_higher_order
from .env import Env
from .gradflow import gradient_inside, is_training_tape, single_target
from .loop import ESTIMATOR, FIT, SESSION, TAPE, Summary
from .roles import LIBRARIES, ROLE_RULES, SETUP, Problem
from .strategy import strategy_problems
from .tf1_api import tf1_api_problems
from .keras_layout import keras_layout_problems
from .uniform import uniform_conditions

TAPE_RULES = ("HVD020", "HVD021")
FIT_RULES = ("HVD050", "HVD051")
KIND_RULES = {TAPE: TAPE_RULES, FIT: FIT_RULES, ESTIMATOR: ("HVD060", "HVD061")}
ALL_LOOP_RULES = SETUP + TAPE_RULES + FIT_RULES + ("HVD011", "HVD060")
# Calls that change state: a print whose argument makes one must run on every rank (R4).
SIDE_EFFECT_CALLS = {"next", "input", "pop", "append", "extend", "insert", "remove", "update",
                     "write", "send", "apply_gradients", "fit", "train", "save", "assign",
                     "assign_add", "assign_sub", "minimize", "step", "popitem", "setdefault", "clear",
                     "train_on_batch", "readline", "read", "seed", "set_seed", "shuffle", "__next__"}
HORO = ("tensorflow", "keras", "tf_keras", "keras_core", "horovod")


def check(env: Env, summary: Summary) -> list[Problem]:
    problems = list(env.problems)
    problems += summary.graph.problems if summary.graph is not None else []   # HVD-S1..S3
    for fn in (_r1_imports, _r4_prints, _r8_apply_gradients, _t1_other_files, _t2_loop_type,
               _t3_mixed, _t4_functions_as_values, _t5_conditional):
        problems += fn(env, summary)
    problems += strategy_problems(env)          # HVD092: a tf.distribute program gets no edit
    problems += tf1_api_problems(env)           # HVD093: TF1 API the pinned TF 2.15 lacks
    problems += keras_layout_problems(env)      # HVD094: a Keras 3 archive layout read on Keras 2
    _expand_sites(env, problems)
    _whole_loop(env, problems)
    for p in problems:
        if any(code in SETUP for code in p.blocks) and not env.horovod() and not p.everywhere:
            p.everywhere = True
            p.message += "; without the Horovod set-up no other rule applies"
    problems.sort(key=lambda p: (p.node.start_pos, p.code))
    return problems


# The rules that keep ranks in step: scaled learning rate, averaged gradients, one broadcast.
SYNC_RULES = ("HVD010", "HVD011", "HVD012", "HVD013", "HVD020", "HVD021", "HVD050", "HVD060")


def _whole_loop(env: Env, problems: list[Problem]) -> None:
    """A loop is converted all or nothing: a restriction that stops one synchronisation
    rule stops all of them, file-wide. Half a conversion (a wrapped tape without the
    broadcast, a scaled rate without averaging) trains ranks that never agree."""
    for p in problems:
        if set(p.blocks) & set(SYNC_RULES):
            p.blocks = tuple(dict.fromkeys(tuple(p.blocks) + SYNC_RULES))
            p.region = env.source.module


# Methods through which a rule acts on an object held by a blocked binding.
USE_METHODS = {"save", "write", "take", "apply_gradients", "minimize", "fit", "train", "summary", "save_weights"}


def _expand_sites(env: Env, problems: list[Problem]) -> None:
    """Add the call sites on a blocked binding (``ckpt.save()`` for a blocked ``ckpt``), so
    rules that only pass the call node are stopped as well."""
    wanted = [p for p in problems if any(not hasattr(s, "type") and hasattr(s, "role") for s in p.sites)]
    if not wanted:
        return
    # (each problem's roles and blocked bindings once: the call nodes appended below are not bindings)
    bound = [(p, {s.role for s in p.sites if hasattr(s, "role")}, {id(s) for s in p.sites if hasattr(s, "role")})
             for p in wanted]
    for call in env.calls_with_method(*USE_METHODS):
        receiver = call.receiver_dotted()
        if receiver is None:
            continue
        for p, roles, ids in bound:
            for role in roles:
                b = env.lookup(receiver, call.node, role)
                if b is not None and id(b) in ids:
                    p.sites.append(call.node)
                    break


class Blocker:
    """``blocked(code, node, binding)``: is this rule site stopped by a restriction?"""

    def __init__(self, problems: list[Problem]):
        self.problems = problems
        self.everywhere = any(p.everywhere for p in problems)
        self.by_code: dict[str, list] = {}
        for p in problems:
            ids = {id(s) for s in p.sites}
            for code in p.blocks:
                self.by_code.setdefault(code, []).append((p, ids))

    def __call__(self, code: str, node, binding=None) -> bool:
        if self.everywhere:
            return True
        for p, ids in self.by_code.get(code, ()):
            if binding is not None and (p.binding is binding or id(binding) in ids):
                return True
            if node is not None and (p.node is node or id(node) in ids):
                return True
            if p.region is not None and node is not None and N.inside(node, p.region):
                return True
        return False


def _span(first, last) -> Span:
    return Span(first.start_pos, last.end_pos)


def _text(env: Env, node) -> str:
    src = env.source
    return src.text[src.offset(node.start_pos):src.offset(node.end_pos)]


# -- R1 -----------------------------------------------------------------------------------
NESTING = {"funcdef": "a function", "classdef": "a class", "if_stmt": "an `if`", "for_stmt": "a loop",
           "while_stmt": "a loop", "with_stmt": "a `with`", "try_stmt": "a `try`", "match_stmt": "a `match`"}


def _r1_imports(env: Env, summary: Summary) -> list[Problem]:
    out = []
    end = env.top_block_end
    setup_names = {env.tf_alias(), env.hvd_name} - {None}
    # (start, names bound) of the module-level imports, in order, computed once (each late
    # import asks which names the imports above it bound)
    module_level = [(n.start_pos, set(import_bindings(n))) for n in env.imports if N.enclosing(n, set(NESTING)) is None]
    for node in env.imports:
        binds = import_bindings(node)
        if not any(full.split(".")[0] in HORO for _, full in binds):
            continue
        if env.library_spans and _in_library(env, node):
            continue        # another module's import, in its own order: the set-up is in the entry
        nested = N.enclosing(node, set(NESTING))
        late = end is not None and node.start_pos > end.start_pos
        if nested is None and not late:
            continue
        where = f"inside {NESTING[nested.type]}" if nested is not None else "below other code"
        needed = node is env.tf_import or (env.tf_import is None and node is env.keras_import) or \
            any(local in setup_names for local, _ in binds)
        if needed and nested is None and set(binds) <= {b for at, names in module_level if at < node.start_pos
                                                        for b in names}:
            needed = False      # the same names bound again, as an import above did (the top, or the
                                # late import the set-up follows): not the import the set-up needs
        first = end.children[0] if end is not None and end.type == "simple_stmt" else end
        related = [(first, "the first statement that is not an import")] if late and end is not None else []
        if needed and nested is None and N.statement_of(node) is env.setup_after:
            continue    # below other code at module level: the set-up follows it (rules/setup_imports.py)
        if needed:
            out.append(Problem("R1", node, f"TensorFlow is imported {where}, where the Horovod set-up cannot "
                               "follow it for every worker; move the import to the top of the module",
                               SETUP, related=related))
        else:
            out.append(Problem("R1", node, f"`{node.get_code(include_prefix=False)}` is {where}, not at the top of "
                               "the module (the set-up does not depend on it)", (), related=related))
    return out


def _in_library(env: Env, node) -> bool:
    at = env.source.offset(node.start_pos)
    return any(start <= at < end for start, end in env.library_spans)


# -- R4 -----------------------------------------------------------------------------------
def _r4_prints(env: Env, summary: Summary) -> list[Problem]:
    out = []
    if "print" in env.functions:
        return out
    impure = _Impurity(env, summary)
    for call in env.index.by_method.get("print", ()):
        if call.callee_dotted() != "print":
            continue
        for arg in call.args:
            bad = _side_effect(env, impure, arg.value)
            if bad is not None:
                out.append(Problem("R4", bad, f"print argument `{_text(env, bad)}` has a side effect; "
                                   "guarding the print would skip it on other ranks; compute it before the print", ("HVD030",), sites=[call.node]))
                break
    return out


class _Impurity:
    """Does a local function change state (so calling it inside ``print`` is a side effect)?"""

    def __init__(self, env: Env, summary: Summary):
        self.env, self.summary, self.memo = env, summary, {}

    def __call__(self, fn) -> bool:
        key = id(fn)
        if key in self.memo:
            return self.memo[key]
        self.memo[key] = False         # recursion: assume pure until shown otherwise
        result = bool(self.summary.functions.get(fn)) or self._body(fn)
        self.memo[key] = result
        return result

    def _body(self, fn) -> bool:
        if id(fn) in self.env.global_names:
            return True
        for node in N.walk(fn.children[-1]):
            t = node.type
            if t in ("global_stmt", "nonlocal_stmt", "yield_expr"):
                return True
            if t == "expr_stmt" and len(node.children) >= 2:
                op = node.children[1]
                targets = node.children[:-1:2] if op == "=" else [node.children[0]]
                if op.type == "operator" or op.type == "annassign":
                    if any(tg.type in ("atom_expr", "power") for tg in targets):
                        return True    # ``self.n += 1``, ``cache[k] = v``
        for call in self.env.index.owned_calls.get(id(fn), ()):
            if (call.method or call.callee_dotted()) in SIDE_EFFECT_CALLS:
                return True
            target = self.env.call_target(call)
            if target is not None and self(target):
                return True
        return False


def _side_effect(env: Env, impure: _Impurity, node):
    """The first sub-expression of `node` that changes state, if any."""
    for sub in N.walk(node):
        if sub.type in ("namedexpr_test", "yield_expr") or (sub.type == "keyword" and sub.value == "await"):
            return sub
        if sub.type in ("atom_expr", "power"):
            for i in range(1, len(sub.children)):
                if not N.is_call_trailer(sub.children[i]):
                    continue
                call = N.Call(sub, i)
                name = call.method or call.callee_dotted()
                if name == "save" and env.lookup(call.receiver_dotted(), sub, "checkpoint") is not None:
                    continue    # (a checkpoint saved in the print: rank 0's too, guarded with it)
                if name in SIDE_EFFECT_CALLS:
                    return _span(sub.children[0], sub.children[i])
                target = env.call_target(call)
                if target is not None and impure(target):
                    return _span(sub.children[0], sub.children[i])
    return None


# -- R8 -----------------------------------------------------------------------------------
def _r8_apply_gradients(env: Env, summary: Summary) -> list[Problem]:
    out = []
    for call in env.calls_with_method("apply_gradients"):
        receiver = call.receiver_dotted()
        b = env.lookup(receiver, call.node, "optimizer")
        if b is None or b.tf1 or (summary.estimator and TAPE not in summary.kinds):
            continue    # a TF1 optimizer is wrapped, an Estimator broadcasts by a hook: no edit after this call
        where = _apply_context(call)
        if where is None:
            continue
        out.append(Problem("R8", _span(call.node.children[0], call.trailer),
                           f"`{receiver}.apply_gradients` is {where}, not an expression statement or an "
                           "assignment's right-hand side, so the broadcast after it has no place; call it on its own line", ("HVD021",), sites=[call.node]))
    return out


def _apply_context(call: N.Call) -> str | None:
    """None when the call has the R8 shape, else where it sits."""
    if not call.is_whole():
        return "followed by an attribute or another call"
    node = call.node
    parent = node.parent
    if parent.type in ("simple_stmt", "file_input", "suite"):   # (a last line without newline is bare)
        return None
    if parent.type == "expr_stmt" and parent.children[-1] is node and len(parent.children) >= 3 \
            and parent.children[-2] == "=":
        return None
    cur = parent
    while cur is not None and cur.type not in ("simple_stmt", "suite", "file_input"):
        t = cur.type
        if t == "trailer" and N.is_call_trailer(cur):
            return "an argument of a call"
        if t == "atom" and cur.children[0] in ("[", "(", "{"):
            return {"[": "inside a list", "(": "inside a tuple or parentheses", "{": "inside a set or dict"}[cur.children[0].value]
        if t == "return_stmt":
            return "returned"
        if t == "lambdef":
            return "inside a lambda"
        if t in ("ternary", "or_test", "and_test", "not_test", "comparison"):
            return "inside a conditional or boolean expression"
        cur = cur.parent
    return "inside an expression"


# -- T1 -----------------------------------------------------------------------------------
def _t1_other_files(env: Env, summary: Summary) -> list[Problem]:
    """A training object handed to a function imported from another file of the project."""
    project: dict[str, str] = {}
    for node in env.imports:
        for local, module in _project_imports(node):
            project[local] = module
    if not project:
        return []
    trained = _trained_locally(env, summary)
    out = []
    for call, _owner in env.index.calls:
        callee = call.callee_dotted()
        if callee is None or callee.split(".")[0] not in project:
            continue
        module = project[callee.split(".")[0]]
        handed = [env.lookup(N.dotted(arg.value), call.node) for arg in call.args]
        handed = [b for b in handed if b is not None and b.role in ("optimizer", "model") and id(b) not in trained]
        handed.sort(key=lambda b: b.role != "optimizer")
        for b in handed[:1]:
            if b.role == "optimizer":
                group = [g for g in env.bindings_of(b.name, b.scope) if g.role == "optimizer"]
                out.append(Problem("T1", call.node, f"optimizer `{b.name}` is handed to `{callee}` from `{module}` "
                                   "(another file) and never applied here: the training loop is not all in this file; "
                                   "convert the file that applies it",
                                   ROLE_RULES["optimizer"], b, sites=group, related=[(b.stmt, "created here")]))
            else:
                out.append(Problem("T1", call.node, f"model `{b.name}` is handed to `{callee}` from `{module}` "
                                   "(another file) and not trained here; this file's conversion may be incomplete", (),
                                   related=[(b.stmt, "created here")]))
    return out


def _trained_locally(env: Env, summary: Summary) -> set:
    """ids of the optimizer/model bindings a loop of this file uses."""
    out = set()
    for call in env.calls_with_method("apply_gradients", "minimize", "compile", "apply"):
        if call.method in ("apply_gradients", "minimize", "apply"):     # (apply: Keras 3's, on an optimizer)
            b = env.lookup(call.receiver_dotted(), call.node, "optimizer")
        elif call.method == "compile":
            arg = call.keyword("optimizer") or call.positional(0)
            b = env.lookup(N.dotted(arg.value), call.node, "optimizer") if arg is not None else None
        else:
            continue
        if b is not None:
            out.add(id(b))
    for site in summary.sites:
        if site.kind == FIT:
            call = _call_of(site.node)
            b = env.lookup(call.receiver_dotted(), call.node, "model") if call is not None else None
            if b is not None:
                out.add(id(b))
        elif site.kind == TAPE:
            region = site.function or site.driver or site.node
            out.update(id(b) for b in _models_used(env, region))
    return out


def _project_imports(node) -> list[tuple[str, str]]:
    """(local name, module) of the names an import binds from a project (non-library) module."""
    out = []
    try:
        if node.type == "import_from":
            module = from_module_text(node)
            if module.startswith(".") or module.split(".")[0] not in LIBRARIES:
                out += [(alias or name, module) for name, alias in from_names(node) if name != "*"]
        else:
            out += [(local, full) for local, full in import_bindings(node) if full.split(".")[0] not in LIBRARIES]
    except (AttributeError, IndexError):
        return []
    return out


# -- T2 -----------------------------------------------------------------------------------
def _t2_loop_type(env: Env, summary: Summary) -> list[Problem]:
    out = []
    for call in env.calls_with_method("minimize"):
        q = env.callee_qualname(call) or ""
        if q.startswith("tensorflow.distribute.") and q.endswith("Strategy"):
            continue       # HVD092 (rules/stack_traps.py) names the strategy and blocks everything
        elif ESTIMATOR not in summary.kinds and SESSION not in summary.kinds:
            b = env.lookup(call.receiver_dotted(), call.node, "optimizer")
            if b is None:
                continue
            group = [g for g in env.bindings_of(b.name, b.scope) if g.role == "optimizer"]
            out.append(Problem("T2", call.node, f"`{call.receiver_dotted()}.minimize` trains outside a GradientTape, "
                               "fit or Estimator loop that Horovod can wrap; take the gradients with a GradientTape and "
                               "call apply_gradients", ROLE_RULES["optimizer"], b,
                               sites=group, related=[(b.stmt, "created here")]))
    out += _gradients_in_block(env)
    if not summary.sites:
        out += _unwrapped_training(env)
    return out


# scikit-learn's wrappers of a Keras model: fit, cross-validation and searches run inside
# scikit-learn, where no callback, optimizer wrapper or data division of the conversion reaches.
SKLEARN_WRAPPERS = ("scikeras.wrappers.", "tensorflow.keras.wrappers.scikit_learn.", "keras.wrappers.scikit_learn.",
                    "tf_keras.wrappers.scikit_learn.")


def _unwrapped_training(env: Env) -> list[Problem]:
    """Training the loop summary has no kind for, in a program with no other loop: a
    ``train_on_batch`` loop (a Keras GAN's) or a scikit-learn wrapper. Said as T2 with what the
    user must do, instead of the report's "no training loop found, nothing to change"."""
    out = []
    for call in env.calls_with_method("train_on_batch"):
        out.append(Problem("T2", call.node, f"`{call.receiver_dotted()}.train_on_batch` trains batch by batch, a loop "
                           "the conversion does not wrap: compile each model with hvd.DistributedOptimizer (its "
                           "rate times hvd.size()), broadcast the models' variables from rank 0 after the first "
                           "batch (hvd.broadcast_variables(model.variables, root_rank=0)), divide the loop's steps "
                           "by hvd.size(), and print and save on rank 0; or train with fit or a GradientTape",
                           ROLE_RULES["optimizer"]))
        break                     # (one says it: each of a GAN's three calls would say the same)
    wrappers = {local: full for node in env.imports if node.type == "import_from"
                for local, full in import_bindings(node) if full.startswith(SKLEARN_WRAPPERS)}
    for name in ("KerasClassifier", "KerasRegressor"):
        for call in env.index.by_method.get(name, ()):
            q = env.callee_qualname(call) or wrappers.get(call.callee_dotted(), "")
            if q.startswith(SKLEARN_WRAPPERS):
                out.append(Problem("T2", call.node, f"`{name}` trains the Keras model inside scikit-learn (its fit, "
                                   "cross-validation or search), where Horovod's optimizer, callbacks and data "
                                   "division cannot reach: search on one process, then train the chosen model "
                                   "with fit to distribute it", ROLE_RULES["optimizer"]))
    return out


def _gradients_in_block(env: Env) -> list[Problem]:
    """Gradients taken inside the tape's block into something other than one name
    (``dw, db = tape.gradient(...)``): HVD020 cannot average them, so the loop is not converted."""


    out = []
    for tape in env.tapes:
        with_stmt = N.enclosing(tape.stmt, {"with_stmt"})
        if with_stmt is None or not is_training_tape(env, tape):
            continue
        inner = gradient_inside(tape, with_stmt)
        if inner is not None and single_target(inner) is None:
            stmt = inner.children[0] if inner.type == "simple_stmt" else inner
            out.append(Problem("T2", stmt, f"the gradients of `{tape.name}` are taken inside its block and not "
                               "into one name; write `grads = tape.gradient(...)` (or take them after the block)",
                               ("HVD020",), region=with_stmt))
    return out


# -- T3 -----------------------------------------------------------------------------------
def _t3_mixed(env: Env, summary: Summary) -> list[Problem]:
    """One model trained both by fit and by a custom GradientTape loop."""
    tape_models: dict[int, object] = {}
    for site in summary.sites:
        if site.kind != TAPE or site.distributed:
            continue
        region = site.function or site.driver or N.enclosing(site.node, {"with_stmt"}) or site.node
        for b in _models_used(env, region):
            tape_models.setdefault(id(b), site)
    out = []
    reported = set()
    for site in summary.sites:
        if site.kind != FIT or site.distributed:
            continue
        call = _call_of(site.node)
        if call is None:
            continue
        b = env.lookup(call.receiver_dotted(), call.node, "model")
        if b is not None and id(b) in tape_models and id(b) not in reported:
            reported.add(id(b))
            tape = tape_models[id(b)]
            out.append(Problem("T3", site.node, f"model `{b.name}` is trained both by fit and by a GradientTape loop, "
                               "which are not converted together on one model; train it with one of them",
                               ALL_LOOP_RULES,
                               region=env.source.module,
                               related=[(tape.node, "the GradientTape loop training the same model"),
                                        (b.stmt, f"model `{b.name}` is created here")]))
    if out:
        return out
    # Two models, fit and an Estimator: horovod.tensorflow.keras for fit, horovod.tensorflow's
    # hooks and TF1 optimizer for the Estimator; fit and a tape loop share one set-up
    # (loop._hvd_module, rules/tapes.py) and convert.
    live = [s for s in summary.sites if not s.distributed]
    fits = [s for s in live if s.kind == FIT]
    others = [s for s in live if s.kind == ESTIMATOR]
    if fits and others:
        out.append(Problem("T3", fits[0].node, "this file trains with both fit and an Estimator, which are not "
                           "converted together; put each in its own script", ALL_LOOP_RULES,
                           region=env.source.module, related=[(others[0].node, "the Estimator training")]))
    return out


def _models_used(env: Env, region) -> list:
    """Model bindings a region (a training function, loop or with) refers to (memoised on env)."""
    memo = env.__dict__.setdefault("_models_used", {})
    if id(region) in memo:
        return memo[id(region)]
    found = memo[id(region)] = []
    seen = set()
    for leaf in N.walk(region):
        if leaf.type != "name" or not is_name_use(leaf):
            continue
        name = leaf.value
        nxt = leaf.get_next_sibling()
        if name == "self" and nxt is not None and nxt.type == "trailer" and nxt.children[0] == ".":
            name = f"self.{nxt.children[1].value}"
        if name in seen:
            continue
        seen.add(name)
        b = env.lookup(name, leaf, "model")
        if b is not None:
            found.append(b)
    return found


def _call_of(node) -> N.Call | None:
    for i in range(len(node.children) - 1, 0, -1):
        if N.is_call_trailer(node.children[i]):
            return N.Call(node, i)
    return None


# -- T4 -----------------------------------------------------------------------------------
def _t4_functions_as_values(env: Env, summary: Summary) -> list[Problem]:
    out = []
    training = {}
    for fn, tl in summary.functions.items():
        if tl:
            training.setdefault(fn.name.value, []).append(fn)
    for name, fns in training.items():
        for leaf in env.index.names.get(name, []):
            fn, shown = _function_value(env, leaf, fns)
            if fn is None:
                continue
            tl = summary.functions[fn]
            blocks = tuple(sorted({c for k in tl for c in KIND_RULES[k]}))
            out.append(Problem("T4", shown, f"training function `{_text(env, shown)}` is "
                               f"{_value_context(shown)}; the loop summary cannot follow it to know where and how "
                               "often it runs; call it directly", blocks, region=fn,
                               related=[(fn.name, "defined here")]))
    return out


def _function_value(env: Env, leaf, fns):
    """(funcdef, node shown) when `leaf` refers to one of `fns` as a value, not a call."""
    parent = leaf.parent
    if parent is None:
        return None, None
    if parent.type == "trailer" and parent.children[0] == ".":
        # ``self.train_step`` (a method of this class) used without calling it.
        owner = parent.parent
        if owner is None or owner.type not in ("atom_expr", "power") or parent.children[0] != "." or \
                owner.children[0].type != "name" or owner.children[0].value != "self" or owner.children[1] is not parent:
            return None, None
        nxt = parent.get_next_sibling()
        if nxt is not None and nxt.type == "trailer":
            return None, None
        if _assigned_to(owner):
            return None, None    # ``self.train_step = tf.function(self.train_step)`` re-binds it
        cls = env.class_of(leaf)
        fn = env.method(cls.name.value, leaf.value) if cls is not None else None
        shown = _span(owner.children[0], parent)
        node = owner
    else:
        if not is_name_use(leaf) or parent.type == "decorator" or parent.type == "del_stmt":
            return None, None
        nxt = leaf.get_next_sibling()
        if nxt is not None and nxt.type == "trailer":
            return None, None    # f(...) or f.attr: a call or an attribute, not the function as a value
        if parent.type == "expr_stmt" and any(parent.children[i] is leaf for i in range(0, len(parent.children) - 1, 2)) \
                and parent.children[-1] is not leaf:
            return None, None    # ``f = ...`` re-binds the name
        scope = N.enclosing(leaf, {"funcdef"})
        if scope is not None and (leaf.value in env.param_names(scope) or env.bindings_of(leaf.value, scope)):
            return None, None    # a local variable of the same name
        fn = env.function_named(leaf.value, leaf)
        shown = leaf
        node = leaf
        if fn is not None and leaf.start_pos < fn.start_pos and \
                N.enclosing(leaf, {"funcdef", "lambdef"}) is N.enclosing(fn, {"funcdef"}):
            return None, None    # run before the ``def`` in the same block: not that function yet
    if fn is None or fn not in fns:
        return None, None
    call = N.call_with_argument(node)
    if call is not None and is_higher_order(env, call):
        return None, None        # tf.function(f), partial(f, ...), app.run(main): run f as it is
    return fn, shown


def _assigned_to(node) -> bool:
    """Is `node` a target of its assignment statement?"""
    parent = node.parent
    if parent is None or parent.type != "expr_stmt":
        return False
    ch = parent.children
    return any(ch[i] is node for i in range(0, len(ch) - 1, 2)) and len(ch) >= 3 and ch[1] == "="




def _value_context(node) -> str:
    cur = node if not isinstance(node, Span) else None
    start = cur.parent if cur is not None else None
    if isinstance(node, Span):
        return "used as a value"
    cur = start
    while cur is not None and cur.type not in ("simple_stmt", "suite", "file_input"):
        if cur.type == "trailer" and N.is_call_trailer(cur):
            return "passed as an argument"
        if cur.type == "return_stmt":
            return "returned as a value"
        if cur.type == "expr_stmt":
            return "assigned to a variable"
        cur = cur.parent
    return "used as a value"


# -- T5 -----------------------------------------------------------------------------------
# Tests a host answers from its own disk (rules/rank0_reads.FILE_TESTS, which analysis cannot import).
FILE_TESTS = ("os.path.exists", "os.path.isfile", "os.path.isdir", "os.listdir", "glob.glob", "gfile.exists",
              "latest_checkpoint", "os.scandir")
def _t5_conditional(env: Env, summary: Summary) -> list[Problem]:
    out = []
    module = env.source.module
    conditional_defs = set()
    for fn, tl in summary.functions.items():
        if not tl:
            continue
        stop = N.enclosing(fn, {"funcdef"}) or module
        cond = conditional_ancestor(fn, stop)
        if cond is None:
            continue
        conditional_defs.add(id(fn))
        blocks = tuple(sorted({c for k in tl for c in KIND_RULES[k]}))
        out.append(Problem("T5", fn.name, f"training function `{fn.name.value}` is defined under a condition, so "
                           "which definition trains is decided at run time; define it unconditionally",
                           blocks, region=fn, related=[(header(cond), "the condition")]))
    for site in summary.sites:
        if site.distributed or (site.function is not None and id(site.function) in conditional_defs):
            continue
        cond = conditional_ancestor(site.node, site.function or module)
        if cond is None or uniform_conditions(env, site.node, site.function or module):
            continue      # (a test the same on every rank: each branch's loop converts)
        what = {TAPE: "GradientTape loop", FIT: "fit training loop", ESTIMATOR: "Estimator training"}[site.kind]
        test = (cond.children[1] if cond.type in ("if_stmt", "while_stmt") else cond).get_code(include_prefix=False)
        # (``if os.path.exists("model.h5"):``: each host answers from its own disk)
        disk = "; or share rank 0's answer: `hvd.broadcast_object(<test> if hvd.rank() == 0 else None, " \
               "root_rank=0)` (horovod.tensorflow)" if any(t in test for t in FILE_TESTS) else ""
        out.append(Problem("T5", site.node, f"the {what} runs under a test that may differ between ranks (a rank "
                           f"left out would hang the others); test only constants or flags, or run it unconditionally{disk}",
                           KIND_RULES[site.kind],
                           region=cond, related=[(header(cond), "the condition")]))
    return out


__all__ = ["Blocker", "check", "is_main_guard"]
