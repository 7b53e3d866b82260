"""A quick run of the protocol benchmark (`bench/lsp_latency.py`, what `make bench` runs in
full): a 10,000-line program opened in `horovodize serve` and in ruff's server over stdio,
a few one-character edits each. No timing is asserted (a shared machine is too noisy for
that); the table and the ratios to ruff are shown in the suite's warnings summary, so a
regression is seen in CI's output. What is asserted: both servers answered every edit, and
after the edits the server's incremental diagnostics equal a fresh analysis of the text."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

BENCH = Path(__file__).parent.parent / "bench" / "lsp_latency.py"


class BenchFigures(UserWarning):
    """The benchmark's table, for the warnings summary (not a failure)."""


@pytest.mark.timeout(600)
def test_protocol_benchmark_smoke_at_10k_lines():
    ruff = shutil.which("ruff", path=str(Path(sys.executable).parent))
    assert ruff is not None, "ruff is not installed: pip install 'horovodize[bench]'"
    run = subprocess.run([sys.executable, str(BENCH), "--sizes", "10000", "--edits", "8", "--no-reference", "--pure"],
                         capture_output=True, text=True, timeout=540, env=dict(os.environ))
    assert run.returncode == 0, run.stderr[-3000:]
    assert "MISMATCH" not in run.stderr, run.stderr[-3000:]
    rows = [line for line in run.stdout.splitlines() if line.split()[:1] == ["10008"]]
    assert [line.split()[1] for line in rows] == ["horovodize", "pure", "ruff"], run.stdout
    table = run.stdout.split("\n(open:")[0].strip()
    warnings.warn(BenchFigures("protocol benchmark, 10k lines, 8 edits:\n" + table))


@pytest.mark.timeout(600)
def test_project_benchmark_smoke():
    """`--project`: keystrokes in a module of a program of two modules; every edit answered,
    the program's findings published for each, and the module's last ones those of the
    program's analysis (no MISMATCH)."""
    run = subprocess.run([sys.executable, str(BENCH), "--project", "--sizes", "1000", "--edits", "4", "--no-ruff"], check=False,
                         capture_output=True, text=True, timeout=540, env=dict(os.environ))
    assert run.returncode == 0, run.stderr[-3000:]
    assert "MISMATCH" not in run.stderr, run.stderr[-3000:]
    (row,) = [line.split() for line in run.stdout.splitlines() if line.split()[1:2] == ["horovodize"]]
    assert row[7] != "-", run.stdout           # (the program's latency was measured)
    warnings.warn(BenchFigures("protocol benchmark, a 1k-line module of a project, 3 x 4 edits:\n"
                               + run.stdout.split("\n(a module")[0].strip()))
