"""A keras_core program (keras-io's port style): a `keras_core.Model` subclass whose custom
`train_step` takes its gradients with a tape, trained with `fit`, and a plain Sequential
`fit`. Only Keras 2 API is used, so the conversion rewrites the imports to tf.keras and the
result runs on the pinned stack (TensorFlow 2.15, no keras_core installed)."""
import os

import hvd_report
import keras_core as keras
from keras_core import layers
import numpy as np
import tensorflow as tf

keras.utils.set_random_seed(int(os.environ.get("HOROVOD_RANK", "0")))

x_train = np.random.RandomState(7).normal(size=(256, 8)).astype("float32")
y_train = (x_train.sum(axis=1, keepdims=True) > 0).astype("float32")


class TapeModel(keras.Model):
    def train_step(self, data):
        x, y = data
        with tf.GradientTape() as tape:
            y_pred = self(x, training=True)
            loss = tf.reduce_mean(tf.square(y_pred - y))
        grads = tape.gradient(loss, self.trainable_variables)
        self.optimizer.apply_gradients(zip(grads, self.trainable_variables))
        return {"loss": loss}


class BatchCounter(keras.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.batches = 0

    def on_train_batch_end(self, batch, logs=None):
        self.batches += 1


inputs = keras.Input(shape=(8,))
hidden = layers.Dense(16, activation="relu")(inputs)
tape_model = TapeModel(inputs, layers.Dense(1)(hidden))
tape_model.compile(optimizer=keras.optimizers.SGD(learning_rate=0.01))
counter = BatchCounter()
tape_model.fit(x_train, y_train, batch_size=32, epochs=2, callbacks=[counter])

plain = keras.Sequential([keras.Input(shape=(8,)), layers.Dense(8, activation="relu"), layers.Dense(1)])
plain.compile(optimizer=keras.optimizers.Adam(learning_rate=0.002), loss="mse")
plain.fit(x_train, y_train, batch_size=32, epochs=2)

hvd_report.report(checksum=hvd_report.checksum(tape_model) + hvd_report.checksum(plain),
                  lr=hvd_report.learning_rate(tape_model.optimizer), lr2=hvd_report.learning_rate(plain.optimizer),
                  batches=counter.batches)
