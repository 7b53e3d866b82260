"""A GradientTape step loop, ``for step in range(STEPS): x, y = next(it)``, over a dataset
read in a fixed order (no shuffle): every rank would draw the same batches."""
import os

import hvd_report
import numpy as np
import tensorflow as tf

tf.random.set_seed(int(os.environ.get("HOROVOD_RANK", "0")))
rng = np.random.default_rng(0)
features = rng.normal(size=(512, 8)).astype("float32")
labels = features.sum(axis=1, keepdims=True)
dataset = tf.data.Dataset.from_tensor_slices((features, labels)).repeat().batch(8)
it = iter(dataset)

model = tf.keras.Sequential([
    tf.keras.layers.Dense(16, activation="relu", input_shape=(8,)),
    tf.keras.layers.Dense(1),
])
loss_fn = tf.keras.losses.MeanSquaredError()
optimizer = tf.keras.optimizers.SGD(0.01)
STEPS = 40


@tf.function
def train_step(x, y):
    with tf.GradientTape() as tape:
        loss = loss_fn(y, model(x, training=True))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss


drawn = 0.0
for step in range(STEPS):
    x, y = next(it)
    drawn += float(tf.reduce_sum(x))
    loss = train_step(x, y)

hvd_report.report(checksum=hvd_report.checksum(model), iterations=int(optimizer.iterations.numpy()),
                  lr=hvd_report.learning_rate(optimizer), drawn=drawn)
