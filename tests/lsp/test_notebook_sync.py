"""Notebook documents end to end (LSP 3.17 ``notebookDocument/*``, the real server over
stdio): the code cells analysed as one program, diagnostics per cell URI with positions in
the cell (UTF-16), a cell edit re-analysing the notebook, quick fixes and the whole-notebook
conversion landing each edit in its cell, close clearing every cell. The oracle for the
converted cells is ``horovodize convert NB.ipynb`` (the CLI's notebook path); ranges are
checked with the tests' own edit applier."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest
from horovodize.engine import WHOLE_FILE_TITLE
from lsp_helpers import apply_text_edits, by_code, to_offset, workspace_text_edits
from lsprotocol import types

NOTEBOOKS = Path(__file__).parent.parent / "notebooks"
CONVERT = "horovodize.convertFile"


def cells_of(path: Path) -> list[tuple[str, str]]:
    """(cell_type, source) of each cell of an .ipynb."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    return [(c["cell_type"], "".join(c["source"]) if isinstance(c["source"], list) else c["source"])
            for c in nb["cells"]]


def open_notebook(client, path: Path, cells: list[tuple[str, str]] | None = None) -> tuple[str, list[str]]:
    """didOpen a notebook as VS Code does (each code cell a text document with a
    ``vscode-notebook-cell`` URI); returns (notebook uri, the uri of each cell)."""
    cells = cells if cells is not None else cells_of(path)
    uri = path.as_uri()
    cell_uris = [f"vscode-notebook-cell:{path}#W{i}sZmlsZQ%3D%3D" for i in range(len(cells))]
    nb_cells, items = [], []
    for (kind, text), cell_uri in zip(cells, cell_uris):
        code = kind == "code"
        nb_cells.append(types.NotebookCell(kind=types.NotebookCellKind.Code if code else types.NotebookCellKind.Markup,
                                           document=cell_uri))
        items.append(types.TextDocumentItem(uri=cell_uri, language_id="python" if code else "markdown",
                                            version=1, text=text))
        client.buffers[cell_uri] = text
    client.notebook_document_did_open(types.DidOpenNotebookDocumentParams(
        notebook_document=types.NotebookDocument(uri=uri, notebook_type="jupyter-notebook", version=1,
                                                 cells=nb_cells),
        cell_text_documents=items))
    return uri, cell_uris


def change_cell(client, nb_uri: str, nb_version: int, cell_uri: str, cell_version: int,
                rng: types.Range, text: str) -> None:
    client.buffers[cell_uri] = apply_text_edits(client.buffers[cell_uri], [types.TextEdit(range=rng, new_text=text)],
                                                client.encoding)
    client.notebook_document_did_change(types.DidChangeNotebookDocumentParams(
        notebook_document=types.VersionedNotebookDocumentIdentifier(uri=nb_uri, version=nb_version),
        change=types.NotebookDocumentChangeEvent(cells=types.NotebookDocumentCellChanges(text_content=[
            types.NotebookDocumentCellContentChanges(
                document=types.VersionedTextDocumentIdentifier(uri=cell_uri, version=cell_version),
                changes=[types.TextDocumentContentChangePartial(range=rng, text=text)])]))))


async def published(client, uris: list[str], timeout: float = 30) -> dict:
    """Wait until diagnostics were published for each of `uris` since they were last
    taken (`take`); the diagnostics are taken."""
    async def wait():
        while not set(uris) <= set(client.diagnostics):
            await asyncio.sleep(0.02)

    await asyncio.wait_for(wait(), timeout)
    return take(client, uris)


def take(client, uris) -> dict:
    return {u: list(client.diagnostics.pop(u)) for u in uris if u in client.diagnostics}


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "horovodize", *args], check=False, capture_output=True,
                          text=True, timeout=120)


def cli_findings(path: Path) -> list[dict]:
    proc = cli("check", "--format", "json", str(path))
    return json.loads(proc.stdout)


def at(client, cell_uri: str, rng: types.Range) -> str:
    text = client.buffers[cell_uri]
    return text[to_offset(text, rng.start, client.encoding):to_offset(text, rng.end, client.encoding)]


