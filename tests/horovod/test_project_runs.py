"""Contract point 12 on 2 ranks: a program of several modules, converted as one program.

Each project of tests/projects is copied, converted with ``horovodize convert DIR --write``
(the entry and the modules it imports, as a user would), and its entry run with
``horovodrun -np 2 --gloo``. What the run shows is what the file-by-file conversion got
wrong: the ranks end with the same weights (the model made in another module is
broadcast), the rate is scaled where the optimizer is made, each rank takes half the steps
of the data read in another module, and only rank 0 prints and writes. The set-up is in
the entry only: no library module calls ``hvd.init()``.
"""

from __future__ import annotations

import math
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import hvd_harness as H
import pytest

pytestmark = [pytest.mark.horovod, pytest.mark.timeout(600)]
SIZE = 2
PROJECTS = Path(__file__).resolve().parent.parent / "projects"


@dataclass
class Shape:
    folder: str
    entry: str
    lr: float
    per_rank: dict                          # report key -> value on every rank
    prints: list = field(default_factory=list)
    rank0_dir: str = ""


SHAPES = [
    Shape("factories", "train.py", 0.01, {"examples": 256 // SIZE}, [r"factories step 0"], "factories"),
    Shape("package", "main.py", 0.001, {"batches": 2 * 256 // 16 // SIZE}, [r"8/8 \["], "package"),
    Shape("library_class", "run.py", 0.005, {"steps": 256 // 16 // SIZE}, [r"agent step 0"], "agent"),
    # the model and optimizer reached through a tf.train.Checkpoint (self.checkpoint.model):
    # broadcast after the first step, the manager saving (through a second name) on rank 0
    Shape("checkpoint_trainer", "run.py", 0.005, {"steps": 256 // 16 // SIZE}, [r"trainer step 0"], "trainer"),
]


@pytest.mark.parametrize("shape", SHAPES, ids=[s.folder for s in SHAPES])
def test_project_converted_as_one_program_runs_distributed(shape: Shape, hvd_env, horovodize_exe, tmp_path):
    project = tmp_path / shape.folder
    shutil.copytree(PROJECTS / shape.folder, project)
    proc = subprocess.run([str(horovodize_exe), "convert", str(project), "--write"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "12. the program is the project" in proc.stderr and ": done" in proc.stderr, proc.stderr
    inits = [p.relative_to(project) for p in project.rglob("*.py") if "hvd.init()" in p.read_text()]
    assert inits == [Path(shape.entry)], f"hvd.init() in {inits}"

    run = H.horovodrun(project / shape.entry, tmp_path, np=SIZE)
    info = (f"horovodrun exit {run.returncode}\n--- report ---\n{proc.stderr}\n--- output tail ---\n{run.tail()}")
    assert run.returncode == 0 and not run.timed_out, info
    reports = run.reports
    assert sorted(reports) == list(range(SIZE)), info
    sums = [reports[r]["checksum"] for r in range(SIZE)]
    assert all(math.isclose(s, sums[0], rel_tol=1e-9) for s in sums), f"weights differ: {sums}\n{info}"
    for r in range(SIZE):
        assert math.isclose(reports[r]["lr"], shape.lr * SIZE, rel_tol=1e-5), f"rank {r} lr {reports[r]['lr']}\n{info}"
        for key, value in shape.per_rank.items():
            assert reports[r][key] == value, f"rank {r} {key} = {reports[r][key]}, expected {value}\n{info}"
    for pattern in shape.prints:
        assert re.search(pattern, run.stdout.get(0, "")), f"rank 0 did not print /{pattern}/\n{info}"
        assert not re.search(pattern, run.stdout.get(1, "")), f"rank 1 printed /{pattern}/\n{info}"
    out = tmp_path / "out"
    assert (out / f"{shape.rank0_dir}-rank0").is_dir(), info
    assert not (out / f"{shape.rank0_dir}-rank1").exists(), f"rank 1 wrote {shape.rank0_dir}\n{info}"


def test_project_data_fetched_once_per_host(hvd_env, horovodize_exe, tmp_path):
    """The download is in a library module (fetch/data.py: urlretrieve, extract, read), the
    training in the entry: after the project's conversion, one request reaches the server
    for the host, rank 1 writes nothing in the working directory, the ranks agree."""
    from test_download_once_per_host import _archive, _Server

    project = tmp_path / "fetch"
    shutil.copytree(PROJECTS / "fetch", project)
    proc = subprocess.run([str(horovodize_exe), "convert", str(project), "--write"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "hvd.local_rank() == 0" in (project / "data.py").read_text(), (project / "data.py").read_text()
    serve = tmp_path / "serve"
    serve.mkdir()
    _archive(serve)
    server = _Server(serve)
    workdir = tmp_path / "run"
    workdir.mkdir()
    try:
        run, events = H.audited_run(project / "train.py", workdir, {"HVD_DATA_URL": server.url("features.zip")},
                                    np=SIZE, timeout=300)
        gets = server.gets
    finally:
        server.close()
    info = f"--- report ---\n{proc.stderr}\n--- output tail ---\n{run.tail()}"
    assert run.returncode == 0 and sorted(run.reports) == list(range(SIZE)), info
    sums = [run.reports[r]["checksum"] for r in range(SIZE)]
    assert math.isclose(sums[0], sums[1], rel_tol=1e-9), f"weights differ: {sums}\n{info}"
    assert gets == 1, f"{gets} downloads on one host\n{info}"
    written = {r: {p for e, p, _t in events.get(r, ()) if e == "write"} for r in range(SIZE)}
    assert {"features.zip", "data/features.npz"} <= written[0], f"rank 0 wrote {sorted(written[0])}\n{info}"
    assert not written[1], f"rank 1 wrote {sorted(written[1])}\n{info}"


def test_notebook_of_a_project_runs_distributed(hvd_env, horovodize_exe, tmp_path):
    """A notebook importing model.py and data.py (tests/projects/notebook): ``convert DIR
    --write`` converts the three as one program, ``--to-script`` exports the converted cells
    beside the modules; on 2 ranks: same weights, the rate scaled in model.py, half the data
    per rank (sharded in data.py), rank 0 alone prints and writes."""
    project = tmp_path / "notebook"
    shutil.copytree(PROJECTS / "notebook", project)
    proc = subprocess.run([str(horovodize_exe), "convert", str(project), "--write"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "12. the program is the project" in proc.stderr, proc.stderr
    script = project / "train_nb.py"
    export = subprocess.run([str(horovodize_exe), "convert", str(project / "train.ipynb"), "--to-script", str(script)],
                            capture_output=True, text=True, timeout=120)
    assert export.returncode == 0, export.stderr
    run = H.horovodrun(script, tmp_path, np=SIZE)
    info = f"exit {run.returncode}\n{script.read_text()}\n--- output tail ---\n{run.tail()}"
    assert run.returncode == 0 and not run.timed_out and sorted(run.reports) == list(range(SIZE)), info
    sums = [run.reports[r]["checksum"] for r in range(SIZE)]
    assert all(math.isclose(s, sums[0], rel_tol=1e-9) for s in sums), f"weights differ: {sums}\n{info}"
    for r in range(SIZE):
        assert math.isclose(run.reports[r]["lr"], 0.01 * SIZE, rel_tol=1e-5), info
        assert run.reports[r]["examples"] == 256 // SIZE, info
    assert re.search(r"notebook step 0", run.stdout.get(0, "")) and not re.search(r"notebook step", run.stdout.get(1, "")), info
    assert (tmp_path / "out" / "notebook-rank0").is_dir() and not (tmp_path / "out" / "notebook-rank1").exists(), info


def test_script_another_imports_runs_distributed_and_its_importer_alone(hvd_env, horovodize_exe, tmp_path):
    """calmisential's ResNet shape (tests/projects/imported_script): train.py, whose set-up
    the conversion put in its ``__main__`` block, trains on 2 ranks as one program; then
    evaluate.py, which imports train.py, runs as one process (rank 0 of 1) and reads what
    rank 0 saved."""
    project = tmp_path / "imported_script"
    shutil.copytree(PROJECTS / "imported_script", project)
    proc = subprocess.run([str(horovodize_exe), "convert", str(project), "--write"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "set-up in the `__main__` block" in proc.stderr, proc.stderr
    run = H.horovodrun(project / "train.py", tmp_path, np=SIZE)
    info = f"exit {run.returncode}\n--- report ---\n{proc.stderr}\n--- output tail ---\n{run.tail()}"
    assert run.returncode == 0 and not run.timed_out and sorted(run.reports) == list(range(SIZE)), info
    sums = [run.reports[r]["checksum"] for r in range(SIZE)]
    assert all(math.isclose(s, sums[0], rel_tol=1e-9) for s in sums), f"weights differ: {sums}\n{info}"
    for r in range(SIZE):
        assert math.isclose(run.reports[r]["lr"], 0.5 * SIZE, rel_tol=1e-5), info
        assert run.reports[r]["steps"] == 2 * 256 // 16 // SIZE, info
    assert re.search(r"Epoch: 1/2", run.stdout.get(0, "")) and not re.search(r"Epoch", run.stdout.get(1, "")), info
    py, _ = H.require_hvd_env()
    evaluate = subprocess.run([str(py), str(project / "evaluate.py")], cwd=tmp_path, capture_output=True, text=True,
                              timeout=300, env=H.run_env(tmp_path / "reports", tmp_path / "out"))
    assert evaluate.returncode == 0 and "The accuracy on test set is" in evaluate.stdout, evaluate.stderr[-3000:]
