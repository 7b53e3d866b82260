"""``workspace/executeCommand horovodize.convertProject``: the program a file belongs to (an
entry script and the project modules it imports) converted as one ``workspace/applyEdit``:
versioned ``documentChanges`` for the open buffers, unversioned for files only on disk, the
buffers read as the editor holds them, and the result the CLI's ``convert DIR --write``."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from lsp_helpers import HOROVODIZE, diagnostics_for
from lsprotocol import types

PROJECTS = Path(__file__).resolve().parent.parent / "projects"


def _open(client, path: Path, version: int = 1) -> str:
    uri = path.as_uri()
    text = path.read_text(encoding="utf-8")
    client.buffers[uri] = text
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id="python", version=version, text=text)))
    return uri


async def _convert_project(client, uri):
    return await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="horovodize.convertProject", arguments=[uri]))


async def test_command_is_advertised(client):
    assert "horovodize.convertProject" in client.init_result.capabilities.execute_command_provider.commands


async def test_project_converted_as_one_workspace_edit(client, tmp_path):
    project = tmp_path / "factories"
    shutil.copytree(PROJECTS / "factories", project)
    expected = tmp_path / "expected"
    shutil.copytree(PROJECTS / "factories", expected)
    proc = subprocess.run([str(HOROVODIZE), "convert", str(expected), "--write"], capture_output=True, timeout=120)
    assert proc.returncode == 0, proc.stderr.decode()

    train = _open(client, project / "train.py", version=3)
    model = _open(client, project / "model.py", version=7)
    data = (project / "data.py").as_uri()                  # not open: the edit names no version
    client.buffers[data] = (project / "data.py").read_text(encoding="utf-8")
    await diagnostics_for(client, train, version=3)

    await _convert_project(client, model)                   # (from a module: its program's entry is found)
    assert len(client.applied) == 1
    changes = client.applied[0].edit.document_changes
    versions = {c.text_document.uri: c.text_document.version for c in changes}
    assert versions == {train: 3, model: 7, data: None}
    for name, uri in (("train.py", train), ("model.py", model), ("data.py", data)):
        assert client.buffers[uri] == (expected / name).read_text(encoding="utf-8"), name
    assert all(len(c.edits) < 10 for c in changes)          # minimal edits, not the files reprinted


async def test_open_buffer_is_read_as_the_editor_holds_it(client, tmp_path):
    project = tmp_path / "factories"
    shutil.copytree(PROJECTS / "factories", project)
    train = _open(client, project / "train.py")
    model = project / "model.py"
    uri = model.as_uri()
    edited = model.read_text(encoding="utf-8").replace("lr=0.01", "lr=0.05")      # unsaved in the editor
    client.buffers[uri] = edited
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id="python", version=2, text=edited)))
    client.buffers[(project / "data.py").as_uri()] = (project / "data.py").read_text(encoding="utf-8")
    await _convert_project(client, train)
    assert "learning_rate=lr * hvd.size()" in client.buffers[uri] and "lr=0.05" in client.buffers[uri]


async def test_single_file_program_is_pointed_to_the_file_conversion(client, tmp_path):
    path = tmp_path / "alone.py"
    path.write_text("import tensorflow as tf\nprint(tf.__version__)\n", encoding="utf-8")
    uri = _open(client, path)
    await _convert_project(client, uri)
    assert client.applied == []
    assert "not a program of several modules" in client.messages[-1].message


async def test_file_command_on_a_module_converts_its_program(client, tmp_path):
    """"Make file Horovod-distributed" on a file of a program of several modules converts the
    program: alone, the module would get a set-up at its import, the entry none."""
    project = tmp_path / "factories"
    shutil.copytree(PROJECTS / "factories", project)
    model = _open(client, project / "model.py")
    for name in ("train.py", "data.py"):
        client.buffers[(project / name).as_uri()] = (project / name).read_text(encoding="utf-8")
    await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="horovodize.convertFile", arguments=[model]))
    assert len(client.applied) == 1
    assert "hvd.init()" in client.buffers[(project / "train.py").as_uri()]
    assert "hvd.init()" not in client.buffers[model] and "lr * hvd.size()" in client.buffers[model]
    assert "converted as one program of 3 files" in client.messages[-1].message
