"""HVD040: each rank takes ``n // hvd.size()`` elements (alternative: shard by rank too)."""

from __future__ import annotations

from horovodize.engine import analyze
from horovodize.source import apply_edits

from rulecase import assert_no_rule, assert_rule, compiles, sites, src


def test_take_positional_and_keyword():
    before = """
        import tensorflow as tf

        dataset = tf.data.Dataset.range(1000)
        dataset = dataset.shuffle(100).batch(10)
        for batch in dataset.take(50):
            pass
        for batch in dataset.take(count=steps + 1):
            pass
        small = dataset.take(steps * epochs)
        """
    after = """
        import tensorflow as tf

        dataset = tf.data.Dataset.range(1000)
        dataset = dataset.shuffle(100).batch(10)
        for batch in dataset.take(50 // hvd.size()):
            pass
        for batch in dataset.take(count=(steps + 1) // hvd.size()):
            pass
        small = dataset.take(steps * epochs // hvd.size())
        """
    assert_rule(before, after, "HVD040")


def test_take_in_a_function_on_a_local_dataset():
    before = """
        import tensorflow as tf


        def pipeline(files):
            ds = tf.data.TFRecordDataset(files)
            return ds.map(parse).take(
                100,
            )
        """
    after = """
        import tensorflow as tf


        def pipeline(files):
            ds = tf.data.TFRecordDataset(files)
            return ds.map(parse).take(
                100 // hvd.size(),
            )
        """
    assert_rule(before, after, "HVD040")


def test_shard_alternative():
    text = src("""
        import tensorflow as tf

        dataset = tf.data.Dataset.range(1000)
        for x in dataset.take(10):
            pass
        """)
    analysis = analyze(text)
    (site,) = sites(analysis, "HVD040")
    (alt,) = site.alternatives
    out = apply_edits(text, analysis.fix_edits(alt))
    assert "for x in dataset.shard(hvd.size(), hvd.rank()).take(10 // hvd.size()):" in out
    compiles(out)


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
