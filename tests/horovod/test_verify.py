"""`horovodize verify` end to end: convert, run on 2 ranks, compare the ranks' weights."""

from __future__ import annotations

import subprocess
import sys

import hvd_harness as H
import pytest

pytestmark = [pytest.mark.horovod, pytest.mark.timeout(300)]


def verify(args, tmp_path, **env):
    environ = H.run_env(tmp_path / "reports", tmp_path / "out", env)
    (tmp_path / "reports").mkdir(exist_ok=True)
    return subprocess.run([str(H.horovodize_cli()), "verify", *args], check=False, capture_output=True, text=True,
                          env=environ, timeout=280)


def test_verify_keras_program_weights_agree(hvd_env, horovodize_exe, tmp_path):
    py, _ = hvd_env
    proc = verify([str(H.PROGRAMS / "keras_compile_str.py"), "--python", str(py)], tmp_path)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "rank 0: exit 0" in out and "rank 1: exit 0" in out, out
    assert "weights agree across 2 ranks" in out, out


def test_verify_reports_differing_weights(hvd_env, horovodize_exe, tmp_path):
    """The comparison can fail: `x_all` is per-rank random data, never synchronised."""
    py, _ = hvd_env
    proc = verify([str(H.PROGRAMS / "tape_eager.py"), "--python", str(py), "--model-var", "x_all"], tmp_path)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert "weights DIFFER" in out, out


def test_verify_reports_first_error_line_per_rank(hvd_env, horovodize_exe, tmp_path):
    py, _ = hvd_env
    script = tmp_path / "boom.py"
    script.write_text(
        "import sys\n"
        "import tensorflow as tf\n"
        "model = tf.keras.Sequential([tf.keras.layers.Dense(1, input_shape=(2,))])\n"
        "model.compile('sgd', loss='mse')\n"
        "model.fit(tf.zeros((8, 2)), tf.zeros((8, 1)), epochs=1)\n"
        "raise ValueError('boom ' + sys.argv[1])\n")
    proc = verify([str(script), "--python", str(py), "--", "on-purpose"], tmp_path)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    for r in (0, 1):
        assert f"rank {r}: exit 1" in out and "ValueError: boom on-purpose" in out, out


def test_verify_without_horovod_is_a_clear_error(horovodize_exe, tmp_path):
    """The project venv has no horovod: one line on stderr, exit 2, nothing run."""
    proc = verify([str(H.PROGRAMS / "keras_compile_str.py"), "--python", sys.executable], tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "horovod is not importable" in lines[0] and "make hvd-env" in lines[0], proc.stderr
    assert proc.stdout == ""


def test_verify_does_not_import_tensorflow_or_horovod(horovodize_exe):
    code = ("import sys, horovodize.app.verify, horovodize.cli; "
            "bad = [m for m in sys.modules if m.split('.')[0] in ('tensorflow', 'horovod', 'keras')]; "
            "print(bad); sys.exit(1 if bad else 0)")
    proc = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
