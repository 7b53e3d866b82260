"""The Keras target: the rewrite of a standalone ``keras`` / ``keras_core`` import to the
Keras 2 that Horovod 0.28 runs (contract point 11), or Keras 3 kept. Used by HVD090
(rules/stack_traps.py).

Three targets:

* ``tf.keras`` (the default: the pinned stack, TensorFlow <= 2.15, where ``tf.keras`` is
  Keras 2): ``import keras`` -> ``from tensorflow import keras``, ``from keras.utils import
  x`` -> ``from tensorflow.keras.utils import x``, ``import keras_core as keras`` -> ``from
  tensorflow import keras``. On TF <= 2.15 standalone ``keras`` 2.x *is* ``tf.keras``, so
  the rewrite is safe whichever Keras the user has installed.
* ``tf_keras`` (TensorFlow >= 2.16): ``import tf_keras as keras``, ``from tf_keras.utils
  import x``, and ``os.environ["TF_USE_LEGACY_KERAS"] = "1"`` before the first import so
  that Horovod's own ``tf.keras`` is tf_keras too.
* ``keras3`` (TensorFlow >= 2.16, Keras 3 on its TensorFlow backend): the imports stay;
  ``os.environ["KERAS_BACKEND"] = "tensorflow"`` goes before them (`backend_env_edit`) and
  Horovod's Keras entry points are the program's own adapters (rules/keras3_adapters.py).
  A program using Keras-3-only API gets this target whatever was asked (engine.analyze).

On the tf_keras target the conversion also emits no Horovod callback that fails there:
Horovod 0.28's ``hvd.callbacks.MetricAverageCallback`` (and its learning-rate warm-up) import
``keras``, which is Keras 3 on TensorFlow >= 2.16 (``module 'keras.backend' has no attribute
'constant'``); `metric_average_class` is the small equivalent inserted once after the set-up.

Each edit replaces only the import's module name (``from`` imports) or the import statement
(``import keras [as k]``); an ``import os, keras`` statement has only its keras item rewritten.

Requires: parse (imports, source). Provides: `TARGETS`, `rewrite_edits`, `target_name`,
`backend_env_edit`, `metric_average_class`.
"""

from __future__ import annotations

from ..parse.imports import import_names
from ..parse.source import Edit

TARGETS = ("tf.keras", "tf_keras", "keras3")
DEFAULT_TARGET = "tf.keras"
LEGACY_ENV = 'os.environ["TF_USE_LEGACY_KERAS"] = "1"  # Horovod 0.28 runs Keras 2: tf.keras is tf_keras'


def target_name(target: str) -> str:
    """How the report names a target."""
    if target == "keras3":
        return "keras3 (Keras 3 itself, TensorFlow backend, TensorFlow >= 2.16)"
    return ("tf.keras (TensorFlow <= 2.15, the pinned stack)" if target == "tf.keras"
            else "tf_keras (TensorFlow >= 2.16, with TF_USE_LEGACY_KERAS=1)")


def _root_module(target: str) -> str:
    return "tensorflow.keras" if target == "tf.keras" else "tf_keras"


def rewrite_edits(source, node, roots: tuple[str, ...], target: str) -> list[Edit]:
    """The edits that make import statement `node` import the target's Keras 2 instead of
    standalone ``keras`` / ``keras_core`` (roots)."""
    if node.type == "import_from":
        first = node.children[1]
        leaf = first.children[0] if first.type == "dotted_name" else first
        if getattr(leaf, "value", None) not in roots:
            return []
        start, end = source.span(leaf)
        return [Edit(start, end, _root_module(target))]
    items = import_names(node)
    mine = [(d, a) for d, a in items if d.get_code(include_prefix=False).strip().split(".")[0] in roots]
    if not mine:
        return []
    if len(items) == 1:      # the whole statement, in the idiom: `from tensorflow import keras`
        dotted, alias = mine[0]
        start, end = source.span(node)
        return [Edit(start, end, _statement(dotted.get_code(include_prefix=False).strip(), alias, target))]
    out = []
    for dotted, alias in mine:
        text = dotted.get_code(include_prefix=False).strip()
        parts = text.split(".")
        span_node = dotted.parent if alias else dotted
        start, end = source.span(span_node)
        module = ".".join([_root_module(target)] + parts[1:]) if alias else _root_module(target)
        out.append(Edit(start, end, f"{module} as {alias or parts[0]}"))
    return out


