import tensorflow as tf


def regressor():
    return tf.keras.Sequential([
        tf.keras.layers.Dense(16, activation="relu", input_shape=(8,)),
        tf.keras.layers.Dense(1),
    ])
