"""The stack doctor in the server: ``initializationOptions.python`` makes the server run
``horovodize doctor`` once for that interpreter, push ``horovodize/doctor`` when done and
answer the ``horovodize/doctor`` request with the same report. The interpreter here is the
project venv's own Python (real, and without TensorFlow or Horovod)."""

from __future__ import annotations

import asyncio
import sys

import pytest


def as_dict(value):
    if value is None or isinstance(value, dict):
        return value
    return {k: as_dict(v) if hasattr(v, "_fields") else v for k, v in value._asdict().items()}


@pytest.mark.parametrize("client", [{"options": {"python": sys.executable}}], indirect=True)
async def test_doctor_runs_for_the_editor_interpreter(client):
    pushed = []
    client.feature("horovodize/doctor")(lambda params: pushed.append(params))
    report = as_dict(await asyncio.wait_for(client.protocol.send_request_async("horovodize/doctor", {}), 120))
    assert report["verdict"] == "not ready" and report["ready"] is False
    assert report["python_version"] is not None
    assert report["summary"] == "not ready: TensorFlow is not installed (+1 more)"
    assert report["text"].startswith("horovodize doctor: ")
    assert "Horovod is not installed" in report["text"]
    assert "HOROVOD_WITH_TENSORFLOW=1" in report["text"]
    for _ in range(100):
        if pushed:
            break
        await asyncio.sleep(0.05)
    assert pushed, "no horovodize/doctor notification"
    assert as_dict(pushed[0])["summary"] == report["summary"]


async def test_no_interpreter_no_doctor(client):
    assert await client.protocol.send_request_async("horovodize/doctor", {}) is None
