"""Restriction checks (seed 2.1: R1–R10, seed 3.1: T1–T5): when a rule cannot be
applied safely. Each violation is a warning on the offending construct, names the rules
it blocks, and those rules produce no edit there.

Requires: env (its `Problem` facts for R2, R3, R5–R7, R9, R10), loop (for T-checks).
Provides: `check(env, summary) -> list[Problem]` and `Blocker`.
"""

from __future__ import annotations

from . import nodes as N
from .env import Env, Problem
from .loop import FIT, TAPE, Summary

SETUP = ("HVD001", "HVD002")
TAPE_RULES = ("HVD020", "HVD021")
FIT_RULES = ("HVD050", "HVD051")
# Library roots a training loop may call into without leaving "one file" (T1).
LIBRARIES = {"tensorflow", "keras", "numpy", "os", "sys", "math", "time", "random", "json",
             "horovod", "tensorflow_datasets", "pathlib", "argparse", "logging", "functools"}
SIDE_EFFECT_CALLS = {"next", "input", "pop", "append", "extend", "insert", "remove", "update",
                     "write", "send", "apply_gradients", "fit", "train", "save", "assign",
                     "assign_add", "assign_sub", "minimize", "step", "popitem", "setdefault", "clear"}
MAIN_GUARD = "__name__"


def check(env: Env, summary: Summary) -> list[Problem]:
    problems = list(env.problems)
    problems += _r1_imports(env)
    problems += _r4_prints(env)
    problems += _r8_apply_gradients(env)
    problems += _t1_other_files(env, summary)
    problems += _t2_loop_type(env)
    problems += _t3_mixed(env, summary)
    problems += _t4_functions_as_values(env, summary)
    problems += _t5_conditional(env, summary)
    for p in problems:
        if any(code in SETUP for code in p.blocks) and not env.horovod():
            p.everywhere = True
    return problems


class Blocker:
    """``blocked(code, node, binding)``: is this rule site stopped by a restriction?"""

    def __init__(self, problems: list[Problem]):
        self.problems = problems

    def __call__(self, code: str, node, binding=None) -> bool:
        for p in self.problems:
            if p.everywhere:
                return True
            if code not in p.blocks:
                continue
            if binding is not None and p.binding is binding:
                return True
            if p.node is node or (p.region is not None and _inside(node, p.region)):
                return True
        return False


def _inside(node, ancestor) -> bool:
    cur = node
    while cur is not None:
        if cur is ancestor:
            return True
        cur = cur.parent
    return False


def _r1_imports(env: Env) -> list[Problem]:
    out = []
    end = env.top_block_end
    for node in env.imports:
        text = node.get_code(include_prefix=False)
        if not any(w in text.split() or any(part.startswith(w + ".") for part in text.split()) for w in ("tensorflow", "keras")):
            continue
        nested = N.enclosing(node, {"funcdef", "classdef", "if_stmt", "for_stmt", "while_stmt", "with_stmt"})
        late = end is not None and node.start_pos > end.start_pos
        if nested is not None or late:
            out.append(Problem("R1", node, "TensorFlow is imported below other code, not at the top of the module", SETUP))
    return out


def _r4_prints(env: Env) -> list[Problem]:
    out = []
    for call in N.calls_in(env.source.module):
        if call.callee_dotted() != "print" or not call.is_whole():
            continue
        for arg in call.args:
            bad = _side_effect(env, arg.value)
            if bad is not None:
                out.append(Problem("R4", call.node, f"print argument `{bad}` has a side effect", ("HVD030",)))
                break
    return out


def _side_effect(env: Env, node) -> str | None:
    for sub in N.walk(node):
        if sub.type in ("namedexpr_test", "yield_expr") or (sub.type == "keyword" and sub.value == "await"):
            return sub.get_code(include_prefix=False)
    for call in N.calls_in(node):
        name = call.method or call.callee_dotted()
        if name in SIDE_EFFECT_CALLS or (call.callee_dotted() in env.functions):
            return call.node.get_code(include_prefix=False)
    return None


def _r8_apply_gradients(env: Env) -> list[Problem]:
    from .rules.base import RuleContext
    from .rules.gradient_tape import gradient_sites, statement_form

    ctx = RuleContext(env.source, env, None, lambda *a: False)
    out = []
    for call, b, receiver in gradient_sites(ctx):
        if statement_form(call) is None:
            out.append(Problem("R8", call.node, f"`{receiver}.apply_gradients` is not an expression statement or an assignment's right-hand side",
                               ("HVD021",), region=call.node))
    return out


