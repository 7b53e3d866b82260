"""Golden before/after files: ``tests/fixtures/<CODE>/<case>.py`` is an input program and
``<case>.expected.py`` its whole-file conversion (`horovodize.engine.convert_text`).

Cases named ``negative_*`` are already distributed (or outside the rule): the conversion
leaves them byte-identical and the rule reports nothing. Cases named ``tf_keras_*`` are
converted for the tf_keras Keras target (``--keras-target tf_keras``, TensorFlow >= 2.16), cases
named ``keras3_*`` for the keras3 target (``--keras-target keras3``: Keras 3 itself, TensorFlow
backend, rules/keras3_adapters.py). Every other case must exercise
the rule of its directory; a restriction's directory (``HVD-R5/``) holds programs it still
refuses, whose expected file is the input unchanged. ``pytest --update-goldens`` rewrites the expected files.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from horovodize.codes import WARNING_RULES
from horovodize.engine import analyze, conversion, convert_text
from horovodize.rules.catalogue import RULES
from horovodize.parse.source import Source, apply_edits

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
CASES = sorted(p for p in FIXTURES.glob("*/*.py") if not p.name.endswith(".expected.py"))


def expected_path(case: Path) -> Path:
    return case.with_name(case.stem + ".expected.py")


def read(path: Path) -> str:
    # Bytes, not read_text(): universal newlines would turn the CRLF fixtures into LF.
    return path.read_bytes().decode("utf-8")


def target(case: Path) -> str:
    """The Keras target a case is converted for (rules/keras_target.py)."""
    if case.stem.startswith("keras3_"):
        return "keras3"
    return "tf_keras" if case.stem.startswith("tf_keras_") else "tf.keras"


def case_id(case: Path) -> str:
    return f"{case.parent.name}/{case.stem}"


def parses(text: str) -> None:
    Source(text).check_parses()
    compile(text, "<converted>", "exec")


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_golden(case: Path, update_goldens: bool) -> None:
    before = read(case)
    after = convert_text(before, target(case))
    expected = expected_path(case)
    if update_goldens:
        expected.write_bytes(after.encode("utf-8"))
    assert expected.exists(), f"missing {expected.name}; run pytest --update-goldens"
    assert after == read(expected)


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_golden_exercises_its_rule(case: Path) -> None:
    code = case.parent.name
    before = read(case)
    analysis = conversion(before, keras_target=target(case))     # (what `convert` reads: cell magics' code too)
    reported = {f.code for f in analysis.rule_sites} | {f.code for f in analysis.findings if f.code in WARNING_RULES} \
        | {f.code for f in analysis.findings if f.code.startswith("HVD-")}    # restrictions: tests/fixtures/HVD-R5/...
    if case.stem.startswith("negative_"):
        assert code not in reported
        assert convert_text(before, target(case)) == before
    else:
        assert code in reported, f"{case_id(case)} does not exercise {code}: {sorted(reported)}"


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_expected_is_distributed_and_stable(case: Path) -> None:
    """The expected output parses, compiles, and converting it again changes nothing."""
    expected = read(expected_path(case))
    parses(expected)
    assert convert_text(expected, target(case)) == expected


@pytest.mark.parametrize("case", [c for c in CASES if not c.stem.startswith("negative_")], ids=case_id)
def test_each_quick_fix_alone_parses(case: Path) -> None:
    """Every site's own quick fix (with the shared set-up it needs) gives runnable Python."""
    before = read(case)
    analysis = analyze(before, keras_target=target(case))
    for finding in analysis.rule_sites:
        for fix in [finding.fix, *finding.alternatives]:
            parses(apply_edits(before, analysis.fix_edits(fix)))


def test_crlf_fixtures_are_crlf() -> None:
    crlf = [c for c in CASES if "crlf" in c.stem]
    assert crlf, "a CRLF fixture is expected"
    for case in crlf:
        for path in (case, expected_path(case)):
            data = path.read_bytes()
            assert b"\r\n" in data and b"\n" not in data.replace(b"\r\n", b""), path


@pytest.mark.parametrize("code", sorted(c for c in RULES if c < "HVD100"))
def test_every_rule_has_a_golden_and_a_negative(code: str) -> None:
    cases = [c for c in CASES if c.parent.name == code]
    assert any(not c.stem.startswith("negative_") for c in cases), f"no golden for {code}"
    assert any(c.stem.startswith("negative_") for c in cases), f"no negative case for {code}"
