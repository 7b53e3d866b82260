"""Train, save the model and a history file, then load both back (write, then read); the
history file's name is per run (a uuid), so every rank must use rank 0's."""
import json
import os
import uuid

import hvd_report
import numpy as np
import tensorflow as tf

tf.random.set_seed(int(os.environ.get("HOROVOD_RANK", "0")))
x = np.random.default_rng(0).normal(size=(64, 4)).astype("float32")
y = x.sum(axis=1, keepdims=True)

model = tf.keras.Sequential([tf.keras.layers.Dense(1, input_shape=(4,))])
model.compile(optimizer=tf.keras.optimizers.SGD(0.01), loss="mse")
history = model.fit(x, y, batch_size=16, epochs=2, verbose=0)

model.save("model.keras")
restored = tf.keras.models.load_model("model.keras")
history_path = "history-%s.json" % uuid.uuid4().hex[:8]
with open(history_path, "w") as fh:
    json.dump(history.history, fh)
with open(history_path) as fh:
    losses = json.load(fh)["loss"]
np.save("weights.npy", np.concatenate([w.ravel() for w in model.get_weights()]))
saved = np.load("weights.npy")

hvd_report.report(checksum=hvd_report.checksum(model), restored_checksum=hvd_report.checksum(restored), iterations=int(model.optimizer.iterations.numpy()),
                  lr=hvd_report.learning_rate(model.optimizer), epochs_logged=len(losses),
                  saved_checksum=float(np.abs(saved).sum()))
