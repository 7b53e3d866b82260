"""The data: a finite tf.data pipeline (read here, iterated in train.ipynb)."""
import tensorflow as tf


def load(batch=16):
    x = tf.random.stateless_normal((256, 8), seed=(1, 2))
    y = tf.reduce_sum(x, axis=1, keepdims=True)
    return tf.data.Dataset.from_tensor_slices((x, y)).batch(batch)
