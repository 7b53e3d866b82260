"""Contract points 5 and 8 together (issue 39): never a learning rate scaled by hvd.size()
for work that is not divided. Identical work (an input-optimisation loop, fixed tensors) is
refused with "nothing to distribute", point 5 left undone with a scaled rate blocks (exit 3),
``--no-scale-lr`` converts such a program unscaled, global seeds become per rank where they
would order every rank's shuffle alike, and fit's one epoch is sliced per rank."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from horovodize.app import report
from horovodize.engine import conversion

EXE = Path(sys.executable).parent / "horovodize"

STYLE = '''import tensorflow as tf

content = tf.random.uniform((1, 64, 64, 3))
image = tf.Variable(content)
optimizer = tf.keras.optimizers.SGD(
    tf.keras.optimizers.schedules.ExponentialDecay(initial_learning_rate=100.0, decay_steps=100, decay_rate=0.96))

for i in range(1, 101):
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(tf.square(image - content))
    grads = tape.gradient(loss, image)
    optimizer.apply_gradients([(grads, image)])
'''

SEEDED_FIT = '''import numpy as np
import tensorflow as tf

np.random.seed(42)
tf.random.set_seed(42)
x = np.random.rand(256, 8).astype("float32")
y = x.sum(axis=1, keepdims=True)
model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
model.compile(optimizer=tf.keras.optimizers.Adam(learning_rate=0.001), loss="mse")
model.fit(x, y, epochs=20, batch_size=32)
'''

FIXED_FIT = '''import tensorflow as tf

model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
model.compile(optimizer=tf.keras.optimizers.SGD(0.01), loss="mse")
model.fit(tf.ones((64, 3)), tf.ones((64, 1)), epochs=1)
'''

UNTIL = '''import tensorflow as tf

model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
optimizer = tf.keras.optimizers.SGD(0.05)
step = 0
while True:
    x = tf.random.normal((32, 4))
    y = tf.reduce_sum(x, axis=1, keepdims=True)
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(model(x) - y))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    step += 1
    if float(loss) < 0.01 or step > 500:
        break
'''

# A textbook's LSTM cell: 6 literal sequences, fit's default batch of 32: one step per epoch.
ONE_BATCH = '''import numpy as np
import tensorflow as tf

x = np.array([[[0], [1]], [[1], [0]], [[0], [0]], [[1], [1]], [[0], [1]], [[1], [0]]], dtype=np.float32)
y = np.array([1, 2, 0, 3, 1, 2])
model = tf.keras.Sequential([tf.keras.layers.LSTM(4), tf.keras.layers.Dense(4)])
model.compile(loss="sparse_categorical_crossentropy", optimizer="adam")
model.fit(x, y, epochs=200)
'''


def point(data: dict, number: int) -> dict:
    return next(p for p in data["points"] if p["point"] == number)


def test_input_optimisation_is_refused_as_nothing_to_distribute():
    analysis = conversion(STYLE)
    assert analysis.refused
    (reason,) = [m for c, _line, m in analysis.refusal_reasons() if c == "point 5"]
    assert reason.startswith("nothing to distribute: every rank would compute the same step")
    assert "--no-scale-lr" in reason
    assert analysis.converted() == STYLE


def test_no_scale_lr_converts_it_unscaled_and_says_so():
    analysis = conversion(STYLE, scale_lr=False)
    assert not analysis.refused
    out = analysis.converted()
    assert "hvd.DistributedGradientTape" in out and "hvd.size()" not in out
    data = report.build(analysis)
    assert point(data, 4)["status"] == "left as asked"
    assert point(data, 5)["status"] == "not done"


def test_fixed_tensors_given_to_fit_are_refused():
    analysis = conversion(FIXED_FIT)
    assert analysis.refused and analysis.converted() == FIXED_FIT


def test_global_tensorflow_seed_becomes_per_rank_before_fit():
    analysis = conversion(SEEDED_FIT)
    out = analysis.converted()
    assert "tf.random.set_seed(42 + hvd.rank())" in out
    assert "np.random.seed(42)\n" in out        # numpy's draws make the data: the same on every rank
    assert "HVD049" in {f.code for f in analysis.rule_sites}
    assert point(report.build(analysis), 5)["status"] == "done"


def test_a_loop_until_a_condition_with_fresh_batches_converts():
    analysis = conversion(UNTIL)
    assert not analysis.refused
    data = report.build(analysis)
    assert point(data, 5)["status"] == "done"
    assert "each rank drawing its own random batches" in point(data, 5)["notes"][0]["note"]


def test_cli_exit_codes(tmp_path: Path):
    path = tmp_path / "style.py"
    path.write_text(STYLE, encoding="utf-8")
    refused = subprocess.run([str(EXE), "convert", str(path)], capture_output=True, text=True, timeout=60)
    assert refused.returncode == 3 and "nothing to distribute" in refused.stderr
    unscaled = subprocess.run([str(EXE), "convert", "--no-scale-lr", str(path)], capture_output=True, text=True,
                              timeout=60)
    assert unscaled.returncode == 0, unscaled.stderr
    assert "left as asked" in unscaled.stderr and "initial_learning_rate=100.0," in unscaled.stdout


def test_arrays_no_bigger_than_one_batch_are_identical_work():
    analysis = conversion(ONE_BATCH)
    assert analysis.refused and analysis.converted() == ONE_BATCH
    (reason,) = [m for c, _line, m in analysis.refusal_reasons() if c == "point 5"]
    assert "fit's arrays hold 6 samples, no more than one batch of 32" in reason
    # a bigger batch than the arrays, or more rows than the batch: divided as before
    bigger = conversion(ONE_BATCH.replace("epochs=200)", "epochs=200, batch_size=4)"))
    assert not bigger.refused and "int(math.ceil(200 / hvd.size()))" in bigger.converted()


def test_no_scale_lr_still_averages_an_optimizer_given_by_name():
    analysis = conversion(ONE_BATCH, scale_lr=False)
    out = analysis.converted()
    assert "optimizer=hvd.DistributedOptimizer(tf.keras.optimizers.Adam())" in out
    assert "epochs=200," in out and "hvd.size()" not in out
    data = report.build(analysis)
    assert point(data, 3)["status"] == "done" and point(data, 4)["status"] == "left as asked"


def test_one_batch_through_rebound_names_and_expand_dims():
    """A notebook's ``x = [...]`` then ``x = np.array(x, dtype=...)``; a course's
    ``X = tf.constant([...8 values])`` given as ``tf.expand_dims(X, axis=-1)``."""
    rebound = ONE_BATCH.replace("x = np.array([[[0], [1]]", "x = [[[0], [1]]").replace(
        "dtype=np.float32)\n", "\nx = np.array(x, dtype=np.float32)\n", 1).replace(", \nx = ", "\nx = ")
    assert "x = np.array(x, dtype=np.float32)" in rebound
    assert conversion(rebound).refused
    regression = ("import tensorflow as tf\nX = tf.constant([-7.0, -4.0, -1.0, 2.0, 5.0, 8.0, 11.0, 14.0])\n"
                  "y = tf.constant([3.0, 6.0, 9.0, 12.0, 15.0, 18.0, 21.0, 24.0])\n"
                  "model = tf.keras.Sequential([tf.keras.layers.Dense(1)])\n"
                  "model.compile(loss='mae', optimizer=tf.keras.optimizers.SGD(), metrics=['mae'])\n"
                  "model.fit(tf.expand_dims(X, axis=-1), y, epochs=100)\n")
    analysis = conversion(regression)
    assert analysis.refused and "hold 8 samples" in analysis.refusal_reasons()[0][2]
    # axis 0 adds a row dimension: the rows are no longer the literal's
    assert not conversion(regression.replace("axis=-1", "axis=0")).refused
