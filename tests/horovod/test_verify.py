"""`horovodize verify` end to end, the rehearsal: a single run and a run on 2 ranks under
`horovodrun --gloo`, then the checks. One program passes every check; each mutant fails
exactly one (the others pass or are skipped for a stated reason)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys

import hvd_harness as H
import pytest

pytestmark = [pytest.mark.horovod, pytest.mark.timeout(600)]
ROW = re.compile(r"^(PASS|FAIL|SKIP)\s+(converts|ranks finish|same weights|work divided|writes|cold cache|prints|"
                 r"own disks)\s+(.*)$")


def verify(args, tmp_path, timeout=560):
    environ = H.run_env(tmp_path / "reports", tmp_path / "out")
    environ["PYTHONPATH"] = str(H.REPO / "server")     # this checkout's sources, whatever the venv installed
    return subprocess.run([sys.executable, "-m", "horovodize", "verify", *args], check=False, capture_output=True,
                          text=True, env=environ, timeout=timeout, cwd=tmp_path)


def rows(proc) -> dict[str, tuple[str, str]]:
    out = {}
    for line in proc.stdout.splitlines():
        m = ROW.match(line)
        if m:
            out[m.group(2)] = (m.group(1), m.group(3))
    assert len(out) == 8, proc.stdout + proc.stderr
    return out


def only_failure(table, check):
    failed = sorted(name for name, (status, _) in table.items() if status == "FAIL")
    assert failed == [check], table


def copy(program, tmp_path):
    dst = tmp_path / program
    shutil.copy(H.PROGRAMS / program, dst)
    return dst


def test_rehearsal_passes_every_check(hvd_env, horovodize_exe, tmp_path):
    """The converted Keras program on two simulated hosts: every check passes, the cold caches
    and the hosts' own disks included (it writes on rank 0 and reads nothing back); --set shrinks it."""
    py, _ = hvd_env
    proc = verify([str(copy("rh_ok.py", tmp_path)), "--python", str(py), "--hosts", "2", "--set", "EPOCHS=1"], tmp_path)
    table = rows(proc)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert all(status == "PASS" for status, _ in table.values()), table
    assert "on 2 CPU rank(s) of 2 simulated hosts" in proc.stdout, proc.stdout
    assert "single run 8 steps; ranks 4, 4" in table["work divided"][1], table   # EPOCHS=1: 64/8 batches
    assert "1 Keras model(s)" in table["same weights"][1], table
    assert (tmp_path / "rh_ok.py").read_text() == (H.PROGRAMS / "rh_ok.py").read_text()   # --set: a temp copy


def test_two_hosts_fetch_once_each_and_read_back_weights_on_rank0(hvd_env, horovodize_exe, tmp_path):
    """Two simulated hosts, each with its own copy of the working directory and empty caches:
    the converted program fetches its data once on each host (local rank 0), and reads back the
    weights it saved on rank 0 only, the next fit's broadcast giving them to host 1: "own disks"
    passes. (Before read-back on rank 0, host 1 read rh_back.h5 from its own disk after the
    barrier and failed "own disks"; tests/horovod/test_read_back_hosts.py has the forms that still
    need a shared filesystem.)"""
    py, _ = hvd_env
    origin = tmp_path / "origin" / "rh_fetch.npz"
    origin.parent.mkdir()
    subprocess.run([str(py), "-c", "import numpy as np, sys; x = np.random.RandomState(0).rand(64, 4).astype('float32'); "
                    "np.savez(sys.argv[1], x=x, y=x.sum(axis=1, keepdims=True))", str(origin)], check=True, timeout=120)
    script = copy("rh_read_back.py", tmp_path)
    proc = verify([str(script), "--python", str(py), "--hosts", "2", "--", origin.as_uri()], tmp_path)
    table = rows(proc)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert all(status == "PASS" for status, _ in table.values()), table
    assert table["own disks"][1].startswith("2 hosts, each with its own working directory"), table
    per_host = re.search(r"\(hosts 0, 1: (\d+), (\d+)\)", table["cold cache"][1])
    assert per_host and per_host.group(1) == per_host.group(2) != "0", table      # fetched on each host


