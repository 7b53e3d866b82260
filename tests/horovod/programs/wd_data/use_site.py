"""The data module of wd_use_site.py: a dataset whose size TF does not know (a filter), 9 batches of 8.
(A folder of its own: the test suites read every program in programs/ as a script.)"""
import tensorflow as tf


def make_dataset():
    features = tf.random.normal((72, 8), seed=1)
    labels = tf.reduce_sum(features, axis=1, keepdims=True)
    return tf.data.Dataset.from_tensor_slices((features, labels)).filter(lambda x, y: True).batch(8)
