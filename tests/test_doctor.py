"""``horovodize doctor`` against real interpreters.

The incompatible stacks are real virtual environments (``python -m venv --without-pip``)
whose site-packages hold only the ``*.dist-info/METADATA`` of the packages a user would have
installed: the doctor reads package metadata, so it sees them exactly as it sees real
installs, and a listed Horovod whose module is missing makes the real ``horovodrun
--check-build`` fail as a broken install does. The test tier's Horovod environment
(.cache/hvd-venv) is the compatible stack (marker ``horovod``: it needs ``make hvd-env``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from horovodize.app import doctor

ROOT = Path(__file__).resolve().parents[1]
HVD_PYTHON = Path(os.environ.get("HOROVODIZE_HVD_PYTHON") or ROOT / ".cache" / "hvd-venv" / "bin" / "python")
HOROVODRUN = '''#!{python}
import sys
from horovod.runner.launch import run_commandline
if __name__ == "__main__":
    sys.exit(run_commandline())
'''


def make_env(root: Path, dists: dict[str, str], horovodrun: bool = True) -> Path:
    """A venv whose metadata lists ``dists`` (name -> version); its python's path."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True, timeout=120)
    python = root / "bin" / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                             capture_output=True, text=True, check=True).stdout.strip()
    for name, version in dists.items():
        info = Path(purelib) / f"{name.replace('-', '_')}-{version}.dist-info"
        info.mkdir(parents=True)
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    if horovodrun and "horovod" in dists:      # the console script pip writes for horovod
        run = root / "bin" / "horovodrun"
        run.write_text(HOROVODRUN.format(python=python))
        run.chmod(0o755)
    return python


def doctor_cli(python, fmt="json", **env):
    exe = Path(sys.executable).parent / "horovodize"
    proc = subprocess.run([str(exe), "doctor", "--python", str(python), "--format", fmt],
                          capture_output=True, text=True, timeout=300,
                          env={k: v for k, v in dict(os.environ, **env).items() if v is not None})
    return proc, (json.loads(proc.stdout) if fmt == "json" and proc.stdout.strip() else None)


def titles(report, severity=None):
    return [f["title"] for f in report["findings"] if severity in (None, f["severity"])]


def fixes(report):
    return [line for f in report["findings"] for line in f["fix"]]


# -- incompatible stacks ------------------------------------------------------------------------
def test_tf216_keras3_without_tf_keras(tmp_path):
    py = make_env(tmp_path / "env", {"tensorflow": "2.16.1", "keras": "3.3.3", "horovod": "0.28.1"})
    proc, rep = doctor_cli(py, TF_USE_LEGACY_KERAS=None)
    assert proc.returncode == 1, proc.stderr
    assert rep["verdict"] == "not ready" and rep["ready"] is False
    assert (rep["tensorflow"], rep["tensorflow_dist"], rep["keras"], rep["horovod"]) == (
        "2.16.1", "tensorflow", "3.3.3", "0.28.1")
    assert "TensorFlow 2.16.1 needs tf_keras for Horovod" in titles(rep, "error")
    fx = fixes(rep)
    assert f"{py} -m pip install 'tf_keras~=2.16.0'" in fx
    assert "export TF_USE_LEGACY_KERAS=1" in fx
    assert any("'tensorflow<2.16'" in line and "HOROVOD_WITH_TENSORFLOW=1" in line for line in fx)
    # horovod's metadata without its module: the real horovodrun --check-build fails
    assert "horovodrun --check-build failed" in titles(rep, "error")
    broken = next(f for f in rep["findings"] if f["title"] == "horovodrun --check-build failed")
    assert "No module named 'horovod'" in broken["detail"]
    assert broken["fix"] == [f"HOROVOD_WITH_TENSORFLOW=1 HOROVOD_WITH_GLOO=1 {py} -m pip install --no-cache-dir "
                             "--force-reinstall --no-deps horovod==0.28.1"]
    assert rep["summary"] == "not ready: TensorFlow 2.16.1 needs tf_keras for Horovod (+1 more)"


