"""The .vsix is self-contained: the server bundled in it starts with a bare interpreter of
every Python it supports (>= 3.10) found on this machine, and refuses an older one with a
one-line reason. Marker ``vscode``: it needs the .vsix from ``make vscode-env``."""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.vscode

ROOT = Path(__file__).resolve().parents[2]
VSIX = ROOT / "vscode-client" / "horovodize-0.1.0.vsix"


def interpreters() -> dict[str, str]:
    """(major.minor) -> an interpreter: this one, plus python3.X on PATH or under pyenv."""
    found = {"%d.%d" % sys.version_info[:2]: sys.executable}
    for minor in range(6, 15):
        name = f"python3.{minor}"
        cands = [shutil.which(name), *sorted(glob.glob(os.path.expanduser(f"~/.pyenv/versions/3.{minor}.*/bin/{name}")))]
        for cand in filter(None, cands):
            if subprocess.run([cand, "-c", ""], capture_output=True, timeout=30).returncode == 0:
                found.setdefault(f"3.{minor}", cand)
                break
    return found


def frame(msg: dict) -> bytes:
    body = json.dumps(msg).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def messages(data: bytes) -> list[dict]:
    out = []
    while data:
        head, _, rest = data.partition(b"\r\n\r\n")
        length = int(next(line.split(b":")[1] for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")))
        out.append(json.loads(rest[:length]))
        data = rest[length:]
    return out


@pytest.fixture(scope="module")
def extension(tmp_path_factory) -> Path:
    if not VSIX.exists():
        pytest.fail(f"{VSIX} missing: run `make vscode-env`", pytrace=False)
    out = tmp_path_factory.mktemp("vsix")
    with zipfile.ZipFile(VSIX) as z:
        names = z.namelist()
        z.extractall(out)
    for module in ("horovodize", "pygls", "lsprotocol", "parso", "attrs", "cattrs", "exceptiongroup"):
        assert f"extension/bundled/libs/{module}/__init__.py" in names, module
    assert "extension/bundled/libs/horovodize/docs/HVD100.md" in names
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]
    return out / "extension"


def test_bundled_server_starts_on_each_supported_python(extension, tmp_path):
    script = extension / "bundled" / "tool" / "server.py"
    supported = {v: p for v, p in interpreters().items() if tuple(map(int, v.split("."))) >= (3, 10)}
    assert supported
    session = (frame({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                      "params": {"processId": None, "capabilities": {}}})
               + frame({"jsonrpc": "2.0", "method": "initialized", "params": {}})
               + frame({"jsonrpc": "2.0", "id": 2, "method": "shutdown", "params": None})
               + frame({"jsonrpc": "2.0", "method": "exit", "params": None}))
    for version, python in supported.items():
        bare = tmp_path / f"venv{version}"      # nothing installed: only what the .vsix brings
        subprocess.run([python, "-m", "venv", "--without-pip", str(bare)], check=True, timeout=120)
        py = bare / "bin" / "python"
        assert subprocess.run([str(py), "-c", "import pygls"], capture_output=True).returncode != 0
        proc = subprocess.run([str(py), str(script)], input=session, capture_output=True, timeout=60, cwd=tmp_path)
        assert proc.returncode == 0, f"Python {version}: {proc.stderr.decode(errors='replace')}"
        replies = {m.get("id"): m for m in messages(proc.stdout)}
        info = replies[1]["result"]["serverInfo"]
        assert info["name"] == "horovodize", version
        assert "codeActionProvider" in replies[1]["result"]["capabilities"], version
        assert replies[2]["result"] is None, version


def test_bundled_server_refuses_old_python(extension):
    old = {v: p for v, p in interpreters().items() if tuple(map(int, v.split("."))) < (3, 10)}
    if not old:
        pytest.skip("no Python < 3.10 on this machine")
    version, python = sorted(old.items())[-1]
    proc = subprocess.run([python, str(extension / "bundled" / "tool" / "server.py")], input=b"",
                          capture_output=True, timeout=60)
    assert proc.returncode == 3
    assert proc.stderr.decode().startswith(f"horovodize: the language server needs Python >= 3.10, not {version} (")
