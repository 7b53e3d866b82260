"""Real-editor end-to-end test: the packaged extension in code-server, driven in headless Chromium.

Everything it needs is prepared by ``make vscode-env`` (scripts/vscode_env.sh): code-server
4.100.3 in .cache/code-server, the .vsix in vscode-client/, playwright-core in
tests/vscode/node_modules, and Debian's chromium. Only the .vsix is installed: the language
server is the one bundled in it, run by a "user" interpreter that has neither horovodize nor
pygls (a bare venv whose package metadata says TensorFlow 2.16 + Keras 3, so the stack doctor
has something to report). Without the Python extension the client falls back to the
``python3`` on code-server's PATH (that venv first); with it (a local build of an extension
with the id ms-python.python that answers the Python extension's public environments API:
the real one is not on the npm registry) it uses the interpreter that API selects.

The browser part lives in e2e.mjs; this file builds the workspace, computes the expected
conversions with ``horovodize convert``, runs code-server in its own process group, runs the
script, and always stops code-server, the script, Chromium and every child they started.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

pytestmark = pytest.mark.vscode

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
CODE_SERVER = ROOT / ".cache" / "code-server" / "node_modules" / ".bin" / "code-server"
VSIX = ROOT / "vscode-client" / "horovodize-0.1.0.vsix"
PLAYWRIGHT = HERE / "node_modules" / "playwright-core"
SCRIPT = HERE / "e2e.mjs"
CHROMIUM = Path("/usr/bin/chromium")
# Screenshots of each step go to an ignored folder; HOROVODIZE_UPDATE_SCREENSHOTS=1 refreshes
# the documented ones in docs/images (used by README.md and docs/vscode.md) on purpose.
IMAGES = Path(os.environ.get("HOROVODIZE_E2E_SCREENSHOTS")
              or (ROOT / "docs" / "images" if os.environ.get("HOROVODIZE_UPDATE_SCREENSHOTS") == "1"
                  else ROOT / ".cache" / "vscode-e2e" / "screenshots"))
VSCE = ROOT / "vscode-client" / "node_modules" / ".bin" / "vsce"

RESTRICTION = "HVD-R4"  # a print with a side effect (a walrus) in TRAIN_PY
NOTEBOOK = ROOT / "tests" / "notebooks" / "tape_loop.ipynb"   # magics, markdown and raw cells, outputs
NOTEBOOK_TIMEOUT = 180     # seconds for the notebook session (its own waits fail sooner, with a screenshot)
SCRIPT_TIMEOUT = int(os.environ.get("HOROVODIZE_E2E_TIMEOUT", "420"))  # seconds for the browser session

# A single-GPU GradientTape program with a restriction violation: a print whose argument
# updates a running total (HVD-R4), so hovering it must show the restriction's explanation.
# R4 blocks only the rank-0 guard of that print, so the conversion still distributes the loop.
TRAIN_PY = '''\
"""Single-GPU training with a custom GradientTape loop."""
import tensorflow as tf

dataset = tf.data.Dataset.from_tensor_slices(
    (tf.random.normal([256, 28, 28]), tf.random.uniform([256], maxval=10, dtype=tf.int64))
).batch(32)

model = tf.keras.Sequential([
    tf.keras.layers.Flatten(input_shape=(28, 28)),
    tf.keras.layers.Dense(64, activation="relu"),
    tf.keras.layers.Dense(10),
])
loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
optimizer = tf.keras.optimizers.Adam(learning_rate=0.001)
total = 0.0


@tf.function
def train_step(images, labels):
    with tf.GradientTape() as tape:
        logits = model(images, training=True)
        loss = loss_fn(labels, logits)
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss


for step, (images, labels) in enumerate(dataset.take(20)):
    loss = train_step(images, labels)
    print("step", step, "mean loss", (total := total + float(loss)) / (step + 1))
'''

KERAS_TRAIN_PY = '''\
"""Single-GPU training with Keras compile/fit."""
import tensorflow as tf

(x_train, y_train) = (tf.random.normal([512, 28, 28]), tf.random.uniform([512], maxval=10, dtype=tf.int64))

model = tf.keras.Sequential([
    tf.keras.layers.Flatten(input_shape=(28, 28)),
    tf.keras.layers.Dense(128, activation="relu"),
    tf.keras.layers.Dense(10),
])
optimizer = tf.keras.optimizers.SGD(learning_rate=0.01)
model.compile(
    optimizer=optimizer,
    loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    metrics=["accuracy"],
)
model.fit(x_train, y_train, batch_size=64, epochs=2, verbose=1)
model.save_weights("weights.h5")
'''

USER_SETTINGS = {
    "workbench.startupEditor": "none",
    "workbench.tips.enabled": False,
    "workbench.enableExperiments": False,
    "security.workspace.trust.enabled": False,
    "extensions.ignoreRecommendations": True,
    "extensions.autoCheckUpdates": False,
    "extensions.autoUpdate": False,
    "telemetry.telemetryLevel": "off",
    "update.mode": "none",
    "chat.disableAIFeatures": True,
    "files.autoSave": "off",
    "editor.formatOnSave": False,
    "editor.hover.delay": 300,
    "editor.minimap.enabled": False,
    "git.enabled": False,
    "window.commandCenter": False,
}


# ------------------------------------------------------------------ process helpers
def _children() -> dict[int, list[int]]:
    kids: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                stat = fh.read().decode(errors="replace")
        except OSError:
            continue
        # pid (comm) state ppid ...: comm may contain spaces and parentheses.
        ppid = int(stat[stat.rindex(")") + 2:].split()[1])
        kids.setdefault(ppid, []).append(int(entry))
    return kids


def descendants(pid: int) -> list[int]:
    kids, out, todo = _children(), [], [pid]
    while todo:
        for child in kids.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().split(b") ")[-1][:1] != b"Z"
    except OSError:
        return False


def kill_tree(proc: subprocess.Popen, grace: float = 5.0) -> None:
    """Stop ``proc`` (started with start_new_session=True), its process group and every
    descendant, including those that moved to their own session (Chromium, terminals)."""
    victims = [proc.pid, *descendants(proc.pid)]
    # start_new_session=True made proc the leader of group proc.pid: that group also holds
    # children orphaned by an early exit of proc (they are no longer its descendants).
    groups = {proc.pid}
    for pid in victims:
        try:
            groups.add(os.getpgid(pid))
        except ProcessLookupError:
            pass
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pgid in groups:
            if pgid == os.getpgid(0):
                continue  # never our own group
            try:
                os.killpg(pgid, sig)
            except (ProcessLookupError, PermissionError):
                pass
        for pid in victims:
            try:
                os.kill(pid, sig)
            except (ProcessLookupError, PermissionError):
                pass
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline:
            proc.poll()
            if not any(_alive(p) for p in victims):
                break
            time.sleep(0.1)
        else:
            continue
        break
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        pass


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def tail(path: Path, lines: int = 60) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


# ------------------------------------------------------------------ fixtures
def require_env() -> dict[str, Path]:
    """The prepared environment, or a test failure (not a skip) naming `make vscode-env`."""
    missing = [str(p) for p in (CODE_SERVER, VSIX, PLAYWRIGHT, CHROMIUM) if not p.exists()]
    if shutil.which("node") is None:
        missing.append("node")
    if missing:
        pytest.fail(
            "the real-editor test environment is missing (" + ", ".join(missing) + "): run `make vscode-env`",
            pytrace=False,
        )
    horovodize = Path(sys.executable).parent / "horovodize"
    if not horovodize.exists():
        pytest.fail(f"{horovodize} not found: run the suite from the project venv (`make venv`)", pytrace=False)
    return {"code_server": CODE_SERVER, "vsix": VSIX, "horovodize": horovodize}


@pytest.fixture(scope="module")
def vscode_env() -> dict[str, Path]:
    return require_env()


def user_python(root: Path, dists: dict[str, str]) -> Path:
    """A bare venv (no pip, no horovodize, no pygls) whose metadata lists ``dists``."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True, timeout=120)
    python = root / "bin" / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                             capture_output=True, text=True, check=True).stdout.strip()
    for name, version in dists.items():
        info = Path(purelib) / f"{name.replace('-', '_')}-{version}.dist-info"
        info.mkdir(parents=True)
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    for module in ("horovodize", "pygls", "lsprotocol", "parso"):
        probe = subprocess.run([str(python), "-c", f"import {module}"], capture_output=True, timeout=60)
        assert probe.returncode != 0, f"{python} can import {module}: the test needs an interpreter without it"
    return python


