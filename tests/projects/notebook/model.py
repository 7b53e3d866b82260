"""The model and the optimizer the notebook trains (made here, trained in train.ipynb)."""
import tensorflow as tf


def build_model():
    return tf.keras.Sequential([
        tf.keras.layers.Dense(16, activation="relu", input_shape=(8,)),
        tf.keras.layers.Dense(1),
    ])


def make_optimizer(lr=0.01):
    return tf.keras.optimizers.SGD(learning_rate=lr)
