"""Keras 3 facts: which imports are Keras 3 (or may be), and which Keras APIs exist only
in Keras 3 (no ``tf_keras`` / ``tf.keras`` 2.x twin).

Horovod 0.28 (the last release) supports Keras 2 only: ``horovod.tensorflow.keras``
wraps ``tf.keras`` optimizers and callbacks, and TensorFlow >= 2.16 makes ``tf.keras``
Keras 3 (Horovod issue 4290). Standalone ``keras`` is Keras 3 from TensorFlow 2.16 on;
``keras_core`` is always Keras 3.

A program that imports standalone ``keras`` or ``keras_core`` and uses only the Keras 2
API runs under Horovod once its imports name the Keras 2 of the stack (contract point 11,
rewritten by rules/keras_target.py). One that uses Keras-3-only API runs through Horovod's
TensorFlow ops on the ``keras3`` target (TensorFlow backend; rules/keras3_adapters.py),
which `keras3_target_reason` chooses for it; what no target runs (another backend, Keras 3's
own distribution, ``stateless_apply``) `keras3_problems` makes a fact that blocks the whole
conversion (code HVD090).

Requires: env (imports, aliases, index). Provides: `keras3_imports`, `keras3_only_uses`,
`keras3_only_imports`, `optimizer_apply_uses`, `stateless_uses`, `backend_not_tensorflow`,
`keras3_blockers`, `keras3_target_reason`, `keras3_problems`, `adapter_definitions`, `ADAPTER_APIS`.
"""

from __future__ import annotations

from ..parse.imports import import_bindings
from ..parse.scopes import is_name_use
from .env import Env
from .roles import SETUP, Problem

KERAS3_ROOTS = ("keras", "keras_core")
# Keras 3 APIs with no Keras 2 twin (prefixes of the full dotted name, root normalised to keras).
KERAS3_ONLY = (
    "keras.ops", "keras.random", "keras.config", "keras.distribution", "keras.tree",
    "keras.Variable", "keras.utils.PyDataset", "keras.layers.TorchModuleWrapper",
    "keras.layers.JaxLayer", "keras.layers.FlaxLayer", "keras.src",
)


# The keras3 target's adapters (rules/keras3_adapters.py) -> the Horovod API each stands for;
# a definition so named whose docstring's first line has ADAPTER_MARK is that API (hvd_facts).
ADAPTER_APIS = {"DistributedOptimizer": "horovod.tensorflow.keras.DistributedOptimizer",
                "DistributedGradientTape": "horovod.tensorflow.DistributedGradientTape",
                "BroadcastGlobalVariablesCallback": "horovod.tensorflow.keras.callbacks.BroadcastGlobalVariablesCallback",
                "MetricAverageCallback": "horovod.tensorflow.keras.callbacks.MetricAverageCallback"}
ADAPTER_MARK = "for Keras 3"
# `keras3_target_reason` for a program that has them: converted for keras3 before (a Keras 2
# target would rewrite its imports under adapters that run on Keras 3 only)
ADAPTER_REASON = "the adapters of an earlier keras3 conversion"


def adapter_definitions(module) -> dict:
    """The keras3 target's adapters a module defines at its top: name -> its ``def`` /
    ``class`` node, for each definition named as one (`ADAPTER_APIS`) whose docstring starts
    ``hvd.<API> for Keras 3``."""
    out = {}
    for node in module.children:
        defn = node.children[-1] if node.type == "decorated" else node
        if defn.type not in ("funcdef", "classdef") or defn.name.value not in ADAPTER_APIS:
            continue
        body = defn.children[-1]
        first = body.children[1] if body.type == "suite" and len(body.children) > 1 else None
        doc = first.children[0] if first is not None and first.type == "simple_stmt" else None
        if doc is not None and doc.type == "string" and doc.value.lstrip("rRbBuU").strip("'\"").startswith("hvd.") \
                and ADAPTER_MARK in doc.value.split("\n", 1)[0]:
            out.setdefault(defn.name.value, defn)
    return out


