"""The stdio transport (`lsp.stdio`): the event loop reads the client's pipe itself and can
tell whether unread messages wait (the server publishes only when none could hold a newer
change); a stdin that is not a pipe is read as pygls reads it."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess

from horovodize.lsp.stdio import _pipe_reader
from lsp_helpers import HOROVODIZE


def _message(payload: dict) -> bytes:
    body = json.dumps(payload).encode()
    return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)


async def test_pending_sees_unread_messages_until_they_are_read():
    read_fd, write_fd = os.pipe()
    with open(read_fd, "rb", buffering=0) as stdin:
        reader = await _pipe_reader(stdin)
        assert reader is not None and not reader.pending()
        message = _message({"jsonrpc": "2.0", "method": "x"})
        os.write(write_fd, message * 2)
        assert reader.pending()                            # in the pipe, not yet read
        header = await reader.readline()
        assert header.startswith(b"Content-Length:")
        assert reader.pending()                            # read into the buffer, not handled
        await reader.readline()
        await reader.readexactly(len(message) - len(header) - 2)
        await reader.readline(), await reader.readline()
        await reader.readexactly(len(message) - len(header) - 2)
        assert not reader.pending()
        os.close(write_fd)
        await asyncio.sleep(0.05)
        assert await reader.readline() == b""              # the client hung up: the loop ends
        assert not reader.pending()


async def test_an_overlong_line_is_skipped_and_the_next_message_read():
    read_fd, write_fd = os.pipe()
    with open(read_fd, "rb", buffering=0) as stdin:
        reader = await _pipe_reader(stdin)
        message = _message({"jsonrpc": "2.0", "method": "x"})

        async def feed():
            os.write(write_fd, b"X" * (3 << 20) + b"\r\n")
            os.write(write_fd, message)

        writer = asyncio.get_running_loop().run_in_executor(None, lambda: asyncio.run(feed()))
        lines = []
        while not lines or not lines[-1].startswith(b"Content-Length"):
            lines.append(await reader.readline())
        await writer
        assert all(len(line) < 1 << 20 for line in lines)
        assert lines[-1] == message.split(b"\r\n")[0] + b"\r\n"
        os.close(write_fd)


def test_a_stdin_that_is_not_a_pipe_is_still_served(tmp_path):
    requests = tmp_path / "requests"
    requests.write_bytes(b"".join([
        _message({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                  "params": {"processId": None, "rootUri": None, "capabilities": {}}}),
        _message({"jsonrpc": "2.0", "method": "initialized", "params": {}}),
        _message({"jsonrpc": "2.0", "id": 2, "method": "shutdown"}),
        _message({"jsonrpc": "2.0", "method": "exit"}),
    ]))
    with requests.open("rb") as stdin:
        done = subprocess.run([str(HOROVODIZE), "serve"], stdin=stdin, capture_output=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr.decode()
    assert b'"id": 1' in done.stdout and b'"capabilities"' in done.stdout
    assert b'"id": 2' in done.stdout
