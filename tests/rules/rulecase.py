"""Helpers for the inline before/after rule tests (LibCST's ``assertCodemod`` shape).

``assert_rule(before, after, code)`` applies the primary fix of every site of `code` —
only those edits, not the shared set-up — and compares with `after`; it also checks that
each site's own quick fix (``analysis.fix_edits(fix)``, set-up included) gives Python that
compiles. ``assert_no_rule(text, code)`` is the negative case: no site, text unchanged.
"""

from __future__ import annotations

from textwrap import dedent

from horovodize.engine import Analysis, analyze, convert_text
from horovodize.parse.source import Edit, Source, apply_edits


def src(text: str) -> str:
    return dedent(text).lstrip("\n")


def merged(edits: list[Edit]) -> list[Edit]:
    """Sort stably, drop exact duplicates (two sites may share an edit), refuse overlaps."""
    out: list[Edit] = []
    for e in sorted(set(edits), key=lambda e: (e.start, e.end, edits.index(e))):
        assert not out or e.start >= out[-1].end, f"overlapping edits {out[-1]} and {e}"
        out.append(e)
    return out


def sites(analysis: Analysis, code: str):
    return [f for f in analysis.rule_sites if f.code == code]


def rule_output(text: str, code: str) -> str:
    analysis = analyze(text)
    return apply_edits(text, merged([e for f in sites(analysis, code) for e in f.fix.edits]))


def compiles(text: str) -> None:
    Source(text).check_parses()
    compile(text, "<converted>", "exec")


def assert_quick_fixes_compile(text: str) -> None:
    analysis = analyze(text)
    for finding in analysis.rule_sites:
        for fix in [finding.fix, *finding.alternatives]:
            compiles(apply_edits(text, analysis.fix_edits(fix)))


def assert_rule(before: str, after: str, code: str) -> None:
    before, after = src(before), src(after)
    assert rule_output(before, code) == after
    assert_quick_fixes_compile(before)
    converted = convert_text(before)
    compiles(converted)
    assert convert_text(converted) == converted


def assert_no_rule(text: str, code: str) -> None:
    text = src(text)
    assert not sites(analyze(text), code)
    assert rule_output(text, code) == text


def assert_converts(before: str, after: str) -> None:
    """Whole-file conversion (set-up included)."""
    before, after = src(before), src(after)
    assert convert_text(before) == after
    assert convert_text(after) == after


def assert_unchanged(text: str) -> None:
    text = src(text)
    assert convert_text(text) == text


SETUP_TF = """\
import horovod.tensorflow as hvd
hvd.init()
gpus = tf.config.experimental.list_physical_devices('GPU')
for gpu in gpus:
    tf.config.experimental.set_memory_growth(gpu, True)
if gpus:
    tf.config.experimental.set_visible_devices(gpus[hvd.local_rank()], 'GPU')
"""
SETUP_KERAS = SETUP_TF.replace("import horovod.tensorflow as hvd", "import horovod.tensorflow.keras as hvd")
