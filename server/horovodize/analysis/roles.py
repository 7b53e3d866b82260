"""The vocabulary of the analysis: the roles a value can hold (optimizer, dataset,
checkpoint, model, estimator, schedule), the qualified names that construct them, the rules
that act on each role, and the facts the passes record (`Binding`, `Problem`).

Requires: nothing of the analysis. Provides: `canonical`, `member_role`, `Binding`,
`Problem`, `ROLES`, `ROLE_RULES`, `LIBRARIES`, the optimizer tables, `site_role`,
`call_position`.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING

from ..parse import nodes as N

if TYPE_CHECKING:                 # (annotations only: env imports this module)
    from .env import Env


# Keras optimizer classes and their default learning rates (Keras 2.15 / TF 2.15).
KERAS_OPTIMIZERS = {
    "Adam": "0.001", "AdamW": "0.001", "Adamax": "0.001", "Nadam": "0.001",
    "SGD": "0.01", "RMSprop": "0.001", "Adagrad": "0.001", "Adadelta": "0.001",
    "Ftrl": "0.001", "Lion": "0.0001", "Adafactor": "0.001", "Lamb": "0.001",   # Lamb: Keras 3
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
# Keras utilities that return a finite, batched tf.data.Dataset of known size.
KERAS_DATASETS = tuple(f"tensorflow.keras.{m}.{f}" for m in ("utils", "preprocessing")
                       for f in ("image_dataset_from_directory", "text_dataset_from_directory",
                                 "timeseries_dataset_from_array", "audio_dataset_from_directory"))


SETUP = ("HVD001", "HVD002")


# The rules that act on an object of each role (what a restriction on it blocks).
ROLE_RULES = {
    "optimizer": ("HVD010", "HVD011", "HVD021"),
    "dataset": ("HVD040",),
    "checkpoint": ("HVD031",),
    "model": ("HVD032", "HVD050", "HVD051"),
    "estimator": ("HVD060", "HVD061"),
    "lr_schedule": ("HVD013",),
    "tape": ("HVD020",),
}


# Qualified names through which an object the conversion rewrites can be reached (R3).
RELEVANT_MEMBERS = (
    "tensorflow.GradientTape", "tensorflow.keras.optimizers", "tensorflow.train",
    "tensorflow.data", "tensorflow.estimator", "tensorflow.keras.Sequential",
    "tensorflow.keras.Model", "tensorflow.keras.applications", "tensorflow.keras.load_model",
)


# A model made again from the architecture `to_json`/`to_yaml`/`get_config` saved: built as it is
# made (the saved config holds its input shape), its weights then given by ``load_weights``.
REBUILT_MODELS = ("tensorflow.keras.model_from_json", "tensorflow.keras.model_from_yaml",
                  "tensorflow.keras.model_from_config")


# keras_core: Keras 3 (keras3.py); tensorflow_addons: its Keras optimizers (AdamW, LAMB)
MODULE_ROOTS = ("tensorflow", "keras", "os", "horovod", "tf_keras", "keras_core", "tensorflow_addons")

# Modules that are not part of the project (T1): the standard library and common packages.
LIBRARIES = set(getattr(sys, "stdlib_module_names", ())) | {
    "tensorflow", "keras", "tf_keras", "keras_core", "horovod", "numpy", "pandas", "scipy", "sklearn", "matplotlib",
    "seaborn", "tensorflow_datasets", "tensorflow_addons", "tensorflow_hub", "tensorflow_text",
    "tensorflow_probability", "tqdm", "PIL", "cv2", "absl", "wandb", "mlflow", "yaml", "h5py", "torch",
    "jax", "flax", "optax", "transformers", "datasets", "tensorboard", "click", "fire", "hydra", "omegaconf",
    "sys", "os", "math", "time", "random", "json", "pathlib", "argparse", "logging", "functools",
}


@lru_cache(maxsize=4096)
def canonical(q: str | None) -> str | None:
    """Normalise a qualified name: compat.v1, standalone keras, legacy optimizers."""
    if q is None:
        return None
    for old, new in (
        ("tensorflow.compat.v1", "tensorflow"), ("tensorflow.compat.v2", "tensorflow"),
        ("tensorflow.python.keras", "tensorflow.keras"), ("tf_keras", "tensorflow.keras"),
        ("keras_core", "tensorflow.keras"), ("keras", "tensorflow.keras"),
    ):
        if q == old or q.startswith(old + "."):
            q = new + q[len(old):]
            break
    if q == "tensorflow.optimizers" or q.startswith("tensorflow.optimizers."):
        q = "tensorflow.keras" + q[len("tensorflow"):]
    q = q.replace("tensorflow.keras.optimizers.legacy.", "tensorflow.keras.optimizers.")
    q = q.replace("tensorflow.keras.optimizers.experimental.", "tensorflow.keras.optimizers.")
    q = q.replace("tensorflow.keras.models.", "tensorflow.keras.")
    q = q.replace("tensorflow.keras.saving.load_model", "tensorflow.keras.load_model")   # Keras 3's spelling
    return q


@lru_cache(maxsize=4096)
def member_role(q: str | None) -> tuple[str, str] | None:
    """(role, class) when the canonical name `q` constructs an object a rule rewrites."""
    if not q:
        return None
    last = q.rsplit(".", 1)[-1]
    if q.startswith("tensorflow.keras.optimizers.schedules."):
        return "lr_schedule", last
    if q.startswith("tensorflow.keras.optimizers.") and last in KERAS_OPTIMIZERS:
        return "optimizer", last
    if q.startswith("tensorflow.train.") and last in TF1_OPTIMIZERS:
        return "optimizer", last
    if q.startswith("tensorflow_addons.optimizers.") and last[:1].isupper():
        return "optimizer", last     # (Keras optimizers too: AdamW, LAMB, Lookahead)
    if q.startswith("tensorflow.data.") or q in KERAS_DATASETS:
        return "dataset", last
    if q in ("tensorflow.train.Checkpoint", "tensorflow.train.CheckpointManager"):
        return "checkpoint", last
    if q in ("tensorflow.keras.Sequential", "tensorflow.keras.Model", "tensorflow.keras.load_model") or \
            q in REBUILT_MODELS or q.startswith("tensorflow.keras.applications.") and last[:1].isupper():
        return "model", last     # (``MobileNetV2``; not ``preprocess_input``, ``decode_predictions``)
    if q == "tensorflow.keras.estimator.model_to_estimator":     # an Estimator around a compiled Keras model
        return "estimator", last
    if q.startswith("tensorflow.estimator.") and last.endswith(("Estimator", "Classifier", "Regressor")):
        return "estimator", last
    return None


@dataclass(eq=False)
class Binding:
    """``name = <call>`` (or a ``with`` item) giving `name` a role."""

    name: str
    role: str
    stmt: object                 # expr_stmt / with_item
    value: object                # the right-hand side
    scope: object                # funcdef / classdef (for self.x) / file_input
    conditional: object = None   # the if/match/except/ternary it is created under (R7)
    detail: str = ""             # e.g. optimizer class name
    tf1: bool = False
    loop: object = None          # the for/while (inside its scope) it is created in (R5)

    def value_dotted(self) -> str | None:
        """``N.dotted(value)``, once (a plain binding lives as long as its statement)."""
        d = self.__dict__
        if "_dotted" not in d:
            d["_dotted"] = N.dotted(self.value)
        return d["_dotted"]


@dataclass(eq=False)
class Problem:
    """A violated restriction (reported by restrictions.py, enforced by `Blocker`).

    A rule site is blocked when the rule's code is in `blocks` and the site is the
    problem's `node`, one of its `sites` (nodes or bindings), or inside its `region`;
    `everywhere` (set when the Horovod set-up itself is blocked) stops every rule.
    """

    code: str          # "R5", "T4", ...
    node: object
    message: str
    blocks: tuple[str, ...]
    binding: Binding | None = None
    region: object = None        # every site inside this node is blocked
    everywhere: bool = False     # the set-up is blocked, so is every rule
    sites: list = field(default_factory=list)      # further nodes / bindings it blocks
    related: list = field(default_factory=list)    # (node, message) pointers for the diagnostic


def position_in_pieces(hit):
    return hit[0], hit[1]


def call_position(call: N.Call) -> tuple:
    """Source order of calls (the index's preorder: a call node starts before the calls
    inside it, and trailers of one node are in order)."""
    return call.node.start_pos, call.index


# Roles reachable through a module-like member alias (``keras = tf.keras``).
REACH = {
    "tensorflow.GradientTape": ("tape",),
    "tensorflow.keras": ("optimizer", "lr_schedule", "model", "dataset"),
    "tensorflow.keras.utils": ("dataset",),
    "tensorflow.keras.preprocessing": ("dataset",),
    "tensorflow.keras.optimizers": ("optimizer", "lr_schedule"),
    "tensorflow.keras.optimizers.schedules": ("lr_schedule",),
    "tensorflow.keras.applications": ("model",),
    "tensorflow.train": ("optimizer", "checkpoint"),
    "tensorflow.data": ("dataset",),
    "tensorflow.estimator": ("estimator",),
}


def site_role(env: Env, call: N.Call) -> str | None:
    """The role of what `call` constructs, ``"tape"`` for ``tf.GradientTape()``."""
    q = env.callee_qualname(call)
    if q == "tensorflow.GradientTape":
        return "tape"
    r = member_role(q)
    return r[0] if r else None


def rules_for_roles(roles) -> tuple[str, ...]:
    return tuple(sorted({c for r in roles for c in ROLE_RULES.get(r, ())}))
