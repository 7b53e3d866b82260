"""Contract point 9 on 2 ranks: the data folder prepared once per host (HVD044).

A program fetches a zip of one folder per class with ``tf.keras.utils.get_file(...,
extract=True)`` from a ``file://`` origin into an empty Keras cache (HOME is the run's own
directory), removes a class folder (``shutil.rmtree``) and stray files (``os.remove``),
then trains on what is left. Converted by the CLI and run with ``horovodrun -np 2 --gloo``
(local ranks 0 and 1 of one host) under the audit hook: both ranks finish with identical
weights, see the same classes and examples as one process, ran half its steps (ceil), and
no path is written or removed by both ranks: rank 1 writes nothing into the cache at all
(Keras 2.15's get_file extracts again on every call, so rank 1 must not extract; the
cleaning runs on local rank 0 before rank 1 reads the folder). With the first slice's
conversion, rank 1 extracted the archive again (the unsup folder back) while rank 0 cleaned.
"""

from __future__ import annotations

import math
import subprocess
import zipfile

import hvd_harness as H
import pytest

pytestmark = [pytest.mark.horovod, pytest.mark.timeout(600)]
SIZE = 2
TIMEOUT = 180
PROGRAM = "da_get_file_clean.py"
CACHE = "home/.keras/"
ARCHIVE_IN_CACHE = "home/.keras/datasets/classes.zip"


def _archive(tmp_path) -> str:
    """classes.zip: classes/{a,b,unsup}/NN.npy (8 features each, 40 per folder) and a stray
    classes/a/notes.txt, the arrays built by the Horovod venv's numpy."""
    py, _ = H.require_hvd_env()
    tree = tmp_path / "classes"
    code = ("import sys, os, numpy as np; rng = np.random.default_rng(0)\n"
            "for k, c in enumerate(('a', 'b', 'unsup')):\n"
            "    os.makedirs(os.path.join(sys.argv[1], c))\n"
            "    for i in range(40):\n"
            "        np.save(os.path.join(sys.argv[1], c, '%02d.npy' % i), rng.normal(k, 1.0, size=8))\n")
    subprocess.run([str(py), "-c", code, str(tree)], check=True, timeout=120)
    (tree / "a" / "notes.txt").write_text("not an example\n")
    archive = tmp_path / "classes.zip"
    with zipfile.ZipFile(archive, "w") as z:
        for f in sorted(tree.rglob("*")):
            z.write(f, str(f.relative_to(tmp_path)))
    return str(archive)


def _env(workdir, archive: str) -> dict:
    return H.empty_home(workdir, {"HVD_DATA_ARCHIVE": archive})


def test_data_folder_extracted_and_cleaned_once_per_host(hvd_env, horovodize_exe, tmp_path):
    archive = _archive(tmp_path)
    program = H.PROGRAMS / PROGRAM
    single = H.single_run(program, tmp_path / "single", _env(tmp_path / "single", archive), TIMEOUT)
    assert (single["classes"], single["examples"]) == (2, 80)

    converted = H.convert(program, tmp_path / PROGRAM)
    text = converted.read_text()
    assert "extract=hvd.local_rank() == 0" in text and text.count('name="data_barrier"') == 2
    workdir = tmp_path / "run"
    workdir.mkdir()
    run, events = H.audited_run(converted, workdir, _env(workdir, archive), np=SIZE, timeout=TIMEOUT)
    bad = []
    if run.timed_out or run.returncode != 0:
        bad.append(f"exit {run.returncode}{' (timed out)' if run.timed_out else ''}")
    if sorted(run.reports) != list(range(SIZE)):
        bad.append(f"reports from ranks {sorted(run.reports)}")
    else:
        sums = [run.reports[r]["checksum"] for r in range(SIZE)]
        if not math.isclose(sums[0], sums[1], rel_tol=1e-9):
            bad.append(f"weights differ: {sums}")
        for r in range(SIZE):
            seen = (run.reports[r]["classes"], run.reports[r]["examples"])
            if seen != (single["classes"], single["examples"]):
                bad.append(f"rank {r} trained on {seen} (classes, examples), one process on "
                           f"{(single['classes'], single['examples'])}")
        its = [run.reports[r]["iterations"] for r in range(SIZE)]
        if its != [math.ceil(single["iterations"] / SIZE)] * SIZE:
            bad.append(f"steps per rank {its}, single process {single['iterations']}")
    paths = {r: {p for _e, p, _t in events[r]} for r in range(SIZE)}
    if ARCHIVE_IN_CACHE not in paths[0]:
        bad.append("rank 0 did not fetch the archive")
    both = paths[0] & paths[1]
    if both:
        bad.append(f"written or removed by both ranks: {sorted(both)}")
    removed = {r: sorted(p for e, p, _t in events[r] if e == "remove") for r in range(SIZE)}
    if not any(p.endswith("classes/unsup") for p in removed[0]) or \
            not any(p.endswith("notes.txt") for p in removed[0]) or removed[1]:
        bad.append(f"the cleaning is not rank 0's alone: {removed}")
    in_cache1 = sorted(p for p in paths[1] if p.startswith(CACHE))
    if in_cache1:
        bad.append(f"rank 1 wrote into the cache: {in_cache1[:5]}")
    assert not bad, "\n".join(bad) + f"\nconverted program: {converted}\n--- output tail ---\n{run.tail()}"
