"""Hostile input and a silent editor: deep nesting gets a clean answer (a diagnostic, a
one-line message), an editor that never answers ``workspace/applyEdit`` holds neither the
command nor ``shutdown``. The real server over stdio, as in the rest of this directory."""

from __future__ import annotations

import asyncio
import os
import sys

import pytest
import pytest_lsp
from conftest import capabilities
from lsp_helpers import DATA, diagnostics_for, open_doc
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

TAPE = (DATA / "tape.py").read_text(encoding="utf-8")
DEEP = TAPE + "z = " + "f(" * 250 + "1" + ")" * 250 + "\n"      # valid Python to parso, 500 levels deep


async def test_deep_nesting_is_answered_cleanly(client):
    uri = open_doc(client, "deep.py", DEEP)
    diags = await diagnostics_for(client, uri, 1)
    deep = [d for d in diags if d.message.startswith("too deeply nested")]
    assert len(deep) == 1 and deep[0].range.start.line == DEEP.count("\n") - 1
    doc = types.TextDocumentIdentifier(uri=uri)
    pos = types.Position(line=DEEP.count("\n") - 1, character=300)
    # every request on it is answered (an exception would be -32603)
    assert await client.text_document_hover_async(types.HoverParams(text_document=doc, position=pos)) is None
    assert await client.protocol.send_request_async("horovodize/fileInfo", {"uri": uri}) is not None
    await client.text_document_code_action_async(types.CodeActionParams(
        text_document=doc, range=types.Range(start=pos, end=pos),
        context=types.CodeActionContext(diagnostics=diags, only=["source.fixAll.horovodize"])))
    await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="horovodize.convertFile", arguments=[uri]))
    assert client.applied == []
    message = client.messages[-1]
    assert message.type == types.MessageType.Error
    assert ": too deeply nested: more than 150 levels" in message.message and "\n" not in message.message


@pytest.mark.parametrize("client", [{"pull": True}], indirect=True)
async def test_deep_nesting_pulled(client):
    uri = open_doc(client, "deep.py", DEEP)
    report = await client.text_document_diagnostic_async(
        types.DocumentDiagnosticParams(text_document=types.TextDocumentIdentifier(uri=uri)))
    assert [d.message.split(":")[0] for d in report.items if d.code is None] == ["too deeply nested"]


# -- an editor that never answers workspace/applyEdit ------------------------------------
def _silent_config(timeout: str) -> ClientServerConfig:
    return ClientServerConfig(server_command=[sys.executable, "-m", "horovodize", "serve"],
                              server_env={**os.environ, "HOROVODIZE_REQUEST_TIMEOUT": timeout})


async def _silent_session(lsp_client: LanguageClient):
    lsp_client.asked = asyncio.Event()
    lsp_client.buffers = {}
    never = lsp_client.never = asyncio.Event()

    @lsp_client.feature(types.WORKSPACE_APPLY_EDIT)
    async def apply_edit(params: types.ApplyWorkspaceEditParams):
        lsp_client.asked.set()
        await never.wait()                        # never answers
        return types.ApplyWorkspaceEditResult(applied=False)

    await lsp_client.initialize_session(types.InitializeParams(capabilities=capabilities()))
    return never


@pytest_lsp.fixture(config=_silent_config("1"))
async def silent(lsp_client: LanguageClient):
    never = await _silent_session(lsp_client)
    yield
    never.set()
    await lsp_client.shutdown_session()


@pytest_lsp.fixture(config=_silent_config("600"))
async def silent_forever(lsp_client: LanguageClient):
    never = await _silent_session(lsp_client)
    yield                                         # (the test shuts the server down itself)
    never.set()


@pytest.mark.timeout(60)
async def test_apply_edit_times_out(silent):
    client = silent
    uri = open_doc(client, "tape.py", TAPE)
    await diagnostics_for(client, uri, 1)
    await asyncio.wait_for(client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="horovodize.convertFile", arguments=[uri])), 20)
    assert client.asked.is_set()
    message = client.messages[-1]
    assert message.type == types.MessageType.Warning and "did not answer" in message.message
    # the server still serves
    assert await client.protocol.send_request_async("horovodize/fileInfo", {"uri": uri}) is not None


@pytest.mark.timeout(60)
async def test_shutdown_while_a_command_waits_for_the_editor(silent_forever):
    client = silent_forever
    uri = open_doc(client, "tape.py", TAPE)
    await diagnostics_for(client, uri, 1)
    command = asyncio.ensure_future(client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="horovodize.convertFile", arguments=[uri])))
    await asyncio.wait_for(client.asked.wait(), 20)
    assert await asyncio.wait_for(client.shutdown_async(None), 10) is None      # not -32603, not blocked
    client.never.set()                                                         # a late answer: ignored
    await asyncio.sleep(0.2)
    client.exit(None)
    assert await asyncio.wait_for(client._server.wait(), 10) == 0              # and the server exits
    command.cancel()
