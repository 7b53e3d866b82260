"""keras3_train_step.py distributed by hand for Keras 3 (TensorFlow backend): the tape in the
overridden train_step averages its gradients (a DistributedGradientTape for Keras 3
variables), fit broadcasts and averages the metrics with Keras 3 callbacks."""
import os

import hvd_report
import keras
from keras import ops
import numpy as np
import tensorflow as tf
import horovod.tensorflow as hvd
hvd.init()
gpus = tf.config.experimental.list_physical_devices('GPU')
for gpu in gpus:
    tf.config.experimental.set_memory_growth(gpu, True)
if gpus:
    tf.config.experimental.set_visible_devices(gpus[hvd.local_rank()], 'GPU')


class DistributedGradientTape:
    """hvd.DistributedGradientTape for Keras 3 variables (Horovod's calls `.ref()`, which they
    lack): the tape's gradients, averaged over the ranks."""

    def __init__(self, tape):
        self.tape = tape

    def gradient(self, target, sources, *args, **kwargs):
        grads = self.tape.gradient(target, sources, *args, **kwargs)
        return tf.nest.map_structure(lambda g: None if g is None else hvd.allreduce(g, op=hvd.Average), grads)


class BroadcastGlobalVariablesCallback(keras.callbacks.Callback):
    """hvd.callbacks.BroadcastGlobalVariablesCallback for Keras 3: rank 0's model and optimizer
    variables to every rank after the first batch (the optimizer builds its own in it)."""

    def __init__(self, root_rank):
        super().__init__()
        self.root_rank = root_rank
        self.done = False

    def on_train_batch_end(self, batch, logs=None):
        if not self.done:
            variables = self.model.weights + self.model.optimizer.variables
            hvd.broadcast_variables([v.value for v in variables], root_rank=self.root_rank)
            self.done = True


class MetricAverageCallback(keras.callbacks.Callback):
    """hvd.callbacks.MetricAverageCallback for Keras 3: the epoch's logs averaged over the ranks."""

    def on_epoch_end(self, epoch, logs=None):
        for key in sorted(logs or {}):
            logs[key] = float(hvd.allreduce(tf.constant(float(logs[key]), tf.float64), name=f"metric_{key}"))


keras.utils.set_random_seed(int(os.environ.get("HOROVOD_RANK", "0")))

x = np.random.RandomState(3).normal(size=(512, 8)).astype("float32")
y = (x.sum(axis=1, keepdims=True) / 8.0).astype("float32")
dataset = tf.data.Dataset.from_tensor_slices((x, y)).shard(hvd.size(), hvd.rank()).shuffle(512).batch(32)


class TapeModel(keras.Model):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.loss_tracker = keras.metrics.Mean(name="loss")

    def train_step(self, data):
        x, y = data
        with tf.GradientTape() as tape:
            y_pred = self(x, training=True)
            loss = ops.mean(ops.square(y_pred - y))
        tape = DistributedGradientTape(tape)
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
model.compile(optimizer=keras.optimizers.SGD(learning_rate=0.01 * hvd.size()), jit_compile=False)
counter = BatchCounter()
model.fit(dataset, epochs=2, callbacks=[BroadcastGlobalVariablesCallback(0), MetricAverageCallback(), counter],
          verbose=1 if hvd.rank() == 0 else 0)

hvd_report.report(checksum=hvd_report.checksum(model), lr=hvd_report.learning_rate(model.optimizer),
                  batches=counter.batches, keras=keras.__name__ + " " + keras.__version__)
