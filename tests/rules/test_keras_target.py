"""Contract point 11 (HVD090) and no collective under XLA (HVD091): the import rewrite to
the Keras target for each import form and both targets, the refusal reason of each
Keras-3-only API (goldens in tests/fixtures/HVD090/blocked_*), the jit_compile removal.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from horovodize import cli
from horovodize.app import report
from horovodize.engine import analyze, conversion, convert_text

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"

# What no stack runs under Horovod: refused on the keras3 target too (the Keras-3-only API
# beside it no longer blocks: the keras3 target runs it, tests below).
BLOCKED = {
    "blocked_keras_config_backend": (4, "KERAS_BACKEND=jax", "remove the setting"),
    "blocked_keras_backend_env_jax": (3, "KERAS_BACKEND=jax", "remove the setting"),
    "blocked_stateless_call": (14, "`stateless_call` is Keras 3's functional (JAX-style) training",
                               "`tf.GradientTape`"),
    "blocked_torch_dataloader": (7, "a torch `DataLoader` fed to Keras is Keras 3 only", "`tf.data.Dataset`"),
}
# Keras-3-only API: converted for the keras3 target, whichever target was asked for.
KERAS3_CHOSEN = {
    "keras3_ops_import_unused": "`keras.ops` (line 2)",
    "keras3_random_fit": "`keras.random` (line 4)",
    "keras3_pydataset": "`keras.utils.PyDataset` (line 5)",
}


@pytest.mark.parametrize("case", sorted(BLOCKED))
def test_keras3_only_api_refuses_the_whole_conversion_with_what_to_change(case):
    text = (FIXTURES / "HVD090" / f"{case}.py").read_text()
    analysis = conversion(text)
    line, what, change = BLOCKED[case]
    assert analysis.refused and analysis.converted() == text
    [(code, at, message)] = analysis.refusal_reasons()
    assert (code, at) == ("HVD090", line) and what in message and change in message and "\n" not in message
    point = next(p for p in report.build(analysis)["points"] if p["point"] == 11)
    assert point["status"] == "blocked" and what in point["reason"]
    # every keras / keras_core import line says so, without a fix
    warnings = [f for f in analysis.findings if f.code == "HVD090"]
    imports = [n for n, l in enumerate(text.splitlines(), 1) if l.startswith(("import keras", "from keras"))]
    assert [analysis.source.position(f.start)[0] + 1 for f in warnings] == imports
    assert all(f.fix is None and "not converted" in f.message and what in f.message for f in warnings)


@pytest.mark.parametrize("asked", ["tf.keras", "tf_keras", "keras3"])
@pytest.mark.parametrize("case", sorted(KERAS3_CHOSEN))
def test_keras3_only_api_gets_the_keras3_target(case, asked):
    text = (FIXTURES / "HVD090" / f"{case}.py").read_text()
    analysis = conversion(text, asked)
    assert analysis.keras_target == "keras3" and not analysis.refused
    assert analysis.keras_target_reason == (None if asked == "keras3" else KERAS3_CHOSEN[case])
    out = analysis.converted()
    assert out == (FIXTURES / "HVD090" / f"{case}.expected.py").read_text()
    # the imports stay Keras 3; the backend is TensorFlow's; Horovod's Keras layer is not used
    assert "import keras\n" in out and 'os.environ["KERAS_BACKEND"] = "tensorflow"' in out
    assert "import horovod.tensorflow as hvd\n" in out and "horovod.tensorflow.keras" not in out
    assert "DistributedOptimizer(keras.optimizers.Adam(" in out and "jit_compile=False" in out
    assert "callbacks=[BroadcastGlobalVariablesCallback(0), MetricAverageCallback()]" in out
    warnings = [f for f in analysis.findings if f.code == "HVD090"]
    assert warnings and all("the keras3 target" in f.message for f in warnings)
    if asked != "keras3":
        assert all(KERAS3_CHOSEN[case] in f.message for f in warnings)


def test_keras_distribution_is_refused_on_the_keras3_target():
    text = (FIXTURES / "HVD090" / "blocked_keras_distribution.py").read_text()
    analysis = conversion(text)
    assert analysis.refused and analysis.converted() == text and analysis.keras_target == "keras3"
    assert any(code == "HVD090" and "`keras.distribution` is Keras 3's own" in message
               for code, _at, message in analysis.refusal_reasons())


def test_a_read_of_keras_backend_is_not_a_setting():
    """The issue's notebook helper reads KERAS_BACKEND (a tuple assignment): no refusal."""
    text = (
        "import os\nimport keras\nfrom keras import ops\nimport numpy as np\n\n\n"
        "def check(line):\n"
        '    current, required = os.environ.get("KERAS_BACKEND", ""), line.split()[-1]\n'
        "    return current == required\n\n\n"
        "model = keras.Sequential([keras.Input(shape=(4,)), keras.layers.Dense(1)])\n"
        'model.compile(optimizer="adam", loss=lambda y, p: ops.mean(ops.square(y - p)))\n'
        "model.fit(np.ones((64, 4)), np.ones((64, 1)), epochs=2)\n")
    analysis = conversion(text)
    assert not analysis.refused and analysis.keras_target == "keras3"
    out = analysis.converted()
    assert out.startswith('import os\nos.environ["KERAS_BACKEND"] = "tensorflow"') and out.count("import os") == 1
    assert convert_text(out) == out