def _t1_other_files(env: Env, summary: Summary) -> list[Problem]:
    """A loop that hands the model/optimizer to a function imported from the project."""
    local_imports = {}
    for node in env.imports:
        if node.type != "import_from":
            continue
        text = node.get_code(include_prefix=False)
        module = text.split()[1]
        if module.startswith(".") or module.split(".")[0] not in LIBRARIES:
            for name in _imported_names(node):
                local_imports[name] = module
    out = []
    roles = {b.name for b in env.bindings if b.role in ("model", "optimizer", "dataset")}
    for call in N.calls_in(env.source.module):
        callee = call.callee_dotted()
        if callee in local_imports and any(N.dotted(a.value) in roles for a in call.args):
            out.append(Problem("T1", call.node, f"the training loop continues in `{local_imports[callee]}` (another file)", ()))
    return out


def _imported_names(node) -> list[str]:
    names = []
    seen_import = False
    for leaf in N.walk(node):
        if leaf.type == "keyword" and leaf.value == "import":
            seen_import = True
        elif seen_import and leaf.type == "name":
            names.append(leaf.value)
    return names


def _t2_loop_type(env: Env) -> list[Problem]:
    out = []
    for call in N.calls_in(env.source.module):
        q = env.qualname(call.callee_parts) or ""
        if q.startswith("tensorflow.distribute.") and q.endswith("Strategy"):
            out.append(Problem("T2", call.node, f"`{call.callee_dotted()}` already distributes the loop another way",
                               TAPE_RULES + FIT_RULES + ("HVD011",), region=env.source.module))
        elif call.method == "minimize" and not env.tf1 and env.lookup(call.receiver_dotted(), call.node, "optimizer"):
            out.append(Problem("T2", call.node, "`minimize` trains without a GradientTape or fit loop Horovod can wrap", ("HVD021",)))
    return out


def _t3_mixed(env: Env, summary: Summary) -> list[Problem]:
    """One model trained both by fit and by a custom tape loop."""
    tape_models = set()
    for site in summary.sites:
        if site.kind != TAPE:
            continue
        with_stmt = N.enclosing(site.node, {"with_stmt"})
        scope = site.function or env.source.module
        for b in env.bindings:
            if b.role == "model" and with_stmt is not None and _uses(scope, b.name):
                tape_models.add(b.name)
    out = []
    for site in summary.sites:
        if site.kind == FIT:
            receiver = N.Call(site.node, _call_index(site.node)).receiver_dotted() if _call_index(site.node) else None
            if receiver in tape_models:
                out.append(Problem("T3", site.node, f"model `{receiver}` is trained by both fit and a GradientTape loop",
                                   TAPE_RULES + FIT_RULES, region=env.source.module))
    return out


def _call_index(node):
    for i in range(len(node.children) - 1, 0, -1):
        if N.is_call_trailer(node.children[i]):
            return i
    return None


def _uses(scope, name: str) -> bool:
    return any(n.type == "name" and n.value == name for n in N.walk(scope))


def _t4_functions_as_values(env: Env, summary: Summary) -> list[Problem]:
    training = {fn.name.value for fn, kinds in summary.functions.items() if kinds}
    out = []
    for node in N.walk(env.source.module):
        if node.type != "name" or node.value not in training:
            continue
        parent = node.parent
        if parent.type in ("funcdef", "import_as_name", "dotted_as_name"):
            continue
        nxt = node.get_next_sibling()
        if nxt is not None and nxt.type == "trailer":
            continue  # f(...) or f.attr: a call, not a value
        if parent.type == "decorator":
            continue
        call = _call_of_argument(node)
        if call is not None and env.qualname(call.callee_parts) == "tensorflow.function":
            continue  # tf.function(f) is the decorator spelled as a call
        out.append(Problem("T4", node, f"training function `{node.value}` is used as a value; the loop summary cannot follow it", ()))
    return out


def _call_of_argument(node):
    cur = node
    while cur is not None and cur.type != "trailer":
        cur = cur.parent
    if cur is None or cur.parent is None:
        return None
    idx = cur.parent.children.index(cur)
    return N.Call(cur.parent, idx) if N.is_call_trailer(cur) else None


def _t5_conditional(env: Env, summary: Summary) -> list[Problem]:
    out = []
    for fn, kinds in summary.functions.items():
        if kinds and _conditional(fn):
            out.append(Problem("T5", fn.name, f"training function `{fn.name.value}` is defined conditionally",
                               TAPE_RULES, region=fn))
    for site in summary.sites:
        if site.kind == TAPE and site.function is None and _conditional(site.node):
            out.append(Problem("T5", site.node, "the training loop is defined under a condition", TAPE_RULES, region=site.node))
    return out


def _conditional(node) -> bool:
    cur = node.parent
    while cur is not None and cur.type != "funcdef":
        if cur.type in ("if_stmt", "try_stmt", "match_stmt"):
            if cur.type == "if_stmt" and MAIN_GUARD in cur.children[1].get_code(include_prefix=False):
                return False
            return True
        cur = cur.parent
    return False
