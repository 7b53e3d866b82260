"""``workspace/executeCommand horovodize.rehearse`` in the quick tier: the command is
advertised, its argument errors, and the real command on an interpreter without Horovod
(the project venv's own) or a ``--set`` on no constant: the one-line reason, no run; in the
Horovod tier, the real rehearsal of a program that prints on every rank."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest
from lsp_helpers import diagnostics_for
from lsprotocol import types
from pygls.exceptions import JsonRpcException


async def rehearse(client, *arguments):
    return await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="horovodize.rehearse", arguments=list(arguments)))


async def test_rehearse_is_advertised(client):
    assert "horovodize.rehearse" in client.init_result.capabilities.execute_command_provider.commands


@pytest.mark.parametrize("arguments", [[], [{"uri": "file:///a.py", "np": 0}], [{"uri": "file:///a.py", "sets": 3}]])
async def test_rehearse_argument_errors(client, arguments):
    with pytest.raises(JsonRpcException, match="horovodize.rehearse"):
        await rehearse(client, *arguments)


@pytest.mark.parametrize("client", [{"options": {"python": sys.executable}}], indirect=True)
async def test_rehearse_without_horovod_says_why(client, tmp_path):
    script = tmp_path / "train.py"
    script.write_text("import tensorflow as tf\nEPOCHS = 2\n")
    result = await rehearse(client, {"uri": script.as_uri()})
    result = result if isinstance(result, dict) else result._asdict()
    assert result["ok"] is False and result["checks"] == []
    assert result["text"].startswith("rehearsal not run: horovod is not importable by"), result
    assert client.messages[-1].type == types.MessageType.Error
    result = await rehearse(client, {"uri": script.as_uri(), "sets": ["STEPS=1"]})
    result = result if isinstance(result, dict) else result._asdict()
    assert "--set STEPS: no module-level assignment" in result["text"], result


def _hvd_python() -> str:
    import os
    repo = Path(__file__).resolve().parents[2]
    return os.environ.get("HOROVODIZE_HVD_PYTHON") or str(repo / ".cache" / "hvd-venv" / "bin" / "python")


@pytest.mark.horovod
@pytest.mark.timeout(600)
@pytest.mark.parametrize("client", [{"options": {"python": _hvd_python()}}], indirect=True)
async def test_rehearse_runs_and_marks_the_print(client, tmp_path):
    """The real rehearsal from the editor (Horovod tier): the hand-written program that prints
    on every rank; the result's table and a diagnostic on the print's line."""
    program = Path(__file__).resolve().parents[1] / "horovod" / "programs" / "rh_hvd_base.py"
    script = tmp_path / program.name
    script.write_text(program.read_text())
    uri = script.as_uri()
    client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=types.TextDocumentItem(
        uri=uri, language_id="python", version=1, text=script.read_text())))
    await diagnostics_for(client, uri)
    result = await asyncio.wait_for(rehearse(client, {"uri": uri, "asIs": True, "args": ["print"]}), 580)
    result = result if isinstance(result, dict) else result._asdict()
    assert result["ok"] is False and "FAIL  prints" in result["text"], result["text"]
    line = next(i for i, ln in enumerate(script.read_text().splitlines()) if 'print("trained"' in ln)
    for _ in range(100):     # (published before the command's answer: read what the client holds)
        diags = client.diagnostics.get(uri, [])
        if any(d.source == "horovodize-rehearsal" for d in diags):
            break
        await asyncio.sleep(0.05)
    rehearsal = [d for d in diags if d.source == "horovodize-rehearsal"]
    assert [d.range.start.line for d in rehearsal] == [line], diags
    assert rehearsal[0].message.startswith("rehearsal: prints: rank 1 printed 'trained 1'")