def code_uris(cells, uris):
    return [u for (kind, _), u in zip(cells, uris) if kind == "code"]


async def test_open_publishes_per_cell_at_cli_positions(client, tmp_path):
    """Each finding on the cell the CLI names, at the CLI's (line, column) inside it; a
    non-BMP character before a finding counts two UTF-16 units; magics never reported."""
    path = tmp_path / "tape.ipynb"
    cells = cells_of(NOTEBOOKS / "tape_loop.ipynb")
    kind, text = cells[2]
    cells[2] = (kind, text.replace("optimizer = tf.keras", 'tag = "\U0001F680"; optimizer = tf.keras'))
    raw = json.loads((NOTEBOOKS / "tape_loop.ipynb").read_text(encoding="utf-8"))
    raw["cells"][2]["source"] = cells[2][1]
    path.write_text(json.dumps(raw), encoding="utf-8")
    _, uris = open_notebook(client, path, cells)
    diags = await published(client, code_uris(cells, uris))
    assert set(diags) == set(code_uris(cells, uris))                       # markdown/raw: nothing
    expected = sorted((f["cell"] - 1, f["code"], f["line"] - 1, f["column"] - 1) for f in cli_findings(path))
    assert expected, "the CLI finds nothing: the fixture changed"
    got = []
    for i, uri in enumerate(uris):
        for d in diags.get(uri, []):
            start = to_offset(client.buffers[uri], d.range.start, client.encoding)
            line_start = client.buffers[uri].rfind("\n", 0, start) + 1
            got.append((i, d.code, d.range.start.line, start - line_start))     # (column in code points)
    assert sorted(got) == expected
    lr = by_code(diags[uris[2]], "HVD010")
    assert at(client, uris[2], lr.range).startswith("0.001")
    line = client.buffers[uris[2]].splitlines()[lr.range.start.line]
    assert lr.range.start.character == line.index("0.001") + 1                # the rocket: 2 UTF-16 units
    for uri in uris:                                                          # the magics: never
        for d in diags.get(uri, []):
            assert not at(client, uri, d.range).lstrip().startswith(("%", "!")), d


async def test_cell_edit_reanalyses_the_notebook(client, tmp_path):
    cells = cells_of(NOTEBOOKS / "tape_loop.ipynb")
    nb_uri, uris = open_notebook(client, NOTEBOOKS / "tape_loop.ipynb")
    diags = await published(client, code_uris(cells, uris))
    assert "HVD010" in [d.code for d in diags[uris[2]]]
    # two lines before the optimizer: its diagnostic moves down two lines, in its cell
    before = by_code(diags[uris[2]], "HVD010").range.start.line
    zero = types.Range(start=types.Position(line=0, character=0), end=types.Position(line=0, character=0))
    change_cell(client, nb_uri, 2, uris[2], 2, zero, "# a\n# b\n")
    diags = await published(client, [uris[2]])
    assert by_code(diags[uris[2]], "HVD010").range.start.line == before + 2
    # the optimizer scaled by hvd.size() in its cell: not Horovod's until another cell imports it
    line = client.buffers[uris[2]].splitlines().index("optimizer = tf.keras.optimizers.Adam(0.001)")
    end = types.Position(line=line, character=len("optimizer = tf.keras.optimizers.Adam(0.001"))
    change_cell(client, nb_uri, 3, uris[2], 3, types.Range(start=end, end=end), " * hvd.size()")
    diags = await published(client, [uris[2]])
    assert "HVD010" in [d.code for d in diags[uris[2]]]
    # an edit in the imports' cell re-analyses the whole notebook: HVD010 goes from cell 2
    end = types.Position(line=len(client.buffers[uris[1]].splitlines()), character=0)
    change_cell(client, nb_uri, 4, uris[1], 2, types.Range(start=end, end=end), "import horovod.tensorflow as hvd\n")
    diags = await published(client, [uris[1], uris[2]])
    assert "HVD010" not in [d.code for d in diags[uris[2]]]


async def actions_for(client, uri, diags, only=None) -> list[types.CodeAction]:
    actions = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri), range=diags[0].range if diags else types.Range(
            start=types.Position(line=0, character=0), end=types.Position(line=0, character=0)),
        context=types.CodeActionContext(diagnostics=diags, only=only)))
    return list(actions or [])


