"""HVD050 (``callbacks`` start with BroadcastGlobalVariablesCallback(0); steering callbacks
on every rank, writing callbacks on rank 0) and HVD051 (``verbose`` on rank 0 only)."""

from __future__ import annotations

import pytest

from horovodize.engine import analyze, convert_text, without_overlaps
from horovodize.parse.source import apply_edits

from rulecase import assert_no_rule, assert_rule, rule_output, src

BCAST = "hvd.callbacks.BroadcastGlobalVariablesCallback(0)"
# ahead of the user's own callbacks: they see metrics averaged over the ranks
FIRST = BCAST + ", hvd.callbacks.MetricAverageCallback()"
HEAD = "import tensorflow as tf\nmodel = tf.keras.Sequential()\nmodel.compile('adam', 'mse')\n"


@pytest.mark.parametrize("before, after", [
    ("model.fit(x, y)", f"model.fit(x, y, callbacks=[{FIRST}])"),
    ("model.fit(x, y, callbacks=None)", f"model.fit(x, y, callbacks=[{FIRST}])"),
    # callbacks this file does not build: every rank keeps them (EarlyStopping on rank 0 only hangs)
    ("model.fit(x, y, callbacks=cbs)", f"model.fit(x, y, callbacks=[{FIRST}] + list(cbs or []))"),
    ("model.fit(x, y, callbacks=[tb])", f"model.fit(x, y, callbacks=[{FIRST}, tb])"),
    ("model.fit(x, y, callbacks=a if b else c)",
     f"model.fit(x, y, callbacks=[{FIRST}] + list((a if b else c) or []))"),
    ("model.fit(x, y, 32, 10, 1, cbs)", f"model.fit(x, y, 32, 10, 1, [{FIRST}] + list(cbs or []))"),
    # steering callbacks on every rank, writing callbacks on rank 0 (Horovod's guide)
    ("model.fit(x, y, callbacks=[tf.keras.callbacks.EarlyStopping(), tf.keras.callbacks.ModelCheckpoint('m.h5')])",
     f"model.fit(x, y, callbacks=[{FIRST}, tf.keras.callbacks.EarlyStopping(), "
     "*([tf.keras.callbacks.ModelCheckpoint('m.h5')] if hvd.rank() == 0 else [])])"),
    ("model.fit(x, y,)", f"model.fit(x, y, callbacks=[{FIRST}],)"),
])
def test_callbacks(before, after):
    assert_rule(HEAD + before + "\n", HEAD + after + "\n", "HVD050")


@pytest.mark.parametrize("before, after", [
    ("model.fit(x, y)", "model.fit(x, y, verbose=1 if hvd.rank() == 0 else 0)"),
    ("model.fit(x, y, verbose=2)", "model.fit(x, y, verbose=2 if hvd.rank() == 0 else 0)"),
    ("model.fit(x, y, 32, 10, 2)", "model.fit(x, y, 32, 10, 2 if hvd.rank() == 0 else 0)"),
    ("model.fit(x, y, verbose='auto')", "model.fit(x, y, verbose='auto' if hvd.rank() == 0 else 0)"),
    ("model.fit(x, y, verbose=1 if debug else 0)", "model.fit(x, y, verbose=(1 if debug else 0) if hvd.rank() == 0 else 0)"),
])
def test_verbose(before, after):
    assert_rule(HEAD + before + "\n", HEAD + after + "\n", "HVD051")


@pytest.mark.parametrize("before, after", [
    # The value of the last argument is rewritten, then the new keyword follows it.
    ("model.fit(x, y, epochs=2, verbose=2)",
     f"model.fit(x, y, epochs=int(math.ceil(2 / hvd.size())), verbose=2 if hvd.rank() == 0 else 0, callbacks=[{FIRST}])"),
    # verbose=0 is silent on every rank already: no verbose edit
    ("model.fit(x, y, epochs=2, verbose=0)",
     f"model.fit(x, y, epochs=int(math.ceil(2 / hvd.size())), verbose=0, callbacks=[{FIRST}])"),
    ("model.fit(x, y, 16, 4, 2)",
     f"model.fit(x, y, 16, int(math.ceil(4 / hvd.size())), 2 if hvd.rank() == 0 else 0, callbacks=[{FIRST}])"),
    ("model.fit(x, y, epochs=3, callbacks=cbs)",
     f"model.fit(x, y, epochs=int(math.ceil(3 / hvd.size())), callbacks=[{FIRST}] + list(cbs or []), "
     "verbose=1 if hvd.rank() == 0 else 0)"),
    ("model.fit(x, y)",       # (one epoch: the arrays sliced per rank)
     "model.fit(x[hvd.rank():len(x) // hvd.size() * hvd.size():hvd.size()], "
     f"y[hvd.rank():len(y) // hvd.size() * hvd.size():hvd.size()], callbacks=[{FIRST}], "
     "verbose=1 if hvd.rank() == 0 else 0)"),
])
def test_callbacks_and_verbose_together(before, after):
    out = convert_text(HEAD + before + "\n")
    assert out.endswith(after + "\n")