def test_keras3_target_on_keras2_api_keeps_keras3():
    """Asked for, the keras3 target converts a program that a Keras 2 target could also run,
    without rewriting its imports."""
    text = (FIXTURES / "HVD090" / "keras3_target_keras2_api.py").read_text()
    assert conversion(text).keras_target == "tf.keras"
    analysis = conversion(text, "keras3")
    assert analysis.keras_target == "keras3" and analysis.keras_target_reason is None
    out = analysis.converted()
    assert "import keras\nfrom keras import layers\n" in out and "tensorflow.keras" not in out
    assert convert_text(out, "keras3") == out


@pytest.mark.parametrize("target", ["tf.keras", "tf_keras"])
def test_a_keras3_conversion_converted_again_for_keras_2_keeps_keras3(target):
    """Its adapters run on Keras 3 only: converted again with the default target, the program
    stays as it is (its imports were rewritten to Keras 2 under them)."""
    out = (FIXTURES / "HVD090" / "keras3_target_keras2_api.expected.py").read_text()
    analysis = conversion(out, target)
    assert analysis.keras_target == "keras3" and analysis.converted() == out
    assert analysis.keras_target_reason == "the adapters of an earlier keras3 conversion (`DistributedOptimizer`, line 17)"
    [warning] = [f for f in analysis.findings if f.code == "HVD090"][:1]
    assert "chosen for the adapters of an earlier keras3 conversion (`DistributedOptimizer`, line 17)):" in warning.message


def test_each_import_line_gets_hvd090_with_its_rewrite():
    text = (FIXTURES / "HVD090" / "from_keras_layers_utils.py").read_text()
    analysis = analyze(text)
    found = [f for f in analysis.findings if f.code == "HVD090"]
    assert [analysis.source.text[f.start:f.end] for f in found] == [
        "from keras import layers, models", "from keras.utils import to_categorical",
        "from keras.optimizers import RMSprop"]
    assert all("standalone `keras` is Keras 3 from TensorFlow 2.16 on" in f.message for f in found)
    assert [f.fix.edits[0].new_text for f in found] == ["tensorflow.keras"] * 3
    point = next(p for p in report.build(analysis)["points"] if p["point"] == 11)
    assert point["status"] == "done" and [c["line"] for c in point["changes"]] == [1, 2, 3]
    assert "import Keras 2 (tf.keras)" in point["changes"][0]["change"]


KERAS_CORE_TAPE = """\
import keras_core as keras
from keras_core.layers import Dense
import tensorflow as tf

model = keras.Sequential([Dense(1)])
optimizer = keras.optimizers.SGD(0.01)


@tf.function
def train_step(x, y):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(model(x) - y))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))


for _ in range(4):
    train_step(tf.random.normal((8, 4)), tf.ones((8, 1)))
"""


@pytest.mark.parametrize("target, head", [
    ("tf.keras", "from tensorflow import keras\nfrom tensorflow.keras.layers import Dense\nimport tensorflow as tf\n"),
    ("tf_keras", 'import os\nos.environ["TF_USE_LEGACY_KERAS"] = "1"  # Horovod 0.28 runs Keras 2: tf.keras is tf_keras\n'
                 "import tf_keras as keras\nfrom tf_keras.layers import Dense\nimport tensorflow as tf\n"),
])
def test_keras_target_chooses_the_keras_2_imported(target, head):
    out = convert_text(KERAS_CORE_TAPE, keras_target=target)
    assert out.startswith(head)
    assert "tape = hvd.DistributedGradientTape(tape)" in out
    assert convert_text(out, keras_target=target) == out       # converting again changes nothing


def test_tf_keras_target_sets_the_legacy_variable_after_a_future_import():
    out = convert_text('"""Doc."""\nfrom __future__ import annotations\n' + KERAS_CORE_TAPE, keras_target="tf_keras")
    assert out.startswith('"""Doc."""\nfrom __future__ import annotations\nimport os\nos.environ["TF_USE_LEGACY_KERAS"] = "1"')
    compile(out, "<converted>", "exec")


@pytest.mark.parametrize("line, tf_keras, tf_keras_legacy", [
    ("import keras", "from tensorflow import keras", "import tf_keras as keras"),
    ("import keras as k", "from tensorflow import keras as k", "import tf_keras as k"),
    ("import keras_core", "from tensorflow import keras as keras_core", "import tf_keras as keras_core"),
    ("import keras.layers", "from tensorflow import keras", "import tf_keras as keras"),
    ("import keras.layers as L", "from tensorflow.keras import layers as L", "import tf_keras.layers as L"),
    ("import keras_core.layers as layers", "from tensorflow.keras import layers", "import tf_keras.layers as layers"),
    ("import numpy as np, keras as k", "import numpy as np, tensorflow.keras as k", "import numpy as np, tf_keras as k"),
    ("from keras_core.callbacks import EarlyStopping", "from tensorflow.keras.callbacks import EarlyStopping",
     "from tf_keras.callbacks import EarlyStopping"),
])
def test_every_import_form(line, tf_keras, tf_keras_legacy):
    text = f"{line}\nimport tensorflow as tf\n" + KERAS_CORE_TAPE.split("import tensorflow as tf\n", 1)[1].replace(
        "keras.Sequential([Dense(1)])", "tf.keras.Sequential([tf.keras.layers.Dense(1)])").replace(
        "keras.optimizers", "tf.keras.optimizers")
    assert convert_text(text).split("\n", 1)[0] == tf_keras
    assert convert_text(text, keras_target="tf_keras").split("\n")[2] == tf_keras_legacy


