"""HVD042's validation_steps goes with its data: a validation pipeline every rank reads in one
order is sharded at its source (HVD041) with the division, one already sharded (the training
data's split, the training data itself) is only divided, and one whose source cannot be
sharded keeps validation_steps whole with a note in the report."""

from __future__ import annotations

from horovodize.app import report
from horovodize.engine import conversion, convert_text

HEAD = """import tensorflow as tf

x = tf.random.stateless_normal((1024, 4), seed=(1, 2))
y = tf.reduce_sum(x, axis=1)
full = tf.data.Dataset.from_tensor_slices((x, y))
train = full.take(800).batch(32).repeat()
model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
model.compile(optimizer=tf.keras.optimizers.Adam(1e-3), loss="mse")
"""
SHARD = ".apply(lambda ds: ds.shard(hvd.size(), hvd.rank()).take(ds.cardinality() // hvd.size()))"
DIVIDED = "validation_steps=max(1, 7 // hvd.size())"


def notes(text: str) -> list[str]:
    data = report.build(conversion(text))
    return [n["note"] for p in data["points"] for n in p.get("notes", [])]


def test_validation_in_one_order_is_sharded_with_its_steps():
    text = HEAD + ("val = full.skip(800).batch(32).repeat()\n"
                   "model.fit(train, epochs=2, steps_per_epoch=25, validation_data=val, validation_steps=7)\n")
    out = convert_text(text)
    assert f"val = full.skip(800){SHARD}.batch(32).repeat()" in out and DIVIDED in out


def test_validation_on_the_training_data_already_sharded_is_only_divided():
    text = HEAD + "model.fit(train, epochs=2, steps_per_epoch=25, validation_data=train, validation_steps=7)\n"
    out = convert_text(text)
    assert out.count(".shard(") == 1 and DIVIDED in out
    assert not any("left whole" in n for n in notes(text))


def test_validation_shuffled_per_rank_is_only_divided():
    text = HEAD + ("val = full.skip(800).shuffle(224).batch(32).repeat()\n"
                   "model.fit(train, epochs=2, steps_per_epoch=25, validation_data=val, validation_steps=7)\n")
    out = convert_text(text)
    assert "val = full.skip(800).shuffle(224)" in out and DIVIDED in out


def test_validation_of_unknown_size_keeps_its_steps():
    text = HEAD + ('val = tf.data.TextLineDataset("val.txt").map(tf.strings.length).batch(32).repeat()\n'
                   "model.fit(train, epochs=2, steps_per_epoch=25, validation_data=val, validation_steps=7)\n")
    out = convert_text(text)
    assert "validation_steps=7," in out and "TextLineDataset(\"val.txt\").map" in out
    assert any(n.startswith("done, but validation_steps is left whole") for n in notes(text))