def _statement(dotted: str, alias: str | None, target: str) -> str:
    parts = dotted.split(".")
    name = alias or parts[0]          # `import keras.layers` binds `keras`
    if alias is None or len(parts) == 1:
        if target == "tf_keras":
            return f"import tf_keras as {name}"
        return "from tensorflow import keras" + ("" if name == "keras" else f" as {name}")
    if target == "tf_keras":
        return f"import {'.'.join(['tf_keras'] + parts[1:])} as {alias}"
    module = ".".join(["tensorflow.keras"] + parts[1:-1])
    return f"from {module} import {parts[-1]}" + ("" if parts[-1] == alias else f" as {alias}")


def legacy_env_edit(source, first_import) -> Edit:
    """``import os`` and ``TF_USE_LEGACY_KERAS=1`` above the file's first import (tf_keras target)."""
    start = source.line_start(source.offset(first_import.start_pos))
    nl = source.newline
    indent = source.indent_of(first_import)
    return Edit(start, start, f"{indent}import os{nl}{indent}{LEGACY_ENV}{nl}")


BACKEND_ENV = 'os.environ["KERAS_BACKEND"] = "tensorflow"  # Horovod runs Keras 3 on its TensorFlow backend'


def backend_env_edit(source, env) -> Edit | None:
    """The keras3 target: ``KERAS_BACKEND=tensorflow`` before Keras is imported: right after a
    module-level ``import os`` that comes before every other import but ``__future__``, else
    with ``import os`` above the file's first import. None when the file sets it already."""
    if any("KERAS_BACKEND" in stmt.get_code() and "tensorflow" in stmt.get_code() for stmt, _ in env.index.assignments):
        return None
    top = sorted((n for n in env.imports if n.parent.parent is source.module
                  and "__future__" not in n.get_code(include_prefix=False)), key=lambda n: n.start_pos)
    if not top:
        return None
    nl = source.newline
    for node in top:
        if node.type == "import_name" and node.get_code(include_prefix=False).strip() == "import os":
            end = source.line_end(source.offset(node.end_pos))
            return Edit(end, end, f"{BACKEND_ENV}{nl}")
        break
    start = source.line_start(source.offset(top[0].start_pos))
    return Edit(start, start, f"import os{nl}{BACKEND_ENV}{nl}")


METRIC_AVERAGE = "MetricAverageCallback"


def metric_average_class(name: str, keras: str, hvd: str, tf: str, unit: str) -> str:
    """The tf_keras target's stand-in for ``hvd.callbacks.MetricAverageCallback()``: a
    ``keras.callbacks.Callback`` that averages the epoch's logs over the ranks with
    ``hvd.allreduce``, in place, so the callbacks after it (and the History) see the same
    values on every rank. Lines separated by ``\n``, unindented, two blank lines above;
    `unit` is one indent level."""
    return "\n".join([
        "",
        "",
        f"class {name}({keras}.callbacks.Callback):",
        f'{unit}"""hvd.callbacks.MetricAverageCallback for tf_keras (Horovod 0.28\'s calls Keras 3)."""',
        "",
        f"{unit}def on_epoch_end(self, epoch, logs=None):",
        f"{unit * 2}for key in sorted(logs or {{}}):",
        f"{unit * 3}logs[key] = float({hvd}.allreduce({tf}.constant(logs[key], {tf}.float64), name=f\"metric_{{key}}\"))",
    ])


__all__ = ["TARGETS", "DEFAULT_TARGET", "rewrite_edits", "legacy_env_edit", "backend_env_edit", "target_name",
           "metric_average_class", "METRIC_AVERAGE", "BACKEND_ENV"]
