"""A shared data helper: data.load() gives the training data (divided among the ranks) and
the validation data (read whole by every rank, so the metric rank 0 prints is the set's)."""
import os

import hvd_report
import tensorflow as tf

from data import load

tf.random.set_seed(int(os.environ.get("HOROVOD_RANK", "0")))     # each process starts elsewhere
model = tf.keras.Sequential([tf.keras.layers.Dense(16, activation="relu", input_shape=(8,)), tf.keras.layers.Dense(1)])
opt = tf.keras.optimizers.SGD(learning_rate=0.01)
loss_fn = tf.keras.losses.MeanSquaredError()
examples = 0
for x, y in load("train"):
    with tf.GradientTape() as tape:
        loss = loss_fn(y, model(x, training=True))
    grads = tape.gradient(loss, model.trainable_variables)
    opt.apply_gradients(zip(grads, model.trainable_variables))
    examples += int(x.shape[0])

val_mse = tf.keras.metrics.MeanSquaredError()
val_examples = 0
for x, y in load("val"):
    val_mse.update_state(y, model(x))
    val_examples += int(x.shape[0])
print("validation mse", float(val_mse.result()), "on", val_examples, "examples")
hvd_report.report(checksum=hvd_report.checksum(model), examples=examples, val_examples=val_examples,
                  val_mse=float(val_mse.result()), lr=hvd_report.learning_rate(opt))
