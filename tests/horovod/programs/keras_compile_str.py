"""Keras compile('adam') with a string optimizer, then fit."""
import os

import hvd_report
import numpy as np
import tensorflow as tf

tf.random.set_seed(int(os.environ.get("HOROVOD_RANK", "0")))
rng = np.random.default_rng(int(os.environ.get("HOROVOD_RANK", "0")))
x_train = rng.normal(size=(256, 8)).astype("float32")
y_train = x_train.sum(axis=1, keepdims=True)

inputs = tf.keras.Input(shape=(8,))
hidden = tf.keras.layers.Dense(16, activation="relu")(inputs)
outputs = tf.keras.layers.Dense(1)(hidden)
model = tf.keras.Model(inputs, outputs)

model.compile("adam", loss="mse")
history = model.fit(x_train, y_train, batch_size=32, epochs=2)

hvd_report.report(checksum=hvd_report.checksum(model),
                 examples=256 * len(history.history["loss"]),
                 lr=hvd_report.learning_rate(model.optimizer))