def test_tf216_with_tf_keras_needs_the_variable(tmp_path):
    py = make_env(tmp_path / "env", {"tensorflow-cpu": "2.16.2", "keras": "3.6.0", "tf-keras": "2.16.0"})
    proc, rep = doctor_cli(py, TF_USE_LEGACY_KERAS=None)
    assert "TF_USE_LEGACY_KERAS=1 is not set" in titles(rep, "warning")
    assert "Horovod is not installed" in titles(rep, "error")
    install = next(f for f in rep["findings"] if f["title"] == "Horovod is not installed")["fix"]
    assert install == [f"HOROVOD_WITH_TENSORFLOW=1 HOROVOD_WITH_GLOO=1 {py} -m pip install --no-cache-dir horovod==0.28.1"]
    assert proc.returncode == 1
    # with the variable set in the environment the doctor runs in, the warning goes away
    _, rep = doctor_cli(py, TF_USE_LEGACY_KERAS="1")
    assert rep["tf_use_legacy_keras"] == "1"
    assert not any("TF_USE_LEGACY_KERAS" in t for t in titles(rep))
    assert not any("tf_keras" in t for t in titles(rep))


def test_tf_keras_minor_mismatch(tmp_path):
    py = make_env(tmp_path / "env", {"tensorflow": "2.17.0", "tf-keras": "2.16.0"})
    _, rep = doctor_cli(py, TF_USE_LEGACY_KERAS="1")
    assert "tf_keras 2.16.0 does not match TensorFlow 2.17.0" in titles(rep, "warning")
    assert f"{py} -m pip install 'tf_keras~=2.17.0'" in fixes(rep)


def test_keras3_next_to_tf215(tmp_path):
    py = make_env(tmp_path / "env", {"tensorflow": "2.15.1", "keras": "3.0.5"})
    proc, rep = doctor_cli(py)
    assert "Keras 3.0.5 is installed with TensorFlow 2.15.1" in titles(rep, "error")
    assert f"{py} -m pip install 'keras~=2.15.0'" in fixes(rep)
    assert proc.returncode == 1


def test_empty_env_text_report(tmp_path):
    py = make_env(tmp_path / "env", {})
    proc, _ = doctor_cli(py, fmt="text")
    assert proc.returncode == 1
    out = proc.stdout
    assert out.startswith(f"horovodize doctor: {py} (Python ")
    assert "  TensorFlow           not installed\n" in out
    assert "Verdict: not ready: TensorFlow is not installed (+1 more)" in out
    assert f"  fix: {py} -m pip install 'tensorflow<2.16'\n" in out


def test_missing_interpreter_exits_2(tmp_path):
    proc, rep = doctor_cli(tmp_path / "nope" / "python")
    assert proc.returncode == 2
    assert rep["verdict"] == "cannot inspect" and rep["python_version"] is None
    assert rep["findings"][0]["title"].startswith("cannot run ")


# -- the build checks, from `horovodrun --check-build` output -----------------------------------
CHECK_BUILD_NO_TF = """Horovod v0.28.1:

Available Frameworks:
    [ ] TensorFlow
    [X] PyTorch
    [ ] MXNet

Available Controllers:
    [X] MPI
    [ ] Gloo

Available Tensor Operations:
    [X] NCCL
    [ ] DDL
    [ ] CCL
    [X] MPI
    [ ] Gloo
"""


CHECK_BUILD_TF_GLOO = """\
Horovod v0.28.1:

Available Frameworks:
    [X] TensorFlow
    [ ] PyTorch
    [ ] MXNet

Available Controllers:
    [ ] MPI
    [X] Gloo

Available Tensor Operations:
    [ ] NCCL
    [ ] DDL
    [ ] CCL
    [ ] MPI
    [X] Gloo
"""


def _tfnew_report(keras_target, **kw):
    """TF 2.21.0 + Keras 3.15.1, no tf_keras, Horovod built with TensorFlow and Gloo (docs/stacks.md)."""
    fields = dict(python="/env/bin/python", python_version="3.11.7", tensorflow="2.21.0",
                  tensorflow_dist="tensorflow-cpu", keras="3.15.1", horovod="0.28.1",
                  build=doctor.parse_check_build(CHECK_BUILD_TF_GLOO), keras_target=keras_target)
    fields.update(kw)
    report = doctor.Report(**fields)
    report.findings = list(doctor.diagnose(report))
    return report