def test_multiline_fit_keeps_its_layout_and_comments():
    before = """
        import tensorflow as tf

        model = tf.keras.Sequential()
        model.compile("sgd", "mse")
        history = model.fit(
            x,
            y,
            epochs=3,  # short
        )
        model.fit(x, y,
                  epochs=1)
        model.fit(
            x,
            callbacks=[
                tf.keras.callbacks.TensorBoard(),  # logs
            ],
        )
        """
    after = f"""
        import tensorflow as tf

        model = tf.keras.Sequential()
        model.compile("sgd", "mse")
        history = model.fit(
            x,
            y,
            epochs=3,  # short
            callbacks=[{FIRST}],
        )
        model.fit(x, y,
                  epochs=1, callbacks=[{FIRST}])
        model.fit(
            x,
            callbacks=[
                {BCAST},
                hvd.callbacks.MetricAverageCallback(),
                *([tf.keras.callbacks.TensorBoard()] if hvd.rank() == 0 else []),  # logs
            ],
        )
        """
    assert_rule(before, after, "HVD050")


def test_hanging_arguments_are_aligned():
    before = HEAD + "model.fit(x, y, epochs=1,\n          )\n"
    after = HEAD + f"model.fit(x, y, epochs=1,\n          callbacks=[{FIRST}],\n          )\n"
    assert rule_output(before, "HVD050") == after


def test_fit_on_something_that_is_not_a_model():
    assert_no_rule("""
        import tensorflow as tf
        from sklearn.linear_model import LinearRegression

        reg = LinearRegression()
        reg.fit(x, y)
        """, "HVD050")


def test_two_keywords_into_an_empty_argument_list_are_separated():
    # (HVD050 and HVD051 both insert at its closing parenthesis; the engine joins them)
    before = HEAD + "model.fit()\n"
    analysis = analyze(before)
    edits = [e for f in analysis.rule_sites if f.code in ("HVD050", "HVD051") for e in f.fix.edits]
    for once in (without_overlaps(edits), without_overlaps(without_overlaps(edits))):
        out = apply_edits(before, once)
        assert out.endswith(f"model.fit(callbacks=[{FIRST}], verbose=1 if hvd.rank() == 0 else 0)\n")


@pytest.mark.parametrize("other", [
    "from statsmodels.tsa.arima.model import ARIMA\nmodel = ARIMA(series)\nmodel = model.fit()\n",
    "from sklearn.linear_model import Ridge\nmodel = Ridge()\nmodel.fit(x, y)\n",
    "import sklearn.pipeline as skp\nmodel = skp.make_pipeline(scaler, reg)\nmodel.fit(x, y)\n",
    "class Smoother:\n    def fit(self, x):\n        return self\nmodel = Smoother()\nmodel.fit(x)\n",
])
def test_a_name_holding_another_librarys_model_at_its_fit(other):
    """The same name holds a Keras model elsewhere: the role is the value it holds at the call."""
    before = other + HEAD + "model.fit(x, y, epochs=2)\n"
    out = convert_text(before)
    assert out.count("BroadcastGlobalVariablesCallback") == 1 and out.count("verbose=") == 1
    assert other.rsplit("\n", 2)[-2] in out          # (the other library's fit, as it was)


def test_a_name_that_may_hold_either_at_its_fit_stays_a_keras_model():
    before = ("from sklearn.linear_model import Ridge\n" + HEAD +
              "if baseline:\n    model = Ridge()\nmodel.fit(x, y, epochs=2)\n")
    assert "BroadcastGlobalVariablesCallback" in convert_text(before)


def test_star_arguments_are_left_alone():
    assert_no_rule(HEAD + "model.fit(x, y, **fit_kwargs)\n", "HVD050")
    assert_no_rule(HEAD + "model.fit(*args)\n", "HVD051")


