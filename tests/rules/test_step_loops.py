"""Step loops (rules/step_loops.py): ``for step in range(n)`` GradientTape programs get their
steps divided only when the ranks draw different batches, and the report says why not."""

from __future__ import annotations

from horovodize.app import report
from horovodize.engine import analyze, conversion, convert_text

HEAD = """import numpy as np
import tensorflow as tf

X = np.load("x.npy").astype("float32")
Y = np.load("y.npy").astype("float32")
model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
optimizer = tf.keras.optimizers.Adam(0.01)
"""
STEP = """    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(model(xb) - yb))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
"""


def program(before_loop: str, draw: str, loop: str = "for step in range(300):") -> str:
    return HEAD + before_loop + loop + "\n" + draw + STEP


def codes(text: str) -> list[str]:
    return sorted(f.code for f in analyze(text).rule_sites if f.code.startswith("HVD04"))


def point5(text: str) -> dict:
    return next(p for p in report.build(conversion(text))["points"] if p["point"] == 5)


def notes(p: dict) -> str:
    return " | ".join(n["note"] for n in p["notes"])


def test_the_same_tensors_every_step_are_not_divided_and_the_report_says_so():
    text = program("", "    xb, yb = X, Y\n")
    out = convert_text(text)
    assert "for step in range(300):" in out and codes(text) == []
    p = point5(text)
    assert p["status"] == "not done" and "each step trains on the same data on every rank" in notes(p), p


def test_a_generator_reading_in_order_is_not_divided():
    gen = "def batches():\n    while True:\n        for i in range(0, len(X), 32):\n            yield X[i:i + 32], Y[i:i + 32]\n\n\ng = batches()\n"
    text = program(gen, "    xb, yb = next(g)\n")
    assert "for step in range(300):" in convert_text(text) and codes(text) == []
    assert "the generator `batches` gives the same batches on every rank" in notes(point5(text))


def test_a_loop_over_a_generator_of_random_batches_divides_the_generators_range():
    gen = ("def batches(n):\n    for _ in range(n):\n        i = np.random.randint(0, len(X), 32)\n"
           "        yield X[i], Y[i]\n\n\n")
    text = HEAD + gen + "for xb, yb in batches(200):\n" + STEP
    out = convert_text(text)
    assert "    for _ in range(max(1, n // hvd.size())):\n" in out and codes(text) == ["HVD042"]
    assert "for xb, yb in batches(200):" in out


def test_a_loop_over_a_generator_reading_in_order_is_refused_and_says_why():
    gen = "def batches():\n    for i in range(0, len(X), 32):\n        yield X[i:i + 32], Y[i:i + 32]\n\n\n"
    text = HEAD + gen + "for xb, yb in batches():\n" + STEP
    analysis = conversion(text)
    assert analysis.refused and codes(text) == []
    assert "the generator `batches` gives the same batches on every rank" in notes(point5(text))


def test_a_generator_called_twice_is_not_divided_and_the_report_says_so():
    gen = ("def batches(n):\n    for _ in range(n):\n        i = np.random.randint(0, len(X), 32)\n"
           "        yield X[i], Y[i]\n\n\nfirst = list(batches(5))\n")
    text = HEAD + gen + "for xb, yb in batches(200):\n" + STEP
    assert codes(text) == [] and "the generator `batches`, which are not divided here (it is called more than " \
        "once)" in notes(point5(text))


def test_a_batch_function_with_a_global_cursor_reads_in_order_even_when_it_samples():
    # aymericdamien's word2vec: ``global data_index`` walks the words in order, random.sample
    # only picks context words: every rank reads the same words
    fn = ("import random\ndata_index = 0\n\n\ndef next_batch():\n    global data_index\n"
          "    data_index = (data_index + 32) % len(X)\n    k = random.sample(range(4), 2)\n"
          "    return X[data_index:data_index + 32], Y[data_index:data_index + 32]\n\n\n")
    text = program(fn, "    xb, yb = next_batch()\n")
    assert "for step in range(300):" in convert_text(text) and codes(text) == []
    assert "the function `next_batch` gives the same batches on every rank" in notes(point5(text))


def test_unseeded_random_batches_differ_already_only_the_steps_are_divided():
    fn = "def get_batch():\n    i = np.random.randint(0, len(X), 32)\n    return X[i], Y[i]\n\n\n"
    text = program(fn, "    xb, yb = get_batch()\n")
    out = convert_text(text)
    assert "for step in range(max(1, 300 // hvd.size())):" in out and "np.random.seed" not in out
    assert codes(text) == ["HVD042"]
    assert point5(text)["status"] == "done"


def test_a_global_tensorflow_seed_makes_the_shuffle_the_same_on_every_rank_so_it_is_sharded():
    ds = "ds = tf.data.Dataset.from_tensor_slices((X, Y)).shuffle(1000).repeat().batch(32)\nit = iter(ds)\n"
    draw = "    xb, yb = next(it)\n"
    assert codes(program(ds, draw)) == ["HVD042"]                     # unseeded shuffle: own order per rank
    seeded = program("tf.random.set_seed(3)\n" + ds, draw)
    assert codes(seeded) == ["HVD041", "HVD042"]
    assert ".apply(lambda ds: ds.shard(hvd.size(), hvd.rank())" in convert_text(seeded)
    assert codes(program(ds.replace("shuffle(1000)", "shuffle(1000, seed=5)"), draw)) == ["HVD041", "HVD042"]


def test_the_loop_bound_read_again_inside_the_loop_is_named():
    ds = "ds = tf.data.Dataset.from_tensor_slices((X, Y)).shuffle(1000).repeat().batch(32)\nit = iter(ds)\nn = 300\n"
    text = program(ds, "    xb, yb = next(it)\n    if step == n - 1:\n        model.save('m.keras')\n",
                   loop="for step in range(n):")
    p = point5(text)
    assert p["status"] == "partly done" and "`n` still counts the undivided steps" in notes(p), p


def test_enumerate_take_loops_stay_with_hvd040():
    # aymericdamien's TF2 examples: the take bounds the loop, HVD040 divides it; not a range loop
    ds = ("train_data = tf.data.Dataset.from_tensor_slices((X, Y))\n"
          "train_data = train_data.repeat().shuffle(5000).batch(256).prefetch(1)\n")
    text = program(ds, "", loop="for step, (xb, yb) in enumerate(train_data.take(1000), 1):")
    assert codes(text) == ["HVD040"]
    assert "train_data.take(max(1, 1000 // hvd.size()))" in convert_text(text)


def test_a_reinforcement_learning_program_is_left_to_its_episodes():
    # each rank trains on its own episodes (keras-io ppo_cartpole: `for _ in range(80):
    # train_policy(buffers)`): no step division, no false "same data" note, HVD046 seeds
    fn = ("import gym\nenv = gym.make('CartPole-v1')\nnp.random.seed(1)\n"
          "def get_batch():\n    i = np.random.randint(0, len(X), 32)\n    return X[i], Y[i]\n\n\n")
    text = program(fn, "    xb, yb = get_batch()\n")
    out = convert_text(text)
    assert out.count("np.random.seed(1 + hvd.rank())") == 1 and "for step in range(300):" in out, out
    p = point5(program("import gym\nenv = gym.make('CartPole-v1')\n", "    xb, yb = X, Y\n"))
    assert p["status"] == "nothing to change" and not p["notes"], p
