"""Malformed params, unknown URIs, bad options and unknown commands are answered; the
server stays up."""

from __future__ import annotations

import asyncio
import concurrent.futures
import uuid

import pytest
from lsp_helpers import diagnostics_for, open_doc
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.protocol.json_rpc import JsonRPCRequestMessage

UNKNOWN = "file:///nowhere/unknown.py"


async def raw_request(client, method: str, params):
    """Send a request whose params are not checked (or typed) on the client side."""
    msg_id = str(uuid.uuid4())
    future = client.protocol._request_futures[msg_id] = concurrent.futures.Future()
    client.protocol._send_data(JsonRPCRequestMessage(id=msg_id, method=method, params=params, jsonrpc="2.0"))
    return await asyncio.wrap_future(future)


async def still_alive(client):
    uri = open_doc(client, "tape.py")
    assert await diagnostics_for(client, uri)
    result = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line=12, character=52)))
    assert result is not None


async def test_malformed_params_are_answered(client):
    for method, params in [
        ("textDocument/hover", {"textDocument": {"uri": UNKNOWN}}),          # no position
        ("textDocument/codeAction", {"textDocument": {"uri": 3}, "range": "x", "context": {}}),
        ("textDocument/diagnostic", {"textDocument": None}),
        ("horovodize/fileInfo", {"path": "a.py"}),
        ("horovodize/fileInfo", [1, 2]),
    ]:
        with pytest.raises(JsonRpcException) as err:
            await raw_request(client, method, params)
        assert err.value.code == -32602, (method, err.value)
    await still_alive(client)


async def test_unknown_uris(client):
    doc = types.TextDocumentIdentifier(uri=UNKNOWN)
    pos = types.Position(line=0, character=0)
    assert await client.text_document_hover_async(types.HoverParams(text_document=doc, position=pos)) is None
    assert await client.text_document_code_action_async(types.CodeActionParams(
        text_document=doc, range=types.Range(start=pos, end=pos),
        context=types.CodeActionContext(diagnostics=[]))) is None
    report = await client.text_document_diagnostic_async(types.DocumentDiagnosticParams(text_document=doc))
    assert report.kind == "full" and list(report.items) == []
    assert await client.protocol.send_request_async("horovodize/fileInfo", {"uri": UNKNOWN}) is None
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=UNKNOWN, version=2),
        content_changes=[types.TextDocumentContentChangeWholeDocument(text="x = 1\n")]))
    client.text_document_did_close(types.DidCloseTextDocumentParams(text_document=doc))
    await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="horovodize.convertFile", arguments=[UNKNOWN]))
    assert client.messages[-1].type == types.MessageType.Error
    assert "not open" in client.messages[-1].message
    await still_alive(client)


async def test_out_of_range_positions(client):
    uri = open_doc(client, "tape.py")
    await diagnostics_for(client, uri)
    far = types.Position(line=10_000, character=500)
    doc = types.TextDocumentIdentifier(uri=uri)
    assert await client.text_document_hover_async(types.HoverParams(text_document=doc, position=far)) is None
    assert await client.text_document_hover_async(types.HoverParams(
        text_document=doc, position=types.Position(line=12, character=10_000))) is None


async def test_bad_command_arguments(client):
    for arguments in ([], [42], [{"path": "x"}], ["a", "b"]):
        with pytest.raises(JsonRpcException):
            await client.workspace_execute_command_async(
                types.ExecuteCommandParams(command="horovodize.convertFile", arguments=arguments))
    with pytest.raises(JsonRpcException):
        await client.workspace_execute_command_async(types.ExecuteCommandParams(command="horovodize.nope"))
    await still_alive(client)


async def test_resolve_with_foreign_data(client):
    action = types.CodeAction(title="x", data={"action": "convert", "uri": 5})
    assert (await client.code_action_resolve_async(action)).edit is None
    action = types.CodeAction(title="y", data="not a dict")
    assert (await client.code_action_resolve_async(action)).title == "y"


@pytest.mark.parametrize("client", [{"options": {"select": 5, "docsBaseUrl": ["x"]}}], indirect=True)
async def test_invalid_options_fall_back_to_defaults(client):
    warnings = [m.message for m in client.messages if m.type == types.MessageType.Warning]
    assert any("select" in w for w in warnings) and any("docsBaseUrl" in w for w in warnings)
    uri = open_doc(client, "tape.py")
    diags = await diagnostics_for(client, uri)
    assert len({d.code for d in diags}) > 2                # no filter
    assert diags[0].code_description.href.startswith("file:///")
