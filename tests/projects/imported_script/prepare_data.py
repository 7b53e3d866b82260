"""The data: the training and the test pipelines (read here, used by train.py and evaluate.py)."""
import tensorflow as tf

import config


def generate_datasets():
    x = tf.random.stateless_normal((256, 8), seed=(1, 2))
    y = tf.cast(tf.reduce_sum(x, axis=1) > 0, tf.int32)
    train_dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(config.BATCH_SIZE)
    test_dataset = tf.data.Dataset.from_tensor_slices((x[:64], y[:64])).batch(config.BATCH_SIZE)
    return train_dataset, test_dataset
