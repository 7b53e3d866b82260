"""Keras 3 `fit` with callbacks (standalone `import keras`, Keras 3 API: `keras.ops` in the
loss): a steering ReduceLROnPlateau, a user callback that records the epoch's logs and each
batch's loss, and a ModelCheckpoint. Each rank shuffles with its own seed, so the per-batch
losses differ between ranks and only the averaged epoch metrics can be equal. Converted with
`--keras-target keras3` for the newest stack (TF 2.21 + Keras 3.15, KERAS_BACKEND=tensorflow)."""
import os

import hvd_report
import keras
from keras import layers, ops
import numpy as np

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
model.compile(optimizer=keras.optimizers.Adam(learning_rate=0.001), loss=loss_fn, metrics=["accuracy"])
recorder = LogRecorder()
callbacks = [
    keras.callbacks.ReduceLROnPlateau(monitor="loss", patience=3),
    recorder,
    keras.callbacks.ModelCheckpoint(os.path.join(hvd_report.out_dir("fit-ckpt"), "model.keras")),
]
os.makedirs(hvd_report.out_dir("fit-ckpt"), exist_ok=True)
model.fit(x_train, y_train, batch_size=32, epochs=4, callbacks=callbacks, validation_split=0.25)

hvd_report.report(checksum=hvd_report.checksum(model), lr=hvd_report.learning_rate(model.optimizer),
                  epochs=recorder.epochs, batch_losses=recorder.batch_losses[:8], steps=len(recorder.batch_losses),
                  keras=keras.__name__ + " " + keras.__version__, backend=keras.backend.backend())