def test_newest_stack_runs_the_keras3_target_only():
    """TF 2.21 + Keras 3 without tf_keras: not ready for a Keras 2 conversion (the error names the
    keras3 target as the other way), ready for a keras3 one (docs/keras3.md)."""
    report = _tfnew_report("tf.keras")
    assert not report.ready and report.summary().startswith("not ready: TensorFlow 2.21.0 needs tf_keras")
    [error] = [f for f in report.findings if f.severity == "error"]
    assert any("--keras-target keras3" in line for line in error.fix)
    report = _tfnew_report("keras3")
    assert report.ready and not [f for f in report.findings if f.severity in ("error", "warning")]
    assert "Keras 3.15.1: the keras3 target runs here" in [f.title for f in report.findings]
    # Keras 2 there, or TF_USE_LEGACY_KERAS=1 (tf.keras would be Keras 2 under a Keras 3 program)
    report = _tfnew_report("keras3", keras="2.15.0")
    assert [f.title for f in report.findings if f.severity == "error"] == ["the keras3 target needs Keras 3"]
    report = _tfnew_report("keras3", tf_use_legacy_keras="1")
    assert report.ready and [f.title for f in report.findings if f.severity == "warning"] == [
        "TF_USE_LEGACY_KERAS=1 is set"]


def test_build_without_tensorflow():
    build = doctor.parse_check_build(CHECK_BUILD_NO_TF)
    assert build.version == "0.28.1"
    assert build.frameworks == {"TensorFlow": False, "PyTorch": True, "MXNet": False}
    assert build.controllers == {"MPI": True, "Gloo": False}
    report = doctor.Report(python="/env/bin/python", python_version="3.11.7", tensorflow="2.15.1",
                           tensorflow_dist="tensorflow", keras="2.15.0", horovod="0.28.1", build=build)
    found = {f.title: f for f in doctor.diagnose(report)}
    assert found["Horovod is not built with TensorFlow"].fix == [
        "HOROVOD_WITH_TENSORFLOW=1 HOROVOD_WITH_GLOO=1 /env/bin/python -m pip install --no-cache-dir "
        "--force-reinstall --no-deps horovod==0.28.1"]
    assert found["Horovod has no Gloo"].severity == "info"
    assert "Horovod has no NCCL" not in found
    assert doctor.parse_check_build("Traceback (most recent call last):\n  ...") is None


def test_version_tuple():
    assert doctor.version_tuple("2.16.0rc1") == (2, 16, 0)
    assert doctor.version_tuple("2.15.1") >= (2, 15) and doctor.version_tuple("2.9.3") < (2, 16)
    assert doctor.version_tuple(None) == ()


# -- the test tier's Horovod environment --------------------------------------------------------
@pytest.mark.horovod
def test_hvd_venv_is_ready():
    if not HVD_PYTHON.exists():
        pytest.fail(f"{HVD_PYTHON} missing: run `make hvd-env`", pytrace=False)
    proc, rep = doctor_cli(HVD_PYTHON, TF_USE_LEGACY_KERAS=None)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert rep["verdict"] == "ready"
    assert rep["tensorflow"] == "2.15.1" and rep["tensorflow_dist"] == "tensorflow-cpu"
    assert rep["horovod"] == "0.28.1"
    assert rep["build"]["frameworks"]["TensorFlow"] is True
    assert rep["build"]["controllers"]["Gloo"] is True
    assert not titles(rep, "error") and not titles(rep, "warning")
    assert rep["summary"].startswith("ready: TensorFlow 2.15.1, Keras 2.15.0, Horovod 0.28.1 (TensorFlow, Gloo")


# -- TF >= 2.16: the verdict from the run probe ---------------------------------------------------
def _tf216_report(runs):
    build = doctor.Build("0.28.1", {"TensorFlow": True}, {"Gloo": True}, {"Gloo": True})
    return doctor.Report(python="/env/bin/python", python_version="3.11.9", tensorflow="2.16.2",
                         tensorflow_dist="tensorflow-cpu", keras="3.15.1", tf_keras="2.16.0", horovod="0.28.1",
                         tf_use_legacy_keras="1", build=build, runs=runs)