def test_mutants_each_fail_their_own_check_json(hvd_env, horovodize_exe, tmp_path):
    """A program distributed by hand with four mistakes at once, each caught by its own check
    with its reason and line (one rehearsal: each run costs a minute): every rank writes one
    checkpoint path (writes), trains the whole dataset (work divided), prints (prints) and
    downloads into one empty cache at once (cold cache). The weights stay the same (the
    gradients are still averaged), so "same weights" passes."""
    py, _ = hvd_env
    data = tmp_path / "origin" / "rh_data.npz"
    data.parent.mkdir()
    data.write_bytes(b"not an npz, only bytes to download (long enough to overlap) " * 500_000)
    script = copy("rh_hvd_base.py", tmp_path)
    proc = verify([str(script), "--as-is", "--cold-cache", "--format", "json", "--python", str(py), "--",
                   "shared_checkpoint,undivided,print,download", data.as_uri()], tmp_path)
    checks = {c["check"]: c for c in json.loads(proc.stdout)}
    assert proc.returncode == 1, proc.stdout + proc.stderr
    failed = sorted(name for name, c in checks.items() if c["status"] == "FAIL")
    assert failed == ["cold cache", "prints", "work divided", "writes"], checks
    assert re.search(r"rh_shared\.npy written by ranks 0, 1", checks["writes"]["reason"]), checks
    bad = checks["work divided"]
    assert bad["rank"] == 0 and "made 16 optimizer steps, the single run 16" in bad["reason"], bad
    line = next(i for i, ln in enumerate(script.read_text().splitlines(), 1) if "print(\"trained\"" in ln)
    assert "rank 1 printed 'trained 1'" in checks["prints"]["reason"] and checks["prints"]["line"] == line, checks
    assert "rh_data.npz in the empty cache written by ranks 0, 1" in checks["cold cache"]["reason"], checks
    assert checks["same weights"]["status"] == "PASS" and checks["ranks finish"]["status"] == "PASS", checks
    assert not (tmp_path / ".keras").exists() and not (H.Path.home() / ".keras" / "datasets" / "rh_data.npz").exists()


def _alive(marker: str) -> list[str]:
    found = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/cmdline", "rb") as fh:
                    cmd = fh.read().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if marker in cmd and int(d) != os.getpid():
                found.append(f"{d}: {cmd}")
    return found


def test_per_rank_loop_exit_hangs_until_the_timeout_kills_every_rank(hvd_env, horovodize_exe, tmp_path):
    py, _ = hvd_env
    script = copy("rh_hang.py", tmp_path)
    proc = verify([str(script), "--as-is", "--timeout", "25", "--python", str(py)], tmp_path)
    table = rows(proc)
    only_failure(table, "ranks finish")
    assert "timed out after 25s, every rank's process group killed" in table["ranks finish"][1], table
    assert "left alive" not in table["ranks finish"][1], table
    assert _alive(str(script)) == []


def test_verify_reports_first_error_line_per_rank(hvd_env, horovodize_exe, tmp_path):
    py, _ = hvd_env
    script = tmp_path / "boom.py"
    script.write_text(           # (no TensorFlow import: the error is all this test is about)
        "import sys\n"
        "import os\n"
        "raise ValueError('boom ' + sys.argv[1])\n")
    proc = verify([str(script), "--python", str(py), "--", "on-purpose"], tmp_path)
    table = rows(proc)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    status, reason = table["ranks finish"]
    assert status == "FAIL" and "ValueError: boom on-purpose" in reason and "[boom.py:3]" in reason, table


def test_verify_without_horovod_is_a_clear_error(horovodize_exe, tmp_path):
    """The project venv has no horovod: one line on stderr, exit 2, nothing run."""
    proc = verify([str(H.PROGRAMS / "keras_compile_str.py"), "--python", sys.executable], tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = [ln for ln in proc.stderr.strip().splitlines() if not ln.startswith("horovodize verify: ")]
    assert len(lines) == 1 and "horovod is not importable" in lines[0] and "make hvd-env" in lines[0], proc.stderr
    assert proc.stdout == ""


def test_verify_does_not_import_tensorflow_or_horovod(horovodize_exe):
    code = ("import sys, horovodize.app.verify, horovodize.cli; "
            "bad = [m for m in sys.modules if m.split('.')[0] in ('tensorflow', 'horovod', 'keras')]; "
            "print(bad); sys.exit(1 if bad else 0)")
    proc = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_entry_of_a_project_is_rehearsed_with_its_converted_modules(hvd_env, horovodize_exe, tmp_path):
    """verify on a script that imports its project's modules (main.py + trainer/), on two
    simulated hosts: the program is converted as one, and the distributed run imports the
    converted modules (the data sharded in trainer/inputs.py, the progress on rank 0 in
    trainer/loop.py); no rank reads what another host wrote."""
    project = tmp_path / "package"
    shutil.copytree(H.REPO / "tests" / "projects" / "package", project)
    environ = H.run_env(tmp_path / "reports", tmp_path / "out")      # (hvd_report: the tier's instrumentation)
    environ["PYTHONPATH"] = f"{H.REPO / 'server'}{os.pathsep}{H.PROGRAMS}"
    environ.pop("HVD_REPORT_DIR")                                       # (verify makes its own reports)
    proc = subprocess.run([sys.executable, "-m", "horovodize", "verify", str(project / "main.py"), "--np", "2",
                           "--hosts", "2", "--python", str(hvd_env[0])], check=False, capture_output=True, text=True,
                          env=environ, timeout=560, cwd=tmp_path)
    table = rows(proc)
    assert table["converts"][0] == "PASS" and "trainer/inputs.py" in table["converts"][1], table
    assert [name for name, (status, _) in table.items() if status == "FAIL"] == [], proc.stdout + proc.stderr
    assert table["own disks"][0] == "PASS", table       # on two simulated hosts
