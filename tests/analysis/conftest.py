import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "server"))

from horovodize import engine


class Result:
    """An analysis with helpers to read findings by code and by source text."""

    def __init__(self, text: str):
        self.text = text
        self.analysis = engine.analyze(text)
        assert self.analysis.internal_errors == [], self.analysis.internal_errors[0]

    @property
    def summary(self):
        return self.analysis.summary

    @property
    def env(self):
        return self.analysis.env

    def codes(self) -> list[str]:
        return [f.code for f in self.analysis.findings]

    def all(self, code: str) -> list:
        return [f for f in self.analysis.findings if f.code == code]

    def one(self, code: str):
        found = self.all(code)
        assert len(found) == 1, (code, [(f.code, self.src(f), f.message) for f in self.analysis.findings])
        return found[0]

    def src(self, f) -> str:
        return self.text[f.start:f.end]

    def at(self, code: str) -> list[str]:
        """The source text each finding of `code` covers."""
        return [self.src(f) for f in self.all(code)]

    def related(self, f) -> list[tuple[str, str]]:
        return [(self.text[r.start:r.end], r.message) for r in f.related]

    def edits_within(self, needle: str) -> list:
        """Conversion edits that start inside the first occurrence of `needle`."""
        start = self.text.index(needle)
        end = start + len(needle)
        return [e for e in self.analysis.conversion_edits() if start <= e.start <= end]

    def converted(self) -> str:
        return self.analysis.converted()


@pytest.fixture
def check():
    def run(text: str) -> Result:
        return Result(textwrap.dedent(text))
    return run
