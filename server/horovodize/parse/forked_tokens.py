"""A large buffer's tokens from a forked child, while this process runs the parser loop.

Nearly half of a whole-buffer parse is the tokenizer (a 10,000-line file: ~140 ms of
~300 with `fast_tokens`), and the tokenizer reads nothing but the lines. A child forked with the lines already in
its memory runs the same tokenizer over them and sends the tokens in batches over a pipe
(marshal, C speed both ways), while this process parses the batches already sent: the two
halves of the parse run on two cores. Same tokenizer, same lines, so the same tokens.

Where ``fork`` is missing (Windows), for small buffers, or when the child fails, the
caller tokenizes in process (`TokensLost` says the stream broke after the parse began).
"""

from __future__ import annotations

import gc
import itertools
import marshal
import os
import select
import signal
import struct
import sys

from parso.python.token import PythonTokenTypes

# Below this many lines the fork (~1 ms for a server of ~100 MiB) and the pipe are not worth it.
MIN_LINES = 3000
BATCH = 4096                               # tokens per message: the parser waits for the first
STALL = 10.0                               # seconds without a message: the child is stuck
_FDS = 4096                                # the child closes the descriptors below this one
TYPES = list(PythonTokenTypes)
_CODE = {id(type_): i for i, type_ in enumerate(TYPES)}
_HEAD = struct.Struct("<I")


class TokensLost(Exception):
    """The child died or sent garbage before the end of the tokens."""


def tokens(tokenizer, lines: list[str]):
    """An iterator over ``tokenizer(lines)`` as plain ``(type, string, start_pos, prefix)``
    tuples, made in a forked child; None where this process should tokenize itself."""
    if len(lines) < MIN_LINES or not sys.platform.startswith("linux"):
        return None         # (no fork on Windows; macOS frameworks are not fork-safe in threads)
    _warm(tokenizer)
    read_end, write_end = os.pipe()
    try:
        pid = os.fork()
    except Exception:       # OSError; a warning made an error on 3.12+ (fork with threads)
        os.close(read_end)
        os.close(write_end)
        return None
    if pid == 0:                                               # the child: never returns
        status = 1
        try:
            gc.disable()        # a collection would touch (and copy) every page of the parent
            # only the pipe stays open: the editor's stdio (or socket) must see the server's
            # end when the server exits, not when this child does
            os.closerange(0, write_end)
            os.closerange(write_end + 1, _FDS)
            _send(tokenizer(lines), write_end)
            status = 0
        finally:
            os._exit(status)    # no atexit, no flush of the parent's (LSP) stdout buffer
    os.close(write_end)
    return Stream(_receive(pid, read_end))


class Stream:
    """The child's tokens: iterating chains its batches in C (a generator between the
    parse loop and each token cost ~20 ms at 10,000 lines); `close` stops and reaps the
    child when the parse leaves early."""

    def __init__(self, batches):
        self._batches = batches
        self._tokens = itertools.chain.from_iterable(batches)

    def __iter__(self):
        return self._tokens

    def __next__(self):
        return next(self._tokens)

    def close(self) -> None:
        self._batches.close()


_WARM_UP = ['f"{x!r:>{w}}" + rb"\\n" + 0x1_0j  # c\n', "\tif (a,\\\n", "  b): pass\n"]
_warmed = False


def _warm(tokenizer) -> None:
    """parso compiles its tokenizer's expressions on first use: once here, not in each child."""
    global _warmed
    if not _warmed:
        for _ in tokenizer(_WARM_UP):
            pass
        _warmed = True


def _send(stream, fd: int) -> None:
    code = _CODE
    while True:
        batch = list(itertools.islice(stream, BATCH))     # (pulled from the tokenizer in C)
        if not batch:
            break
        _write(fd, _message(batch, code))
    _write(fd, _HEAD.pack(0))


def _message(batch: list, code: dict) -> bytes:
    types, strings, positions, prefixes = zip(*batch)
    blob = marshal.dumps((list(map(code.__getitem__, map(id, types))), strings, positions, prefixes))
    return _HEAD.pack(len(blob)) + blob


def _write(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _receive(pid: int, fd: int):
    finished = False
    pending = bytearray()
    try:
        types = TYPES.__getitem__
        while True:
            size, = _HEAD.unpack(_read(fd, pending, _HEAD.size))
            if not size:
                finished = True
                return
            try:
                codes, strings, positions, prefixes = marshal.loads(_read(fd, pending, size))
            except (EOFError, ValueError, TypeError) as error:
                raise TokensLost(f"unreadable tokens: {error}") from None
            yield zip(map(types, codes), strings, positions, prefixes)
    finally:
        os.close(fd)
        if not finished:                    # the parse stopped early, or the child failed
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:
            pass


def _read(fd: int, pending: bytearray, size: int) -> bytes:
    """The next `size` bytes of the pipe (`pending`: what was read beyond the last message)."""
    while len(pending) < size:
        if not select.select([fd], [], [], STALL)[0]:
            raise TokensLost(f"the tokenizer process sent nothing for {STALL} s")
        chunk = os.read(fd, max(size - len(pending), 1 << 16))
        if not chunk:
            raise TokensLost("the tokenizer process ended early")
        pending += chunk
    data = bytes(pending[:size])
    del pending[:size]
    return data
