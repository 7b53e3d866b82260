"""The newest stack (``make test-stack2``): Python 3.11, tensorflow-cpu 2.21.0, Keras 3.15.1
and horovod 0.28.1 built against them with Gloo (docs/stacks.md), in .cache/hvd-venv-tfnew
(`make hvd-env-tfnew`; HOROVODIZE_TFNEW_PYTHON names another build). Skipped, with the
reason, when it is not built: a Horovod build, too heavy for `make test`.

Four Keras 3 programs (Keras-3-only API: ``keras.ops``, ``optimizer.apply``, ``keras.random``)
are converted with ``--keras-target keras3`` and run on 2 ranks with KERAS_BACKEND=tensorflow:
identical weights on both ranks, each rank its own share of the steps, for `fit` the epoch
metrics averaged. Their hand-distributed twins (programs/keras3_by_hand/, the proof of
docs/keras3.md) run the same way.
"""

from __future__ import annotations

import math

import hvd_harness as H
import pytest

pytestmark = [pytest.mark.horovod, pytest.mark.stack_tfnew, pytest.mark.timeout(900),
              pytest.mark.skipif(not (H.TFNEW_PYTHON.exists() and (H.TFNEW_PYTHON.parent / "horovodrun").exists()),
                                 reason=f"newest stack not built ({H.TFNEW_PYTHON.parent.parent}): "
                                        "run `make hvd-env-tfnew` (a Horovod build) or `make test-stack2`")]
SIZE = 2
BACKEND = {"KERAS_BACKEND": "tensorflow"}
# (original, its hand-distributed twin)
PROGRAMS = {"fit": "keras3_fit.py", "train_step": "keras3_train_step.py", "loop": "keras3_loop.py",
            "random": "keras3_random.py"}


def same(a, b):
    return math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-6)


def run(program, tmp_path):
    result = H.horovodrun(program, tmp_path, np=SIZE, env=BACKEND, python=H.TFNEW_PYTHON)
    info = f"program: {program}\n--- output tail ---\n{result.tail()}"
    assert result.returncode == 0 and not result.timed_out, info
    assert sorted(result.reports) == list(range(SIZE)), info
    checksums = [result.reports[r]["checksum"] for r in range(SIZE)]
    assert all(same(c, checksums[0]) for c in checksums), f"ranks' weights differ: {checksums}\n{info}"
    H.record({"stack": "tf-2.21-keras-3.15", "program": program.name, "checksums": checksums,
              "steps": [result.reports[r].get("steps", result.reports[r].get("batches")) for r in range(SIZE)]})
    return result, info


def convert(name, tmp_path):
    converted = H.convert(H.PROGRAMS / name, tmp_path / name, ("--keras-target", "keras3"))
    return converted, converted.read_text()


def check_fit(result, info, lr):
    reports = result.reports
    for rep in reports.values():
        assert rep["keras"].startswith("keras 3.") and math.isclose(rep["lr"], lr * SIZE, rel_tol=1e-5), info
    assert reports[0]["batch_losses"] != reports[1]["batch_losses"], info    # each rank its own batches
    epochs = [reports[r]["epochs"] for r in range(SIZE)]
    assert len(epochs[0]) == 2 and {"loss", "accuracy", "val_loss", "val_accuracy"} <= set(epochs[0][0]), info
    for e0, e1 in zip(*epochs):       # ... and the same averaged epoch metrics
        for key in ("loss", "accuracy", "val_loss", "val_accuracy"):
            assert same(e0[key], e1[key]), f"epoch metric {key} differs: {e0[key]} vs {e1[key]}\n{info}"


@pytest.mark.parametrize("kind", ["converted", "by_hand"])
def test_fit_with_callbacks(horovodize_exe, tmp_path, kind):
    if kind == "converted":
        program, text = convert(PROGRAMS["fit"], tmp_path)
        assert "import keras\nfrom keras import layers, ops\n" in text and "horovod.tensorflow.keras" not in text
        assert "optimizer=DistributedOptimizer(keras.optimizers.Adam(learning_rate=0.001 * hvd.size()))" in text
        assert "jit_compile=False" in text and "    BroadcastGlobalVariablesCallback(0),\n    MetricAverageCallback(),\n" in text
    else:
        program = H.PROGRAMS / "keras3_by_hand" / "keras3_fit_by_hand.py"
    result, info = run(program, tmp_path)
    check_fit(result, info, 0.001)
    out = tmp_path / "out"
    assert (out / "fit-ckpt-rank0" / "model.keras").exists() and not (out / "fit-ckpt-rank1" / "model.keras").exists(), info
    if kind == "by_hand":        # the checkpoint loads back, its optimizer the subclass made by the adapter
        assert result.reports[0]["loaded_optimizer"] == "Adam", info


@pytest.mark.parametrize("kind", ["converted", "by_hand"])
def test_train_step_override_with_a_tape(horovodize_exe, tmp_path, kind):
    if kind == "converted":
        program, text = convert(PROGRAMS["train_step"], tmp_path)
        assert "        tape = DistributedGradientTape(tape)\n" in text and "jit_compile=False" in text
        assert "callbacks=[BroadcastGlobalVariablesCallback(0), MetricAverageCallback(), counter]" in text
    else:
        program = H.PROGRAMS / "keras3_by_hand" / "keras3_train_step_by_hand.py"
    result, info = run(program, tmp_path)
    for rep in result.reports.values():
        assert math.isclose(rep["lr"], 0.01 * SIZE, rel_tol=1e-5), info
        assert rep["batches"] == 2 * (512 // SIZE // 32), info       # the dataset is sharded


@pytest.mark.parametrize("kind", ["converted", "by_hand"])
def test_custom_loop_with_ops_and_optimizer_apply(horovodize_exe, tmp_path, kind):
    if kind == "converted":
        program, text = convert(PROGRAMS["loop"], tmp_path)
        assert "tape = DistributedGradientTape(tape)" in text and "optimizer.apply(grads, model.trainable_variables)" in text
        assert "hvd.broadcast_variables([v.value for v in optimizer.variables], root_rank=0)" in text
    else:
        program = H.PROGRAMS / "keras3_by_hand" / "keras3_loop_by_hand.py"
    result, info = run(program, tmp_path)
    for rep in result.reports.values():
        assert math.isclose(rep["lr"], 0.01 * SIZE, rel_tol=1e-5), info
        assert rep["steps"] == 2 * (512 // SIZE // 32), info


@pytest.mark.parametrize("kind", ["converted", "by_hand"])
def test_keras_random_seeded_tf_function_step(horovodize_exe, tmp_path, kind):
    if kind == "converted":
        program, text = convert(PROGRAMS["random"], tmp_path)
        assert "keras.random.normal(tf.shape(xb), seed=noise_seed)" in text and "DistributedGradientTape(tape)" in text
    else:
        program = H.PROGRAMS / "keras3_by_hand" / "keras3_random_by_hand.py"
    result, info = run(program, tmp_path)
    for rep in result.reports.values():
        assert math.isclose(rep["lr"], 0.02 * SIZE, rel_tol=1e-5), info
        assert rep["steps"] == 2 * (512 // SIZE // 32), info
