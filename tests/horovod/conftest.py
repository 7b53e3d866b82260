"""Fixtures for the `horovod` tier: the Horovod venv (fail, never skip, when missing)."""

from __future__ import annotations

import hvd_harness
import pytest


def _require(fn):
    try:
        return fn(), None
    except RuntimeError as e:
        return None, str(e)


@pytest.fixture(scope="session")
def hvd_env():
    value, error = _require(hvd_harness.require_hvd_env)
    if error:
        pytest.fail(error, pytrace=False)
    return value


@pytest.fixture(scope="session")
def horovodize_exe():
    value, error = _require(hvd_harness.horovodize_cli)
    if error:
        pytest.fail(error, pytrace=False)
    return value
