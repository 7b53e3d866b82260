"""TensorFlow 1 API that TensorFlow 2.15 (the pinned stack) does not have (HVD093): a
program that calls ``tf.Session``, ``tf.placeholder``, ``tf.train.AdamOptimizer``,
``tf.layers.dense``, ... through ``import tensorflow as tf`` (not ``tensorflow.compat.v1``)
stops with an AttributeError before it trains, and ``tensorflow.examples.tutorials`` is
gone from TensorFlow 2 altogether. Converting such a program would hand over a script
that cannot run, so the fact blocks every rule, as a ``tf.distribute`` program does
(HVD092), and its message says how to unblock: tf_upgrade_v2 (or ``tf.compat.v1`` with
``tf.disable_v2_behavior()``), Keras' MNIST loader.

The names were checked on TensorFlow 2.15.1: every one listed is absent from the top-level
module (``tf.losses.mean_squared_error`` and ``tf.estimator`` are still there, so they are
not listed).

Requires: env (qualified names, imports). Provides: `tf1_api_uses(env)`,
`tf1_api_problems(env)`.
"""

from __future__ import annotations

from ..parse.imports import from_module_text, import_bindings
from .roles import SETUP, Problem

# tensorflow.<name> removed in TensorFlow 2 (present only under tf.compat.v1)
REMOVED = frozenset({
    "Session", "InteractiveSession", "placeholder", "global_variables_initializer", "initialize_all_variables",
    "local_variables_initializer", "get_variable", "variable_scope", "random_normal", "truncated_normal",
    "train.AdamOptimizer", "train.GradientDescentOptimizer", "train.MomentumOptimizer", "train.RMSPropOptimizer",
    "train.AdagradOptimizer", "train.AdadeltaOptimizer", "train.FtrlOptimizer", "train.Saver",
    "train.get_or_create_global_step", "train.get_global_step", "train.MonitoredTrainingSession",
    "summary.FileWriter", "metrics.accuracy",
})
REMOVED_MODULES = ("layers.", "contrib.")
EXAMPLES = "tensorflow.examples"


def tf1_api_uses(env) -> list[tuple[object, str]]:
    """(node, `tf.X` as written) of each call of TF1-only API through the TF2 module, in
    source order (found once per analysis, from the calls kept by qualified name)."""
    found = env.__dict__.get("_tf1_api_uses")
    if found is None:
        found = env.__dict__["_tf1_api_uses"] = [
            (call.node, call.callee_dotted() or env.callee_qualname(call))
            for call in env.calls_where(_removed) if not _through_compat(env, call)]
        found.sort(key=lambda u: u[0].start_pos)
    return found


def _removed(q: str) -> bool:
    if not q.startswith("tensorflow."):
        return False
    rest = q[len("tensorflow."):]
    return rest in REMOVED or rest.startswith(REMOVED_MODULES)


def _through_compat(env, call) -> bool:
    """``tf.compat.v1.Session()`` / ``v1 = tf.compat.v1; v1.Session()``: the qualified name
    drops ``compat.v1``; the text and the alias it starts from keep it."""
    dotted = call.callee_dotted() or ""
    root = dotted.split(".", 1)[0]
    return "compat" in dotted or "compat" in env.aliases.get(root, "")


def examples_imports(env) -> list:
    """The imports of ``tensorflow.examples.tutorials`` (the TF1 MNIST reader)."""
    out = []
    for node in env.imports:
        try:
            module = from_module_text(node) if node.type == "import_from" else None
            names = [full for _, full in import_bindings(node)] if module is None else [module]
        except (AttributeError, IndexError):
            continue
        if any(n == EXAMPLES or n.startswith(EXAMPLES + ".") for n in names):
            out.append(node)
    return out


def tf1_api_messages(env) -> list[tuple[object, str, list]]:
    """(node, message, related) of each HVD093 fact: the examples import, and the first call
    of TF1-only API (the next ones as related information)."""
    out = []
    for node in examples_imports(env):
        out.append((node, "`tensorflow.examples.tutorials` is not in TensorFlow 2 (the pinned stack is 2.15): load "
                    "MNIST with tf.keras.datasets.mnist.load_data(), then convert", []))
    uses = tf1_api_uses(env) if not env.tf1 else []
    if uses:
        node, name = uses[0]
        more = [(n, f"`{w}` is TensorFlow 1 API too") for n, w in uses[1:] if w != name][:3]
        contrib = next((w for _, w in uses if ".contrib." in f".{w}"), None)
        graph = any(w.split(".")[-1] in GRAPH_MODE for _, w in uses)
        if contrib:
            how = (f"replace `{contrib}` by hand (it is in neither TensorFlow 2 nor compat.v1, and tf_upgrade_v2 "
                   "cannot convert it: e.g. `tf.compat.v1.layers.flatten` or a `tf.keras.layers` layer), then run "
                   "tf_upgrade_v2 on the file for the rest"
                   + (" and call `tf.compat.v1.disable_v2_behavior()` for its placeholders and sessions" if graph else ""))
        elif graph:
            how = ("write `import tensorflow.compat.v1 as tf` and call `tf.disable_v2_behavior()` (tf_upgrade_v2 "
                   "alone is not enough for placeholders and sessions, which need graph mode)")
        else:
            how = "run tf_upgrade_v2 on the file, or write `import tensorflow.compat.v1 as tf`"
        out.append((node, f"`{name}` is TensorFlow 1 API, absent from TensorFlow 2.15 (the pinned stack): {how}, "
                    "then convert", more))
    return out


# TF1 API that only runs in graph mode: under TF 2's eager execution it needs v2 behaviour off
GRAPH_MODE = frozenset({"Session", "InteractiveSession", "placeholder", "global_variables_initializer",
                        "initialize_all_variables", "local_variables_initializer", "MonitoredTrainingSession"})


def tf1_api_problems(env) -> list[Problem]:
    """One restriction fact per HVD093 finding: it blocks everything (`everywhere`)."""
    return [Problem("HVD093", node, message, SETUP, everywhere=True, related=related)
            for node, message, related in tf1_api_messages(env)]
