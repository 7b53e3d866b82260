"""Run programs under ``horovodrun --gloo`` and collect what each rank reported.

Shared by the run tier (``test_runs.py``) and the ``verify`` tests. Nothing here imports
TensorFlow or Horovod: those run only in the Horovod venv, in subprocesses.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PROGRAMS = Path(__file__).resolve().parent / "programs"
DEFAULT_HVD_PYTHON = REPO / ".cache" / "hvd-venv" / "bin" / "python"
# The second stack, the newest Horovod 0.28.1 builds against (`make hvd-env-tfnew`): TF 2.21.0 +
# Keras 3.15.1 + tf_keras 2.21.0 + horovod 0.28.1 (Gloo, patched); HOROVODIZE_TFNEW_PYTHON names
# another build of it (a worktree's own .cache has none).
TFNEW_PYTHON = Path(os.environ.get("HOROVODIZE_TFNEW_PYTHON") or REPO / ".cache" / "hvd-venv-tfnew" / "bin" / "python")
STACK2_PYTHON = TFNEW_PYTHON
RUN_TIMEOUT = float(os.environ.get("HOROVODIZE_RUN_TIMEOUT", "240"))

# horovodrun --gloo prefixes each line with "[<rank>]<stdout>:" or "[<rank>]<stderr>:".
# Keras progress bars use \r, so one physical line can carry the prefix several times.
PREFIX = re.compile(r"\[(\d+)\]<(stdout|stderr)>:")


def hvd_python() -> Path:
    return Path(os.environ.get("HOROVODIZE_HVD_PYTHON") or DEFAULT_HVD_PYTHON)


def require_hvd_env(python: Path | None = None) -> tuple[Path, Path]:
    """(python, horovodrun) of the Horovod venv (or of `python`'s); a clear failure when it is missing."""
    py = python or hvd_python()
    run = py.parent / "horovodrun"
    if not py.exists() or not run.exists():
        raise RuntimeError(
            f"Horovod run environment missing ({py} / {run} not found): run `make hvd-env` "
            "(scripts/hvd_env.sh) or set HOROVODIZE_HVD_PYTHON to a Python with horovod[tensorflow] + horovodrun")
    return py, run


def horovodize_cli() -> Path:
    exe = Path(sys.executable).parent / "horovodize"
    if not exe.exists():
        raise RuntimeError(f"{exe} not found: run the tests from the project venv (`make venv`, then .venv/bin/python -m pytest)")
    return exe


def convert(program: Path, out: Path, args: tuple[str, ...] = ()) -> Path:
    """`horovodize convert --file-only PROGRAM -o OUT [ARGS]` through the console script (the
    programs import `hvd_report`, the tier's instrumentation, which is not theirs to convert)."""
    proc = subprocess.run([str(horovodize_cli()), "convert", "--file-only", *args, str(program), "-o", str(out)],
                          check=False, capture_output=True, text=True, timeout=60)
    if proc.returncode != 0:
        raise AssertionError(f"horovodize convert {program.name} exited {proc.returncode}:\n{proc.stderr}")
    return out


@dataclass
class RankRun:
    returncode: int
    output: str
    wall: float
    timed_out: bool
    stdout: dict = field(default_factory=dict)   # rank -> text printed on stdout
    stderr: dict = field(default_factory=dict)   # rank -> text printed on stderr
    reports: dict = field(default_factory=dict)  # rank -> report dict (JSON written by the program)

    def tail(self, n: int = 60) -> str:
        return "\n".join(self.output.splitlines()[-n:])


def split_ranks(output: str) -> tuple[dict, dict]:
    """Per-rank stdout/stderr text from horovodrun's prefixed output."""
    streams = {"stdout": {}, "stderr": {}}
    for line in output.splitlines():
        matches = list(PREFIX.finditer(line))
        for i, m in enumerate(matches):
            end = matches[i + 1].start() if i + 1 < len(matches) else len(line)
            text = line[m.end():end]
            streams[m.group(2)].setdefault(int(m.group(1)), []).append(text)
    return ({r: "\n".join(v) for r, v in streams["stdout"].items()},
            {r: "\n".join(v) for r, v in streams["stderr"].items()})


def run_env(report_dir: Path, out_dir: Path, extra: dict | None = None, python: Path | None = None) -> dict:
    py, _ = require_hvd_env(python)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env.update({
        "PATH": f"{py.parent}{os.pathsep}{env.get('PATH', '')}",
        "PYTHONPATH": str(PROGRAMS),
        "HVD_REPORT_DIR": str(report_dir),
        "HVD_OUT_DIR": str(out_dir),
        "TF_CPP_MIN_LOG_LEVEL": "2",
        "PYTHONUNBUFFERED": "1",
    })
    env.update(extra or {})
    return env


def horovodrun(script: Path, workdir: Path, np: int = 2, timeout: float = RUN_TIMEOUT,
               args: list[str] | None = None, out_dir: Path | None = None, env: dict | None = None,
               python: Path | None = None) -> RankRun:
    """Run SCRIPT with `horovodrun -np N -H localhost:N --gloo`; reports land in WORKDIR/reports,
    files the program writes in OUT_DIR (default WORKDIR/out); `env` adds variables; `python`
    picks another Horovod venv than the pinned one (the second stack)."""
    py, run = require_hvd_env(python)
    report_dir, out_dir = workdir / "reports", out_dir or workdir / "out"
    report_dir.mkdir(parents=True, exist_ok=True)
    out_dir.mkdir(parents=True, exist_ok=True)
    cmd = [str(run), "-np", str(np), "-H", f"localhost:{np}", "--gloo", str(py), str(script), *(args or [])]
    start = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=workdir, env=run_env(report_dir, out_dir, env, python), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, errors="replace", start_new_session=True)
    timed_out = False
    try:
        output, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        os.killpg(proc.pid, signal.SIGKILL)  # the launcher and the ranks it started (our own session)
        output, _ = proc.communicate()
    wall = time.monotonic() - start
    result = RankRun(proc.returncode, output, wall, timed_out)
    result.stdout, result.stderr = split_ranks(output)
    for path in sorted(report_dir.glob("report-*.json")):
        data = json.loads(path.read_text())
        result.reports[int(data["rank"])] = data
    return result


