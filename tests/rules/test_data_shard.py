"""HVD040: each rank takes ``n // hvd.size()`` elements (alternative: shard by rank too)."""

from __future__ import annotations

from horovodize.engine import analyze
from horovodize.parse.source import apply_edits

from rulecase import rule_output, assert_no_rule, assert_rule, compiles, sites, src


STEP = """
        model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
        opt = tf.keras.optimizers.SGD(0.1)


        def train_step(x):
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(model(x))
            grads = tape.gradient(loss, model.trainable_variables)
            opt.apply_gradients(zip(grads, model.trainable_variables))
"""


def test_take_positional_and_keyword():
    before = """
        import tensorflow as tf

        dataset = tf.data.Dataset.range(1000)
        dataset = dataset.shuffle(100).batch(10)
        for batch in dataset.take(50):
            train_step(batch)
        for batch in dataset.take(count=steps + 1):
            train_step(batch)
        small = dataset.take(steps * epochs)
        for batch in small:
            train_step(batch)
        """ + STEP
    after = """
        import tensorflow as tf

        dataset = tf.data.Dataset.range(1000)
        dataset = dataset.shuffle(100).batch(10)
        for batch in dataset.take(max(1, 50 // hvd.size())):
            train_step(batch)
        for batch in dataset.take(count=max(1, (steps + 1) // hvd.size())):
            train_step(batch)
        small = dataset.take(max(1, steps * epochs // hvd.size()))
        for batch in small:
            train_step(batch)
        """ + STEP
    assert_rule(before, after, "HVD040")


def test_take_in_a_function_on_a_local_dataset():
    before = """
        import tensorflow as tf


        def pipeline(files):
            ds = tf.data.TFRecordDataset(files)
            return ds.map(parse).take(
                100,
            )


        for x in pipeline(["a.tfrecord"]):
            train_step(x)
        """ + STEP
    after = """
        import tensorflow as tf


        def pipeline(files):
            ds = tf.data.TFRecordDataset(files)
            return ds.map(parse).shard(hvd.size(), hvd.rank()).take(
                max(1, 100 // hvd.size()),
            )


        for x in pipeline(["a.tfrecord"]):
            train_step(x)
        """ + STEP
    assert_rule(before, after, "HVD040")


def test_take_one_peek_is_not_a_training_bound():
    """``take(1)`` to look at one batch stays ``take(1)`` (it used to become ``take(0)``)."""
    text = """
        import tensorflow as tf

        dataset = tf.data.Dataset.range(1000).batch(10)
        for batch in dataset.take(1):
            print(batch.shape)
        first = next(iter(dataset.take(1)))
        for batch in dataset.take(20):
            train_step(batch)
        """ + STEP
    out = rule_output(src(text), "HVD040")
    assert "dataset.take(1):" in out and "dataset.take(1)))" in out
    assert "dataset.shard(hvd.size(), hvd.rank()).take(max(1, 20 // hvd.size())):" in out   # (not shuffled)


def test_shard_alternative():
    text = src("""
        import tensorflow as tf

        dataset = tf.data.Dataset.range(1000)
        for x in dataset.take(10):
            train_step(x)
        """ + STEP)
    # not shuffled: every rank would take the same first elements, so the shard comes first and
    # dividing the count alone is the alternative; after a shuffle it is the other way round
    analysis = analyze(text)
    (site,) = sites(analysis, "HVD040")
    (alt,) = site.alternatives
    out = apply_edits(text, analysis.fix_edits(site.fix))
    assert "for x in dataset.shard(hvd.size(), hvd.rank()).take(max(1, 10 // hvd.size())):" in out
    compiles(out)
    assert "for x in dataset.take(max(1, 10 // hvd.size())):" in apply_edits(text, analysis.fix_edits(alt))
    shuffled = text.replace("dataset = tf.data.Dataset.range(1000)", "dataset = tf.data.Dataset.range(1000).shuffle(100)")
    analysis = analyze(shuffled)
    (site,) = sites(analysis, "HVD040")
    assert "for x in dataset.take(max(1, 10 // hvd.size())):" in apply_edits(shuffled, analysis.fix_edits(site.fix))
    assert site.alternatives[0].title.startswith("Shard")


def test_take_on_something_that_is_not_a_dataset():
    assert_no_rule("""
        import tensorflow as tf

        items = [1, 2, 3]
        queue.take(10)
        tf.data.Dataset.range(10).take(5)
        """, "HVD040")


def test_negative_already_divided_or_sharded():
    assert_no_rule("""
        import tensorflow as tf
        import horovod.tensorflow as hvd

        hvd.init()
        dataset = tf.data.Dataset.range(1000)
        per_rank = 1000 // hvd.size()
        a = dataset.take(per_rank)
        b = dataset.take(count=10 // hvd.size())
        c = dataset.shard(hvd.size(), hvd.rank()).take(10)
        """, "HVD040")
