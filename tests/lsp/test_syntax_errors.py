"""A buffer that does not parse: diagnostics for what parso recovers; convertFile refuses."""

from __future__ import annotations

from lsp_helpers import DATA, diagnostics_for, open_doc
from lsprotocol import types

BROKEN = (DATA / "tape.py").read_text().replace(
    "x_all = tf.random.normal((256, 8))", "x_all = tf.random.normal((256, 8)\ndef broken(:\n    pass")


async def test_diagnostics_still_produced(client):
    uri = open_doc(client, "broken.py", BROKEN)
    codes = {d.code for d in await diagnostics_for(client, uri)}
    assert {"HVD001", "HVD010"} <= codes


async def test_convert_file_refuses_with_the_syntax_error(client):
    uri = open_doc(client, "broken.py", BROKEN)
    await diagnostics_for(client, uri)
    await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="horovodize.convertFile", arguments=[uri]))
    assert client.applied == []
    message = client.messages[-1]
    assert message.type == types.MessageType.Error
    assert message.message.startswith("/tmp/horovodize-tests/broken.py:")
    assert ": syntax error: " in message.message
