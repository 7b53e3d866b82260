"""Whole-program contract on 2 ranks: the converted program divides the work and keeps the
ranks in step, as Horovod's own examples do.

For each program: convert it, run the original in one process (the reference step count),
run the conversion with `horovodrun -np 2 --gloo` under an audit hook (audit/sitecustomize.py
records every file each process opens for writing), and check from what the ranks report:

* both ranks finish within the timeout (no rank left waiting in an allreduce);
* identical final weights;
* each rank ran about 1/N of the single-process optimizer steps (``iterations``), and all
  ranks the same number;
* rank 1 wrote no file (audit) and made none of the per-rank output directories;
* only rank 0 printed.

The unconverted program under the same launcher must fail these checks, so they can fail.
Set HOROVODIZE_RUN_TABLE=path.jsonl to record one row per run.
"""

from __future__ import annotations

import fnmatch
import math
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import hvd_harness as H
import pytest

pytestmark = [pytest.mark.horovod, pytest.mark.timeout(600)]
SIZE = 2
TIMEOUT = 180


@dataclass
class Spec:
    program: str
    rank0_dirs: list = field(default_factory=list)     # HVD_OUT_DIR/<name>-rank<r>: rank 0 only
    rank0_files: list = field(default_factory=list)    # files (in the run's directory, globs) rank 0 writes


SPECS = [
    Spec("wd_fit_arrays_callbacks.py", rank0_dirs=["wd-fit-ckpt"]),   # HVD043 + callbacks on the right ranks
    Spec("wd_fit_dataset_steps.py"),                                  # HVD042 steps_per_epoch
    Spec("wd_tape_uneven.py"),                                        # HVD041 shard + equal take, 97 examples
    Spec("wd_zip_timeseries.py"),                                     # HVD041 at Dataset.zip and a Keras windows utility
    Spec("wd_save_load.py", rank0_files=["model.keras", "history-*.json", "weights.npy"]),   # HVD032/HVD033
    Spec("wd_take_peek.py"),                                          # take(1) peek left alone, take(20) divided
    Spec("wd_main_guard.py"),                                         # if __name__ == "__main__": main()
    Spec("wd_app_run.py"),                                            # absl app.run(main), loop inside main
    # os.mkdir (exist_ok), a user Callback that writes, ModelCheckpoint then load_model (barrier)
    Spec("wr_callback_checkpoint.py", rank0_files=["best_model.keras", "logs/epoch_0.txt", "logs/kernel_0.npy",
                                                    "logs/latest.txt"]),
]


def single_process(program: Path, workdir: Path) -> dict:
    """The unconverted program in one plain process: the reference report."""
    return H.single_run(program, workdir, {}, TIMEOUT)


def audited_run(script: Path, workdir: Path) -> tuple[H.RankRun, dict]:
    """horovodrun with the audit hook; returns the run and rank -> files written (in `workdir`)."""
    run, events = H.audited_run(script, workdir, {}, np=SIZE, timeout=TIMEOUT)
    return run, {r: {p for e, p, _ in events.get(r, ()) if e == "write" and not p.startswith("reports/")}
                 for r in range(SIZE)}


def checks(spec: Spec, run: H.RankRun, written: dict, single: dict, workdir: Path) -> list[str]:
    """Every contract check that fails, as one line each (empty: the run behaves)."""
    bad = []
    reports = run.reports
    if run.timed_out or run.returncode != 0:
        bad.append(f"exit {run.returncode}{' (timed out: a rank waits in a collective)' if run.timed_out else ''}")
    if sorted(reports) != list(range(SIZE)):
        return bad + [f"reports from ranks {sorted(reports)}"]
    sums = [reports[r]["checksum"] for r in range(SIZE)]
    if not all(math.isclose(s, sums[0], rel_tol=1e-9, abs_tol=1e-12) for s in sums):
        bad.append(f"weights differ: {sums}")
    for r in range(SIZE):
        # the model a rank reads back must be the one it trained (its own or rank 0's, equal)
        restored = reports[r].get("restored_checksum", sums[r])
        if not math.isclose(restored, sums[r], rel_tol=1e-9, abs_tol=1e-12):
            bad.append(f"rank {r} read back another model: {restored} != {sums[r]}")
    its = [reports[r]["iterations"] for r in range(SIZE)]
    if len(set(its)) != 1:
        bad.append(f"ranks ran different step counts: {its}")
    expected = single["iterations"] / SIZE
    if any(abs(i - expected) > max(1.0, 0.1 * expected) for i in its):
        bad.append(f"steps per rank {its}, single process {single['iterations']}: not ~1/{SIZE}")
    for r in range(1, SIZE):
        if written.get(r):
            bad.append(f"rank {r} wrote {sorted(written[r])}")
        if run.stdout.get(r, "").strip():
            bad.append(f"rank {r} printed {run.stdout[r].strip()[:200]!r}")
        for name in spec.rank0_dirs:
            if (workdir / "out" / f"{name}-rank{r}").exists():
                bad.append(f"rank {r} wrote {name}")
    for name in spec.rank0_files:
        if not any(fnmatch.fnmatch(p, name) for p in written.get(0, ())):
            bad.append(f"rank 0 did not write {name}")
    for name in spec.rank0_dirs:
        d0 = workdir / "out" / f"{name}-rank0"
        if not (d0.is_dir() and any(d0.iterdir())):
            bad.append(f"rank 0 wrote nothing to {d0}")
    return bad


