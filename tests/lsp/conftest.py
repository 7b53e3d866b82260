"""End-to-end fixtures: the real server (``python -m horovodize serve``) over stdio, driven
by pytest-lsp. A test picks its client's capabilities with
``@pytest.mark.parametrize("client", [{...}], indirect=True)``: ``pull``, ``resolve``,
``document_changes``, ``encodings``, ``apply_edit``, ``refresh`` (``workspace/diagnostic/refresh``),
``watch`` (``workspace/didChangeWatchedFiles``, registered dynamically), ``options``
(initializationOptions), ``workspace`` (a folder of `tmp_path` as the workspace folder), or
``spec`` for the recorded capabilities of a real client (``"neovim@v0.11.0"``).

The client applies ``workspace/applyEdit`` to its own copy of each buffer
(``client.buffers``), independently of the server's position code, and keeps the server's
``client/registerCapability`` requests (``client.registrations``).
"""

from __future__ import annotations

import sys

import pytest_lsp
from lsp_helpers import apply_text_edits, workspace_text_edits
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient


def capabilities(pull=False, resolve=True, document_changes=True, encodings=None,
                 apply_edit=True, refresh=False, watch=False) -> types.ClientCapabilities:
    text = types.TextDocumentClientCapabilities(
        synchronization=types.TextDocumentSyncClientCapabilities(),
        publish_diagnostics=types.PublishDiagnosticsClientCapabilities(
            related_information=True, version_support=True, code_description_support=True, data_support=True),
        code_action=types.CodeActionClientCapabilities(
            code_action_literal_support=types.ClientCodeActionLiteralOptions(
                code_action_kind=types.ClientCodeActionKindOptions(value_set=["quickfix", "source.fixAll"])),
            data_support=True,
            resolve_support=types.ClientCodeActionResolveOptions(properties=["edit"]) if resolve else None),
        hover=types.HoverClientCapabilities(content_format=[types.MarkupKind.Markdown]),
        diagnostic=types.DiagnosticClientCapabilities() if pull else None,
    )
    return types.ClientCapabilities(
        text_document=text,
        workspace=types.WorkspaceClientCapabilities(
            apply_edit=apply_edit,
            workspace_edit=types.WorkspaceEditClientCapabilities(document_changes=document_changes),
            diagnostics=types.DiagnosticWorkspaceClientCapabilities(refresh_support=True) if refresh else None,
            did_change_watched_files=types.DidChangeWatchedFilesClientCapabilities(dynamic_registration=True)
            if watch else None),
        general=types.GeneralClientCapabilities(position_encodings=encodings) if encodings else None,
        notebook_document=types.NotebookDocumentClientCapabilities(     # (as VS Code: notebooks synced)
            synchronization=types.NotebookDocumentSyncClientCapabilities()),
    )


@pytest_lsp.fixture(config=ClientServerConfig(server_command=[sys.executable, "-m", "horovodize", "serve"]))
async def client(lsp_client: LanguageClient, request):
    setup = dict(getattr(request, "param", None) or {})
    options = setup.pop("options", None)
    folder = None
    if setup.pop("workspace", None):
        folder = request.getfixturevalue("tmp_path") / setup.pop("workspace_name", "ws")
        folder.mkdir(exist_ok=True)
    lsp_client.buffers = {}
    lsp_client.applied = []
    lsp_client.registrations = []

    @lsp_client.feature(types.CLIENT_REGISTER_CAPABILITY)
    def register(params: types.RegistrationParams):
        lsp_client.registrations += params.registrations

    @lsp_client.feature(types.WORKSPACE_APPLY_EDIT)
    def apply_edit(params: types.ApplyWorkspaceEditParams):
        lsp_client.applied.append(params)
        for uri, edits in workspace_text_edits(params.edit).items():
            lsp_client.buffers[uri] = apply_text_edits(lsp_client.buffers[uri], edits, lsp_client.encoding)
        return types.ApplyWorkspaceEditResult(applied=True)

    spec = setup.pop("spec", None)       # a recorded real client, e.g. "neovim@v0.11.0"
    caps = pytest_lsp.client_capabilities(spec) if spec else capabilities(**setup)
    folders = [types.WorkspaceFolder(uri=folder.as_uri(), name=folder.name)] if folder is not None else None
    result = await lsp_client.initialize_session(types.InitializeParams(
        capabilities=caps, initialization_options=options, workspace_folders=folders))
    lsp_client.encoding = str(getattr(result.capabilities.position_encoding, "value",
                                      result.capabilities.position_encoding) or "utf-16")
    lsp_client.init_result = result
    yield
    await lsp_client.shutdown_session()
