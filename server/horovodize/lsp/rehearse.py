"""The command ``horovodize.rehearse`` ("Rehearse on 2 CPU ranks"): ``horovodize verify`` on
the saved file, in a daemon thread, from the file's directory, with ``$/progress`` reports; the result is the check
table (``{"text", "checks", "ok"}``) and each failed check that points to a line of the file
becomes a diagnostic of source ``horovodize-rehearsal``, kept with the file's own
diagnostics until the next rehearsal or the file is closed.

Arguments: ``[uri]`` or ``[{"uri", "np"?, "hosts"?, "sets"?, "asIs"?, "coldCache"?, "timeout"?,
"args"?}]`` (``hosts`` 2: two simulated hosts without a shared filesystem, `verify --hosts`). The Horovod interpreter is ``initializationOptions.python`` (else
``$HOROVODIZE_HVD_PYTHON``). The rehearsal itself lives in `app.verify`.

Requires: app.verify, app.verify_checks, lsp.server, lsp.handlers.
"""

from __future__ import annotations

import asyncio
import os
import threading
import uuid

from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams

from ..app import verify, verify_checks
from .handlers import _display, _uri_arg
from .server import SERVER as server
from .server import HorovodizeServer

REHEARSE = "horovodize.rehearse"
SOURCE = "horovodize-rehearsal"


def parse_args(args) -> dict:
    """The command's arguments as `verify.verify` keywords (plus ``uri``); `JsonRpcInvalidParams`
    when they are not what the command takes."""
    args = list(args)
    first = args[0] if len(args) == 1 else None
    uri = _uri_arg(args)
    if uri is None:
        raise JsonRpcInvalidParams(f"{REHEARSE} expects [uri] or [{{\"uri\": uri, \"np\"?: int, \"hosts\"?: int, \"sets\"?: "
                                   "[\"NAME=VALUE\"], \"asIs\"?: bool, \"coldCache\"?: bool, \"timeout\"?: seconds}]")
    opts = first if isinstance(first, dict) else {}
    out = {"uri": uri, "np": opts.get("np", 2), "hosts": opts.get("hosts", 1), "sets": opts.get("sets", []), "as_is": opts.get("asIs", False),
           "cold_cache": opts.get("coldCache", False), "timeout": opts.get("timeout", verify.DEFAULT_TIMEOUT),
           "script_args": opts.get("args", [])}
    for key in ("np", "hosts"):
        if not isinstance(out[key], int) or isinstance(out[key], bool) or out[key] < 1:
            raise JsonRpcInvalidParams(f"{REHEARSE}: `{key}` must be a positive integer")
    for key in ("sets", "script_args"):
        if not isinstance(out[key], list) or not all(isinstance(s, str) for s in out[key]):
            raise JsonRpcInvalidParams(f"{REHEARSE}: `{'args' if key == 'script_args' else key}` must be a list of strings")
    if not isinstance(out["timeout"], (int, float)) or isinstance(out["timeout"], bool) or out["timeout"] <= 0:
        raise JsonRpcInvalidParams(f"{REHEARSE}: `timeout` must be a positive number of seconds")
    for key in ("as_is", "cold_cache"):
        if not isinstance(out[key], bool):
            raise JsonRpcInvalidParams(f"{REHEARSE}: `{'asIs' if key == 'as_is' else 'coldCache'}` must be a boolean")
    return out


def diagnostics(checks, path: str) -> list[types.Diagnostic]:
    out = []
    for c in checks:
        if c.status == verify_checks.FAIL and c.line and c.path == path:
            pos = types.Position(line=c.line - 1, character=0)
            out.append(types.Diagnostic(range=types.Range(start=pos, end=types.Position(line=c.line, character=0)),
                                        message=f"rehearsal: {c.check}: {c.reason}", source=SOURCE,
                                        severity=types.DiagnosticSeverity.Error))
    return out


@server.command(REHEARSE)
async def rehearse(ls: HorovodizeServer, *args):
    opts = parse_args(args)
    uri = opts.pop("uri")
    path = _display(uri)
    if not uri.startswith("file:"):
        raise JsonRpcInvalidParams(f"{REHEARSE}: {uri} is not a file on disk")
    token = f"horovodize-rehearse-{uuid.uuid4().hex[:8]}"
    window = getattr(ls.client_capabilities, "window", None)
    progress = bool(getattr(window, "work_done_progress", False))
    if progress:
        try:
            await ls.work_done_progress.create_async(token)
        except Exception:  # noqa: BLE001  (the client refused server-initiated progress)
            progress = False
    if progress:
        ls.work_done_progress.begin(token, types.WorkDoneProgressBegin(
            title=f"Rehearse on {opts['np']} CPU ranks", message="starting", cancellable=False))
    loop = asyncio.get_running_loop()
    done: asyncio.Future = loop.create_future()

    def report(message: str) -> None:
        if progress:
            loop.call_soon_threadsafe(ls.work_done_progress.report, token,
                                      types.WorkDoneProgressReport(message=message))

    def work():
        try:
            result = verify.verify(path, python=getattr(ls.options, "python", None), progress=report,
                                   cwd=os.path.dirname(path), **opts)
        except Exception as e:  # noqa: BLE001  (VerifyError: the one-line reason; a bug must not take the server down)
            result = e
        loop.call_soon_threadsafe(lambda: done.done() or done.set_result(result))

    threading.Thread(target=work, name="horovodize-rehearsal", daemon=True).start()
    try:
        result = await done
    finally:
        if progress:
            ls.work_done_progress.end(token, types.WorkDoneProgressEnd(message="done"))
    if isinstance(result, Exception):
        ls.show(f"{path}: rehearsal not run: {result}", types.MessageType.Error)
        return {"ok": False, "text": f"rehearsal not run: {result}", "checks": []}
    ls.rehearsal[uri] = diagnostics(result.checks, path)
    entry = ls.analyses.get(uri)
    if ls.pull_diagnostics:
        ls.protocol.send_request(types.WORKSPACE_DIAGNOSTIC_REFRESH, None)
    elif entry is not None:
        ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
            uri=uri, version=entry.version, diagnostics=entry.diagnostics + ls.rehearsal[uri]))
    else:
        ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=ls.rehearsal[uri]))
    return {"ok": result.ok, "text": result.table(), "checks": [c.to_json() for c in result.checks]}