def test_tf_keras_and_tensorflow_keras_programs_are_not_rewritten():
    for head in ("import tf_keras as keras\n", "from tensorflow import keras\n", "import tensorflow.keras as keras\n"):
        text = head + KERAS_CORE_TAPE.split("\n", 2)[2]
        analysis = analyze(text)
        assert "HVD090" not in {f.code for f in analysis.findings}
        assert convert_text(text).startswith(head + "import tensorflow as tf\nimport horovod.tensorflow as hvd\n")


def test_standalone_keras_next_to_horovod_keras_is_keras_2():
    """`horovod.keras` binds standalone Keras 2 (Horovod's keras examples): `import keras` is left."""
    text = ("import keras\nimport horovod.keras as hvd\nhvd.init()\n"
            "model = keras.Sequential([keras.layers.Dense(1)])\n"
            "model.compile(optimizer=hvd.DistributedOptimizer(keras.optimizers.SGD(0.01 * hvd.size())), loss='mse')\n"
            "model.fit(x, y, epochs=2, callbacks=[hvd.callbacks.BroadcastGlobalVariablesCallback(0)], "
            "verbose=1 if hvd.rank() == 0 else 0)\n")
    assert "HVD090" not in {f.code for f in analyze(text).findings}
    assert convert_text(text) == text
    assert convert_text(text.replace("horovod.keras", "horovod.tensorflow.keras")).startswith("from tensorflow import keras\n")


def test_a_refusal_for_another_reason_rewrites_no_import():
    text = KERAS_CORE_TAPE.replace("optimizer = keras.optimizers.SGD(0.01)\n",
                                   "if flag:\n    optimizer = keras.optimizers.SGD(0.01)\nelse:\n"
                                   "    optimizer = keras.optimizers.Adam(0.01)\n")
    analysis = conversion(text)
    assert analysis.refused and analysis.converted() == text
    assert [f.fix for f in analysis.findings if f.code == "HVD090"] == [None, None]


XLA_STEP = """\
import tensorflow as tf

model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
optimizer = tf.keras.optimizers.SGD(0.01)


@tf.function(input_signature=[tf.TensorSpec([None, 2]), tf.TensorSpec([None, 1])], jit_compile=True)
def train_step(x, y):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean((model(x) - y) ** 2)
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))


for _ in range(3):
    train_step(tf.random.normal([2, 2]), tf.ones([2, 1]))
"""


def test_jit_compile_is_removed_from_a_step_with_other_arguments():
    out = convert_text(XLA_STEP)
    assert "@tf.function(input_signature=[tf.TensorSpec([None, 2]), tf.TensorSpec([None, 1])])\n" in out
    first = XLA_STEP.replace("input_signature=[tf.TensorSpec([None, 2]), tf.TensorSpec([None, 1])], jit_compile=True",
                             "jit_compile=True, reduce_retracing=True")
    assert "@tf.function(reduce_retracing=True)\n" in convert_text(first)
    analysis = conversion(XLA_STEP)
    point = next(p for p in report.build(analysis)["points"] if p["point"] == 11)
    assert point["status"] == "done" and point["changes"][0]["code"] == "HVD091"


def test_cli_keras_target_flag(tmp_path, capsys):
    path = tmp_path / "k.py"
    path.write_text(KERAS_CORE_TAPE)
    assert cli.main(["convert", "--keras-target", "tf_keras", str(path)]) == 0
    out = capsys.readouterr()
    assert "import tf_keras as keras\n" in out.out
    assert "11. a stack that can run it (Keras 2 imports, no collective under XLA): done" in out.err
    assert "import Keras 2 (tf_keras)" in out.err
    assert cli.main(["convert", str(path)]) == 0
    assert capsys.readouterr().out.startswith("from tensorflow import keras\n")


def test_tf_keras_fix_title_names_the_rewritten_import_only():
    """The tf_keras target inserts TF_USE_LEGACY_KERAS=1 above the first import: the fix's
    title shows that import rewritten, not the two texts spliced."""
    text = (FIXTURES / "HVD090" / "import_keras_fit.py").read_text()
    [found] = [f for f in analyze(text, keras_target="tf_keras").findings if f.code == "HVD090"]
    assert found.fix.title == "import Keras 2 (tf_keras): `import tf_keras as keras`"
    assert [e.new_text for e in found.fix.edits][1] == "import tf_keras as keras"