def record(row: dict) -> None:
    """Append a row to the run table named by HOROVODIZE_RUN_TABLE (JSON lines), if set."""
    path = os.environ.get("HOROVODIZE_RUN_TABLE")
    if path:
        with open(path, "a") as fh:
            fh.write(json.dumps(row) + "\n")


AUDIT = Path(__file__).resolve().parent / "audit"       # sitecustomize audit hook: writes per rank


def empty_home(workdir: Path, extra: dict | None = None) -> dict:
    """HOME as WORKDIR/home, made empty (a cold Keras cache: ~/.keras does not exist yet)."""
    home = workdir / "home"
    home.mkdir(parents=True)
    return {"HOME": str(home), **(extra or {})}


def single_run(program: Path, workdir: Path, env: dict, timeout: float = RUN_TIMEOUT) -> dict:
    """PROGRAM unconverted in one plain process of the Horovod venv, in WORKDIR with ENV
    added: rank 0's report (the reference the 2-rank run is held to)."""
    py, _ = require_hvd_env()
    report_dir = workdir / "reports"
    report_dir.mkdir(parents=True, exist_ok=True)
    (workdir / "out").mkdir(exist_ok=True)
    proc = subprocess.run([str(py), str(program)], cwd=workdir, env=run_env(report_dir, workdir / "out", env),
                          capture_output=True, text=True, timeout=timeout, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return json.loads((report_dir / "report-0.json").read_text())


def audited_run(script: Path, workdir: Path, env: dict, np: int = 2,
                timeout: float = RUN_TIMEOUT) -> tuple[RankRun, dict]:
    """horovodrun under the audit hook: (run, rank -> [(event, path relative to WORKDIR,
    when)] for what each rank wrote, made or removed inside WORKDIR)."""
    audit_dir = workdir / "audit"
    env = {"PYTHONPATH": f"{AUDIT}{os.pathsep}{PROGRAMS}", "HVD_AUDIT_DIR": str(audit_dir), **env}
    run = horovodrun(script, workdir, np=np, timeout=timeout, env=env)
    events: dict = {r: [] for r in range(np)}
    for path in sorted(audit_dir.glob("audit-*.jsonl")) if audit_dir.exists() else []:
        rank = int(path.stem.split("-")[1])
        for line in path.read_text().splitlines():
            e = json.loads(line)
            p = Path(e["path"])
            if workdir in p.parents:
                events.setdefault(rank, []).append((e["event"], str(p.relative_to(workdir)), e["t"]))
    return run, events
