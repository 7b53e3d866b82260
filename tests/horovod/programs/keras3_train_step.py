"""A Keras 3 model overriding `train_step` with a `tf.GradientTape` (the TensorFlow backend's
idiom in the Keras 3 guide "Customizing what happens in fit()"): the loss with `keras.ops`,
the update with the Keras 3 `optimizer.apply`, the metrics updated by hand. Trained with
`fit` on a tf.data pipeline. Converted with `--keras-target keras3`."""
import os

import hvd_report
import keras
from keras import ops
import numpy as np
import tensorflow as tf

keras.utils.set_random_seed(int(os.environ.get("HOROVOD_RANK", "0")))

x = np.random.RandomState(3).normal(size=(512, 8)).astype("float32")
y = (x.sum(axis=1, keepdims=True) / 8.0).astype("float32")
dataset = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(512).batch(32)


class TapeModel(keras.Model):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.loss_tracker = keras.metrics.Mean(name="loss")

    def train_step(self, data):
        x, y = data
        with tf.GradientTape() as tape:
            y_pred = self(x, training=True)
            loss = ops.mean(ops.square(y_pred - y))
        grads = tape.gradient(loss, self.trainable_variables)
        self.optimizer.apply(grads, self.trainable_variables)
        self.loss_tracker.update_state(loss)
        return {"loss": self.loss_tracker.result()}

    @property
    def metrics(self):
        return [self.loss_tracker]


class BatchCounter(keras.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.batches = 0

    def on_train_batch_end(self, batch, logs=None):
        self.batches += 1


inputs = keras.Input(shape=(8,))
hidden = keras.layers.Dense(16, activation="relu")(inputs)
model = TapeModel(inputs, keras.layers.Dense(1)(hidden))
model.compile(optimizer=keras.optimizers.SGD(learning_rate=0.01))
counter = BatchCounter()
model.fit(dataset, epochs=2, callbacks=[counter])

hvd_report.report(checksum=hvd_report.checksum(model), lr=hvd_report.learning_rate(model.optimizer),
                  batches=counter.batches, keras=keras.__name__ + " " + keras.__version__)
