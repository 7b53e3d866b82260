"""Test instrumentation shared by the single-GPU programs of the run tier.

Not part of what the converter sees as "training code": the programs import it
to write, at their very end, one JSON report per process.  The rank comes from
``HOROVOD_RANK`` (set by ``horovodrun``) so the *unconverted* program can report
too; nothing here imports horovod.

    HVD_REPORT_DIR   directory for ``report-<rank>.json`` (unset: no report is written)
    HVD_OUT_DIR      root for files a program writes (checkpoints, model_dir; default: a
                     directory under the system temp dir)
"""
import json
import os
import tempfile

import numpy as np


def rank():
    return int(os.environ.get("HOROVOD_RANK", "0"))


def out_dir(name):
    """A per-process output directory (not created): <HVD_OUT_DIR>/<name>-rank<r>."""
    root = os.environ.get("HVD_OUT_DIR") or os.path.join(tempfile.gettempdir(), "horovodize-test-out")
    return os.path.join(root, f"{name}-rank{rank()}")


def checksum(weights):
    """Sum of absolute values of a list of arrays / variables / a Keras model."""
    if hasattr(weights, "get_weights"):
        weights = weights.get_weights()
    total = 0.0
    for w in weights:
        if hasattr(w, "numpy"):
            w = w.numpy()
        total += float(np.abs(np.asarray(w, dtype=np.float64)).sum())
    return total


def learning_rate(opt):
    """The learning rate an optimizer (possibly wrapped by Horovod) really uses."""
    seen = set()
    while opt is not None and id(opt) not in seen:
        seen.add(id(opt))
        for attr in ("learning_rate", "lr", "_learning_rate", "_lr"):
            value = getattr(opt, attr, None)
            if value is None or callable(value) and not hasattr(value, "numpy"):
                continue
            if hasattr(value, "numpy"):
                value = value.numpy()
            try:
                return float(value)
            except (TypeError, ValueError):
                continue
        opt = getattr(opt, "_optimizer", None)
    return None


def report(**fields):
    report_dir = os.environ.get("HVD_REPORT_DIR")
    if not report_dir:
        return
    fields.setdefault("rank", rank())
    path = os.path.join(report_dir, f"report-{fields['rank']}.json")
    with open(path, "w") as fh:
        json.dump(fields, fh, indent=1, sort_keys=True)


def instances(cls):
    """A list that collects every instance of `cls` made from now on (for optimizers a
    library builds where the program cannot name them, e.g. a premade Estimator's)."""
    made = []
    init = cls.__init__

    def recording_init(self, *args, **kwargs):
        init(self, *args, **kwargs)
        made.append(self)

    cls.__init__ = recording_init
    return made
