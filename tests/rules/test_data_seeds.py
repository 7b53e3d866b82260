"""HVD045 (the same random split on every rank) through the engine, and what the report's
point 5 says of it."""

from __future__ import annotations

from horovodize.app import report
from horovodize.engine import analyze, conversion, convert_text

PROGRAM = """import numpy as np
import tensorflow as tf
from sklearn.model_selection import train_test_split

x = np.load("x.npy")
y = np.load("y.npy")
{split}
model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
model.compile(optimizer=tf.keras.optimizers.SGD(0.01), loss="mse")
model.fit(x_train, y_train, validation_data=(x_val, y_val), epochs={epochs})
"""
SPLIT = "x_train, x_val, y_train, y_val = train_test_split(x, y, test_size=0.2)"


def point5(text: str) -> dict:
    return next(p for p in report.build(conversion(text))["points"] if p["point"] == 5)


def codes(text: str) -> list[str]:
    return [f.code for f in analyze(text).rule_sites if f.code == "HVD045"]


def test_unseeded_split_gets_a_fixed_seed_and_point5_lists_it():
    text = PROGRAM.format(split=SPLIT, epochs=4)
    out = convert_text(text)
    assert "train_test_split(x, y, test_size=0.2, random_state=42)" in out
    p = point5(text)
    assert p["status"] == "done" and {c["code"] for c in p["changes"]} == {"HVD043", "HVD045"}


def test_a_seeded_split_alone_does_not_make_the_work_divided():
    # epochs=1: ceil(1 / N) divides nothing; the arrays are sliced per rank (HVD043), and
    # that, not the seed the split gets (HVD045), is what divides the work
    text = PROGRAM.format(split=SPLIT, epochs=1)
    out = convert_text(text)
    assert "random_state=42" in out and "[hvd.rank():len(" in out
    p = point5(text)
    assert p["status"] == "done" and sorted(c["code"] for c in p["changes"]) == ["HVD043", "HVD045"], p


def test_left_alone_when_seeded_after_training_or_in_a_loop():
    seeded = PROGRAM.format(split="np.random.seed(0)\n" + SPLIT, epochs=4)
    assert codes(seeded) == []
    own_state = PROGRAM.format(split=SPLIT.replace("0.2)", "0.2, random_state=1)"), epochs=4)
    assert codes(own_state) == []
    # after the training call: not a split the training uses
    after = PROGRAM.format(split=SPLIT, epochs=4) + "perm = np.random.permutation(10)\n"
    assert codes(after) == ["HVD045"]          # the split only, not the later permutation
    in_loop = PROGRAM.format(split=SPLIT + "\nfor k in range(3):\n    idx = np.random.permutation(len(x))", epochs=4)
    assert codes(in_loop) == ["HVD045"]
    # a distribution's sample(n) is not a split
    assert codes(PROGRAM.format(split=SPLIT.replace("train_test_split(x, y, test_size=0.2)",
                                                   "(x, x, y, y)\nz = tf.random.normal([3]).sample(4)"),
                                epochs=4)) == []


RL = """import gymnasium as gym
import numpy as np
import tensorflow as tf

SEED = 7
env = gym.make("CartPole-v1")
state, _ = env.reset(seed=SEED * 2)
np.random.seed(SEED)
other = make_other()
other.seed(SEED)
model = tf.keras.Sequential([tf.keras.layers.Dense(2)])
optimizer = tf.keras.optimizers.Adam(0.01)
for episode in range(10):
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(model(tf.constant([state])))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
"""


def test_reinforcement_learning_seeds_per_rank():
    out = convert_text(RL)
    assert "env.reset(seed=SEED * 2 + hvd.rank())" in out
    assert "np.random.seed(SEED + hvd.rank())" in out
    assert "other.seed(SEED)\n" in out                  # not an environment gym made
    p = point5(RL)
    assert [c["code"] for c in p["changes"]] == ["HVD046", "HVD046"]
    assert convert_text(out) == out


def test_no_per_rank_seed_without_an_environment():
    # the same seeds in a program without gym make every rank draw the same split: kept
    text = PROGRAM.format(split="np.random.seed(0)\n" + SPLIT, epochs=4)
    assert "np.random.seed(0)\n" in convert_text(text)
    assert [f.code for f in analyze(text).rule_sites if f.code == "HVD046"] == []


def test_numpy_seed_kept_beside_a_per_rank_tf_seed_is_said_in_point5():
    """The report says which seed stays alike and why (issue 39: decide per use, say which)."""
    text = ("import numpy as np\nimport tensorflow as tf\n\nnp.random.seed(7)\ntf.random.set_seed(7)\n"
            "x = np.random.rand(64, 4).astype('float32')\ny = x.sum(axis=1)\n"
            "model = tf.keras.Sequential([tf.keras.layers.Dense(1)])\n"
            "model.compile(optimizer=tf.keras.optimizers.SGD(0.01), loss='mse')\nmodel.fit(x, y, epochs=4)\n")
    out = convert_text(text)
    assert "np.random.seed(7)\n" in out and "tf.random.set_seed(7 + hvd.rank())" in out
    p = point5(text)
    assert p["status"] == "done"
    assert [n["line"] for n in p["notes"]] == [4]
    assert "`np.random.seed(7)` stays the same on every rank" in p["notes"][0]["note"]
    assert "per rank from line 5" in p["notes"][0]["note"]


def test_an_agents_episodes_get_no_shard_advice_in_point5():
    """A reinforcement-learning loop's samples are the episodes each rank plays (seeded per rank,
    HVD046): point 5 gives no "shard it by rank ... take(n)" note (sweep 39c, actor-critic)."""
    from pathlib import Path
    text = (Path(__file__).resolve().parent.parent / "fixtures" / "HVD080" / "tf_function_step_mean.py").read_text()
    p = point5(text)
    assert p["status"] == "done", p
    assert not [n for n in p["notes"] if "take(n)" in n["note"]]
