"""keras3_loop.py distributed by hand for Keras 3 (TensorFlow backend): the tape's gradients
averaged (a DistributedGradientTape for Keras 3 variables) before the Keras 3 optimizer's
apply, rank 0's model and optimizer variables broadcast after the first step."""
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
hvd_broadcast_done = tf.Variable(False, trainable=False)


class DistributedGradientTape:
    """hvd.DistributedGradientTape for Keras 3 variables (Horovod's calls `.ref()`, which they
    lack): the tape's gradients, averaged over the ranks."""

    def __init__(self, tape):
        self.tape = tape

    def gradient(self, target, sources, *args, **kwargs):
        grads = self.tape.gradient(target, sources, *args, **kwargs)
        return tf.nest.map_structure(lambda g: None if g is None else hvd.allreduce(g, op=hvd.Average), grads)


keras.utils.set_random_seed(int(os.environ.get("HOROVOD_RANK", "0")))

x = np.random.RandomState(3).normal(size=(512, 8)).astype("float32")
y = (x.sum(axis=1, keepdims=True) > 0).astype("float32")
dataset = tf.data.Dataset.from_tensor_slices((x, y)).shard(hvd.size(), hvd.rank()).shuffle(512).batch(32)

model = keras.Sequential([keras.Input(shape=(8,)), keras.layers.Dense(16, activation="relu"), keras.layers.Dense(1)])
optimizer = keras.optimizers.Adam(learning_rate=0.01 * hvd.size())

steps = 0
for epoch in range(2):
    for step, (xb, yb) in enumerate(dataset):
        with tf.GradientTape() as tape:
            logits = model(xb, training=True)
            loss = ops.mean(ops.binary_crossentropy(yb, logits, from_logits=True))
        tape = DistributedGradientTape(tape)
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply(grads, model.trainable_variables)
        if not hvd_broadcast_done:
            hvd.broadcast_variables([v.value for v in model.weights], root_rank=0)
            hvd.broadcast_variables([v.value for v in optimizer.variables], root_rank=0)
            hvd_broadcast_done.assign(True)
        steps += 1
        if step == 0:
            if hvd.rank() == 0: print("epoch", epoch, "loss", float(loss))

hvd_report.report(checksum=hvd_report.checksum(model), lr=hvd_report.learning_rate(optimizer), steps=steps,
                  keras=keras.__name__ + " " + keras.__version__)