@pytest.fixture(scope="module")
def workspace(tmp_path_factory, vscode_env) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("vscode-e2e")
    ws = base / "ws"
    (ws / ".vscode").mkdir(parents=True)
    (ws / "train.py").write_text(TRAIN_PY, encoding="utf-8")
    (ws / "keras_train.py").write_text(KERAS_TRAIN_PY, encoding="utf-8")
    (ws / ".vscode" / "settings.json").write_text("{}\n", encoding="utf-8")   # no horovodize.interpreter
    shutil.copyfile(NOTEBOOK, ws / "tape.ipynb")
    expected = base / "expected"
    expected.mkdir()
    for name in ("train.py", "keras_train.py"):
        out = subprocess.run([str(vscode_env["horovodize"]), "convert", name], cwd=ws,
                             capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, f"horovodize convert {name} failed:\n{out.stderr}"
        assert out.stdout != (ws / name).read_text(), f"horovodize convert {name} changed nothing"
        (expected / name).write_text(out.stdout, encoding="utf-8", newline="")
    check = subprocess.run([str(vscode_env["horovodize"]), "check", "train.py"], cwd=ws,
                           capture_output=True, text=True, timeout=120)
    for code in ("HVD100", RESTRICTION):
        assert f" {code} " in check.stdout, f"`horovodize check train.py` does not report {code}:\n{check.stdout}"
    explain = subprocess.run([str(vscode_env["horovodize"]), "explain", RESTRICTION],
                             capture_output=True, text=True, timeout=60)
    assert explain.returncode == 0, explain.stderr
    # The hover renders the explanation's markdown: look for its title line as plain text.
    title = next(line for line in explain.stdout.splitlines() if line.strip())
    hover_text = title.lstrip("#").strip().replace("`", "").replace("*", "")
    # The interpreters the editor may pick: python3 on PATH (no Python extension) and the one
    # the Python extension selects. Neither can import horovodize or pygls.
    path_py = user_python(base / "path-venv", {"tensorflow": "2.16.1", "keras": "3.3.3"})
    selected_py = user_python(base / "selected-venv", {"tensorflow-cpu": "2.15.1", "keras": "2.15.0"})
    return {"base": base, "ws": ws, "expected": expected, "hover_text": hover_text,
            "path_python": path_py, "selected_python": selected_py}


PYTHON_STUB_JS = """\
// Answers the Python extension's public environments API (@vscode/python-extension) the
// way ms-python.python does, with one selected environment.
const vscode = require('vscode');
const ENV = %(env)s;
const EXE = %(exe)s;
exports.activate = function () {
  const never = () => ({ dispose() {} });
  return {
    environments: {
      getActiveEnvironmentPath: () => ({ id: ENV, path: ENV }),
      resolveEnvironment: async () => ({ id: ENV, path: ENV, executable: { uri: vscode.Uri.file(EXE) } }),
      onDidChangeActiveEnvironmentPath: never,
    },
  };
};
"""


def build_python_extension(out: Path, env_dir: Path, exe: Path) -> Path:
    """A .vsix with the id ms-python.python whose API selects ``exe`` (in ``env_dir``)."""
    src = out / "ms-python-stub"
    src.mkdir(parents=True)
    (src / "package.json").write_text(json.dumps({
        "name": "python", "publisher": "ms-python", "displayName": "Python (API stand-in)", "version": "2025.0.0",
        "license": "MIT", "engines": {"vscode": "^1.100.0"}, "main": "./extension.js",
        "activationEvents": ["onStartupFinished"],
    }, indent=2))
    (src / "extension.js").write_text(PYTHON_STUB_JS % {"env": json.dumps(str(env_dir)), "exe": json.dumps(str(exe))})
    (src / "LICENSE").write_text("MIT\n")
    (src / "README.md").write_text("Stand-in for the Python extension's environments API (tests only).\n")
    vsix = out / "ms-python-stub.vsix"
    proc = subprocess.run([str(VSCE), "package", "--no-dependencies", "--allow-missing-repository", "-o", str(vsix)],
                          cwd=src, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0 and vsix.exists(), f"vsce package failed:\n{proc.stdout}\n{proc.stderr}"
    return vsix


def start_code_server(request, vscode_env, workspace, name: str, extra_vsix: list[Path]) -> dict:
    base = workspace["base"] / name
    ext_dir, data_dir = base / "extensions", base / "user-data"
    (data_dir / "User").mkdir(parents=True)
    (data_dir / "User" / "settings.json").write_text(json.dumps(USER_SETTINGS, indent=2) + "\n")
    env = dict(os.environ, XDG_CONFIG_HOME=str(base / "xdg-config"), XDG_DATA_HOME=str(base / "xdg-data"))
    for var in ("VSCODE_IPC_HOOK_CLI", "PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME"):
        env.pop(var, None)
    # Without the Python extension the client runs `python3`: the first on PATH is the user venv's.
    # VSCODE_CLI=1 says this environment is already the user's, as when `code` is started from a
    # terminal, so the server does not replace PATH with the one of a login shell (whose rc files
    # may put another python3 first).
    env["PATH"] = f"{workspace['path_python'].parent}{os.pathsep}{env.get('PATH', '')}"
    env["VSCODE_CLI"] = "1"
    for vsix in [vscode_env["vsix"], *extra_vsix]:   # the .vsix, and nothing else of the project
        install = subprocess.run(
            [str(vscode_env["code_server"]), "--install-extension", str(vsix),
             "--extensions-dir", str(ext_dir), "--user-data-dir", str(data_dir)],
            capture_output=True, text=True, timeout=180, env=env, start_new_session=True)
        assert install.returncode == 0 and "successfully installed" in install.stdout, (
            f"installing {vsix.name} failed:\n{install.stdout}\n{install.stderr}")

    port = free_port()
    config = base / "code-server.yaml"
    config.write_text(f"bind-addr: 127.0.0.1:{port}\nauth: none\ncert: false\n")
    log_path = base / "code-server.log"
    log = open(log_path, "wb")
    proc = subprocess.Popen(
        [str(vscode_env["code_server"]), "--config", str(config), "--bind-addr", f"127.0.0.1:{port}",
         "--auth", "none", "--disable-telemetry", "--disable-update-check", "--disable-workspace-trust",
         "--disable-getting-started-override", "--ignore-last-opened",
         "--extensions-dir", str(ext_dir), "--user-data-dir", str(data_dir), str(workspace["ws"])],
        stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
        start_new_session=True)  # its own process group: the finalizer kills all of it

    def stop():
        kill_tree(proc)
        log.close()

    request.addfinalizer(stop)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 90
    while True:
        if proc.poll() is not None:
            pytest.fail(f"code-server exited with {proc.returncode}:\n{tail(log_path)}", pytrace=False)
        try:
            with urllib.request.urlopen(url + "/healthz", timeout=2) as r:
                if r.status == 200:
                    break
        except (urllib.error.URLError, OSError):
            pass
        if time.monotonic() > deadline:
            pytest.fail(f"code-server did not answer on {url} within 90 s:\n{tail(log_path)}", pytrace=False)
        time.sleep(0.3)
    return {"url": url, "proc": proc, "log": log_path, "data_dir": data_dir}


@pytest.fixture(scope="module")
def code_server(request, vscode_env, workspace):
    return start_code_server(request, vscode_env, workspace, "no-python-extension", [])


# ------------------------------------------------------------------ the tests
def run_script(tmp_path, code_server, config: dict, timeout: int | None = None) -> str:
    """Run e2e.mjs with ``config``; its output, or a test failure with the logs."""
    IMAGES.mkdir(parents=True, exist_ok=True)
    config = dict(config, url=code_server["url"], chromium=str(CHROMIUM), screenshots=str(IMAGES),
                  failureScreenshot=str(tmp_path / "failure.png"),
                  browserProfile=str(tmp_path / "chromium-profile"))
    config_path = tmp_path / "e2e.json"
    config_path.write_text(json.dumps(config, indent=2))
    proc = subprocess.Popen(["node", str(SCRIPT), str(config_path)], cwd=HERE, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, text=True,
                            start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout or SCRIPT_TIMEOUT)
    except subprocess.TimeoutExpired:
        kill_tree(proc)
        out, _ = proc.communicate()
        out += f"\n(e2e.mjs killed after {timeout or SCRIPT_TIMEOUT} s)"
    finally:
        kill_tree(proc)  # Chromium runs in its own process group: make sure it is gone

    if proc.returncode != 0:
        server_logs = sorted(code_server["data_dir"].glob("logs/**/*Horovodize*.log"))
        extra = "\n".join(f"--- {p.name}\n{tail(p, 40)}" for p in server_logs)
        pytest.fail(
            f"e2e.mjs failed (exit {proc.returncode}); screenshot at {config['failureScreenshot']}\n"
            f"{out}\n--- code-server log\n{tail(code_server['log'], 40)}\n{extra}",
            pytrace=False,
        )
    print(out)
    return out


def doctor_expectations(python: Path, source: str, verdict: str, lines: list[str]) -> dict:
    """What the stack item and the report document must show for ``python`` (report lines
    start with these)."""
    return {"status": f"Horovod stack: {verdict}",
            "report": [f"Interpreter: {python.name if source == 'default' else python} ({source})",
                       f"horovodize doctor: {python} (Python ", *lines]}


def test_extension_in_code_server(request, tmp_path):
    """Only the .vsix, no Python extension: diagnostics, hover, quick fix, command and the
    stack doctor for the `python3` on PATH (TensorFlow 2.16 + Keras 3 without tf_keras)."""
    require_env()  # checked in the test body so that a missing environment is a failure
    workspace = request.getfixturevalue("workspace")
    code_server = request.getfixturevalue("code_server")
    ws, expected = workspace["ws"], workspace["expected"]
    path_py = workspace["path_python"].parent / "python3"
    run_script(tmp_path, code_server, {
        "scenario": "full",
        "workspace": str(ws),
        "restriction": {"code": RESTRICTION, "hoverText": workspace["hover_text"]},
        "files": {
            name: {"path": str(ws / name), "expected": str(expected / name)}
            for name in ("train.py", "keras_train.py")
        },
        "doctor": dict(doctor_expectations(path_py, "default", "not ready", [
            "  TensorFlow           2.16.1 (tensorflow)",
            "Verdict: not ready: TensorFlow 2.16.1 needs tf_keras for Horovod (+1 more)",
            f"  fix: {path_py} -m pip install 'tf_keras~=2.16.0'",
            "       export TF_USE_LEGACY_KERAS=1",
        ]), screenshot="vscode-doctor.png"),
    })
    # The saved files are exactly what `horovodize convert` prints.
    for name in ("train.py", "keras_train.py"):
        assert (ws / name).read_text(encoding="utf-8") == (expected / name).read_text(encoding="utf-8"), name


def test_python_extension_interpreter(request, tmp_path):
    """With an extension ms-python.python installed, the client starts the bundled server
    with the interpreter its environments API selects (resolved from an environment folder
    to the executable), and the doctor reports on that interpreter, not on `python3`."""
    require_env()
    workspace = request.getfixturevalue("workspace")
    vscode_env = request.getfixturevalue("vscode_env")
    selected = workspace["selected_python"]
    stub = build_python_extension(tmp_path / "stub", selected.parent.parent, selected)
    code_server = start_code_server(request, vscode_env, workspace, "python-extension", [stub])
    run_script(tmp_path, code_server, {
        "scenario": "doctor",
        "workspace": str(workspace["ws"]),
        "doctor": doctor_expectations(selected, "Python extension", "not ready", [
            "  TensorFlow           2.15.1 (tensorflow-cpu)",
            "Verdict: not ready: Horovod is not installed",
            f"  fix: HOROVOD_WITH_TENSORFLOW=1 HOROVOD_WITH_GLOO=1 {selected} -m pip install --no-cache-dir horovod==0.28.1",
        ]),
    })


def code_cells(text: str) -> list[str]:
    nb = json.loads(text)
    return ["".join(c["source"]) if isinstance(c["source"], list) else c["source"]
            for c in nb["cells"] if c["cell_type"] == "code"]


def test_notebook_in_code_server(request, tmp_path):
    """A .ipynb in code-server's built-in notebook editor (no kernel): the loop's HVD100 in
    the Problems panel at its line and column in its cell, then the whole-notebook
    conversion from the command palette; the saved code cells are `horovodize convert`'s."""
    require_env()
    workspace = request.getfixturevalue("workspace")
    code_server = request.getfixturevalue("code_server")
    vscode_env = request.getfixturevalue("vscode_env")
    ws = workspace["ws"]
    ipynb = ws / "tape.ipynb"
    shutil.copyfile(NOTEBOOK, ipynb)          # (fresh: another test may have run on the workspace)
    check = subprocess.run([str(vscode_env["horovodize"]), "check", "--format", "json", "tape.ipynb"], cwd=ws,
                           capture_output=True, text=True, timeout=120)
    hvd100 = next(f for f in json.loads(check.stdout) if f["code"] == "HVD100")
    converted = subprocess.run([str(vscode_env["horovodize"]), "convert", "tape.ipynb"], cwd=ws,
                               capture_output=True, text=True, timeout=120)
    assert converted.returncode == 0, converted.stderr
    expected = code_cells(converted.stdout)
    assert expected != code_cells(ipynb.read_text(encoding="utf-8"))
    run_script(tmp_path, code_server, {
        "scenario": "notebook",
        "workspace": str(ws),
        "notebook": {"name": "tape.ipynb", "hvd100": {"line": hvd100["line"], "column": hvd100["column"]}},
    }, timeout=NOTEBOOK_TIMEOUT)
    saved = code_cells(ipynb.read_text(encoding="utf-8"))
    assert saved == expected


PROJECT = ROOT / "tests" / "projects" / "library_class"     # run.py + agent/core.py


def test_project_in_code_server(request, tmp_path):
    """A program of two files: "Horovodize: Make project Horovod-distributed" on its entry
    (run.py) edits both files in one workspace edit (agent/core.py is not open), and after
    "File: Save All" both are what `horovodize convert DIR --write` writes."""
    require_env()
    workspace = request.getfixturevalue("workspace")
    vscode_env = request.getfixturevalue("vscode_env")
    # a code-server of its own: the earlier scenarios leave tabs and editors open in theirs
    code_server = start_code_server(request, vscode_env, workspace, "project", [])
    ws = workspace["ws"]
    project = ws / "agentproj"
    shutil.rmtree(project, ignore_errors=True)
    shutil.copytree(PROJECT, project)
    expected = workspace["base"] / "expected-project"
    shutil.rmtree(expected, ignore_errors=True)
    shutil.copytree(PROJECT, expected)
    out = subprocess.run([str(vscode_env["horovodize"]), "convert", str(expected), "--write"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    names = ["run.py", "agent/core.py"]
    assert all((expected / n).read_text() != (project / n).read_text() for n in names)
    run_script(tmp_path, code_server, {
        "scenario": "project",
        "workspace": str(ws),
        "project": {"entry": "run.py"},
        "files": {n: {"path": str(project / n), "expected": str(expected / n)} for n in names},
    })
    for n in names:
        assert (project / n).read_text(encoding="utf-8") == (expected / n).read_text(encoding="utf-8"), n