def applied(client, edit: types.WorkspaceEdit) -> dict[str, str]:
    return {uri: apply_text_edits(client.buffers[uri], edits, client.encoding)
            for uri, edits in workspace_text_edits(edit).items()}


def cli_converted(path: Path) -> list[tuple[str, str]]:
    proc = cli("convert", str(path))
    assert proc.returncode == 0, proc.stderr
    nb = json.loads(proc.stdout)
    return [(c["cell_type"], "".join(c["source"]) if isinstance(c["source"], list) else c["source"])
            for c in nb["cells"]]


async def test_quick_fix_edits_target_the_cells(client):
    cells = cells_of(NOTEBOOKS / "tape_loop.ipynb")
    _, uris = open_notebook(client, NOTEBOOKS / "tape_loop.ipynb")
    diags = await published(client, code_uris(cells, uris))
    lr = by_code(diags[uris[2]], "HVD010")
    actions = await actions_for(client, uris[2], [lr], only=[types.CodeActionKind.QuickFix])
    assert [a.title for a in actions] == ["Scale learning rate by hvd.size()"]
    edit = actions[0].edit
    # one versioned TextDocumentEdit per cell: the set-up in the imports' cell, the scale in the optimizer's
    assert [(c.text_document.uri, c.text_document.version) for c in edit.document_changes] == [
        (uris[1], 1), (uris[2], 1)]
    new = applied(client, edit)
    converted = cli_converted(NOTEBOOKS / "tape_loop.ipynb")
    assert new[uris[2]] == converted[2][1]
    assert new[uris[1]] == converted[1][1].replace("hvd_broadcast_done = tf.Variable(False, trainable=False)\n", "")


@pytest.mark.parametrize("client", [{"resolve": True}, {"resolve": False, "document_changes": False}], indirect=True)
async def test_whole_notebook_fix_equals_cli_convert(client):
    cells = cells_of(NOTEBOOKS / "tape_loop.ipynb")
    _, uris = open_notebook(client, NOTEBOOKS / "tape_loop.ipynb")
    diags = await published(client, code_uris(cells, uris))
    loop = [d for uri in uris for d in diags.get(uri, []) if d.code == "HVD100"]
    cell = next(u for u in uris if loop[0] in diags.get(u, []))
    actions = await actions_for(client, cell, loop)
    whole = [a for a in actions if a.title == WHOLE_FILE_TITLE]
    assert len(whole) == 1
    action = whole[0]
    if action.edit is None:
        action = await client.code_action_resolve_async(action)
    new = applied(client, action.edit)
    converted = cli_converted(NOTEBOOKS / "tape_loop.ipynb")
    expected = {u: text for u, (kind, text) in zip(uris, converted) if kind == "code" and text != cells[uris.index(u)][1]}
    assert new == expected
    assert set(new) == {uris[1], uris[2], uris[3], uris[5]}


async def test_convert_command_on_a_cell_converts_the_notebook(client):
    cells = cells_of(NOTEBOOKS / "tape_loop.ipynb")
    _, uris = open_notebook(client, NOTEBOOKS / "tape_loop.ipynb")
    await published(client, code_uris(cells, uris))
    await client.workspace_execute_command_async(types.ExecuteCommandParams(command=CONVERT, arguments=[uris[5]]))
    assert len(client.applied) == 1
    converted = cli_converted(NOTEBOOKS / "tape_loop.ipynb")
    assert [client.buffers[u] for u in uris] == [text for _, text in converted]


async def test_hover_in_a_cell(client):
    cells = cells_of(NOTEBOOKS / "tape_loop.ipynb")
    _, uris = open_notebook(client, NOTEBOOKS / "tape_loop.ipynb")
    diags = await published(client, code_uris(cells, uris))
    lr = by_code(diags[uris[2]], "HVD010")
    result = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uris[2]),
        position=types.Position(line=lr.range.start.line, character=lr.range.start.character + 1)))
    assert result is not None and "**HVD010**" in result.contents.value
    assert result.range == lr.range


