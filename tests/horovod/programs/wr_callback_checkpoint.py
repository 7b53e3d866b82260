"""Writes recognised by what they do, and reads that wait for them: a folder made up front
(``os.mkdir``), the program's own callback that writes files in ``on_epoch_end``, a
``ModelCheckpoint`` held in a variable, then the best model loaded back after ``fit``."""
import os
import shutil

import hvd_report
import numpy as np
import tensorflow as tf

tf.random.set_seed(int(os.environ.get("HOROVOD_RANK", "0")))
rng = np.random.default_rng(0)
x = rng.normal(size=(64, 4)).astype("float32")
y = x.sum(axis=1, keepdims=True)

os.mkdir("logs")


class EpochLog(tf.keras.callbacks.Callback):
    """Saves the loss and the first layer's kernel after every epoch, and the latest loss."""

    def on_epoch_end(self, epoch, logs=None):
        path = os.path.join("logs", f"epoch_{epoch}.txt")
        with open(path, "w") as fh:
            fh.write(f"{logs['loss']}\n")
        np.save(os.path.join("logs", f"kernel_{epoch}.npy"), self.model.get_weights()[0])
        shutil.copyfile(path, os.path.join("logs", "latest.txt"))


model = tf.keras.Sequential([tf.keras.layers.Dense(8, activation="relu", input_shape=(4,)),
                             tf.keras.layers.Dense(1)])
model.compile(optimizer=tf.keras.optimizers.SGD(0.01), loss="mse")
checkpoint = tf.keras.callbacks.ModelCheckpoint("best_model.keras", monitor="loss", save_best_only=True)
model.fit(x, y, batch_size=16, epochs=4, verbose=0, callbacks=[checkpoint, EpochLog()])

best = tf.keras.models.load_model("best_model.keras")
hvd_report.report(checksum=hvd_report.checksum(model) + hvd_report.checksum(best),
                  iterations=int(model.optimizer.iterations.numpy()),
                  lr=hvd_report.learning_rate(model.optimizer))
