"""``horovodize serve``: the language server started on stdio, TCP or a WebSocket, with
every feature registered (`handlers`, `doctor`) on the one `server.SERVER`.

Requires: lsp.server, lsp.handlers, lsp.doctor, lsp.rehearse, lsp.launch, lsp.stdio, errors.
"""

from __future__ import annotations

import logging
import os
import sys

from .. import __version__, native
from ..errors import UserError
from . import (
    doctor,  # noqa: F401  (the stack doctor's notification and request)
    handlers,  # noqa: F401  (registers the features on SERVER)
    launch,  # noqa: F401  (the horovodize.launchRecipe command)
    rehearse,  # noqa: F401  (the horovodize.rehearse command)
    stdio,
)
from .server import SERVER

log = logging.getLogger(__name__)


def _address(value: str, flag: str) -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit():
        raise UserError(f"{flag} expects HOST:PORT, got {value!r}")
    return host or "127.0.0.1", int(port)


def run_server(args) -> int:
    """``horovodize serve``: stdio (default), TCP or WebSocket."""

    level = logging.INFO if args.log_file else logging.WARNING
    try:
        handler = logging.FileHandler(args.log_file, encoding="utf-8") if args.log_file else logging.StreamHandler(sys.stderr)
    except OSError as e:
        raise UserError(f"{args.log_file}: cannot write the log: {e.strerror or e}")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=level, handlers=[handler], force=True)
    log.info("horovodize %s: %s", __version__, native.status())
    SERVER.warm_up()
    if args.tcp:
        SERVER.start_tcp(*_address(args.tcp, "--tcp"))
    elif args.ws:
        try:
            import websockets  # noqa: F401
        except ImportError:
            raise UserError("--ws needs the 'websockets' package: pip install 'horovodize[ws]'")
        SERVER.start_ws(*_address(args.ws, "--ws"))
    else:
        stdio.start_io(SERVER)
    # `exit` answered: leave now. A normal interpreter exit would join the analysis thread,
    # and with it wait for an analysis of a large file that nobody will read.
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):          # closed with the connection
            pass
    os._exit(0)
