"""Issue 27, running a notebook on N ranks: a notebook (a tape loop over a small dataset,
with a ``%matplotlib inline`` magic, a shell line, a help line and outputs) is exported by
``horovodize convert NB.ipynb --to-script train.py``, run with ``horovodrun --gloo -np 2``,
and both ranks finish with the same weights (they start from different ones), each on its
share of the data, with the learning rate scaled; only rank 0 prints."""

from __future__ import annotations

import math
import re
import subprocess
from pathlib import Path

import hvd_harness as H
import pytest

pytestmark = [pytest.mark.horovod, pytest.mark.timeout(600)]
NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "tape_loop.ipynb"


def test_notebook_to_script_trains_on_two_ranks(hvd_env, horovodize_exe, tmp_path):
    script = tmp_path / "train.py"
    proc = subprocess.run([str(H.horovodize_cli()), "convert", str(NOTEBOOK), "--to-script", str(script)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert f"horovodrun -np N -H host1:4,host2:4 python {script}" in proc.stderr
    text = script.read_text()
    assert "# %matplotlib inline\n" in text and "# !echo data ready" in text and "# model.summary?" in text
    run = H.horovodrun(script, tmp_path, np=2)
    info = f"exit {run.returncode}\n{text}\n--- output ---\n{run.tail()}"
    assert run.returncode == 0 and not run.timed_out and sorted(run.reports) == [0, 1], info
    checksums = [run.reports[r]["checksum"] for r in (0, 1)]
    assert math.isclose(checksums[0], checksums[1], rel_tol=1e-9, abs_tol=1e-12), f"{checksums}\n{info}"
    for r in (0, 1):
        assert math.isclose(run.reports[r]["lr"], 0.001 * 2, rel_tol=1e-5), info
        assert run.reports[r]["examples"] == 256 // 2, info
    assert re.search(r"step 0 loss", run.stdout.get(0, "")), info
    assert not re.search(r"step 0 loss", run.stdout.get(1, "")), info


def test_unconverted_notebook_script_diverges(hvd_env, tmp_path):
    """The control: the same cells exported without the conversion train two independent
    models (so the equal-weights assertion above can fail)."""
    from horovodize.app import notebook

    nb = notebook.load(NOTEBOOK.read_text(encoding="utf-8"))
    script = tmp_path / "plain.py"
    script.write_text(nb.script({}), encoding="utf-8")
    run = H.horovodrun(script, tmp_path, np=2)
    assert run.returncode == 0 and sorted(run.reports) == [0, 1], run.tail()
    assert not math.isclose(run.reports[0]["checksum"], run.reports[1]["checksum"], rel_tol=1e-9)
