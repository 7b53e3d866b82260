"""HVD080 (contract point 10): a loop exit, a ``while`` test or a branch around the training
step that compares a per-rank value is decided on its average over the ranks; values that
are the same on every rank, and exits of loops that run no collective, are left alone."""

from __future__ import annotations

import pytest

from horovodize.app import report
from horovodize.engine import analyze, conversion

from rulecase import assert_no_rule, assert_rule

HEAD = """\
import numpy as np
import tensorflow as tf
model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
optimizer = tf.keras.optimizers.SGD(0.01)
dataset = tf.data.Dataset.from_tensor_slices((np.ones((8, 2)), np.ones((8, 1)))).batch(2)


def train_step(x, y):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean((model(x) - y) ** 2)
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss


"""
AVG = "hvd.allreduce(tf.cast({}, tf.float32), op=hvd.Average)"


@pytest.mark.parametrize("before, after", [
    # the running value of the step's own loss
    ("running = 10.0\nfor epoch in range(9):\n    for x, y in dataset:\n        loss = train_step(x, y)\n"
     "    running = 0.9 * running + 0.1 * float(loss)\n    if running < 0.1:\n        break\n",
     "running = 10.0\nfor epoch in range(9):\n    for x, y in dataset:\n        loss = train_step(x, y)\n"
     f"    running = 0.9 * running + 0.1 * float(loss)\n    if {AVG.format('running')} < 0.1:\n        break\n"),
    # an episode's reward from the environment, kept in a list and averaged
    ("scores = []\nwhile True:\n    total = 0\n    for t in range(50):\n        obs, r, done, _ = env.step(0)\n"
     "        total += r\n    for x, y in dataset:\n        train_step(x, y)\n    scores.append(total)\n"
     "    if np.mean(scores[-10:]) >= 195:\n        break\n",
     "scores = []\nwhile True:\n    total = 0\n    for t in range(50):\n        obs, r, done, _ = env.step(0)\n"
     "        total += r\n    for x, y in dataset:\n        train_step(x, y)\n    scores.append(total)\n"
     f"    if {AVG.format('np.mean(scores[-10:])')} >= 195:\n        break\n"),
    # the while test, both sides per-rank in a chained comparison with a shared one
    ("loss = 1.0\nwhile loss > 0.01:\n    for x, y in dataset:\n        loss = train_step(x, y)\n",
     f"loss = 1.0\nwhile {AVG.format('loss')} > 0.01:\n    for x, y in dataset:\n        loss = train_step(x, y)\n"),
    # a branch around the training step on a random draw (per-rank seed)
    ("for x, y in dataset:\n    if np.random.rand() < 0.5:\n        train_step(x, y)\n",
     f"for x, y in dataset:\n    if {AVG.format('np.random.rand()')} < 0.5:\n        train_step(x, y)\n"),
])
def test_per_rank_decisions_are_averaged(before, after):
    assert_rule(HEAD + before, HEAD + after, "HVD080")


def test_return_out_of_the_training_loop():
    body = ("def train():\n    for epoch in range(9):\n        for x, y in dataset:\n            loss = train_step(x, y)\n"
            "        if loss < {}:\n            return epoch\n\n\ntrain()\n")
    assert_rule(HEAD + body.format("0.1"),
                HEAD + body.replace("loss < {}", AVG.format("loss") + " < 0.1"), "HVD080")


def test_inline_tape_loss_and_metric_result():
    before = HEAD + (
        "acc = tf.keras.metrics.Mean()\nfor x, y in dataset:\n    with tf.GradientTape() as tape:\n"
        "        l2 = tf.reduce_mean(model(x))\n    g = tape.gradient(l2, model.trainable_variables)\n"
        "    optimizer.apply_gradients(zip(g, model.trainable_variables))\n    acc.update_state(l2)\n"
        "    if l2 < 0.5 or acc.result() < 0.1:\n        break\n")
    after = before.replace("if l2 < 0.5 or acc.result() < 0.1:",
                           f"if {AVG.format('l2')} < 0.5 or {AVG.format('acc.result()')} < 0.1:")
    assert_rule(before, after, "HVD080")


def test_counter_reset_under_a_per_rank_test_is_per_rank():
    """Manual early stopping: `wait` only counts constants, but it is reset when this rank's
    validation loss improves, so it differs between ranks."""
    loop = ("best, wait = 9.0, 0\nfor epoch in range(99):\n    for x, y in dataset:\n        train_step(x, y)\n"
            "    val = float(model(x)[0, 0])\n    wait += 1\n    if val < best:\n        best = val\n        wait = 0\n"
            "    if wait >= 3:\n        break\n")
    assert_rule(HEAD + loop, HEAD + loop.replace("if wait >= 3", f"if {AVG.format('wait')} >= 3"), "HVD080")


@pytest.mark.parametrize("loop", [
    # a step counter, a constant, an epoch counter, a flag, enumerate's index
    "step = 0\nfor x, y in dataset:\n    train_step(x, y)\n    step += 1\n    if step >= 3:\n        break\n",
    "for epoch in range(9):\n    for x, y in dataset:\n        train_step(x, y)\n    if epoch == 4 or 2 > 1:\n        break\n",
    "STOP = False\nfor x, y in dataset.take(2):\n    train_step(x, y)\n    if STOP:\n        break\n",
    "for i, (x, y) in enumerate(dataset):\n    train_step(x, y)\n    if i > 2:\n        break\n",
    # this rank's own episode ends a loop that runs no collective
    "for episode in range(9):\n    total = 0\n    for t in range(50):\n        obs, r, done, _ = env.step(0)\n"
    "        total += r\n        if total > 20:\n            break\n    for x, y in dataset:\n        train_step(x, y)\n",
    # a per-rank test whose branch runs no collective
    "for x, y in dataset:\n    loss = train_step(x, y)\n    if loss < 0.1:\n        print('low')\n",
    # already averaged
    "import horovod.tensorflow as hvd\nhvd.init()\nfor x, y in dataset:\n    loss = train_step(x, y)\n"
    "    if hvd.allreduce(tf.cast(loss, tf.float32), op=hvd.Average) < 0.1:\n        break\n",
])
def test_shared_decisions_are_left_alone(loop):
    assert_no_rule(HEAD + loop, "HVD080")


def test_no_training_no_finding():
    assert_no_rule("import tensorflow as tf\nloss = 1.0\nwhile loss > 0.1:\n    loss = float(tf.random.uniform(()))\n",
                   "HVD080")


def _point10(text: str) -> dict:
    data = report.build(conversion(text))
    return next(p for p in data["points"] if p["point"] == 10)


def test_report_point_10():
    fixed = HEAD + "for x, y in dataset:\n    loss = train_step(x, y)\n    if loss < 0.1:\n        break\n"
    point = _point10(fixed)
    assert point["status"] == "done" and [c["code"] for c in point["changes"]] == ["HVD080"]
    shared = HEAD + "for x, y in dataset:\n    loss = train_step(x, y)\n"
    assert _point10(shared)["status"] == "nothing to change"
    # a per-rank flag is not rewritten: the report says what is left, not "nothing to change"
    flag = HEAD + ("for x, y in dataset:\n    obs, r, done, _ = env.step(0)\n    train_step(x, y)\n"
                   "    if done:\n        break\n")
    point = _point10(flag)
    assert point["status"] == "not done" and "done" in point["notes"][0]["note"]
    assert not [f for f in analyze(flag).findings if f.code == "HVD080"]
