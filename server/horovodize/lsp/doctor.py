"""The stack doctor in the language server: ``horovodize doctor`` run once for the editor's
interpreter (``initializationOptions.python``), so the editor can say whether the converted
program can run at all (for example Horovod 0.28 next to TensorFlow 2.16).

The check runs in a daemon thread: it starts ``horovodrun --check-build`` in that
interpreter, which loads TensorFlow (seconds), and must neither hold up analyses nor keep
the server alive at exit. Nothing here imports TensorFlow into the server.

* notification ``horovodize/doctor`` (server -> client) when the check is done:
  the report (``horovodize doctor --format json``) plus ``text`` (the rendered report);
* request ``horovodize/doctor`` (``{}`` or null) -> the same, waiting for the check; null
  when the client passed no interpreter.
"""

from __future__ import annotations

import asyncio
import logging
import threading

from ..app import doctor
from .server import SERVER as server
from .server import HorovodizeServer

log = logging.getLogger(__name__)

DOCTOR = "horovodize/doctor"
_runs: dict[int, asyncio.Future] = {}     # id(server) -> its one doctor run


def payload(report: doctor.Report) -> dict:
    return dict(report.to_json(), text=doctor.render(report))


def start(ls: HorovodizeServer, python: str) -> asyncio.Future:
    loop = asyncio.get_running_loop()
    fut = loop.create_future()

    def work():
        try:
            result = payload(doctor.inspect(python, keras_target=ls.options.keras_target))
        except Exception as e:      # a bug must not take the server down
            log.exception("doctor for %s failed", python)
            result = e
        loop.call_soon_threadsafe(_finish, ls, fut, result)

    threading.Thread(target=work, name="horovodize-doctor", daemon=True).start()
    return fut


def _finish(ls: HorovodizeServer, fut: asyncio.Future, result) -> None:
    if isinstance(result, Exception):
        fut.set_exception(result)
        return
    fut.set_result(result)
    log.info("doctor: %s", result["summary"])
    ls.protocol.notify(DOCTOR, result)


def on_initialized(ls: HorovodizeServer) -> None:
    """At ``initialized`` (`handlers`): the check starts for the editor's interpreter."""
    python = getattr(ls.options, "python", None)
    if python:
        _runs[id(ls)] = start(ls, python)


@server.feature(DOCTOR)
async def doctor_request(ls: HorovodizeServer, params):
    run = _runs.get(id(ls))
    return None if run is None else await asyncio.shield(run)
