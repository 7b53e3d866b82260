"""Three experiments, one callbacks name, as tutorials write them: the first two models share
one list (a broadcast callback in it would run for the first model only: Horovod's broadcasts
once per instance), and the list is rebound under a flag before the third. Each model must
start from rank 0's weights: the checksum adds the three."""
import os

import hvd_report
import numpy as np
import tensorflow as tf

tf.random.set_seed(int(os.environ.get("HOROVOD_RANK", "0")))

SAVE = True
x = np.random.RandomState(0).normal(size=(256, 8)).astype("float32")
y = x.sum(axis=1, keepdims=True)
results = {}


def build_model():
    return tf.keras.Sequential([tf.keras.layers.Dense(8, activation="relu", input_shape=(8,)), tf.keras.layers.Dense(1)])


callbacks = [tf.keras.callbacks.EarlyStopping(monitor="loss", patience=5)]

model = build_model()
model.compile(optimizer=tf.keras.optimizers.Adam(0.001), loss="mse")
model.fit(x, y, batch_size=32, epochs=2, callbacks=callbacks)
results["first"] = hvd_report.checksum(model)

model = build_model()
model.compile(optimizer=tf.keras.optimizers.Adam(0.001), loss="mse")
model.fit(x, y, batch_size=32, epochs=2, callbacks=callbacks)
results["second"] = hvd_report.checksum(model)

if SAVE:
    callbacks = [tf.keras.callbacks.ModelCheckpoint(hvd_report.out_dir("shared-cb") + ".h5", save_weights_only=True)]
model = build_model()
model.compile(optimizer=tf.keras.optimizers.Adam(0.001), loss="mse")
model.fit(x, y, batch_size=32, epochs=2, callbacks=callbacks)
results["third"] = hvd_report.checksum(model)

hvd_report.report(checksum=sum(results.values()), lr=hvd_report.learning_rate(model.optimizer))
