"""``workspace/executeCommand horovodize.convertFile`` (through ``workspace/applyEdit``) and
the custom request ``horovodize/fileInfo``."""

from __future__ import annotations

import pytest
from lsp_helpers import DATA, cli_convert, diagnostics_for, open_doc, replace_all
from lsprotocol import types


async def execute(client, *arguments):
    return await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="horovodize.convertFile", arguments=list(arguments)))


async def file_info(client, uri):
    return await client.protocol.send_request_async("horovodize/fileInfo", {"uri": uri})


def info(result) -> dict:
    return result if isinstance(result, dict) else {k: getattr(result, k) for k in ("loopKind", "distributed")}


async def test_command_is_advertised(client):
    provider = client.init_result.capabilities.execute_command_provider
    assert "horovodize.convertFile" in provider.commands


async def test_convert_file_round_trip(client):
    uri = open_doc(client, "tape.py")
    await diagnostics_for(client, uri)
    assert info(await file_info(client, uri)) == {"loopKind": "GradientTape", "distributed": False}

    await execute(client, uri)
    assert len(client.applied) == 1
    assert client.applied[0].label == "Make Horovod-distributed"
    converted = client.buffers[uri]
    assert converted == cli_convert(DATA / "tape.py")

    replace_all(client, uri, converted, version=2)   # the editor reports the applied edit
    assert await diagnostics_for(client, uri, version=2) == []
    assert info(await file_info(client, uri)) == {"loopKind": "GradientTape", "distributed": True}
    await execute(client, {"uri": uri})              # the object form of the argument
    assert len(client.applied) == 1                  # nothing more to apply
    assert client.messages[-1].type == types.MessageType.Info
    assert "already Horovod-distributed" in client.messages[-1].message


async def test_convert_file_keras(client):
    uri = open_doc(client, "keras_fit.py")
    assert info(await file_info(client, uri)) == {"loopKind": "Keras fit", "distributed": False}
    await execute(client, {"uri": uri})
    assert client.buffers[uri] == cli_convert(DATA / "keras_fit.py")


async def test_not_a_tensorflow_program(client):
    uri = open_doc(client, "plain.py", "import os\n\nprint(os.getcwd())\n")
    assert info(await file_info(client, uri)) == {"loopKind": "none", "distributed": False}
    await execute(client, uri)
    assert client.applied == []
    assert "nothing to change" in client.messages[-1].message


@pytest.mark.parametrize("client", [{"apply_edit": False}], indirect=True)
async def test_client_without_apply_edit(client):
    uri = open_doc(client, "tape.py")
    await execute(client, uri)
    assert client.applied == []
    assert client.messages[-1].type == types.MessageType.Error
    assert "Make Horovod-distributed" in client.messages[-1].message
