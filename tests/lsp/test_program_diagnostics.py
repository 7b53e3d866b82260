"""Diagnostics of a file that is part of a program of several modules come from the program
(`lsp.programs`): an entry script and the project modules it imports, as ``horovodize
check FILE`` gives them. The file alone would say otherwise: ``model.py`` alone lacks a
set-up (HVD001) and has no training, so no unscaled rate; ``train.py`` alone does not know
that a set-up made in ``model.py`` is the program's (it keeps HVD001).

A change of a sibling module, on disk (``workspace/didChangeWatchedFiles``) or in its open
buffer, changes the entry's diagnostics; a single-file program's are its own analysis'.
"""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest
from horovodize.engine import analyze
from lsp_helpers import (
    DATA,
    apply_text_edits,
    change_range,
    diagnostics_for,
    replace_all,
    workspace_text_edits,
)
from lsprotocol import types

PROJECTS = Path(__file__).resolve().parent.parent / "projects"
SETS_UP = "import tensorflow as tf\nimport horovod.tensorflow as hvd\n\nhvd.init()\n"   # model.py made to set up Horovod


def _set_up(text: str) -> str:
    """model.py with a Horovod set-up of its own: the program (entry included) then has one, so
    the entry's "without Horovod set-up" (HVD001) goes; the entry alone would keep it."""
    return text.replace("import tensorflow as tf\n", SETS_UP, 1)


def _project(tmp_path: Path, where: str = "factories") -> Path:
    project = tmp_path / where
    shutil.copytree(PROJECTS / "factories", project)
    (project / "pyproject.toml").write_text("[project]\nname = 'factories'\n", encoding="utf-8")   # (the root)
    return project


def _open(client, path: Path, version: int = 1) -> str:
    uri = path.as_uri()
    text = path.read_text(encoding="utf-8")
    client.buffers[uri] = text
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id="python", version=version, text=text)))
    return uri


def codes(diags) -> set[str]:
    return {d.code for d in diags}


async def published(client, uri: str, test, timeout: float = 60) -> list[types.Diagnostic]:
    """The first diagnostics pushed for `uri` (the last ones already there included) that
    pass `test`."""
    async def wait():
        while True:
            if uri in client.diagnostics and test(client.diagnostics[uri]):
                return list(client.diagnostics[uri])
            await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)

    return await asyncio.wait_for(wait(), timeout)


def _line(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines()) if needle in line)


# -- (a) a module and its entry show the program's findings ------------------------------------
async def test_module_and_entry_show_the_program_findings(client, tmp_path):
    project = _project(tmp_path)
    model = _open(client, project / "model.py")
    alone = await diagnostics_for(client, model, version=1)          # first: the file's own analysis
    assert codes(alone) == {"HVD001"}                                # (a library "without set-up")

    diags = await published(client, model, lambda d: "HVD010" in codes(d))
    assert codes(diags) == {"HVD010"}                   # the rate, where the optimizer is made; no set-up
    rate = next(d for d in diags if d.code == "HVD010")
    text = client.buffers[model]
    line = _line(text, "return tf.keras.optimizers.SGD(learning_rate=lr)")
    assert rate.range.start.line == line == rate.range.end.line
    assert text.splitlines()[line][rate.range.start.character:rate.range.end.character] == "lr"

    train = _open(client, project / "train.py")
    diags = await published(client, train, lambda d: "HVD021" in codes(d))
    assert {"HVD001", "HVD020", "HVD021", "HVD030", "HVD032"} <= codes(diags)
    assert "HVD041" not in codes(diags)                 # (the dataset is read in data.py: that file's)
    broadcast = next(d for d in diags if d.code == "HVD021")
    assert broadcast.range.start.line == _line(client.buffers[train], "opt.apply_gradients")
    # the model's file does not get the entry's findings
    assert codes(client.diagnostics[model]) == {"HVD010"}


async def test_hover_on_a_module_shows_the_program_finding(client, tmp_path):
    project = _project(tmp_path)
    model = _open(client, project / "model.py")
    diags = await published(client, model, lambda d: "HVD010" in codes(d))
    rate = next(d for d in diags if d.code == "HVD010")
    hover = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=model), position=rate.range.start))
    assert hover is not None and "HVD010" in hover.contents.value and "HVD001" not in hover.contents.value


async def test_positions_are_utf16_in_a_crlf_module(client, tmp_path):
    project = _project(tmp_path)
    path = project / "model.py"
    text = path.read_text(encoding="utf-8").replace("SGD(learning_rate=lr)", 'SGD(name="𝔐é", learning_rate=lr)')
    text = ('"""𝔐"""\n' + text).replace("\n", "\r\n")
    path.write_bytes(text.encode("utf-8"))
    model = _open(client, path)
    diags = await published(client, model, lambda d: "HVD010" in codes(d))
    rate = next(d for d in diags if d.code == "HVD010")
    line = _line(text, "learning_rate=lr")
    assert rate.range.start.line == rate.range.end.line == line
    units = text.split("\r\n")[line].encode("utf-16-le")
    assert units[2 * rate.range.start.character:2 * rate.range.end.character].decode("utf-16-le") == "lr"


