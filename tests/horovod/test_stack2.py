"""The second stack (``make test-stack2``): Python 3.11, tensorflow-cpu 2.21.0, Keras 3.15.1,
tf_keras 2.21.0 and horovod 0.28.1 built from source against them with Gloo, in
.cache/hvd-venv-tfnew (`make hvd-env-tfnew`). Skipped, with the reason, when that venv is not
built: it is a Horovod build, too heavy for `make test`.

Keras 3-era programs (standalone ``import keras``, Keras 2 API only) are converted with
``--keras-target tf_keras`` and run on 2 ranks with ``TF_USE_LEGACY_KERAS=1``: identical
weights, and for `fit` the epoch metrics averaged (equal on both ranks although each rank's
batch losses differ) by the callback the conversion inserts instead of Horovod's
MetricAverageCallback, which fails there; that failure is recorded by a hand-written program.
"""

from __future__ import annotations

import math

import hvd_harness as H
import pytest

pytestmark = [pytest.mark.horovod, pytest.mark.stack2, pytest.mark.timeout(600),
              pytest.mark.skipif(not (H.STACK2_PYTHON.exists() and (H.STACK2_PYTHON.parent / "horovodrun").exists()),
                                 reason=f"second stack not built ({H.STACK2_PYTHON.parent.parent}): "
                                        "run `make hvd-env-tfnew` (a Horovod build) or `make test-stack2`")]
SIZE = 2
LEGACY = {"TF_USE_LEGACY_KERAS": "1"}


def same(a, b):
    return math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-6)


def run_converted(name, tmp_path):
    converted = H.convert(H.PROGRAMS / name, tmp_path / name, ("--keras-target", "tf_keras"))
    run = H.horovodrun(converted, tmp_path, np=SIZE, env=LEGACY, python=H.STACK2_PYTHON)
    info = f"converted program: {converted}\n--- output tail ---\n{run.tail()}"
    assert run.returncode == 0 and not run.timed_out, info
    assert sorted(run.reports) == list(range(SIZE)), info
    return converted.read_text(), run, info


def test_fit_with_callbacks_on_tf221_tf_keras(horovodize_exe, tmp_path):
    text, run, info = run_converted("stack2_keras_fit.py", tmp_path)
    assert "import tf_keras as keras\nfrom tf_keras import layers\n" in text
    assert "MetricAverageCallback()," in text and "hvd.callbacks.MetricAverageCallback()" not in text
    reports = run.reports
    assert all(rep["keras"].startswith("tf_keras 2.21") for rep in reports.values()), info
    checksums = [reports[r]["checksum"] for r in range(SIZE)]
    assert all(same(c, checksums[0]) for c in checksums), f"ranks' weights differ: {checksums}\n{info}"
    for rep in reports.values():
        assert math.isclose(rep["lr"], 0.001 * SIZE, rel_tol=1e-5), info
    # each rank's batches differ (its own shuffle) ...
    assert reports[0]["batch_losses"] != reports[1]["batch_losses"], info
    # ... but the epoch metrics the user's callbacks see are averaged over the ranks
    epochs = [reports[r]["epochs"] for r in range(SIZE)]
    assert len(epochs[0]) == 2 and {"loss", "accuracy", "val_loss", "val_accuracy"} <= set(epochs[0][0]), info
    for e0, e1 in zip(*epochs):
        for key in ("loss", "accuracy", "val_loss", "val_accuracy"):
            assert same(e0[key], e1[key]), f"epoch metric {key} differs: {e0[key]} vs {e1[key]}\n{info}"
    out = tmp_path / "out"
    assert (out / "fit-ckpt-rank0" / "model.keras").exists() and not (out / "fit-ckpt-rank1" / "model.keras").exists(), info


def test_tape_loop_on_tf221_tf_keras(horovodize_exe, tmp_path):
    text, run, info = run_converted("stack2_tape.py", tmp_path)
    assert "import tf_keras as keras\n" in text and "hvd.DistributedGradientTape(tape)" in text
    reports = run.reports
    checksums = [reports[r]["checksum"] for r in range(SIZE)]
    assert all(same(c, checksums[0]) for c in checksums), f"ranks' weights differ: {checksums}\n{info}"
    for rep in reports.values():
        assert math.isclose(rep["lr"], 0.01 * SIZE, rel_tol=1e-5), info
        assert rep["steps"] == 2 * (512 // SIZE // 32), info      # the dataset is sharded


def test_horovod_callbacks_on_tf221_tf_keras(tmp_path):
    """What Horovod 0.28.1's own Keras callbacks do on this stack (why the tf_keras target
    emits a stand-in for MetricAverageCallback and no warm-up): recorded, per rank."""
    run = H.horovodrun(H.PROGRAMS / "stack2_hvd_callbacks.py", tmp_path, np=SIZE, env=LEGACY, python=H.STACK2_PYTHON)
    info = run.tail()
    assert run.returncode == 0 and sorted(run.reports) == list(range(SIZE)), info
    for rep in run.reports.values():
        results = rep["results"]
        assert results["none"] == "ok", info
        assert results["MetricAverageCallback"] == "AttributeError: module 'keras.backend' has no attribute 'constant'", info
        assert "has no attribute 'get_value'" in results["LearningRateWarmupCallback"], info