def row(spec: Spec, converted: bool, run: H.RankRun, written: dict, single: dict) -> dict:
    reports = run.reports
    return {"program": spec.program, "converted": converted, "ranks": SIZE, "exit": run.returncode,
            "timed_out": run.timed_out, "wall": round(run.wall, 1),
            "single_steps": single["iterations"],
            "steps_per_rank": [reports[r].get("iterations") for r in sorted(reports)],
            "weights_equal": len(reports) == SIZE and len({round(reports[r]["checksum"], 9) for r in reports}) == 1,
            "files_by_rank": {r: sorted(written.get(r, ())) for r in range(SIZE)}}


@pytest.mark.parametrize("spec", SPECS, ids=[s.program[:-3] for s in SPECS])
def test_converted_program_divides_work_like_horovod(spec: Spec, hvd_env, horovodize_exe, tmp_path):
    program = H.PROGRAMS / spec.program
    single = single_process(program, tmp_path / "single")
    converted = H.convert(program, tmp_path / spec.program)
    workdir = tmp_path / "run"
    workdir.mkdir()
    run, written = audited_run(converted, workdir)
    H.record(row(spec, True, run, written, single))
    bad = checks(spec, run, written, single, workdir)
    assert not bad, "\n".join(bad) + f"\nconverted program: {converted}\n--- output tail ---\n{run.tail()}"


def test_negative_control_unconverted_program_fails_the_checks(hvd_env, tmp_path):
    """The same checks on the unconverted save-then-load program: every rank trains alone
    on everything (its own seed, so its own weights), prints and writes, so they must report
    it. The weights compared are each rank's trained model, not the one it reads back: both
    unconverted ranks read one shared model.keras, whichever rank wrote it last."""
    spec = next(s for s in SPECS if s.program == "wd_save_load.py")
    program = H.PROGRAMS / spec.program
    single = single_process(program, tmp_path / "single")
    # Both unconverted ranks write model.keras in one directory and read it back: now and then
    # one reads the other's half-written file and the run crashes before reporting (a real
    # failure, but it would not exercise the checks below); such a run is retried.
    for attempt in range(3):
        workdir = tmp_path / f"run{attempt}"
        workdir.mkdir()
        run, written = audited_run(program, workdir)
        bad = "\n".join(checks(spec, run, written, single, workdir))
        if "reports from ranks" not in bad:
            break
    H.record(row(spec, False, run, written, single))
    assert "weights differ" in bad, bad
    assert "not ~1/2" in bad, bad
    assert "rank 1 wrote" in bad, bad


def _png(path: Path, rgb: tuple, size: int = 8) -> None:
    """A small solid-colour RGB PNG (zlib only: the test process needs no image library)."""
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    raw = b"".join(b"\x00" + bytes(rgb) * size for _ in range(size))
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", size, size, 8, 2, 0, 0, 0))
                     + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def _image_dir(root: Path) -> None:
    """80 images in 2 class folders: 10 batches of 8, so 5 per rank on 2 ranks."""
    for c, name in enumerate(("cats", "dogs")):
        folder = root / "images" / name
        folder.mkdir(parents=True)
        for i in range(40):
            _png(folder / f"{i}.png", (200 * c + i, 3 * i, 255 - 100 * c))


