"""Keras 3 facts: which imports are Keras 3 (or may be), and which Keras APIs exist only
in Keras 3 (no ``tf_keras`` / ``tf.keras`` 2.x twin).

Horovod 0.28 (the last release) supports Keras 2 only: ``horovod.tensorflow.keras``
wraps ``tf.keras`` optimizers and callbacks, and TensorFlow >= 2.16 makes ``tf.keras``
Keras 3 (Horovod issue 4290). Standalone ``keras`` is Keras 3 from TensorFlow 2.16 on;
``keras_core`` is always Keras 3.

Requires: env (imports, aliases, index). Provides: `keras3_imports`, `keras3_only_uses`.
"""

from __future__ import annotations

from ..parse.imports import import_bindings
from ..parse.scopes import is_name_use
from .env import Env

KERAS3_ROOTS = ("keras", "keras_core")
# Keras 3 APIs with no Keras 2 twin (prefixes of the full dotted name, root normalised to keras).
KERAS3_ONLY = (
    "keras.ops", "keras.random", "keras.config", "keras.distribution", "keras.tree",
    "keras.Variable", "keras.utils.PyDataset", "keras.layers.TorchModuleWrapper",
    "keras.layers.JaxLayer", "keras.layers.FlaxLayer", "keras.src",
)


def keras3_imports(env: Env) -> list[tuple[object, str]]:
    """(import statement, root) of every import of standalone ``keras`` / ``keras_core``."""
    out = []
    for node in env.imports:
        roots = {full.split(".")[0] for _, full in import_bindings(node)}
        for root in KERAS3_ROOTS:
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
    for stmt, _owner in env.index.assignments:
        code = stmt.get_code(include_prefix=False)
        if "KERAS_BACKEND" not in code or "=" not in code:
            continue
        value = code.split("=", 1)[1].strip().strip("'\"")
        if value and value != "tensorflow":
            return value
    return None


__all__ = ["keras3_imports", "keras3_only_uses", "optimizer_apply_uses", "backend_not_tensorflow", "KERAS3_ONLY"]