async def _registered(client) -> None:
    while not client.registrations:             # (sent by the server after `initialized`)
        await asyncio.sleep(0.02)


# -- code actions: a fix within the file, else the program's conversion -------------------------------
async def _actions(client, uri: str, diagnostic: types.Diagnostic) -> list[types.CodeAction]:
    return await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri), range=diagnostic.range,
        context=types.CodeActionContext(diagnostics=[diagnostic], only=[types.CodeActionKind.QuickFix])))


async def test_actions_of_a_program_file(client, tmp_path):
    project = _project(tmp_path)
    train = _open(client, project / "train.py")
    model = _open(client, project / "model.py")
    client.buffers[(project / "data.py").as_uri()] = (project / "data.py").read_text(encoding="utf-8")
    entry = await published(client, train, lambda d: "HVD021" in codes(d))
    (rate,) = await published(client, model, lambda d: codes(d) == {"HVD010"})

    # the entry's print: its fix (the set-up included) is all in the entry
    guard = next(a for a in await _actions(client, train, next(d for d in entry if d.code == "HVD030"))
                 if a.edit is not None)
    assert guard.title == "Print on rank 0 only"
    assert [c.text_document.uri for c in guard.edit.document_changes] == [train]
    # the module's rate: its fix edits the entry too (the set-up), so the program's conversion is offered
    (action,) = await _actions(client, model, rate)
    assert action.title == "Make project Horovod-distributed" and action.edit is None
    # the loop's whole-file action on the entry is the program's conversion too
    loop = next(d for d in entry if d.code == "HVD100")
    titles = [a.title for a in await _actions(client, train, loop)]
    assert "Make project Horovod-distributed" in titles and "Make Horovod-distributed" not in titles

    resolved = await client.code_action_resolve_async(action)          # one edit of the three files
    edits = workspace_text_edits(resolved.edit)
    assert sorted(edits) == sorted([train, model, (project / "data.py").as_uri()])
    assert {c.text_document.uri: c.text_document.version for c in resolved.edit.document_changes}[model] == 1
    after = {uri: apply_text_edits(client.buffers[uri], e, "utf-16") for uri, e in edits.items()}
    assert "hvd.init()" in after[train] and "lr * hvd.size()" in after[model] and "hvd.init()" not in after[model]


# -- (b) a module changed on disk: the entry's diagnostics follow ---------------------------------
@pytest.mark.parametrize("client", [{"watch": True}], indirect=True)
async def test_module_changed_on_disk_changes_the_entry(client, tmp_path):
    await asyncio.wait_for(_registered(client), 30)
    assert [r.method for r in client.registrations] == [types.WORKSPACE_DID_CHANGE_WATCHED_FILES]
    globs = [w["globPattern"] for w in client.registrations[0].register_options["watchers"]]
    assert "**/*.py" in globs
    project = _project(tmp_path)
    model = project / "model.py"                                  # (not open: read from disk)
    text = model.read_text(encoding="utf-8")
    model.write_text(_set_up(text), encoding="utf-8")
    train = _open(client, project / "train.py")
    diags = await published(client, train, lambda d: "HVD001" not in codes(d))   # the set-up is model.py's
    assert {"HVD020", "HVD021", "HVD030"} <= codes(diags)

    def changed():
        client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(changes=[
            types.FileEvent(uri=model.as_uri(), type=types.FileChangeType.Changed)]))

    model.write_text(text, encoding="utf-8")                      # no set-up there any more
    changed()
    await published(client, train, lambda d: "HVD001" in codes(d))
    model.write_text(_set_up(text), encoding="utf-8")             # and back
    changed()
    await published(client, train, lambda d: "HVD001" not in codes(d))


@pytest.mark.parametrize("client", [{"watch": True}], indirect=True)
async def test_module_created_on_disk_makes_a_program(client, tmp_path):
    """An entry that imports a module that does not exist yet is a program alone; once the
    file is created (a file event), it is a program of two modules."""
    project = tmp_path / "late"
    project.mkdir()
    (project / "pyproject.toml").write_text("", encoding="utf-8")
    model_text = (PROJECTS / "factories" / "model.py").read_text(encoding="utf-8")
    train_text = (PROJECTS / "factories" / "train.py").read_text(encoding="utf-8").replace(
        "from data import load\n", "").replace("enumerate(load())", "enumerate(tf.data.Dataset.range(4).batch(2))")
    (project / "train.py").write_text(train_text, encoding="utf-8")
    train = _open(client, project / "train.py")
    assert "HVD001" in codes(await diagnostics_for(client, train, version=1))
    (project / "model.py").write_text(_set_up(model_text), encoding="utf-8")
    client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(changes=[
        types.FileEvent(uri=(project / "model.py").as_uri(), type=types.FileChangeType.Created)]))
    await published(client, train, lambda d: "HVD001" not in codes(d))      # the program's set-up is model.py's


