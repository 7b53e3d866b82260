"""The stdio transport: the client's messages read by the event loop itself.

pygls 2 reads stdin on a thread, one executor round trip per header line and per body,
so each message waits for the GIL between the reader thread and the loop, and the server
cannot tell whether more messages have arrived but not yet been handled. Here the pipe is
read by the event loop (`connect_read_pipe`) into a `StreamReader`, and `pending()` says
whether unread bytes are waiting: the server publishes diagnostics only when no newer
change can be among them (a burst of keystrokes publishes its last version without a
fixed debounce delaying every lone keystroke). pygls's own message loop (`run_async`)
parses and dispatches the messages as before. Where stdin is not a pipe (a file, a
console), pygls's reader is used unchanged and `pending()` is always False.
"""

from __future__ import annotations

import asyncio
import logging
import select
import sys
import threading

from pygls.io_ import StdinAsyncReader, StdoutWriter, run_async

log = logging.getLogger(__name__)

_LIMIT = 1 << 20                           # the longest header line kept (bodies have no limit)
_SKIPPED = b"X-Horovodize-Skipped: line too long\r\n"   # a header the message loop ignores


class PipeReader:
    """readline/readexactly over the loop's own reading of a pipe."""

    def __init__(self, reader: asyncio.StreamReader, fd: int):
        self._reader, self._fd = reader, fd

    async def readline(self) -> bytes:
        try:
            return await self._reader.readline()
        except ValueError:            # a line over the limit (no header is): StreamReader dropped it
            log.warning("skipped a line of more than %d bytes from the client", _LIMIT)
            return _SKIPPED

    async def readexactly(self, n: int) -> bytes:
        try:
            return await self._reader.readexactly(n)
        except asyncio.IncompleteReadError as e:      # the client went away mid-message
            return e.partial

    def pending(self) -> bool:
        """Bytes the server has received or could read now but has not handled yet."""
        if len(self._reader._buffer):                 # (StreamReader has no public size)
            return True
        try:
            return bool(select.select([self._fd], [], [], 0)[0]) and not self._reader.at_eof()
        except (OSError, ValueError):
            return False


async def _pipe_reader(stdin) -> PipeReader | None:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=_LIMIT)
    try:
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), stdin)
    except (ValueError, OSError, NotImplementedError):   # not a pipe, socket or tty; or no support
        return None
    return PipeReader(reader, stdin.fileno())


def start_io(server) -> None:
    """`LanguageServer.start_io` over stdin/stdout, with `server.input_pending` set."""
    server._stop_event = threading.Event()                              # (as pygls's start_io sets it)
    server.protocol.set_writer(StdoutWriter(sys.stdout.buffer))

    async def main():
        reader = await _pipe_reader(sys.stdin.buffer)
        if reader is None:
            log.info("stdin is not a pipe: reading it on a thread")
            reader = StdinAsyncReader(sys.stdin.buffer, server.thread_pool)
        else:
            server.input_pending = reader.pending
        await run_async(stop_event=server._stop_event, reader=reader, protocol=server.protocol,
                        logger=log, error_handler=server.report_server_error)

    try:
        asyncio.run(main())
    except BrokenPipeError:
        log.error("the connection to the client is lost; shutting down")
    except (KeyboardInterrupt, SystemExit):
        pass
    finally:
        server.shutdown()