def keras3_imports(env: Env) -> list[tuple[object, str]]:
    """(import statement, root) of every import of standalone ``keras`` / ``keras_core``.

    A program that already uses ``horovod.keras`` (Horovod's binding for standalone Keras 2,
    as in Horovod's own keras examples) declares its ``import keras`` to be Keras 2: only
    its ``keras_core`` imports count then."""
    out = []
    bindings = [(node, import_bindings(node)) for node in env.imports]
    keras2 = any(full == "horovod.keras" or full.startswith("horovod.keras.") for _, bs in bindings for _, full in bs)
    roots_wanted = ("keras_core",) if keras2 else KERAS3_ROOTS
    for node, bs in bindings:
        roots = {full.split(".")[0] for _, full in bs}
        for root in roots_wanted:
            if root in roots:
                out.append((node, root))
                break
    return out


def _normal(full: str) -> str:
    return "keras" + full[len("keras_core"):] if full.startswith("keras_core") else full


def keras3_only_uses(env: Env) -> dict[str, object]:
    """Keras-3-only API (``keras.ops``) -> its first use in the file."""
    local = {name: _normal(full) for name, full in env.aliases.items() if full.split(".")[0] in KERAS3_ROOTS}
    found: dict[str, object] = {}
    for name, full in local.items():
        for leaf in env.index.names.get(name, ()):
            if not is_name_use(leaf):
                continue
            dotted = full
            cur = leaf.get_next_sibling()
            while cur is not None and cur.type == "trailer" and cur.children[0] == ".":
                dotted += "." + cur.children[1].value
                cur = cur.get_next_sibling()
            for api in KERAS3_ONLY:
                if dotted == api or dotted.startswith(api + "."):
                    found.setdefault(api, leaf)
    return found


def optimizer_apply_uses(env: Env) -> list:
    """``optimizer.apply(grads, vars)`` calls: Keras 3 only (Keras 2 optimizers have only
    ``apply_gradients(zip(grads, vars))``, which Horovod's broadcast rule HVD021 follows)."""
    out = []
    for call in env.index.by_method.get("apply", ()):
        if call.method != "apply" or len(call.args) < 1:
            continue
        receiver = call.receiver_dotted() or ""
        if env.lookup(receiver, call.node, "optimizer") is not None or \
                receiver.rsplit(".", 1)[-1].lower().endswith(("optimizer", "opt")):
            out.append(call)
    return out


def backend_not_tensorflow(env: Env) -> str | None:
    """``os.environ["KERAS_BACKEND"] = "jax"``: the backend named, when not tensorflow."""
    found = _backend_assignment(env)
    return found[1] if found else None


def _backend_assignment(env: Env):
    """(statement, backend) of a setting of ``KERAS_BACKEND`` to a backend other than
    tensorflow: ``os.environ["KERAS_BACKEND"] = "jax"`` or ``os.environ.setdefault(
    "KERAS_BACKEND", "jax")``. A read (``current = os.environ.get("KERAS_BACKEND", "")``) is
    not a setting, nor is an assignment of a value that is not a string literal. Keras 3's
    ``keras.config.set_backend("jax")`` is one too."""
    for stmt, _owner in env.index.assignments:
        if stmt.type != "expr_stmt" or len(stmt.children) != 3 or stmt.children[1] != "=":
            continue
        target, value = stmt.children[0].get_code(include_prefix=False), stmt.children[2]
        if "KERAS_BACKEND" in target and "environ" in target and value.type == "string":
            backend = value.value.strip("'\"")
            if backend and backend != "tensorflow":
                return stmt, backend
    for call in env.index.by_method.get("set_backend", ()):     # ``keras.config.set_backend("jax")``
        value = call.positional(0)
        if call.method == "set_backend" and value is not None and value.value.type == "string":
            backend = value.value.value.strip("'\"")
            if backend and backend != "tensorflow":
                return call.node, backend
    for call in env.index.by_method.get("setdefault", ()):
        key, value = call.positional(0), call.positional(1)
        if call.method == "setdefault" and "environ" in (call.receiver_dotted() or "") and key is not None \
                and value is not None and "KERAS_BACKEND" in key.value.get_code() and value.value.type == "string":
            backend = value.value.value.strip("'\"")
            if backend and backend != "tensorflow":
                return call.node, backend
    return None