async def test_close_clears_every_cell(client):
    cells = cells_of(NOTEBOOKS / "tape_loop.ipynb")
    nb_uri, uris = open_notebook(client, NOTEBOOKS / "tape_loop.ipynb")
    code = code_uris(cells, uris)
    await published(client, code)
    client.notebook_document_did_close(types.DidCloseNotebookDocumentParams(
        notebook_document=types.NotebookDocumentIdentifier(uri=nb_uri),
        cell_text_documents=[types.TextDocumentIdentifier(uri=u) for u in uris]))
    cleared = await published(client, code)
    assert cleared == {u: [] for u in code}


@pytest.mark.parametrize("client", [{"pull": True}], indirect=True)
async def test_pushed_to_a_client_that_pulls(client):
    """vscode-languageclient 9 pulls only for text documents it opened itself, never for a
    notebook's cells: a notebook's diagnostics are pushed per cell; a pull for a cell
    answers nothing (no duplicates)."""
    cells = cells_of(NOTEBOOKS / "tape_loop.ipynb")
    _, uris = open_notebook(client, NOTEBOOKS / "tape_loop.ipynb")
    diags = await published(client, code_uris(cells, uris))
    assert "HVD010" in [d.code for d in diags[uris[2]]]
    assert "HVD020" in [d.code for d in diags[uris[5]]]
    report = await client.text_document_diagnostic_async(types.DocumentDiagnosticParams(
        text_document=types.TextDocumentIdentifier(uri=uris[2])))
    assert list(report.items) == []


async def test_server_advertises_notebook_sync(client):
    sync = client.init_result.capabilities.notebook_document_sync
    assert sync is not None
    assert sync.notebook_selector[0].notebook == "jupyter-notebook"
    assert [c.language for c in sync.notebook_selector[0].cells] == ["python"]


COLAB = [("code", "try:\n    %tensorflow_version 2.x\nexcept Exception:\n    pass\n"),
         ("code", "import os\nimport numpy as np\nimport tensorflow as tf\nd = '.'\n"
                  "print('total training cat images:', len(os.listdir(d)))"),
         ("code", "print('total training dog images:', len(os.listdir(d)))\nprint('x')"),
         ("code", "x = np.zeros((64, 2), 'float32')\ny = np.zeros((64, 1), 'float32')\n"
                  "model = tf.keras.Sequential([tf.keras.layers.Dense(1)])\n"
                  "model.compile(optimizer=tf.keras.optimizers.SGD(0.1), loss='mse')\nmodel.fit(x, y, epochs=4)")]


async def test_colab_header_and_prints_across_cells(client, tmp_path):
    """(issue 38) A magic inside a `try:` is no syntax error in the editor either, and the
    whole-notebook conversion guards each cell's prints in that cell: every converted cell
    compiles on its own (magics masked) and equals the CLI's conversion."""
    from horovodize.app import notebook

    path = tmp_path / "colab.ipynb"
    path.write_text(json.dumps({"cells": [{"cell_type": k, "metadata": {}, "source": t, "outputs": [],
                                           "execution_count": None} for k, t in COLAB],
                                "metadata": {}, "nbformat": 4, "nbformat_minor": 5}), encoding="utf-8")
    _, uris = open_notebook(client, path, COLAB)
    diags = await published(client, uris)
    assert not [d for ds in diags.values() for d in ds if "syntax" in d.message.lower()]
    loop = [d for uri in uris for d in diags.get(uri, []) if d.code == "HVD101"]
    cell = next(u for u in uris if loop[0] in diags.get(u, []))
    whole = [a for a in await actions_for(client, cell, loop) if a.title == WHOLE_FILE_TITLE]
    action = whole[0] if whole[0].edit is not None else await client.code_action_resolve_async(whole[0])
    new = applied(client, action.edit)
    for uri, text in new.items():
        compile(notebook.mask(notebook.dedent(text)[0])[0], uri, "exec")
    assert new[uris[2]].startswith("if hvd.rank() == 0:\n    print('total training dog images:'")
    converted = cli_converted(path)
    assert new == {u: text for u, (kind, text) in zip(uris, converted) if text != COLAB[uris.index(u)][1]}
