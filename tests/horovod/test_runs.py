"""The run tier: convert each single-GPU program with `horovodize convert`, run the result on
2 ranks with `horovodrun --gloo` from the Horovod venv, and check what Horovod promises:

* both ranks exit 0 and report;
* the ranks end with the same weights although they started from different ones;
* the learning rate the optimizer uses is the original one x size;
* each rank consumes its share of a `dataset.take(n)` (n // size);
* only rank 0 prints, runs user callbacks, writes checkpoints and the Estimator model_dir.

A negative control runs an unconverted program under the same launcher and expects the
ranks' weights to differ, so the checksum comparison can fail.

Programs run one after the other (2 cores). Set HOROVODIZE_RUN_TABLE=path.jsonl to record
one row per run (used for docs/horovod-runs.md).
"""

from __future__ import annotations

import math
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import hvd_harness as H
import pytest

pytestmark = [pytest.mark.horovod, pytest.mark.timeout(600)]
SIZE = 2


@dataclass
class Spec:
    program: str
    lr: dict                                             # report key -> learning rate before conversion
    rank0_prints: list = field(default_factory=list)     # regexes seen on rank 0's stdout only
    rank0_dirs: list = field(default_factory=list)       # HVD_OUT_DIR/<name>-rank<r> made by rank 0 only
    per_rank: dict = field(default_factory=dict)         # report key -> {rank: expected value}
    rank0_files: list = field(default_factory=list)      # HVD_OUT_DIR/<name>-rank<r>* (file prefixes) by rank 0 only


