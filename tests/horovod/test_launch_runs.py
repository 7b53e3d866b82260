"""The recipes of ``horovodize launch`` run for real: a converted program (``keras_fit.py``)
on 2 CPU ranks through the emitted horovodrun script, the sbatch script (with ``scontrol``
stood in for and the Slurm variables of a one-node allocation of 2 tasks) and the Ray driver
(``horovod.ray.RayExecutor``, a local Ray of this machine). Each must end with both ranks
reporting the same weights and the learning rate scaled by the size, as under the run tier's
own ``horovodrun``.

Ray comes from the Horovod venv (``scripts/hvd_env.sh`` pins it); the MPIJob needs a
Kubernetes cluster and is checked against its schema in ``tests/test_launch.py`` only.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import hvd_harness as H
import pytest

pytestmark = [pytest.mark.horovod, pytest.mark.timeout(600)]
LR = 0.001                      # keras_fit.py's learning rate before conversion


@pytest.fixture
def job(tmp_path, hvd_env, horovodize_exe):
    """(workdir with the converted train.py, env for the job, the launch command)"""
    H.convert(H.PROGRAMS / "keras_fit.py", tmp_path / "train.py")
    env = H.run_env(tmp_path / "reports", tmp_path / "out")
    (tmp_path / "reports").mkdir()
    (tmp_path / "out").mkdir()

    def launch(*args: str) -> Path:
        out = tmp_path / "recipe"
        proc = subprocess.run([str(horovodize_exe), "launch", *args, "-o", str(out)], cwd=tmp_path,
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, proc.stderr
        return out

    return tmp_path, env, launch


def _run(cmd: list[str], workdir: Path, env: dict) -> str:
    proc = subprocess.run(cmd, cwd=workdir, env=env, capture_output=True, text=True, errors="replace",
                          timeout=H.RUN_TIMEOUT, start_new_session=True)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-4000:]
    return output


def _check_reports(workdir: Path, output: str) -> None:
    reports = {}
    for path in sorted((workdir / "reports").glob("report-*.json")):
        data = json.loads(path.read_text())
        reports[data["rank"]] = data
    assert sorted(reports) == [0, 1], output[-4000:]
    assert reports[0]["checksum"] == reports[1]["checksum"]              # the ranks agree
    assert reports[0]["lr"] == pytest.approx(LR * 2)                      # scaled by hvd.size()


def test_horovodrun_recipe_runs(job):
    workdir, env, launch = job
    recipe = launch("--emit", "horovodrun", "train.py", "--np", "2")
    _check_reports(workdir, _run(["bash", str(recipe)], workdir, env))


def test_slurm_recipe_runs_in_a_one_node_allocation(job):
    workdir, env, launch = job
    recipe = launch("--emit", "slurm", "train.py", "--np", "2")
    stand_in = workdir / "bin"
    stand_in.mkdir()
    (stand_in / "scontrol").write_text("#!/bin/sh\necho localhost\n")          # the allocation: this machine
    (stand_in / "scontrol").chmod(0o755)
    env = {**env, "PATH": f"{stand_in}{os.pathsep}{env['PATH']}", "SLURM_JOB_NODELIST": "localhost",
           "SLURM_NTASKS": "2", "SLURM_NTASKS_PER_NODE": "2"}
    _check_reports(workdir, _run(["bash", str(recipe)], workdir, env))


def test_ray_recipe_runs_on_a_local_ray(job, hvd_env):
    workdir, env, launch = job
    python = str(hvd_env[0])
    probe = subprocess.run([python, "-c", "import ray, horovod.ray; print(ray.__version__)"], env=env,
                           capture_output=True, text=True, timeout=120)
    if probe.returncode != 0:
        pytest.fail(f"ray is not importable by {python}: run `make hvd-env` (scripts/hvd_env.sh pins it)\n"
                    f"{probe.stderr[-1500:]}", pytrace=False)
    recipe = launch("--emit", "ray", "train.py", "--np", "2")
    env = {**env, "RAY_DISABLE_DOCKER_CPU_WARNING": "1", "RAY_USAGE_STATS_ENABLED": "0"}
    output = _run([python, str(recipe)], workdir, env)
    _check_reports(workdir, output)
    assert "BaseHorovodWorker" in output                 # the ranks were Ray actors
