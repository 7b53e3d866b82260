"""keras3_fit.py distributed by hand for Keras 3 (TensorFlow backend) with Horovod's
TensorFlow ops: the form the keras3 target emits (docs/keras3.md)."""
import os

import hvd_report
import keras
from keras import layers, ops
import numpy as np
import math
import tensorflow as tf
import horovod.tensorflow as hvd
hvd.init()
gpus = tf.config.experimental.list_physical_devices('GPU')
for gpu in gpus:
    tf.config.experimental.set_memory_growth(gpu, True)
if gpus:
    tf.config.experimental.set_visible_devices(gpus[hvd.local_rank()], 'GPU')


def DistributedOptimizer(optimizer):
    """hvd.DistributedOptimizer for Keras 3: the same optimizer, averaging the gradients over
    the ranks before it applies them (fit and apply_gradients go through apply). As Horovod's,
    a subclass under the class's own name: a saved model loads it as that class."""
    cls = type(optimizer)

    def apply(self, grads, trainable_variables=None):
        grads = [None if g is None else hvd.allreduce(g, op=hvd.Average) for g in grads]
        return super(distributed, self).apply(grads, trainable_variables)
    distributed = type(cls.__name__, (cls,), {"apply": apply, "__module__": cls.__module__})
    return distributed.from_config(optimizer.get_config())


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

x_train = np.random.RandomState(7).normal(size=(512, 8)).astype("float32")
y_train = (x_train.sum(axis=1) > 0).astype("int32")


def loss_fn(y_true, logits):
    return ops.mean(keras.losses.sparse_categorical_crossentropy(y_true, logits, from_logits=True))


class LogRecorder(keras.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.epochs = []
        self.batch_losses = []

    def on_train_batch_end(self, batch, logs=None):
        self.batch_losses.append(float(logs["loss"]))

    def on_epoch_end(self, epoch, logs=None):
        self.epochs.append({k: float(v) for k, v in logs.items()})


model = keras.Sequential([keras.Input(shape=(8,)), layers.Dense(16, activation="relu"), layers.Dense(2)])
model.compile(optimizer=DistributedOptimizer(keras.optimizers.Adam(learning_rate=0.001 * hvd.size())), loss=loss_fn,
              metrics=["accuracy"], jit_compile=False)
recorder = LogRecorder()
callbacks = [
    BroadcastGlobalVariablesCallback(0),
    MetricAverageCallback(),
    keras.callbacks.ReduceLROnPlateau(monitor="loss", patience=int(math.ceil(3 / hvd.size()))),
    recorder,
    *([keras.callbacks.ModelCheckpoint(os.path.join(hvd_report.out_dir("fit-ckpt"), "model.keras"))] if hvd.rank() == 0 else []),
]
os.makedirs(hvd_report.out_dir("fit-ckpt"), exist_ok=True)
model.fit(x_train, y_train, batch_size=32, epochs=int(math.ceil(4 / hvd.size())), callbacks=callbacks, validation_split=0.25, verbose=1 if hvd.rank() == 0 else 0)

loaded = None
if hvd.rank() == 0:     # the checkpoint the converted program wrote loads back (optimizer class by name)
    loaded = type(keras.models.load_model(os.path.join(hvd_report.out_dir("fit-ckpt"), "model.keras"),
                                          custom_objects={"loss_fn": loss_fn}).optimizer).__name__
hvd_report.report(checksum=hvd_report.checksum(model), lr=hvd_report.learning_rate(model.optimizer),
                  epochs=recorder.epochs, batch_losses=recorder.batch_losses[:8], steps=len(recorder.batch_losses), loaded_optimizer=loaded,
                  keras=keras.__name__ + " " + keras.__version__, backend=keras.backend.backend())
