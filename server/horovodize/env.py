"""The environment pass (σ of the seeds): which names hold tensorflow, keras, the
optimizer, dataset, checkpoint, model, estimator, schedule and tape.

One walk over the module in source order records import aliases and *bindings*
(``name = <call>`` whose callee resolves to a known TensorFlow constructor). Names are
keyed by scope (function or module; ``self.x`` by class) so a loop split over functions
and methods still finds its optimizer. The facts the restriction checks need (creation
count, condition, aliasing, reassignment) are recorded here once and read by both the
restriction checks and the rules.

Requires: source. Provides: `Env`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from . import nodes as N
from .source import Source

# Keras optimizer classes and their default learning rates (Keras 2.15 / TF 2.15).
KERAS_OPTIMIZERS = {
    "Adam": "0.001", "AdamW": "0.001", "Adamax": "0.001", "Nadam": "0.001",
    "SGD": "0.01", "RMSprop": "0.001", "Adagrad": "0.001", "Adadelta": "0.001",
    "Ftrl": "0.001", "Lion": "0.0001", "Adafactor": "0.001",
}
# TF1 tf.train optimizers; None = learning_rate is required.
TF1_OPTIMIZERS = {
    "AdamOptimizer": "0.001", "AdadeltaOptimizer": "0.001", "GradientDescentOptimizer": None,
    "AdagradOptimizer": None, "MomentumOptimizer": None, "RMSPropOptimizer": None,
    "FtrlOptimizer": None, "ProximalAdagradOptimizer": None,
}
COMPILE_STRINGS = {"adam": "Adam", "sgd": "SGD", "rmsprop": "RMSprop", "adagrad": "Adagrad",
                   "adadelta": "Adadelta", "adamax": "Adamax", "nadam": "Nadam", "ftrl": "Ftrl"}

ROLES = ("optimizer", "dataset", "checkpoint", "model", "estimator", "lr_schedule")


def canonical(q: str | None) -> str | None:
    """Normalise a qualified name: compat.v1, standalone keras, legacy optimizers."""
    if q is None:
        return None
    for old, new in (
        ("tensorflow.compat.v1", "tensorflow"), ("tensorflow.compat.v2", "tensorflow"),
        ("tensorflow.python.keras", "tensorflow.keras"), ("tf_keras", "tensorflow.keras"),
        ("keras", "tensorflow.keras"),
    ):
        if q == old or q.startswith(old + "."):
            q = new + q[len(old):]
            break
    q = q.replace("tensorflow.optimizers", "tensorflow.keras.optimizers", 1) if q.startswith("tensorflow.optimizers") else q
    q = q.replace("tensorflow.keras.optimizers.legacy.", "tensorflow.keras.optimizers.")
    q = q.replace("tensorflow.keras.optimizers.experimental.", "tensorflow.keras.optimizers.")
    q = q.replace("tensorflow.keras.models.", "tensorflow.keras.")
    return q


@dataclass
class Binding:
    """``name = <call>`` (or a ``with`` item) giving `name` a role."""

    name: str
    role: str
    stmt: object                 # expr_stmt / with_item
    value: object                # the right-hand side
    scope: object                # funcdef / classdef (for self.x) / file_input
    conditional: object = None   # the if/try/... it is created under (R7)
    detail: str = ""             # e.g. optimizer class name
    tf1: bool = False


@dataclass
class Problem:
    """A violated restriction found by the environment pass (reported by restrictions.py)."""

    code: str          # "R5", "T4", ...
    node: object
    message: str
    blocks: tuple[str, ...]
    binding: Binding | None = None
    region: object = None        # every site inside this node is blocked
    everywhere: bool = False     # the set-up is blocked, so is every rule


@dataclass
class Env:
    source: Source
    aliases: dict[str, str] = field(default_factory=dict)        # local name -> canonical module/member
    tf_names: set[str] = field(default_factory=set)
    tf1: bool = False
    keras_import: object = None                                   # `from tensorflow import keras` node
    tf_import: object = None
    hvd_name: str | None = None
    hvd_module: str | None = None
    imports: list = field(default_factory=list)                   # all import statements
    top_imports_end: object = None                                # last import of the top block
    top_block_end: object = None                                  # first statement after the top block
    bindings: list[Binding] = field(default_factory=list)
    tapes: list[Binding] = field(default_factory=list)
    classes: dict[str, object] = field(default_factory=dict)      # model subclasses
    functions: dict[str, list] = field(default_factory=dict)      # name -> funcdefs
    problems: list[Problem] = field(default_factory=list)
    member_aliases: dict[str, object] = field(default_factory=dict)

    # -- resolution ----------------------------------------------------------------
    def qualname(self, node_or_parts) -> str | None:
        """Canonical dotted name of an expression (or callee parts) through the aliases."""
        d = N.dotted(node_or_parts) if not isinstance(node_or_parts, list) else N.dotted_parts(node_or_parts)
        if d is None:
            return None
        root, _, rest = d.partition(".")
        if root not in self.aliases:
            return None
        full = self.aliases[root] + ("." + rest if rest else "")
        return canonical(full)

    def scopes_for(self, node) -> list:
        """Lookup chain of scopes for a name used at `node` (innermost first)."""
        chain, cur = [], node.parent
        while cur is not None:
            if cur.type in ("funcdef", "file_input"):
                chain.append(cur)
            cur = cur.parent
        return chain

    def lookup(self, name: str | None, at, role: str | None = None) -> Binding | None:
        """The binding of `name` visible at node `at` (``self.x`` through the class)."""
        if not name:
            return None
        if name.startswith("self."):
            cls = N.enclosing(at, {"classdef"})
            cands = [b for b in self.bindings if b.name == name and b.scope is cls]
        else:
            cands = []
            for scope in self.scopes_for(at):
                cands = [b for b in self.bindings if b.name == name and b.scope is scope]
                if cands:
                    break
        if role:
            cands = [b for b in cands if b.role == role]
        return cands[0] if cands else None

    def role_of_call(self, call: N.Call, at=None) -> tuple[str, str] | None:
        """(role, detail) when `call` constructs a known TensorFlow object."""
        q = self.qualname(call.callee_parts)
        if q:
            parts = q.split(".")
            last = parts[-1]
            if q.startswith("tensorflow.keras.optimizers.schedules."):
                return "lr_schedule", last
            if q.startswith("tensorflow.keras.optimizers.") and last in KERAS_OPTIMIZERS:
                return "optimizer", last
            if q.startswith("tensorflow.train.") and last in TF1_OPTIMIZERS:
                return "optimizer", last
            if q.startswith("tensorflow.data."):
                return "dataset", last
            if q in ("tensorflow.train.Checkpoint", "tensorflow.train.CheckpointManager"):
                return "checkpoint", last
            if q in ("tensorflow.keras.Sequential", "tensorflow.keras.Model") or q.startswith(
                "tensorflow.keras.applications.") or q == "tensorflow.keras.load_model":
                return "model", last
            if q.startswith("tensorflow.estimator.") and (
                last.endswith(("Estimator", "Classifier", "Regressor"))):
                return "estimator", last
            return None
        callee = call.callee_dotted()
        if callee in self.classes:
            return "model", callee
        # A method chain on a dataset stays a dataset: ds.shuffle(100).batch(32).
        root = call.node.children[0]
        if root.type == "name" and at is not None:
            b = self.lookup(root.value, at, "dataset")
            if b is not None and call.method:
                return "dataset", call.method
        return None

    def binding_for_call(self, call: N.Call) -> Binding | None:
        for b in self.bindings:
            if b.value is call.node:
                return b
        return None

    def horovod(self) -> bool:
        return self.hvd_name is not None

    def tf_alias(self) -> str | None:
        for name in ("tf",):
            if self.aliases.get(name, "").startswith("tensorflow") and name in self.tf_names:
                return name
        return next(iter(sorted(self.tf_names)), None)

    def keras_alias(self) -> str | None:
        for name, q in self.aliases.items():
            if q in ("tensorflow.keras", "keras"):
                return name
        return None


def build_env(source: Source) -> Env:
    env = Env(source)
    module = source.module
    _collect_imports(env, module)
    _collect_classes(env, module)
    for node in N.walk(module):
        t = node.type
        if t == "funcdef":
            env.functions.setdefault(node.name.value, []).append(node)
        elif t == "expr_stmt":
            _assignment(env, node)
        elif t == "with_item":
            _with_item(env, node)
    _restriction_facts(env)
    return env


# -- imports ---------------------------------------------------------------------------
def _collect_imports(env: Env, module) -> None:
    top = True
    for stmt in _module_statements(module):
        kind = _top_kind(env, stmt)
        if kind == "import":
            if top:
                env.top_imports_end = stmt
        elif kind == "code" and top:
            top = False
            env.top_block_end = stmt
    for node in N.walk(module):
        if node.type in ("import_name", "import_from"):
            env.imports.append(node)
            _import(env, node)


def _module_statements(module):
    for child in module.children:
        if child.type == "simple_stmt":
            yield child
        elif child.type in N.COMPOUND or child.type == "error_node":
            yield child


def _top_kind(env: Env, stmt) -> str:
    """'import', 'neutral' (docstring, os.environ, sys.path...) or 'code'."""
    if stmt.type != "simple_stmt":
        return "code"
    kinds = set()
    for small in stmt.children:
        if small.type in ("import_name", "import_from"):
            kinds.add("import")
        elif small.type in ("newline", "operator") or small.type == "string":
            continue
        else:
            code = small.get_code(include_prefix=False)
            if code.startswith(("os.environ", "sys.path", "warnings.", "logging.", "__")) or small.type == "string":
                continue
            kinds.add("code")
    if "code" in kinds:
        return "code"
    return "import" if "import" in kinds else "neutral"


def _import(env: Env, node) -> None:
    if node.type == "import_name":
        for dotted_node, alias in _import_names(node):
            full = _dotted_name(dotted_node)
            local = alias or full.split(".")[0]
            target = full if alias else full.split(".")[0]
            _bind_module(env, local, target, node)
    else:
        module = _from_module(node)
        if module is None:
            return
        for name, alias in _from_names(node):
            _bind_module(env, alias or name, f"{module}.{name}", node)


def _bind_module(env: Env, local: str, full: str, node) -> None:
    interesting = full.split(".")[0] in ("tensorflow", "keras", "os", "horovod", "tf_keras")
    if not interesting:
        return
    env.aliases[local] = full
    if full.startswith("horovod.tensorflow"):
        env.hvd_name, env.hvd_module = local, full
        return
    c = canonical(full)
    if c == "tensorflow":
        env.tf_names.add(local)
        env.tf_import = env.tf_import or node
        if full.startswith("tensorflow.compat.v1"):
            env.tf1 = True
    elif c and c.startswith("tensorflow.keras"):
        env.keras_import = env.keras_import or node


def _import_names(node):
    """[(dotted_name node, alias or None)] of ``import a.b as c, d``."""
    names = node.children[1]
    items = names.children if names.type == "dotted_as_names" else [names]
    out = []
    for item in items:
        if item.type == "operator":
            continue
        if item.type == "dotted_as_name":
            out.append((item.children[0], item.children[2].value))
        else:
            out.append((item, None))
    return out


def _dotted_name(node) -> str:
    return node.get_code(include_prefix=False).replace(" ", "")


def _from_module(node) -> str | None:
    parts = []
    for child in node.children[1:]:
        if child == "import":
            break
        if child.type == "operator" and child.value in (".", "..."):
            return None  # relative import: not a library module
        parts.append(child.get_code(include_prefix=False).strip())
    return "".join(parts) or None


def _from_names(node):
    idx = [i for i, c in enumerate(node.children) if c == "import"]
    if not idx:
        return []
    rest = [c for c in node.children[idx[0] + 1 :] if c.type != "operator" or c.value == "*"]
    out = []
    for item in rest:
        if item.type == "import_as_names":
            for sub in item.children:
                if sub.type == "import_as_name":
                    out.append((sub.children[0].value, sub.children[2].value))
                elif sub.type == "name":
                    out.append((sub.value, None))
        elif item.type == "import_as_name":
            out.append((item.children[0].value, item.children[2].value))
        elif item.type == "name":
            out.append((item.value, None))
    return out


# -- classes ---------------------------------------------------------------------------
def _collect_classes(env: Env, module) -> None:
    """Keras model subclasses, directly or through another summarised class (in order)."""
    for node in N.walk(module):
        if node.type != "classdef":
            continue
        bases = []
        for child in node.children:
            if child.type == "arglist":
                bases = [c for c in child.children if c.type != "operator"]
            elif child.type in ("name", "atom_expr", "power") and child is not node.name:
                bases.append(child)
        for base in bases:
            value = base.children[2] if base.type == "argument" and len(base.children) == 3 else base
            q = env.qualname(value)
            d = N.dotted(value)
            if q in ("tensorflow.keras.Model", "tensorflow.keras.Sequential") or d in env.classes:
                env.classes[node.name.value] = node
                break


# -- assignments -----------------------------------------------------------------------
def _assignment(env: Env, stmt) -> None:
    parts = N.assign_parts(stmt)
    if parts is None:
        return
    targets, value = parts
    call = N.as_call(value)
    for target in targets:
        name = N.dotted(target)
        if name is None:
            continue
        scope = _binding_scope(name, stmt)
        if scope is None:
            continue
        if call is not None:
            role = env.role_of_call(call, stmt)
            if role is None:
                role = _returned_role(env, call)
            if role is not None:
                fn = N.enclosing(stmt, {"funcdef"})
                stop = fn if fn is not None else env.source.module
                b = Binding(name, role[0], stmt, value, scope,
                            N.conditional_ancestor(stmt, stop), role[1], env.tf1)
                env.bindings.append(b)
                continue
        # Not a constructor: keep the assignment as a plain binding for R3/R5/R6 facts.
        env.bindings.append(Binding(name, "other", stmt, value, scope))


def _binding_scope(name: str, stmt):
    if name.startswith("self."):
        return N.enclosing(stmt, {"classdef"})
    if "." in name:
        return None
    return N.func_scope_of(stmt)


def _returned_role(env: Env, call: N.Call):
    """``model = build_model()`` where build_model returns a Keras model/optimizer."""
    callee = call.callee_dotted()
    for fn in env.functions.get(callee or "", []) if callee else []:
        for node in N.walk(fn):
            if node.type == "return_stmt" and len(node.children) > 1:
                inner = N.as_call(node.children[1])
                if inner is not None:
                    role = env.role_of_call(inner, node)
                    if role:
                        return role
    return None


def _with_item(env: Env, item) -> None:
    if len(item.children) < 3:
        return
    call = N.as_call(item.children[0])
    target = N.dotted(item.children[2])
    if call is not None and target and env.qualname(call.callee_parts) == "tensorflow.GradientTape":
        env.tapes.append(Binding(target, "tape", item, item.children[0], N.func_scope_of(item)))


# -- restriction facts ---------------------------------------------------------------------
def _restriction_facts(env: Env) -> None:
    """Facts for R2, R3, R5, R6, R7, R9, R10 (reported and explained by restrictions.py)."""
    by_key: dict[tuple, list[Binding]] = {}
    for b in env.bindings:
        by_key.setdefault((b.name, id(b.scope)), []).append(b)
    role_blocks = {
        "optimizer": ("HVD010", "HVD011", "HVD021"),
        "dataset": ("HVD040",),
        "checkpoint": ("HVD031",),
    }
    for group in by_key.values():
        made = [b for b in group if b.role in role_blocks]
        if not made:
            continue
        role = made[0].role
        blocks = role_blocks[role]
        code_once = "R10" if role == "checkpoint" else "R5"
        creations = [b for b in made if not _is_chain_of_self(b)]
        for b in made:
            if b.conditional is not None and role != "checkpoint":
                env.problems.append(Problem("R7", b.stmt, f"{role} `{b.name}` is created conditionally", blocks, made[0]))
        if len(creations) > 1:
            for b in creations[1:]:
                env.problems.append(Problem(code_once, b.stmt, f"{role} `{b.name}` is created more than once", blocks, made[0]))
        for other in group:
            if other.role == "other":
                env.problems.append(Problem("R6", other.stmt, f"{role} variable `{other.name}` is reassigned to another value", blocks, made[0]))
    # Aliases: `opt2 = opt` (R5/R10), `Adam = tf.optimizers.Adam` (R3), `t = tf` (R2).
    for b in env.bindings:
        if b.role != "other":
            continue
        src = N.dotted(b.value)
        if src is None:
            if _is_module_import_call(b.value):
                env.problems.append(Problem("R2", b.stmt, "the tensorflow module is bound by a call, not an import", ("HVD001", "HVD002")))
            continue
        if src in env.tf_names:
            env.problems.append(Problem("R2", b.stmt, f"the tensorflow module is re-bound to `{b.name}`", ("HVD001", "HVD002")))
            continue
        q = env.qualname(b.value)
        if q and q.startswith("tensorflow.") and "." in src:
            env.member_aliases[b.name] = b.stmt
            env.problems.append(Problem("R3", b.stmt, f"`{b.name}` aliases the tensorflow member `{src}`", ("HVD010", "HVD011", "HVD040")))
            continue
        target = env.lookup(src, b.stmt)
        if target is not None and target.role in role_blocks:
            code = "R10" if target.role == "checkpoint" else "R5"
            env.problems.append(Problem(code, b.stmt, f"{target.role} `{src}` is aliased as `{b.name}`", role_blocks[target.role], target))
    # R9: a module-level optimizer used in a function defined before it.
    for b in env.bindings:
        if b.role != "optimizer" or b.scope is not env.source.module:
            continue
        for fns in env.functions.values():
            for fn in fns:
                if fn.end_pos <= b.stmt.start_pos and _uses_name(fn, b.name):
                    env.problems.append(Problem("R9", b.stmt, f"global optimizer `{b.name}` is defined after `{fn.name.value}` that uses it", role_blocks["optimizer"], b))


def _is_chain_of_self(b: Binding) -> bool:
    root = b.value.children[0] if b.value.type in ("atom_expr", "power") else None
    return root is not None and root.type == "name" and root.value == b.name


def _is_module_import_call(value) -> bool:
    code = value.get_code(include_prefix=False)
    return ("import_module(" in code or "__import__(" in code) and "tensorflow" in code


def _uses_name(fn, name: str) -> bool:
    return any(n.type == "name" and n.value == name for n in N.walk(fn))
