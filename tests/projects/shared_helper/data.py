"""The data: one helper makes the training and the validation pipelines."""
import tensorflow as tf


def load(split, batch=16):
    n = 256 if split == "train" else 64
    seed = (1, 2) if split == "train" else (3, 4)
    x = tf.random.stateless_normal((n, 8), seed=seed)
    y = tf.reduce_sum(x, axis=1, keepdims=True)
    return tf.data.Dataset.from_tensor_slices((x, y)).batch(batch)