SPECS = [
    Spec("tape_eager.py", {"lr": 0.001}, [r"step 0 loss"]),
    Spec("tape_function.py", {"lr": 0.002}, [r"step 0 loss"]),
    Spec("tape_gradient_inside.py", {"lr": 0.003}, [r"eager step 0 loss", r"function step 0 loss"]),
    Spec("tape_split_subclass.py", {"lr": 0.01}, [r"epoch 0 loss"]),
    Spec("gan.py", {"lr": 1e-3, "lr2": 2e-3}, [r"epoch 1 gen"]),
    # keras-io GAN shape: a custom compile(d_optimizer=Adam(...), g_optimizer=Adam(...)) and a
    # train_step with two tapes: both inline optimizers are scaled and distributed
    Spec("keras_custom_compile_gan.py", {"lr": 1e-3, "lr2": 2e-3}),
    # fit on arrays: epochs=2 becomes int(math.ceil(2 / hvd.size())) = 1 epoch of 8 batches per rank
    # (HVD043; Keras prints no 'Epoch 1/1'); the user's callback runs on every rank (it may steer training).
    Spec("keras_fit.py", {"lr": 0.001},
         [r"user-callback epoch 0", r"Total params", r"8/8 \[="], ["fit-ckpt"],
         per_rank={"callback_batches": {0: 8, 1: 8}}),
    Spec("keras_compile_str.py", {"lr": 0.001}, [r"8/8 \[="]),
    Spec("data_take.py", {"lr": 0.001}, [r"Step #0\tLoss"],
         per_rank={"steps": {0: 24 // SIZE, 1: 24 // SIZE}}),
    Spec("checkpoint_save.py", {"lr": 0.001}, [r"epoch 1 loss"], ["ckpt"]),
    Spec("estimator_v1.py", {"lr": 0.001}, [r"trained; global step"], ["estimator"]),
    Spec("tf1_session.py", {"lr": 0.01}, [r"step 0 loss"], rank0_files=["session-ckpt"],
         per_rank={"steps": {0: 20 // SIZE, 1: 20 // SIZE}}),
    Spec("tf1_monitored.py", {"lr": 0.001}, [r"monitored training done after"], ["mts-ckpt"],
         per_rank={"steps": {0: 20 // SIZE, 1: 20 // SIZE}}),
    # a GradientTape in the model_fn an Estimator calls (HVD-T4 used to refuse it): 20 steps
    # become 10 per rank, the tape averages the gradients, the hook broadcasts the start
    Spec("estimator_tape_model_fn.py", {"lr": 0.01}, [r"tape model_fn trained"], ["tape-estimator"],
         per_rank={"steps": {0: 20 // SIZE, 1: 20 // SIZE}}),
    Spec("tf1_premade.py", {"lr": 0.05}, [r"premade trained; global step"], ["premade"]),
    Spec("keras_model_to_estimator.py", {"lr": 0.01}, [r"model_to_estimator trained"], ["m2e"]),
    # compile(optimizer="adam") before model_to_estimator (HVD-T2 used to refuse it): the name
    # becomes hvd.DistributedOptimizer(tf.keras.optimizers.legacy.Adam(0.001 * hvd.size()))
    Spec("keras_model_to_estimator_adam.py", {"lr": 0.001}, [r"model_to_estimator \(adam\) trained"], ["m2e-adam"]),
    Spec("app_run_main.py", {"lr": 0.01}, [r"step 0 loss"]),          # absl app.run(main)
    # fit on one model, a tape loop on another, in one program (HVD-T3 used to refuse it):
    # horovod.tensorflow.keras for fit, horovod.tensorflow beside it for the tape; the
    # dataset of 16 batches is sharded, 8 steps per rank
    Spec("fit_and_tape_modes.py", {"lr": 0.001, "lr2": 0.002}, [r"custom step 0 loss"],
         per_rank={"steps": {0: 16 // SIZE, 1: 16 // SIZE}}),
    # issue 26: a helper's optimizer through a default argument, one chosen by a module
    # constant, the same name created again, fit / fit_generator chosen by a module flag
    # (HVD-R5/R7/T5 used to refuse it): every rate scaled, fit_generator 8 steps -> 4 per rank
    Spec("experiments_by_flag.py", {"lr": 0.001, "lr2": 0.002, "lr3": 0.003}, [r"4/4 \[="]),
    # one callbacks list for two models' fits, rebound under a flag before a third: each fit gets
    # a broadcast callback of its own (one instance broadcasts once); the checksum adds the three
    Spec("callbacks_shared_by_experiments.py", {"lr": 0.001}, rank0_files=["shared-cb"]),
    # two sessions (train and save, then init, restore and train): a broadcast in each, and the
    # barrier before the restore run by the session (a graph-mode allreduce only builds an op);
    # the checksum adds the first session's weights, so a missing first broadcast shows
    Spec("tf1_two_sessions.py", {}, per_rank={"steps": {0: 20, 1: 20}}),
    Spec("self_train_step.py", {"lr": 0.004}, [r"step 0 loss"]),      # self.train_step = tf.function(...)
    # distributed by hand, half way (issue 10): convert adds only the missing broadcast; the
    # unscaled rate and the prints on every rank are the user's (hints, not applied)
    Spec("hvd_partial_keras.py", {}, per_rank={"lr": {0: 0.001, 1: 0.001}}),
    Spec("hvd_partial_tape.py", {}, per_rank={"lr": {0: 0.01, 1: 0.01}}),
    # already correct (Horovod's keras example): convert leaves it byte-identical
    # (tests/analysis/test_already_distributed.py) and it trains as it is
    Spec("hvd_correct_keras.py", {"lr": 0.001}, [r"correct-keras trained"], ["correct-ckpt"]),
    # `while True: ... if running_loss < 0.8: break` on a per-rank loss (HVD080): without the
    # averaged decision rank 0 stops at step 12 and rank 1 dies in the next allreduce (exit 1)
    Spec("per_rank_exit.py", {"lr": 0.05}, [r"stopped at step"]),
]


def same(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


def describe(run: H.RankRun, converted: Path | None = None) -> str:
    text = f"horovodrun exit {run.returncode}{' (timed out)' if run.timed_out else ''}, {run.wall:.1f}s\n"
    if converted is not None:
        text += f"converted program: {converted}\n"
    return text + "--- output tail ---\n" + run.tail()


@pytest.mark.parametrize("spec", SPECS, ids=[s.program[:-3] for s in SPECS])
def test_converted_program_runs_distributed(spec: Spec, hvd_env, horovodize_exe, tmp_path):
    converted = H.convert(H.PROGRAMS / spec.program, tmp_path / spec.program)
    run = H.horovodrun(converted, tmp_path, np=SIZE)
    reports = run.reports
    checksums = [reports[r]["checksum"] for r in sorted(reports)]
    H.record({"program": spec.program, "converted": True, "ranks": SIZE, "exit": run.returncode,
              "wall": round(run.wall, 1), "checksums": checksums,
              "equal": len(checksums) == SIZE and all(same(c, checksums[0]) for c in checksums)})
    info = describe(run, converted)

    # both ranks ran to the end and reported
    assert run.returncode == 0 and not run.timed_out, info
    assert sorted(reports) == list(range(SIZE)), f"reports from ranks {sorted(reports)}\n{info}"

    # identical weights at the end
    assert all(same(c, checksums[0]) for c in checksums), f"ranks' weights differ: {checksums}\n{info}"

    # learning rate scaled by the number of ranks
    for key, original in spec.lr.items():
        for r, rep in reports.items():
            assert rep.get(key) is not None, f"rank {r} reported no {key}\n{info}"
            assert math.isclose(rep[key], original * SIZE, rel_tol=1e-5), \
                f"rank {r} {key} = {rep[key]}, expected {original} x {SIZE}\n{info}"

    for key, expected in spec.per_rank.items():
        got = {r: reports[r].get(key) for r in reports}
        assert got == expected, f"{key} per rank: {got}, expected {expected}\n{info}"

    # side effects on rank 0 only
    for pattern in spec.rank0_prints:
        assert re.search(pattern, run.stdout.get(0, "")), f"rank 0 did not print /{pattern}/\n{info}"
        for r in range(1, SIZE):
            assert not re.search(pattern, run.stdout.get(r, "")), f"rank {r} printed /{pattern}/\n{info}"
    out = tmp_path / "out"
    for name in spec.rank0_dirs:
        d0 = out / f"{name}-rank0"
        assert d0.is_dir() and any(d0.iterdir()), f"rank 0 wrote nothing to {d0}\n{info}"
        for r in range(1, SIZE):
            assert not (out / f"{name}-rank{r}").exists(), f"rank {r} wrote {name}\n{info}"
    for name in spec.rank0_files:
        assert list(out.glob(f"{name}-rank0*")), f"rank 0 wrote no {name}-rank0* in {out}\n{info}"
        for r in range(1, SIZE):
            assert not list(out.glob(f"{name}-rank{r}*")), f"rank {r} wrote {name}\n{info}"


def test_negative_control_unconverted_ranks_diverge(hvd_env, tmp_path):
    """Without the conversion the two processes are independent: their weights must differ
    (so the equal-checksum assertion above is able to fail) and both ranks print."""
    run = H.horovodrun(H.PROGRAMS / "tape_eager.py", tmp_path, np=SIZE)
    reports = run.reports
    checksums = [reports[r]["checksum"] for r in sorted(reports)]
    H.record({"program": "tape_eager.py", "converted": False, "ranks": SIZE, "exit": run.returncode,
              "wall": round(run.wall, 1), "checksums": checksums,
              "equal": len(checksums) == SIZE and all(same(c, checksums[0]) for c in checksums)})
    info = describe(run)
    assert run.returncode == 0 and sorted(reports) == list(range(SIZE)), info
    assert not same(checksums[0], checksums[1]), f"unconverted ranks ended equal: {checksums}\n{info}"
    for r in range(SIZE):
        assert re.search(r"step 0 loss", run.stdout.get(r, "")), f"rank {r} did not print\n{info}"
        assert math.isclose(reports[r]["lr"], 0.001, rel_tol=1e-5), info


def test_resume_from_rank0_checkpoint(hvd_env, horovodize_exe, tmp_path):
    """Restart a converted job whose checkpoint is on rank 0's disk only (node-local disks;
    the per-rank directories stand for them). Run 1 trains and saves on rank 0; in run 2 rank
    0 finds the newest checkpoint and restores it, rank 1 gets its name (`broadcast_object`:
    both take the resume branch, issue 37) and rank 0's state by the first step's broadcast,
    without a hang."""
    converted = H.convert(H.PROGRAMS / "resume_checkpoint.py", tmp_path / "resume_checkpoint.py")
    out = tmp_path / "out"
    first = H.horovodrun(converted, tmp_path / "run1", np=SIZE, out_dir=out)
    assert first.returncode == 0 and sorted(first.reports) == list(range(SIZE)), describe(first, converted)
    assert (out / "resume-ckpt-rank0").is_dir() and not (out / "resume-ckpt-rank1").exists(), describe(first)

    second = H.horovodrun(converted, tmp_path / "run2", np=SIZE, out_dir=out, timeout=180)
    reports = second.reports
    checksums = [reports[r]["checksum"] for r in sorted(reports)]
    H.record({"program": "resume_checkpoint.py (restart)", "converted": True, "ranks": SIZE,
              "exit": second.returncode, "wall": round(second.wall, 1), "checksums": checksums,
              "equal": len(checksums) == SIZE and all(same(c, checksums[0]) for c in checksums)})
    info = describe(second, converted)
    assert second.returncode == 0 and not second.timed_out, info
    assert sorted(reports) == list(range(SIZE)), info
    assert [reports[r]["resumed"] for r in range(SIZE)] == [True] * SIZE, info
    assert all(same(c, checksums[0]) for c in checksums), f"ranks' weights differ: {checksums}\n{info}"
    assert len({reports[r]["iterations"] for r in reports}) == 1, f"optimizer steps differ\n{info}"


def test_keras_core_program_runs_on_tf_keras_after_the_import_rewrite(hvd_env, horovodize_exe, tmp_path):
    """Contract point 11: a keras_core program (a `keras_core.Model` subclass whose custom
    `train_step` uses a tape, and a plain Sequential `fit`) is converted with its imports
    rewritten to tf.keras, and trains on 2 ranks of the pinned stack, where keras_core is not
    installed: same weights on both ranks, rates scaled, epochs divided."""
    program = H.PROGRAMS / "keras_core_train_step.py"
    converted = H.convert(program, tmp_path / program.name)
    text = converted.read_text()
    assert "keras_core" not in text.replace('"""', "").split("import hvd_report", 1)[1]
    assert "from tensorflow import keras\nfrom tensorflow.keras import layers\n" in text
    assert "        tape = hvd_tf.DistributedGradientTape(tape)\n" in text
    run = H.horovodrun(converted, tmp_path, np=SIZE)
    reports = run.reports
    info = describe(run, converted)
    assert run.returncode == 0 and not run.timed_out and sorted(reports) == list(range(SIZE)), info
    checksums = [reports[r]["checksum"] for r in sorted(reports)]
    assert all(same(c, checksums[0]) for c in checksums), f"ranks' weights differ: {checksums}\n{info}"
    for r, rep in reports.items():
        assert math.isclose(rep["lr"], 0.01 * SIZE, rel_tol=1e-5) and math.isclose(rep["lr2"], 0.002 * SIZE, rel_tol=1e-5), info
        assert rep["batches"] == 8, f"rank {r} ran {rep['batches']} batches, expected 2 epochs // {SIZE} x 8\n{info}"


def test_keras_train_step_tape_alone_and_display_on_rank0(hvd_env, horovodize_exe, tmp_path):
    """A Keras model with its own train_step (a tape) fit on 2 ranks after conversion: the
    DistributedGradientTape alone averages (compile keeps a plain, scaled SGD: Horovod's
    idiom), both ranks end with the same weights, rank 1 prints nothing, and the function
    that plots and calls plt.show() (Agg backend) runs on rank 0 only."""
    program = H.PROGRAMS / "keras_train_step_show.py"
    converted = H.convert(program, tmp_path / program.name)
    text = converted.read_text()
    assert "hvd.DistributedOptimizer(" not in text and "tape = hvd_tf.DistributedGradientTape(tape)" in text, text
    run = H.horovodrun(converted, tmp_path, np=SIZE)
    reports = run.reports
    info = describe(run, converted)
    assert run.returncode == 0 and not run.timed_out and sorted(reports) == list(range(SIZE)), info
    checksums = [reports[r]["checksum"] for r in sorted(reports)]
    assert all(same(c, checksums[0]) for c in checksums), f"ranks' weights differ: {checksums}\n{info}"
    for r, rep in reports.items():
        assert math.isclose(rep["lr"], 0.01 * SIZE, rel_tol=1e-5), info
    assert reports[0]["shown"] == 1 and reports[0]["figures"] == 1, info
    assert all(reports[r]["shown"] == 0 and reports[r]["figures"] == 0 for r in range(1, SIZE)), info
    assert re.search(r"train-step-show final loss", run.stdout.get(0, "")), info
    assert all(not run.stdout.get(r, "").strip() for r in range(1, SIZE)), f"rank 1 printed\n{info}"


EARLIER_RUN = """import numpy as np
import tensorflow as tf
model = tf.keras.Sequential([tf.keras.layers.Dense(8, activation="relu", input_shape=(8,)), tf.keras.layers.Dense(1)])
model.compile(optimizer=tf.keras.optimizers.Adam(0.01), loss="mse")
model.fit(np.ones((32, 8)), np.ones((32, 1)), epochs=1, verbose=0)
model.save("resume_model.h5")
"""


def test_a_model_loaded_with_its_optimizer_averages_gradients_once_wrapped(hvd_env, horovodize_exe, tmp_path):
    """HVD011 on a loaded model (s38 review, WRONG before: "gradients averaged: nothing to
    change", 20 of 20 variables different on 2 ranks): the converted program wraps the optimizer
    load_model rebuilt, and the ranks end with the same weights; the same program without that
    line ends with different weights (so the check can fail)."""
    py, _ = hvd_env
    (tmp_path / "earlier.py").write_text(EARLIER_RUN)
    subprocess.run([str(py), "earlier.py"], cwd=tmp_path, check=True, capture_output=True, timeout=240)
    converted = H.convert(H.PROGRAMS / "resume_loaded_model.py", tmp_path / "resume_loaded_model.py")
    from horovodize.rules.optimizer import LOADED_WRAP
    wrap = LOADED_WRAP.format(m="model", wrapper="hvd.DistributedOptimizer", u="    ") + "\n"
    assert wrap in converted.read_text()
    unwrapped = tmp_path / "resume_unwrapped.py"
    unwrapped.write_text(converted.read_text().replace(wrap, ""))
    for program, equal in ((converted, True), (unwrapped, False)):
        run = H.horovodrun(program, tmp_path, np=SIZE)
        info = describe(run, program)
        assert run.returncode == 0 and sorted(run.reports) == list(range(SIZE)), info
        checksums = [run.reports[r]["checksum"] for r in range(SIZE)]
        assert all(same(c, checksums[0]) for c in checksums) == equal, f"{checksums}\n{info}"
        if equal:       # the file's step count carried on: 1 step of the earlier run, then 16 (1 epoch of 2)
            assert [run.reports[r]["iterations"] for r in range(SIZE)] == [1 + 16] * SIZE, info
