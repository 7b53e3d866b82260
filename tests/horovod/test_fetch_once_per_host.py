"""Contract point 9 on 2 ranks: data fetched once per host (HVD044).

A program fetches a zip with ``tf.keras.utils.get_file(..., extract=True)`` from a
``file://`` origin into an empty Keras cache (HOME is the run's own directory), then trains
on the extracted arrays. Converted by the CLI and run with ``horovodrun -np 2 --gloo``
under the audit hook: both ranks finish, with identical weights, each rank ran half the
single-process steps (HVD043, ceil), the archive is written to the cache by rank 0 only
(rank 1 waits, then finds it there), and rank 1 writes nothing into the cache before rank
0's last write there (since slice 2 it writes nothing there at all: ``extract=hvd.local_rank()
== 0``; test_data_prepared_once_per_host.py holds that). Unconverted, the ranks write the cache at once:
seen, rank 1 downloading the zip while rank 0, finding it there, extracted it.
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
PROGRAM = "da_get_file_extract.py"
CACHE = "home/.keras/"
ARCHIVE_IN_CACHE = "home/.keras/datasets/features.zip"


def _archive(tmp_path) -> str:
    """features.zip holding features.npz (256 examples), built by the Horovod venv's numpy."""
    py, _ = H.require_hvd_env()
    npz = tmp_path / "features.npz"
    code = ("import sys, numpy as np; rng = np.random.default_rng(0); "
            "x = rng.normal(size=(256, 8)).astype('float32'); "
            "np.savez(sys.argv[1], x=x, y=(x.sum(axis=1) > 0).astype('int32'))")
    subprocess.run([str(py), "-c", code, str(npz)], check=True, timeout=120)
    archive = tmp_path / "features.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.write(npz, "features.npz")
    return str(archive)


def _env(workdir, archive: str) -> dict:
    return H.empty_home(workdir, {"HVD_DATA_ARCHIVE": archive})


def test_get_file_extract_fetched_once_per_host(hvd_env, horovodize_exe, tmp_path):
    archive = _archive(tmp_path)
    program = H.PROGRAMS / PROGRAM
    single = H.single_run(program, tmp_path / "single", _env(tmp_path / "single", archive), TIMEOUT)

    converted = H.convert(program, tmp_path / PROGRAM)
    text = converted.read_text()
    assert 'name="data_barrier"' in text and "int(math.ceil(4 / hvd.size()))" in text
    workdir = tmp_path / "run"
    workdir.mkdir()
    run, events = H.audited_run(converted, workdir, _env(workdir, archive), np=SIZE, timeout=TIMEOUT)
    written = {r: {(path, t) for e, path, t in events[r] if e == "write"} for r in range(SIZE)}
    bad = []
    if run.timed_out or run.returncode != 0:
        bad.append(f"exit {run.returncode}{' (timed out)' if run.timed_out else ''}")
    if sorted(run.reports) != list(range(SIZE)):
        bad.append(f"reports from ranks {sorted(run.reports)}")
    else:
        sums = [run.reports[r]["checksum"] for r in range(SIZE)]
        if not math.isclose(sums[0], sums[1], rel_tol=1e-9):
            bad.append(f"weights differ: {sums}")
        its = [run.reports[r]["iterations"] for r in range(SIZE)]
        if its != [math.ceil(single["iterations"] / SIZE)] * SIZE:
            bad.append(f"steps per rank {its}, single process {single['iterations']}")
    if ARCHIVE_IN_CACHE not in {p for p, _ in written[0]} or ARCHIVE_IN_CACHE in {p for p, _ in written[1]}:
        bad.append(f"the archive is not fetched by rank 0 alone: {written}")
    # whatever rank 1 writes into the cache, only once rank 0 is done
    cache0 = [t for p, t in written[0] if p.startswith(CACHE)]
    cache1 = [t for p, t in written[1] if p.startswith(CACHE)]
    if not cache0 or cache1 and min(cache1) <= max(cache0):
        bad.append(f"the ranks wrote the cache at the same time: {sorted(written[0])} / {sorted(written[1])}")
    assert not bad, "\n".join(bad) + f"\nconverted program: {converted}\n--- output tail ---\n{run.tail()}"