def keras3_only_imports(env: Env) -> list[tuple[object, str]]:
    """(import statement, API) of each import of a Keras-3-only API (``from keras import ops``):
    rewritten to tf.keras it would fail at the import, used or not."""
    out = []
    for node, _root in keras3_imports(env):
        for _name, full in import_bindings(node):
            dotted = _normal(full)
            api = next((a for a in KERAS3_ONLY if dotted == a or dotted.startswith(a + ".")), None)
            if api is not None:
                out.append((node, api))
    return out


STATELESS = ("stateless_call", "stateless_apply")


def stateless_uses(env: Env) -> list:
    """``model.stateless_call(...)`` / ``optimizer.stateless_apply(...)``: Keras 3 only."""
    return [call for name in STATELESS for call in env.index.by_method.get(name, ()) if call.method == name]


# Keras-3-only API the keras3 target cannot run either: another backend's, or Keras 3's own
# distribution (a JAX device mesh), which Horovod would fight.
NOT_ON_KERAS3_TARGET = {
    "keras.distribution": "`keras.distribution` is Keras 3's own data/model parallelism (a JAX device mesh): "
                          "train either with it or with Horovod; remove it to convert",
    "keras.layers.TorchModuleWrapper": "`keras.layers.TorchModuleWrapper` runs on the torch backend only, and "
                                       "Horovod's TensorFlow ops need the tensorflow backend",
    "keras.layers.JaxLayer": "`keras.layers.JaxLayer` runs on the jax backend only, and Horovod's TensorFlow ops "
                             "need the tensorflow backend",
    "keras.layers.FlaxLayer": "`keras.layers.FlaxLayer` runs on the jax backend only, and Horovod's TensorFlow ops "
                              "need the tensorflow backend",
}


def keras3_blockers(env: Env, target: str = "tf.keras") -> list[tuple[object, str, str]]:
    """(node, what, one-line reason saying what to change) of each use that the Keras
    `target` cannot run, in a program that imports standalone ``keras`` / ``keras_core``:
    on a Keras 2 target (``tf.keras``, ``tf_keras``) every Keras-3-only use; on the
    ``keras3`` target only a backend other than tensorflow, `NOT_ON_KERAS3_TARGET`,
    ``stateless_apply``/``stateless_call`` and a torch ``DataLoader``. Empty when it runs."""
    if not keras3_imports(env):
        return []
    keras3 = target == "keras3"
    out: list[tuple[object, str, str]] = []
    backend = _backend_assignment(env)      # first: the most fundamental (no TensorFlow at all)
    if backend is not None:
        out.append((backend[0], f"KERAS_BACKEND={backend[1]}", f"KERAS_BACKEND={backend[1]}: Horovod's TensorFlow ops "
                                "need Keras' tensorflow backend: remove the setting (or set it to tensorflow), then "
                                "convert again"))
    seen: set[str] = set()
    uses = dict(keras3_only_uses(env))
    for node, api in keras3_only_imports(env):
        uses.setdefault(api, node)
    for api, node in sorted(uses.items(), key=lambda kv: kv[1].start_pos):
        if api in seen or keras3 and api not in NOT_ON_KERAS3_TARGET:
            continue
        seen.add(api)
        if keras3:
            out.append((node, f"`{api}`", NOT_ON_KERAS3_TARGET[api]))
        else:
            out.append((node, f"`{api}`", f"`{api}` exists only in Keras 3, which Horovod 0.28 cannot run: "
                              f"{_instead(api)}, then convert again"))
    if not keras3:
        for call in optimizer_apply_uses(env):
            receiver = call.receiver_dotted() or "optimizer"
            out.append((call.node, f"`{receiver}.apply`", f"`{receiver}.apply(grads, vars)` is Keras 3 only: write "
                                   f"`{receiver}.apply_gradients(zip(grads, vars))`, then convert again"))
    for call in stateless_uses(env):
        reason = (f"`{call.method}` is Keras 3's functional (JAX-style) training: it returns new variable values "
                  "instead of updating the variables, past the gradient averaging the conversion adds (in the "
                  "optimizer's `apply` and the tape); train with `tf.GradientTape` and `optimizer.apply`, then "
                  "convert again") if keras3 else (
                  f"`{call.method}` is Keras 3 only (no Keras 2 twin): train with `tf.GradientTape` and "
                  "`apply_gradients`, then convert again")
        out.append((call.node, f"`{call.method}`", reason))
    for call in torch_loaders(env)[:1]:
        out.append((call.node, "`torch.utils.data.DataLoader`", "a torch `DataLoader` fed to Keras is Keras 3 only "
                               "(Keras 2 trains on arrays, `tf.data` or `keras.utils.Sequence`), and the conversion "
                               "cannot divide its batches among the ranks: build a `tf.data.Dataset` from the same "
                               "arrays instead, then convert again"))
    return out


