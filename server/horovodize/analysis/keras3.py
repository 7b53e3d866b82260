"""Keras 3 facts: which imports are Keras 3 (or may be), and which Keras APIs exist only
in Keras 3 (no ``tf_keras`` / ``tf.keras`` 2.x twin).

Horovod 0.28 (the last release) supports Keras 2 only: ``horovod.tensorflow.keras``
wraps ``tf.keras`` optimizers and callbacks, and TensorFlow >= 2.16 makes ``tf.keras``
Keras 3 (Horovod issue 4290). Standalone ``keras`` is Keras 3 from TensorFlow 2.16 on;
``keras_core`` is always Keras 3.

A program that imports standalone ``keras`` or ``keras_core`` and uses only the Keras 2
API runs under Horovod once its imports name the Keras 2 of the stack (contract point 11,
rewritten by rules/keras_target.py); one that uses Keras-3-only API cannot, and
`keras3_problems` makes that a fact that blocks the whole conversion (code HVD090).

Requires: env (imports, aliases, index). Provides: `keras3_imports`, `keras3_only_uses`,
`keras3_only_imports`, `optimizer_apply_uses`, `stateless_uses`, `backend_not_tensorflow`,
`keras3_blockers`, `keras3_problems`.
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
    for stmt, _owner in env.index.assignments:
        code = stmt.get_code(include_prefix=False)
        if "KERAS_BACKEND" not in code or "=" not in code:
            continue
        value = code.split("=", 1)[1].strip().strip("'\"")
        if value and value != "tensorflow":
            return stmt, value
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


def keras3_blockers(env: Env) -> list[tuple[object, str, str]]:
    """(node, what, one-line reason saying what to change) of each Keras-3-only use of a
    program that imports standalone ``keras`` / ``keras_core``; empty when it uses only
    Keras 2 API."""
    if not keras3_imports(env):
        return []
    out: list[tuple[object, str, str]] = []
    backend = _backend_assignment(env)      # first: the most fundamental (no TensorFlow at all)
    if backend is not None:
        out.append((backend[0], f"KERAS_BACKEND={backend[1]}", f"KERAS_BACKEND={backend[1]}: Horovod's TensorFlow ops need the "
                                "tensorflow backend of Keras 2: remove the setting, then convert again"))
    seen: set[str] = set()
    uses = dict(keras3_only_uses(env))
    for node, api in keras3_only_imports(env):
        uses.setdefault(api, node)
    for api, node in sorted(uses.items(), key=lambda kv: kv[1].start_pos):
        if api not in seen:
            seen.add(api)
            out.append((node, f"`{api}`", f"`{api}` exists only in Keras 3, which Horovod 0.28 cannot run: "
                              f"{_instead(api)}, then convert again"))
    for call in optimizer_apply_uses(env):
        receiver = call.receiver_dotted() or "optimizer"
        out.append((call.node, f"`{receiver}.apply`", f"`{receiver}.apply(grads, vars)` is Keras 3 only: write "
                               f"`{receiver}.apply_gradients(zip(grads, vars))`, then convert again"))
    for call in stateless_uses(env):
        out.append((call.node, f"`{call.method}`", f"`{call.method}` is Keras 3 only (no Keras 2 twin): train with "
                               "`tf.GradientTape` and `apply_gradients`, then convert again"))
    for call in torch_loaders(env)[:1]:
        out.append((call.node, "`torch.utils.data.DataLoader`", "a torch `DataLoader` fed to Keras is Keras 3 only "
                               "(Keras 2 trains on arrays, `tf.data` or `keras.utils.Sequence`): build a "
                               "`tf.data.Dataset` from the same arrays instead, then convert again"))
    return out


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


def keras3_problems(env: Env) -> list[Problem]:
    """One whole-program restriction fact (code HVD090) per Keras-3-only use: all or nothing."""
    return [Problem("HVD090", node, message, SETUP, everywhere=True) for node, _, message in keras3_blockers(env)]


__all__ = ["keras3_imports", "keras3_only_uses", "keras3_only_imports", "optimizer_apply_uses", "stateless_uses",
           "backend_not_tensorflow", "keras3_blockers", "keras3_problems", "KERAS3_ONLY"]
