"""Contract point 9 on 2 ranks: a download with no cache runs on local rank 0 only (HVD044).

A program downloads a zip with ``urllib.request.urlretrieve`` from a local HTTP server into
its empty working directory, opens it with ``ZipFile``, extracts it and closes it, then
trains on the extracted arrays. Converted by the CLI (the download, open, extraction and
close in one ``if hvd.local_rank() == 0:`` block, then one allreduce) and run with
``horovodrun -np 2 --gloo`` under the audit hook: both ranks finish with identical weights
and half the single-process steps (ceil), the server saw one request, and no file is
written by both ranks (rank 1 writes nothing in the working directory). With the previous
conversion (local rank 0 first, then the others) rank 1 downloaded the zip again into the
same file after the barrier: two requests, features.zip written by both ranks.
"""

from __future__ import annotations

import functools
import http.server
import math
import subprocess
import threading
import zipfile
from pathlib import Path

import hvd_harness as H
import pytest

pytestmark = [pytest.mark.horovod, pytest.mark.timeout(300)]
SIZE = 2
TIMEOUT = 120
PROGRAM = "da_urlretrieve_zip.py"


class _Server:
    """A local HTTP server for `folder` that counts the GET requests."""

    def __init__(self, folder: Path):
        counter = self
        self.gets = 0

        class Handler(http.server.SimpleHTTPRequestHandler):
            def do_GET(self):                      # noqa: N802 (http.server's name)
                counter.gets += 1
                super().do_GET()

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=str(folder)))
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/{name}"

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def _archive(folder: Path) -> None:
    """features.zip holding features.npz (256 examples), built by the Horovod venv's numpy."""
    py, _ = H.require_hvd_env()
    npz = folder / "features.npz"
    code = ("import sys, numpy as np; rng = np.random.default_rng(0); "
            "x = rng.normal(size=(256, 8)).astype('float32'); "
            "np.savez(sys.argv[1], x=x, y=(x.sum(axis=1) > 0).astype('int32'))")
    subprocess.run([str(py), "-c", code, str(npz)], check=True, timeout=120)
    with zipfile.ZipFile(folder / "features.zip", "w") as z:
        z.write(npz, "features.npz")
    npz.unlink()


def test_urlretrieve_downloaded_once_per_host(hvd_env, horovodize_exe, tmp_path):
    serve = tmp_path / "serve"
    serve.mkdir()
    _archive(serve)
    server = _Server(serve)
    try:
        env = {"HVD_DATA_URL": server.url("features.zip")}
        program = H.PROGRAMS / PROGRAM
        single = H.single_run(program, tmp_path / "single", env)
        converted = H.convert(program, tmp_path / PROGRAM)
        text = converted.read_text()
        assert "if hvd.local_rank() == 0:\n    urllib.request.urlretrieve(URL, file_name)" in text, text
        server.gets = 0
        workdir = tmp_path / "run"
        workdir.mkdir()
        run, written = _run(converted, workdir, env)
        gets = server.gets
    finally:
        server.close()
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
    if gets != 1:
        bad.append(f"{gets} downloads on one host, not 1")
    paths0, paths1 = {p for p, _ in written[0]}, {p for p, _ in written[1]}
    if not {"features.zip", "data/features.npz"} <= paths0:
        bad.append(f"rank 0 did not download and extract: {sorted(paths0)}")
    if paths0 & paths1:
        bad.append(f"written by both ranks: {sorted(paths0 & paths1)}")
    assert not bad, "\n".join(bad) + f"\nconverted program: {converted}\n--- output tail ---\n{run.tail()}"


def _run(script, workdir, env: dict):
    """horovodrun under the audit hook; (run, rank -> {(file written in `workdir`, when)})."""
    run, events = H.audited_run(script, workdir, env, np=SIZE, timeout=TIMEOUT)
    return run, {r: {(p, t) for e, p, t in events.get(r, ()) if e == "write"} for r in range(SIZE)}
