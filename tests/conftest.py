"""Shared pytest set-up: the ``--update-goldens`` option of the golden fixture tests.

``pytest tests/rules/test_goldens.py --update-goldens`` rewrites every
``tests/fixtures/<CODE>/<case>.expected.py`` from the current conversion (bytes as
produced: CRLF stays CRLF). Review the diff before committing it.
"""

from __future__ import annotations

import pytest

# Fixture programs are inputs, never tests.
collect_ignore_glob = ["fixtures/*"]


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-goldens",
        action="store_true",
        default=False,
        help="rewrite tests/fixtures/**/<case>.expected.py from the current conversion",
    )


@pytest.fixture
def update_goldens(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--update-goldens"))
