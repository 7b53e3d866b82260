"""HVD047 (rules/schedules.py): a schedule counted in optimizer steps is divided only when
the conversion divides each rank's steps, and never counted twice."""

from __future__ import annotations

from horovodize.app import report
from horovodize.engine import analyze, conversion, convert_text

FIT = """import numpy as np
import tensorflow as tf

x = np.load("x.npy")
y = np.load("y.npy")
schedule = {schedule}
model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
model.compile(optimizer=tf.keras.optimizers.Adam(schedule), loss="mse")
model.fit(x, y, epochs={epochs})
"""


def codes(text: str) -> list[str]:
    return [f.code for f in analyze(text).rule_sites if f.code == "HVD047"]


def test_divided_epochs_divide_decay_warmup_and_restart_steps():
    cosine = "tf.keras.optimizers.schedules.CosineDecay(0.1, decay_steps=5000, warmup_target=0.2, warmup_steps=500)"
    out = convert_text(FIT.format(schedule=cosine, epochs=10))
    assert "decay_steps=max(1, 5000 // hvd.size())" in out and "warmup_steps=max(1, 500 // hvd.size())" in out
    restarts = "tf.keras.optimizers.schedules.CosineDecayRestarts(0.1, 1000)"
    assert "CosineDecayRestarts(0.1 * hvd.size(), max(1, 1000 // hvd.size()))" in \
        convert_text(FIT.format(schedule=restarts, epochs=10))
    p4 = next(p for p in report.build(conversion(FIT.format(schedule=cosine, epochs=10)))["points"] if p["point"] == 4)
    assert "HVD047" in {c["code"] for c in p4["changes"]}


def test_one_sliced_epoch_divides_the_schedule():
    # epochs=1 on arrays: the arrays are sliced per rank (each rank 1/N of the steps), so the
    # schedule's steps follow
    text = FIT.format(schedule="tf.keras.optimizers.schedules.ExponentialDecay(0.1, 1000, 0.9)", epochs=1)
    assert codes(text) == ["HVD047"]
    assert "ExponentialDecay(0.1 * hvd.size(), max(1, 1000 // hvd.size()), 0.9)" in convert_text(text)


def test_a_count_taken_from_the_sharded_dataset_is_not_divided_twice():
    text = """import tensorflow as tf

x = tf.random.normal((512, 8))
y = tf.reduce_sum(x, axis=1, keepdims=True)
train_ds = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(512).batch(32)
schedule = tf.keras.optimizers.schedules.PolynomialDecay(0.1, decay_steps=len(train_ds) * 20)
model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
model.compile(optimizer=tf.keras.optimizers.Adam(schedule), loss="mse")
model.fit(train_ds, epochs=20)
"""
    analysis = conversion(text)
    assert [f.code for f in analysis.rule_sites if f.code == "HVD047"] == []
    assert "decay_steps=len(train_ds) * 20)" in convert_text(text)
    assert any("counted from the dataset" in n for _p, _l, n in analysis.notes)


def test_a_schedule_class_of_the_program_is_named():
    own = """class Warmup(tf.keras.optimizers.schedules.LearningRateSchedule):
    def __call__(self, step):
        return 0.1 * tf.minimum(1.0, tf.cast(step, tf.float32) / 1000.0)


"""
    text = FIT.format(schedule="Warmup()", epochs=10).replace("schedule = Warmup()", own + "schedule = Warmup()")
    analysis = conversion(text)
    notes = [n for _p, _l, n in analysis.notes]
    assert any("the schedule `Warmup` counts optimizer steps" in n for n in notes), notes
    p4 = next(p for p in report.build(analysis)["points"] if p["point"] == 4)
    assert p4["status"] != "done" and any("`Warmup`" in n["note"] for n in p4["notes"]), p4