def test_tf216_verdict_comes_from_the_run_probe():
    ok = dict.fromkeys(doctor.PROBED, "ok")
    report = _tf216_report(ok)
    report.findings = list(doctor.diagnose(report))
    assert report.ready and not [f for f in report.findings if f.severity in ("error", "warning")]
    # Horovod's callbacks failing (as on TF 2.16.2 + tf_keras): ready, and the fix is the tf_keras target
    report = _tf216_report(dict(ok, metric_average="AttributeError: module 'keras.backend' has no attribute 'constant'",
                                warmup="AttributeError: module 'keras.backend' has no attribute 'get_value'"))
    report.findings = list(doctor.diagnose(report))
    [warn] = [f for f in report.findings if f.severity == "warning"]
    assert report.ready and warn.title == "Horovod's Keras callbacks fail on this TensorFlow"
    assert "'constant'" in warn.detail and "'get_value'" in warn.detail
    assert warn.fix[0].startswith("horovodize convert --keras-target tf_keras FILE")
    # the tape failing (metadata says nothing of it): not ready, pin TensorFlow and rebuild Horovod
    report = _tf216_report(dict(ok, tape="AttributeError: 'Variable' object has no attribute 'ref'"))
    report.findings = list(doctor.diagnose(report))
    [err] = [f for f in report.findings if f.severity == "error"]
    assert not report.ready and "'ref'" in err.detail and "DistributedGradientTape" in err.detail
    assert err.fix[0] == "/env/bin/python -m pip install 'tensorflow<2.16'" and "horovod==0.28.1" in err.fix[1]
    assert "Runs (probed)" in doctor.render(report) and "tape: fails" in doctor.render(report)


STACK2_PYTHON = ROOT / ".cache" / "hvd-venv-tfnew" / "bin" / "python"


@pytest.mark.horovod
@pytest.mark.stack2
@pytest.mark.skipif(not STACK2_PYTHON.exists(), reason=f"second stack not built ({STACK2_PYTHON.parent.parent}): "
                    "run `make hvd-env-tfnew` (a Horovod build) or `make test-stack2`")
def test_stack2_verdict_from_what_runs():
    """TF 2.21.0 + tf_keras 2.21.0 + Keras 3.15.1 + Horovod 0.28.1: the probe trains with
    DistributedOptimizer, the broadcast callback and the tape (ready), and finds Horovod's
    callbacks failing (a warning whose fix is the tf_keras conversion target). Without
    TF_USE_LEGACY_KERAS=1 in the environment, the same plus the variable's warning. For the
    keras3 target, ready with Keras 3 (docs/keras3.md)."""
    proc, rep = doctor_cli(STACK2_PYTHON, TF_USE_LEGACY_KERAS="1")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert rep["verdict"] == "ready" and rep["summary"].startswith(
        "ready: TensorFlow 2.21.0, tf_keras 2.21.0, Horovod 0.28.1 (TensorFlow, Gloo")
    runs = rep["runs"]
    assert {k: runs[k] for k in ("import", "fit", "tape")} == {"import": "ok", "fit": "ok", "tape": "ok"}, runs
    assert runs["metric_average"] == "AttributeError: module 'keras.backend' has no attribute 'constant'", runs
    assert "has no attribute 'get_value'" in runs["warmup"], runs
    assert titles(rep, "warning") == ["Horovod's Keras callbacks fail on this TensorFlow"]
    assert fixes(rep)[0].startswith("horovodize convert --keras-target tf_keras FILE")
    assert not titles(rep, "error")
    exe = Path(sys.executable).parent / "horovodize"
    proc = subprocess.run([str(exe), "doctor", "--python", str(STACK2_PYTHON), "--keras-target", "keras3",
                           "--format", "json"], capture_output=True, text=True, timeout=300,
                          env={k: v for k, v in os.environ.items() if k != "TF_USE_LEGACY_KERAS"})
    rep = json.loads(proc.stdout)
    assert proc.returncode == 0 and rep["summary"].startswith(
        "ready: TensorFlow 2.21.0, Keras 3.15.1, Horovod 0.28.1 (TensorFlow, Gloo"), proc.stdout
    assert "Keras 3.15.1: the keras3 target runs here" in titles(rep, "info") and not titles(rep, "warning")