# -- (c) an edit of a module's open buffer: the entry's diagnostics follow -------------------------
async def test_module_buffer_edit_changes_the_entry(client, tmp_path):
    project = _project(tmp_path)
    train = _open(client, project / "train.py")
    model = _open(client, project / "model.py")
    await published(client, model, lambda d: codes(d) == {"HVD010"})       # (the program's)
    assert "HVD001" in codes(client.diagnostics[train])

    text = client.buffers[model]
    replace_all(client, model, _set_up(text), version=2)              # unsaved: only in the editor
    diags = await published(client, train, lambda d: "HVD001" not in codes(d))
    assert {"HVD020", "HVD021"} <= codes(diags)

    replace_all(client, model, text, version=3)                        # undone in the editor
    await published(client, train, lambda d: "HVD001" in codes(d))
    await published(client, model, lambda d: codes(d) == {"HVD010"})


async def test_keystroke_in_a_module_publishes_at_once_without_the_alone_findings(client, tmp_path):
    """A keystroke's publish comes from the keystroke's own analysis, as for any file; for a
    module of a program it carries the program's last findings past the edit (not the file
    alone's "set-up missing"), until the program's analysis of the new text replaces them."""
    project = _project(tmp_path)
    _open(client, project / "train.py")
    model = _open(client, project / "model.py")
    await published(client, model, lambda d: codes(d) == {"HVD010"})
    text = client.buffers[model]
    line = _line(text, "def build_model():")
    at = types.Position(line=line - 1, character=0)
    change_range(client, model, types.Range(start=at, end=at), "# a comment\n", version=2)
    first = await diagnostics_for(client, model, version=2)
    assert codes(first) == {"HVD010"}
    rate = next(d for d in first if d.code == "HVD010")
    assert rate.range.start.line == _line(client.buffers[model], "SGD(learning_rate=lr)")    # moved a line down


# -- (d) a single-file program keeps its own analysis ------------------------------------------
async def test_single_file_program_keeps_its_own_diagnostics(client, tmp_path):
    project = _project(tmp_path)
    text = (DATA / "tape.py").read_text(encoding="utf-8")
    path = project / "alone.py"                      # beside a project's modules, importing none of them
    path.write_text(text, encoding="utf-8")
    uri = _open(client, path)
    diags = await diagnostics_for(client, uri, version=1)
    fresh = analyze(text)
    assert [(d.code, d.range.start.line, d.range.start.character) for d in diags] == \
        [(f.code, *fresh.source.position(f.start)) for f in fresh.findings]
    # nothing else is published for it: no program's findings come after its own
    await asyncio.sleep(1.5)
    assert list(client.diagnostics[uri]) == diags
    replace_all(client, uri, text.replace("print(", "log("), version=2)
    again = await diagnostics_for(client, uri, version=2)
    assert "HVD030" not in codes(again)
    await asyncio.sleep(1.0)
    assert list(client.diagnostics[uri]) == again


# -- pull: a client that pulls is asked to pull again -----------------------------------------------
@pytest.mark.parametrize("client", [{"pull": True, "refresh": True}], indirect=True)
async def test_pull_client_is_refreshed_with_the_program_findings(client, tmp_path):
    assert client.init_result.capabilities.diagnostic_provider.inter_file_dependencies
    project = _project(tmp_path)
    model = _open(client, project / "model.py")
    doc = types.TextDocumentIdentifier(uri=model)
    first = await client.text_document_diagnostic_async(types.DocumentDiagnosticParams(text_document=doc))

    async def refreshed():
        while client.diagnostic_refresh_count == 0:
            await asyncio.sleep(0.05)

    await asyncio.wait_for(refreshed(), 60)
    report = await client.text_document_diagnostic_async(
        types.DocumentDiagnosticParams(text_document=doc, previous_result_id=first.result_id))
    assert report.kind == "full" and codes(report.items) == {"HVD010"}
    assert client.diagnostics == {}                     # (a pulling client is not pushed to)


# -- the workspace folder bounds the project root ------------------------------------------------------
@pytest.mark.parametrize("client", [{"workspace": True}], indirect=True)
async def test_workspace_folder_is_the_root_without_a_marker(client, tmp_path):
    """No pyproject.toml/setup.py/.git up to the workspace folder: the folder is the root, so
    ``from shared.model import ...`` in ``app/train.py`` is the project's module."""
    ws = tmp_path / "ws"
    (ws / "shared").mkdir()
    (ws / "app").mkdir()
    shutil.copy(PROJECTS / "factories" / "model.py", ws / "shared" / "model.py")
    (ws / "shared" / "__init__.py").write_text("", encoding="utf-8")
    train_text = (PROJECTS / "factories" / "train.py").read_text(encoding="utf-8").replace(
        "from data import load\n", "").replace("enumerate(load())", "enumerate(tf.data.Dataset.range(4).batch(2))")
    (ws / "app" / "train.py").write_text(train_text.replace("from model import", "from shared.model import"),
                                         encoding="utf-8")
    train = _open(client, ws / "app" / "train.py")
    await published(client, train, lambda d: "HVD021" in codes(d))
