import tensorflow as tf


def train_data(batch_size=16):
    x = tf.random.stateless_normal((256, 8), seed=(3, 4))
    y = tf.reduce_sum(x, axis=1, keepdims=True)
    return tf.data.Dataset.from_tensor_slices((x, y)).batch(batch_size)
