"""Error tolerance: a half-typed buffer still yields what parso can recover, and nothing in
the analysis raises (or records an internal error) on any input."""

from horovodize import engine
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .programs import ALL, KITCHEN_SINK, TAPE_SPLIT

TAPE_FUNCTION = """
def train_step(x, y):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(model(x) - y))
    grads = tape.gradient(loss, model.trainable_variables)
    opt.apply_gradients(zip(grads, model.trainable_variables))
"""


def test_unclosed_bracket_before_the_loop(check):
    r = check("import tensorflow as tf\nmodel = tf.keras.Sequential([\nopt = tf.keras.optimizers.Adam(0.01)\n" + TAPE_FUNCTION)
    assert r.at("HVD100") == ["tf.GradientTape() as tape"]


def test_missing_colon_after_the_loop(check):
    r = check("import tensorflow as tf\nmodel = tf.keras.Sequential([])\nopt = tf.keras.optimizers.Adam(0.01)\n"
              + TAPE_FUNCTION + "\nfor x, y in ds\n    train_step(x, y)\n")
    assert r.at("HVD100") == ["tf.GradientTape() as tape"]
    assert "HVD021" in r.codes()


def test_half_typed_call_inside_the_step(check):
    r = check("import tensorflow as tf\nmodel = tf.keras.Sequential([])\nopt = tf.keras.optimizers.Adam(0.01)\n"
              + TAPE_FUNCTION.replace("    grads = tape.gradient(loss, model.trainable_variables)\n",
                                      "    grads = tape.gradient(loss, model.\n"))
    assert r.at("HVD100") == ["tf.GradientTape() as tape"]


def test_half_typed_with_statement(check):
    r = check("import tensorflow as tf\ndef step():\n    with tf.GradientTape() as\n\ndef other():\n"
              "    with tf.GradientTape() as tape:\n        pass\n")
    assert r.at("HVD100") == ["tf.GradientTape() as tape"]


def test_broken_split_program_keeps_its_interprocedural_loop(check):
    broken = TAPE_SPLIT.replace("def loss_fn(model, x, y):", "def loss_fn(model, x, y")
    r = check(broken)
    assert r.at("HVD100") == ["tf.GradientTape() as tape"]
    assert r.related(r.one("HVD100"))[0][0] == "for x, y in dataset:"


def test_every_restriction_at_once(check):
    r = check(KITCHEN_SINK)
    assert {"HVD-R3", "HVD-R4", "HVD-R5", "HVD-R6", "HVD-R7", "HVD-R8", "HVD-R10", "HVD092", "HVD-T5",
            "HVD-T4"} <= set(r.codes())      # (the tf.distribute strategy is HVD092, no longer HVD-T2)


def test_degenerate_inputs(check):
    for text in ["", "\n", "import", "import tensorflow as", "from tensorflow import (", "class (tf.keras.Model):",
                 "def (:\n", "with tf.GradientTape() as tape:", "import tensorflow as tf\n@\n",
                 "import tensorflow as tf\nx = [" * 50, "import tensorflow as tf\n" + "(" * 200,
                 "import tensorflow as tf\n\x00\ufeff\u2028", "import tensorflow as tf\r\nclass A(tf.keras.Model)\r\n  def f(self"]:
        check(text)


# -- the property ----------------------------------------------------------------------------
CORPUS = sorted(ALL.values()) + [KITCHEN_SINK]
TOKENS = ["(", ")", "[", "]", ":", ",", ".", "=", "\n", "    ", "def ", "class ", "with ", " as ", "for ", "if ",
          "lambda", "@", "\\", '"', "'''", "#", "tf.", "GradientTape()", "fit(", "apply_gradients", "global ", "self.",
          "import ", "else:", "except:", "return ", "yield ", "*", "**", "async ", "await ", ":=", "\t", "\x0c"]


@st.composite
def mutated_programs(draw):
    text = draw(st.sampled_from(CORPUS))
    for _ in range(draw(st.integers(0, 4))):
        action = draw(st.sampled_from(["truncate", "delete", "insert", "duplicate"]))
        if not text:
            break
        i = draw(st.integers(0, len(text)))
        if action == "truncate":
            text = text[:i]
        elif action == "delete":
            j = draw(st.integers(i, min(len(text), i + 40)))
            text = text[:i] + text[j:]
        elif action == "insert":
            piece = draw(st.sampled_from(TOKENS) | st.text(max_size=6))
            text = text[:i] + piece + text[i:]
        else:
            j = draw(st.integers(i, min(len(text), i + 80)))
            text = text[:j] + text[i:j] + text[j:]
    return text


@settings(max_examples=400, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(mutated_programs())
def test_analysis_never_raises_on_mutated_programs(text):
    analysis = engine.analyze(text)
    assert analysis.internal_errors == [], analysis.internal_errors[0]
    for f in analysis.findings:
        assert 0 <= f.start <= f.end <= len(text)
        for rel in f.related:
            assert 0 <= rel.start <= rel.end <= len(text)


@settings(max_examples=150, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(TOKENS + list("abtfxyz0_ ")), max_size=60).map(lambda s: "import tensorflow as tf\n" + "".join(s)))
def test_analysis_never_raises_on_token_soup(text):
    assert engine.analyze(text).internal_errors == []
