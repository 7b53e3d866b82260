"""The recorded capabilities of real editors: the negotiated encoding, push or pull, and a
whole-file conversion that matches ``horovodize convert``."""

from __future__ import annotations

import pytest
from horovodize.engine import WHOLE_FILE_TITLE
from lsp_helpers import (
    DATA,
    apply_text_edits,
    cli_convert,
    diagnostics_for,
    open_doc,
    workspace_text_edits,
)
from lsprotocol import types

CLIENTS = [("visual-studio-code", "utf-16", False), ("neovim@v0.9.1", "utf-16", False),
           ("neovim@v0.11.0", "utf-8", True), ("emacs", "utf-32", False)]


@pytest.mark.parametrize(("client", "encoding", "pull"), [({"spec": s}, e, p) for s, e, p in CLIENTS],
                         indirect=["client"])
async def test_real_client(client, encoding, pull):
    assert client.encoding == encoding
    uri = open_doc(client, "tape.py")
    if pull:
        report = await client.text_document_diagnostic_async(
            types.DocumentDiagnosticParams(text_document=types.TextDocumentIdentifier(uri=uri)))
        diags = list(report.items)
    else:
        diags = await diagnostics_for(client, uri)
    loop = next(d for d in diags if d.code == "HVD100")
    actions = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri), range=loop.range,
        context=types.CodeActionContext(diagnostics=[loop])))
    action = next(a for a in actions if a.title == WHOLE_FILE_TITLE)
    if action.edit is None:
        action = await client.code_action_resolve_async(action)
    edits = workspace_text_edits(action.edit)[uri]
    assert apply_text_edits(client.buffers[uri], edits, encoding) == cli_convert(DATA / "tape.py")