def test_image_dataset_from_directory_is_sharded_by_batch(hvd_env, horovodize_exe, tmp_path):
    """image_dataset_from_directory: each rank runs half the single process's steps, same weights."""
    spec = Spec("wd_image_directory.py")
    program = H.PROGRAMS / spec.program
    (tmp_path / "single").mkdir()
    _image_dir(tmp_path / "single")
    single = single_process(program, tmp_path / "single")
    assert single["iterations"] == 30                  # 10 batches x 3 epochs
    converted = H.convert(program, tmp_path / spec.program)
    assert "epochs=3" in converted.read_text()         # sharded, so the epochs are not also divided
    workdir = tmp_path / "run"
    workdir.mkdir()
    _image_dir(workdir)
    run, written = audited_run(converted, workdir)
    H.record(row(spec, True, run, written, single))
    # Keras's own "Found 80 files belonging to 2 classes." line is printed by the utility on
    # every rank (console output, contract point 7: not this rule's business); only it is let pass.
    found = "rank 1 printed 'Found 80 files belonging to 2 classes.'"
    bad = [b for b in checks(spec, run, written, single, workdir) if b != found]
    assert not bad, "\n".join(bad) + f"\nconverted program: {converted}\n--- output tail ---\n{run.tail()}"
    # 5 of the 10 batches per epoch on each rank (dividing the epochs instead would give 2 x 10)
    assert [run.reports[r]["iterations"] for r in range(SIZE)] == [15, 15]


RECORDS = """import os, sys
import tensorflow as tf
root = os.path.join(sys.argv[1], "records")
os.makedirs(root)
for f in range(4):
    with tf.io.TFRecordWriter(os.path.join(root, f"train-{f}.tfrecord")) as w:
        for i in range(16):
            x = [float(f), float(i), float(f * i % 5), 1.0]
            feature = {"x": tf.train.Feature(float_list=tf.train.FloatList(value=x)),
                       "y": tf.train.Feature(float_list=tf.train.FloatList(value=[sum(x)]))}
            w.write(tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString())
"""


def _records(root: Path) -> None:
    """4 TFRecord files of 16 examples: 8 batches of 8, so 2 files and 4 batches per rank on 2 ranks."""
    py, _ = H.require_hvd_env()
    root.mkdir(parents=True, exist_ok=True)
    subprocess.run([str(py), "-c", RECORDS, str(root)], check=True, capture_output=True, timeout=TIMEOUT)


def test_list_files_pipeline_is_sharded_by_file(hvd_env, horovodize_exe, tmp_path):
    """list_files + interleave(TFRecordDataset): each rank reads 2 of the 4 files (disjoint:
    list_files seeded alike on both ranks), half the single process's steps, same weights."""
    spec = Spec("wd_list_files.py")
    program = H.PROGRAMS / spec.program
    _records(tmp_path / "single")
    single = single_process(program, tmp_path / "single")
    converted = H.convert(program, tmp_path / spec.program)
    assert 'list_files("records/train-*.tfrecord", seed=1337).apply(' in converted.read_text()
    workdir = tmp_path / "run"
    _records(workdir)
    run, written = audited_run(converted, workdir)
    H.record(row(spec, True, run, written, single))
    bad = checks(spec, run, written, single, workdir)
    assert not bad, "\n".join(bad) + f"\nconverted program: {converted}\n--- output tail ---\n{run.tail()}"
    # (Keras counts one step more on a dataset of unknown size: 25 single, 13 per rank seen)
    assert max(run.reports[r]["iterations"] for r in range(SIZE)) <= single["iterations"] // SIZE + 1


def test_use_site_division_of_unknown_size_keeps_steps_equal(hvd_env, horovodize_exe, tmp_path):
    """A dataset from another module, of unknown size (a filter), 9 batches: shards of 5 and 4.
    Divided at the loop header, the elements counted at run time: both ranks run 4 steps an
    epoch (8 of the single process's 18), finish, and end with the same weights."""
    spec = Spec("wd_use_site.py")
    program = H.PROGRAMS / spec.program
    single = single_process(program, tmp_path / "single")
    assert single["iterations"] == 18                  # 9 batches x 2 epochs
    converted = H.convert(program, tmp_path / spec.program)
    assert "for x, y in train_ds.apply(lambda ds: ds.shard(hvd.size(), hvd.rank())" in converted.read_text()
    workdir = tmp_path / "run"
    workdir.mkdir()
    run, written = audited_run(converted, workdir)
    H.record(row(spec, True, run, written, single))
    bad = checks(spec, run, written, single, workdir)
    assert not bad, "\n".join(bad) + f"\n--- output tail ---\n{run.tail()}"
    assert [run.reports[r]["iterations"] for r in range(SIZE)] == [8, 8]