def test_negative_horovod_examples():
    text = """
        import tensorflow as tf
        import horovod.tensorflow.keras as hvd

        hvd.init()
        model = tf.keras.Sequential()
        model.compile(optimizer=hvd.DistributedOptimizer(tf.keras.optimizers.Adam(0.001 * hvd.size())), loss="mse")
        callbacks = [
            hvd.callbacks.BroadcastGlobalVariablesCallback(0),
            hvd.callbacks.MetricAverageCallback(),
        ]
        if hvd.rank() == 0:
            callbacks.append(tf.keras.callbacks.ModelCheckpoint("./checkpoint-{epoch}.h5"))
        verbose = 1 if hvd.rank() == 0 else 0
        model.fit(x, y, callbacks=callbacks, epochs=2, verbose=verbose)

        more = []
        more.append(hvd.callbacks.BroadcastGlobalVariablesCallback(0))
        model.fit(x, y, callbacks=more, verbose=0 if hvd.rank() else 1)
        """
    assert_no_rule(text, "HVD050")
    assert_no_rule(text, "HVD051")
    assert convert_text(src(text)) == src(text)


FIT = "model.fit(x, y, verbose=0, callbacks=[hvd_cb])\n"


@pytest.mark.parametrize("before, after", [
    ("model.evaluate(x, y)", "model.evaluate(x, y, verbose=1 if hvd.rank() == 0 else 0)"),
    ("model.evaluate(x, y, verbose=2)", "model.evaluate(x, y, verbose=2 if hvd.rank() == 0 else 0)"),
    ("model.evaluate(x, y, 32, 2)", "model.evaluate(x, y, 32, 2 if hvd.rank() == 0 else 0)"),
    ("p = model.predict(x)", "p = model.predict(x, verbose=1 if hvd.rank() == 0 else 0)"),
    ("p = model.predict(x, 32, 1)", "p = model.predict(x, 32, 1 if hvd.rank() == 0 else 0)"),
    ("es = tf.keras.callbacks.EarlyStopping(patience=2, verbose=1)",
     "es = tf.keras.callbacks.EarlyStopping(patience=2, verbose=1 if hvd.rank() == 0 else 0)"),
])
def test_evaluate_predict_and_steering_verbose(before, after):
    assert_rule(HEAD + FIT + before + "\n", HEAD + FIT + after + "\n", "HVD051")


@pytest.mark.parametrize("text", [
    "model.evaluate(x, y, verbose=0)",
    "p = model.predict(x, verbose=False)",
    "es = tf.keras.callbacks.EarlyStopping(patience=2)",      # silent by default
    "clf.predict(x)",                                          # not a Keras model
])
def test_silent_or_foreign_progress_left_alone(text):
    assert_no_rule(HEAD + FIT + text + "\n", "HVD051")


@pytest.mark.parametrize("imports, before, after", [
    ("from tqdm import tqdm\n", "for b in tqdm(batches):\n    pass\n",
     "for b in tqdm(batches, disable=hvd.rank() != 0):\n    pass\n"),
    ("import tqdm\n", "t = tqdm.trange(9, desc='ep')\n", "t = tqdm.trange(9, desc='ep', disable=hvd.rank() != 0)\n"),
    ("from tqdm.auto import tqdm\n", "bar = tqdm(total=9, disable=quiet)\n",
     "bar = tqdm(total=9, disable=quiet or hvd.rank() != 0)\n"),
])
def test_tqdm_on_rank0(imports, before, after):
    assert_rule(imports + HEAD + FIT + before, imports + HEAD + FIT + after, "HVD051")


def test_tqdm_not_imported_from_tqdm_left_alone():
    assert_no_rule(HEAD + FIT + "def tqdm(x):\n    return x\nfor b in tqdm(batches):\n    pass\n", "HVD051")


HISTORY = """import json
import matplotlib.pyplot as plt
import tensorflow as tf

model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
model.compile(optimizer="sgd", loss="mse")
history = model.fit(tf.ones((8, 4)), tf.ones((8, 1)), epochs=4)
{read}
"""


def test_history_read_gets_averaged_metrics_unless_it_is_serialised():
    # a History that is plotted holds the metrics averaged over the ranks (Horovod's guide)
    plotted = convert_text(HISTORY.format(read='plt.plot(history.history["loss"])'))
    assert "hvd.callbacks.MetricAverageCallback()" in plotted
    # Horovod's averaged logs are numpy float32: json.dump(history.history) would raise
    # TypeError (seen on 2 ranks: tests/horovod/programs/wd_save_load.py), so it is left out
    for read in ('json.dump(history.history, open("h.json", "w"))', "s = json.dumps({'h': history.history})"):
        out = convert_text(HISTORY.format(read=read))
        assert "BroadcastGlobalVariablesCallback(0)" in out and "MetricAverageCallback" not in out, read
