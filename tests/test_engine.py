"""Whole-file conversion properties over every program the tests know (golden inputs, the
example, the Horovod-tier programs): edits never overlap, text outside the edits is
byte-identical, the output parses, converting twice is converting once, CRLF stays CRLF,
exactly one Horovod set-up of the right flavour, and analysis never raises on broken input.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from horovodize.engine import _nested_guards, analyze, convert_text
from horovodize.parse.source import Edit, ParseError, Source, apply_edits

ROOT = Path(__file__).resolve().parent.parent
PROGRAMS = sorted(
    [p for p in (ROOT / "tests" / "fixtures").glob("*/*.py") if not p.name.endswith(".expected.py")]
    + list((ROOT / "examples").glob("*.py"))
    + list((ROOT / "tests" / "horovod" / "programs").glob("*.py"))
)


def read(path: Path) -> str:
    return path.read_bytes().decode("utf-8")


def program_id(path: Path) -> str:
    return str(path.relative_to(ROOT))


def hints(analysis) -> frozenset:
    """Codes that stay quick fixes out of the whole-file fix in a program distributed by hand."""
    return analysis.facts.hint_codes() if analysis.facts is not None else frozenset()


def all_rule_edits(text: str) -> list[Edit]:
    """Every rule site's primary fix and the set-up, before any de-duplication (hints aside,
    and a rank-0 guard inside the block of another guard that implies it: the outer one holds it)."""
    analysis = analyze(text)
    if analysis.blocking_notes():
        return []           # all or nothing: a point left wrong keeps every edit out
    edits = list(analysis.setup.fix.edits) if analysis.setup else []
    inner = _nested_guards(analysis.rule_sites)
    for f in analysis.rule_sites:
        if f is not analysis.setup and f.code not in hints(analysis) and id(f) not in inner:
            edits += f.fix.edits
    return edits


@pytest.fixture(params=PROGRAMS, ids=program_id)
def program(request) -> str:
    return read(request.param)


def test_corpus_is_not_empty():
    assert len(PROGRAMS) > 40


def test_rule_edits_never_overlap(program):
    edits = sorted(set(all_rule_edits(program)), key=lambda e: (e.start, e.end))
    for a, b in zip(edits, edits[1:]):
        assert b.start >= a.end, f"{a} overlaps {b}"


def test_conversion_keeps_every_edit(program):
    """No site's edit is dropped by the engine's overlap filter."""
    analysis = analyze(program)
    assert set(analysis.conversion_edits()) == set(all_rule_edits(program)) if analysis.rule_sites else True


def test_text_outside_the_edits_is_byte_identical(program):
    analysis = analyze(program)
    edits = analysis.conversion_edits()
    out = analysis.converted()
    pos_in = pos_out = 0
    for e in sorted(edits, key=lambda e: (e.start, e.end)):
        kept = program[pos_in:e.start]
        assert out[pos_out:pos_out + len(kept)] == kept
        pos_out += len(kept)
        assert out[pos_out:pos_out + len(e.new_text)] == e.new_text
        pos_out += len(e.new_text)
        pos_in = e.end
    assert out[pos_out:] == program[pos_in:]


def test_edits_are_small(program):
    """Minimal edits: nothing is reprinted; a replaced range is one expression or one line."""
    for e in all_rule_edits(program):
        removed = program[e.start:e.end]
        one_line = removed.count("\n") <= 1
        rewraps = removed in e.new_text   # an argument rewritten around its own text
        assert one_line or rewraps, e


def test_output_parses_and_compiles(program):
    out = convert_text(program)
    Source(out).check_parses()
    compile(out, "<converted>", "exec")


def test_convert_twice_is_convert_once(program):
    once = convert_text(program)
    assert convert_text(once) == once
    if analyze(program).refused:
        return          # (all or nothing: the refused program is left as it is, its sites still reported)
    again = analyze(once)
    assert [f for f in again.rule_sites if f.code not in hints(again)] == []


def test_comments_survive(program):
    out = convert_text(program)
    for comment in re.findall(r"#[^\r\n]*", program):
        assert comment in out


def test_one_horovod_import_and_one_init(program):
    out = convert_text(program)
    if out == program and "import horovod" not in program:
        return  # nothing to convert
    imports = re.findall(r"^\s*import horovod\.tensorflow(?:\.keras)? as (\w+)\s*$", out, re.M)
    keras = re.findall(r"^\s*import horovod\.tensorflow\.keras as (\w+)\s*$", out, re.M)
    if keras and len(imports) == 2:   # + horovod.tensorflow for a Keras train_step's own tape
        # or a shared value, or the variables of a read of rank 0's file (rules/read_back.py)
        assert re.search(r"\.DistributedGradientTape\(|\.broadcast_object\(|\.broadcast_variables\(", out), imports
        imports = keras
    assert len(imports) == 1, imports
    assert len(re.findall(rf"\b{imports[0]}\.init\(\)", out)) == 1      # in the program's own alias


def test_keras_flavour_for_fit_programs_only(program):
    analysis = analyze(program)
    if analysis.setup is None or analysis.refused:
        return
    out = convert_text(program)
    flavour = re.search(r"^import (horovod\.tensorflow(?:\.keras)?) as hvd\r?$", out, re.M).group(1)
    if analysis.keras_target == "keras3":     # Keras 3: Horovod's TensorFlow ops only (docs/keras3.md)
        assert flavour == "horovod.tensorflow" and "horovod.tensorflow.keras" not in out
        # (the adapters' docstrings name the API they stand for; nothing calls Horovod's Keras layer)
        assert not re.search(r"\bhvd\.(callbacks\.\w+|DistributedOptimizer|DistributedGradientTape)\(", out)
        return
    if analysis.summary.kinds in ({"Keras fit"}, {"Keras fit", "GradientTape"}):
        assert flavour == "horovod.tensorflow.keras"      # (with horovod.tensorflow beside it for a tape)
    else:
        assert flavour == "horovod.tensorflow"
    if "hvd.callbacks." in out or "hvd.DistributedGradientTape" in out or "hvd.broadcast_variables" in out:
        keras_api = "hvd.callbacks." in out
        tf_api = "hvd.DistributedGradientTape" in out or "hvd.broadcast_variables" in out
        assert not (keras_api and tf_api), "mixed Keras/TF Horovod API in one file"
        assert (flavour == "horovod.tensorflow.keras") == keras_api


def test_crlf_stays_crlf(program):
    crlf = program.replace("\r\n", "\n").replace("\n", "\r\n")
    out = convert_text(crlf)
    assert "\n" not in out.replace("\r\n", "")
    assert out.replace("\r\n", "\n") == convert_text(program.replace("\r\n", "\n"))


def test_tabs_stay_tabs():
    text = "import tensorflow as tf\n\n\ndef f(ds, opt):\n\tfor x in ds:\n\t\twith tf.GradientTape() as tape:\n\t\t\tl = x\n\t\tprint(l)\n"
    out = convert_text(text)
    assert "\tfor gpu" not in out and "for gpu in gpus:\n\ttf.config" in out
    assert "\t\ttape = hvd.DistributedGradientTape(tape)\n" in out
    assert not re.search(r"^ +\S", out, re.M)


def test_quick_fix_alone_carries_the_setup_once():
    text = "import tensorflow as tf\nprint(1)\nprint(2)\n"
    analysis = analyze(text)
    first = analysis.rule_sites[1]
    alone = apply_edits(text, analysis.fix_edits(first.fix))
    assert alone.count("hvd.init()") == 1
    assert alone.count("if hvd.rank() == 0:") == 1
    Source(alone).check_parses()


def test_select_filters_findings():
    text = "import tensorflow as tf\nprint(1)\nopt = tf.keras.optimizers.Adam()\n"
    assert {f.code for f in analyze(text, {"HVD030"}).findings} == {"HVD030"}


def test_already_distributed_file_is_left_alone():
    text = (ROOT / "tests" / "fixtures" / "HVD001" / "negative_already_converted.py").read_text()
    analysis = analyze(text)
    assert analysis.rule_sites == [] and analysis.setup is None
    assert analysis.distributed


# -- broken input ------------------------------------------------------------------------
BROKEN = [
    "",
    "\n\n",
    "import tensorflow as tf\ndef f(:\n    pass\n",
    "import tensorflow as tf\nopt = tf.keras.optimizers.Adam(\n",
    "import tensorflow as tf\nwith tf.GradientTape() as tape\n    loss = 1\n",
    "import tensorflow as tf\nmodel.fit(x, y, callbacks=[\n",
    "import tensorflow as tf\n\tif x:\n  print(1)\n",
    "import tensorflow as tf\nprint('unterminated\n",
    'import tensorflow as tf\nx = """never closed\n',
    "import tensorflow as\n",
    "from tensorflow import\n",
    "import tensorflow as tf\nclass (tf.keras.Model):\n    pass\n",
    "import tensorflow as tf\nopt = tf.keras.optimizers.Adam()\nopt.apply_gradients(zip(g, v)\nprint(1)\n",
    "import tensorflow as tf\nfor x in :\n    opt.apply_gradients(x)\n",
    "import tensorflow as tf\n@\ndef f(): pass\n",
    "import tensorflow as tf\nx = (yield)\nreturn 5\n",
    "\x00\x01import tensorflow",
    "import tensorflow as tf\r\nprint(1\r\n",
    "import tensorflow as tf\nmatch x:\n    case 1:\n        print(1)\n",
    "import tensorflow as tf\nasync def f():\n    async with tf.GradientTape() as t:\n        await g()\n",
    "😀 = 1\nimport tensorflow as tf\n",
]


