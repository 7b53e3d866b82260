"""Contract point 13 on two simulated hosts (`horovodize verify --hosts 2`, each host its own
working directory copy, HOME and TMPDIR): programs that read back what rank 0 wrote. Converted,
a plain value is read on rank 0 and broadcast (``broadcast_object``) and a checkpoint restored
on rank 0 with every variable it holds broadcast (``broadcast_variables``: a step counter and a
hand-made rate too), so every check passes, "own disks" and "same weights" included. A Keras
model loaded with ``load_model`` and trained on every rank keeps the barrier: the report says it
needs a shared filesystem, and on two hosts "own disks" names the file and the line."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import hvd_harness as H
import pytest
from test_verify import rows, verify

pytestmark = [pytest.mark.horovod, pytest.mark.timeout(600)]


def copy(program, tmp_path):
    dst = tmp_path / program
    shutil.copy(H.PROGRAMS / program, dst)
    return dst


def line_of(script, text: str) -> int:
    return next(i for i, ln in enumerate(script.read_text().splitlines(), 1) if text in ln)


@pytest.mark.parametrize("program", ["rb_values.py", "rb_restore_tape.py", "rb_manager_resume.py",
                                     "rb_json_model.py", "rb_evaluate_rank0.py"])
def test_values_and_checkpoints_read_back_on_two_hosts_pass(hvd_env, horovodize_exe, tmp_path, program):
    """Before read-back broadcasts (barrier, every rank reading its own disk), rb_values.py
    failed "ranks finish" and "own disks" (host 1 found no rb_ckpt) and rb_restore_tape.py
    "same weights" (host 1 restored nothing and kept its own rate factor). rb_manager_resume.py's
    restore, in a function called twice, was left on every rank with no broadcast (the loop's
    first-step broadcast was taken to carry it): "same weights" failed, rank 0 one step behind.
    rb_json_model.py read its JSON in a ``with open`` block on every rank after a barrier: "ranks
    finish" and "own disks" failed (host 1 had no rb_model.json). rb_evaluate_rank0.py loaded
    its saved model on every rank after a barrier only to evaluate it: host 1 had no file; now
    rank 0 reads and evaluates it, the other ranks skip both."""
    py, _ = hvd_env
    proc = verify([str(copy(program, tmp_path)), "--np", "2", "--hosts", "2", "--python", str(py)], tmp_path)
    table = rows(proc)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert all(status == "PASS" for status, _ in table.values()), table
    assert "of 2 simulated hosts" in proc.stdout, proc.stdout


def test_a_loaded_keras_model_still_needs_a_shared_filesystem(hvd_env, horovodize_exe, tmp_path):
    py, _ = hvd_env
    script = copy("rb_load_model.py", tmp_path)
    line = line_of(script, "load_model(")
    environ = {**os.environ, "PYTHONPATH": str(H.REPO / "server")}     # this checkout's sources
    report = subprocess.run([sys.executable, "-m", "horovodize", "convert", "--format", "json", str(script)],
                            check=False, capture_output=True, text=True, timeout=120, env=environ)
    points = {p["point"]: p for p in json.loads(report.stderr.strip().splitlines()[-1])["points"]}
    assert any(n["note"].startswith('done, but needs a shared filesystem: `"rb_model.keras"` (line %d)' % line)
               for n in points[7]["notes"]), points[7]
    proc = verify([str(script), "--np", "2", "--hosts", "2", "--python", str(py)], tmp_path)
    table = rows(proc)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    status, reason = table["own disks"]
    assert status == "FAIL" and "rb_model.keras, which only host 0 wrote" in reason, table
    assert "[rb_load_model.py:" in reason, table       # (the line verify maps the error to)
