"""keras3_random.py distributed by hand for Keras 3 (TensorFlow backend): as loop.py, in a
tf.function step, with the keras.random noise and Dropout masks drawn per rank (each rank's
own seed, so the ranks do not draw the same noise for different data)."""
import os

import hvd_report
import keras
import numpy as np
import tensorflow as tf
import horovod.tensorflow as hvd
hvd.init()
gpus = tf.config.experimental.list_physical_devices('GPU')
for gpu in gpus:
    tf.config.experimental.set_memory_growth(gpu, True)
if gpus:
    tf.config.experimental.set_visible_devices(gpus[hvd.local_rank()], 'GPU')
hvd_broadcast_done = tf.Variable(False, trainable=False)


class DistributedGradientTape:
    """hvd.DistributedGradientTape for Keras 3 variables (Horovod's calls `.ref()`, which they
    lack): the tape's gradients, averaged over the ranks."""

    def __init__(self, tape):
        self.tape = tape

    def gradient(self, target, sources, *args, **kwargs):
        grads = self.tape.gradient(target, sources, *args, **kwargs)
        return tf.nest.map_structure(lambda g: None if g is None else hvd.allreduce(g, op=hvd.Average), grads)


keras.utils.set_random_seed(1337 + hvd.rank())
noise_seed = keras.random.SeedGenerator(42 + hvd.rank())

x = np.random.RandomState(5).normal(size=(512, 8)).astype("float32")
y = (x @ np.arange(1, 9, dtype="float32")[:, None] / 8.0).astype("float32")
dataset = tf.data.Dataset.from_tensor_slices((x, y)).shard(hvd.size(), hvd.rank()).shuffle(512, seed=7).batch(32)

model = keras.Sequential([keras.Input(shape=(8,)), keras.layers.Dense(32, activation="relu"),
                          keras.layers.Dropout(0.2), keras.layers.Dense(1)])
optimizer = keras.optimizers.SGD(learning_rate=0.02 * hvd.size(), momentum=0.9)
loss_fn = keras.losses.MeanSquaredError()


@tf.function
def train_step(xb, yb):
    xb = xb + 0.01 * keras.random.normal(tf.shape(xb), seed=noise_seed)
    with tf.GradientTape() as tape:
        loss = loss_fn(yb, model(xb, training=True))
    tape = DistributedGradientTape(tape)
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply(grads, model.trainable_variables)
    if not hvd_broadcast_done:
        hvd.broadcast_variables([v.value for v in model.weights], root_rank=0)
        hvd.broadcast_variables([v.value for v in optimizer.variables], root_rank=0)
        hvd_broadcast_done.assign(True)
    return loss


steps = 0
for epoch in range(2):
    for xb, yb in dataset:
        loss = train_step(xb, yb)
        steps += 1
    if hvd.rank() == 0:
        print("epoch", epoch, "loss", float(loss))

hvd_report.report(checksum=hvd_report.checksum(model), lr=hvd_report.learning_rate(optimizer), steps=steps,
                  keras=keras.__name__ + " " + keras.__version__)