@pytest.mark.parametrize("text", BROKEN)
def test_analysis_never_raises_on_broken_input(text):
    analysis = analyze(text)
    assert analysis.internal_errors == []
    for f in analysis.findings:
        assert 0 <= f.start <= f.end <= len(text)
        for fix in ([f.fix] if f.fix else []) + f.alternatives:
            apply_edits(text, analysis.fix_edits(fix))


@pytest.mark.parametrize("text", [t for t in BROKEN if t.strip() and "match" not in t and "async" not in t])
def test_convert_refuses_text_that_does_not_parse(text):
    try:
        Source(text).check_parses()
    except ParseError:
        with pytest.raises(ParseError) as err:
            convert_text(text)
        assert err.value.line >= 1 and err.value.column >= 1
    else:
        convert_text(text)


def test_analysis_never_raises_on_truncated_programs(program):
    """Every program cut at a few points (mid-token, mid-block) is still analysed."""
    for cut in sorted({len(program) * k // 7 for k in range(1, 7)}):
        analysis = analyze(program[:cut])
        assert analysis.internal_errors == [], program[:cut][-80:]


MIXED = """\
import tensorflow as tf


def pretrain(x, y):
    pre = tf.keras.Sequential([tf.keras.layers.Dense(1)])
    pre.compile(optimizer="adam", loss="mse")
    pre.fit(x, y, epochs=1)


def train(ds):
    model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
    opt = tf.keras.optimizers.Adam(0.01)
    for x, y in ds:
        with tf.GradientTape() as tape:
            loss = model(x)
        opt.apply_gradients(zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables))
"""


def test_mixed_tape_and_fit_program_uses_an_api_its_horovod_module_has():
    """horovod.tensorflow has no `callbacks`, horovod.tensorflow.keras no DistributedGradientTape."""
    out = convert_text(MIXED)
    compile(out, "<converted>", "exec")
    lines = out.splitlines()
    assert "import horovod.tensorflow.keras as hvd" in lines and "import horovod.tensorflow as hvd_tf" in lines
    assert "hvd.callbacks.BroadcastGlobalVariablesCallback(0)" in out
    assert "tape = hvd_tf.DistributedGradientTape(tape)" in out and "hvd_tf.broadcast_variables(" in out
    assert "hvd.DistributedGradientTape" not in out and "hvd.broadcast_variables" not in out
    assert "opt = hvd.DistributedOptimizer(opt)" not in out      # the tape averages that loop's gradients


def test_an_analysis_is_freed_by_reference_counting():
    """The language server opens a file with an analysis like this one, then replaces it at
    the first edit; the server freezes the collector's generations, so an analysis held in
    a reference cycle would stay in memory until a full collection (tens of MiB at 50,000
    lines). None of its objects may be cyclic garbage."""
    import gc

    text = (Path(__file__).parent.parent / "examples" / "train_tape.py").read_text(encoding="utf-8")
    source = Source(text)
    gc.collect()
    was = gc.isenabled()
    gc.disable()
    try:
        analysis = analyze(text, module=source.module)
        assert analysis.findings
        del analysis
        gc.set_debug(gc.DEBUG_SAVEALL)
        gc.collect()
        ours = [type(o).__name__ for o in gc.garbage
                if type(o).__module__.startswith("horovodize")]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        if was:
            gc.enable()
    assert ours == []


def test_a_rule_that_fails_refuses_the_whole_conversion(monkeypatch):
    """All or nothing (contract point 8): a rule module that raises leaves its part of the
    program unconverted, so the rest is not applied alone; the report says why."""
    from horovodize.rules import rank0_guards
    from horovodize.engine import conversion

    def broken(ctx):
        raise RuntimeError("simulated rule failure")
        yield

    program = ("import tensorflow as tf\nmodel = tf.keras.Sequential([tf.keras.layers.Dense(1)])\n"
               "model.compile(optimizer=tf.keras.optimizers.SGD(0.1), loss='mse')\n"
               "model.fit(tf.zeros((64, 2)), tf.zeros((64, 1)), epochs=4)\nmodel.save('m.keras')\n")
    assert not conversion(program).refused
    monkeypatch.setattr(rank0_guards, "check", broken)
    analysis = conversion(program)
    assert analysis.refused and analysis.converted() == program
    [(code, line, message)] = analysis.refusal_reasons()
    assert code == "point 8" and "RuntimeError: simulated rule failure" in message and "please report it" in message