def keras3_target_reason(env: Env, target: str) -> str | None:
    """Why the conversion uses the ``keras3`` target instead of Keras 2 `target`: the first
    Keras-3-only use (``keras.ops``, ``optimizer.apply``) that the keras3 target runs, as
    `` `keras.ops` (line 12)``; None when a Keras 2 target will do, or when only the backend
    stops it. (When keras3 cannot run the program either, its refusal names what no target
    runs: a JAX backend, `stateless_call`, not `keras.ops`.)"""
    if target == "keras3" or not keras3_imports(env):
        return None
    backend = _backend_assignment(env)
    for node, what, _ in keras3_blockers(env, target):
        if backend is None or node is not backend[0]:
            return f"{what} (line {node.start_pos[0]})"
    # a program converted for keras3 before: its adapters run on Keras 3 only (`v.value`)
    adapters = adapter_definitions(env.source.module)
    if adapters and env.horovod():
        name, defn = min(adapters.items(), key=lambda kv: kv[1].start_pos)
        return f"{ADAPTER_REASON} (`{name}`, line {defn.start_pos[0]})"
    return None


def torch_loaders(env: Env) -> list:
    """``torch.utils.data.DataLoader(...)`` calls (Keras 3 trains on them; Keras 2 cannot)."""
    torch = {local for node in env.imports for local, full in import_bindings(node) if full.split(".")[0] == "torch"}
    return [call for call in env.index.by_method.get("DataLoader", ())
            if (call.callee_dotted() or "").partition(".")[0] in torch]


def _instead(api: str) -> str:
    return {
        "keras.ops": "use `tf.*` ops instead (`tf.nn.relu`, `tf.reduce_mean`, `tf.matmul`)",
        "keras.random": "use `tf.random.*` instead",
        "keras.config": "remove it (Keras 2 configures through `keras.backend` / `keras.mixed_precision`)",
        "keras.Variable": "use `tf.Variable` instead",
        "keras.utils.PyDataset": "use `keras.utils.Sequence` or a `tf.data.Dataset` instead",
        "keras.tree": "use `tf.nest` instead",
    }.get(api, "write it with TensorFlow / Keras 2 API")


def keras3_problems(env: Env, target: str = "tf.keras") -> list[Problem]:
    """One whole-program restriction fact (code HVD090) per use the Keras `target` cannot
    run (`keras3_blockers`): all or nothing."""
    return [Problem("HVD090", node, message, SETUP, everywhere=True) for node, _, message in keras3_blockers(env, target)]


__all__ = ["keras3_imports", "keras3_only_uses", "keras3_only_imports", "optimizer_apply_uses", "stateless_uses",
           "backend_not_tensorflow", "keras3_blockers", "keras3_problems", "keras3_target_reason", "KERAS3_ONLY",
           "NOT_ON_KERAS3_TARGET", "ADAPTER_APIS", "ADAPTER_MARK", "ADAPTER_REASON", "adapter_definitions"]
