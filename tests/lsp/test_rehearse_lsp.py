"""``workspace/executeCommand horovodize.rehearse`` in the quick tier: the command is
advertised, its argument errors, and the real command on an interpreter without Horovod
(the project venv's own) or a ``--set`` on no constant: the one-line reason, no run. The
rehearsal itself runs in the Horovod tier (tests/horovod/test_verify.py)."""

from __future__ import annotations

import sys

import pytest
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
