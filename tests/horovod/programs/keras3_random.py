"""A Keras 3 program seeded with `keras.random`: a `keras.random.SeedGenerator` draws the
input noise of each step (`keras.random.normal`), Dropout draws its masks, and
`keras.utils.set_random_seed` seeds the rest. A `tf.function` step with `tf.GradientTape` and
the Keras 3 `optimizer.apply`. Converted with `--keras-target keras3`."""
import os

import hvd_report
import keras
import numpy as np
import tensorflow as tf

keras.utils.set_random_seed(1337)
noise_seed = keras.random.SeedGenerator(42)

x = np.random.RandomState(5).normal(size=(512, 8)).astype("float32")
y = (x @ np.arange(1, 9, dtype="float32")[:, None] / 8.0).astype("float32")
dataset = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(512, seed=7).batch(32)

model = keras.Sequential([keras.Input(shape=(8,)), keras.layers.Dense(32, activation="relu"),
                          keras.layers.Dropout(0.2), keras.layers.Dense(1)])
optimizer = keras.optimizers.SGD(learning_rate=0.02, momentum=0.9)
loss_fn = keras.losses.MeanSquaredError()


@tf.function
def train_step(xb, yb):
    xb = xb + 0.01 * keras.random.normal(tf.shape(xb), seed=noise_seed)
    with tf.GradientTape() as tape:
        loss = loss_fn(yb, model(xb, training=True))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply(grads, model.trainable_variables)
    return loss


steps = 0
for epoch in range(2):
    for xb, yb in dataset:
        loss = train_step(xb, yb)
        steps += 1
    print("epoch", epoch, "loss", float(loss))

hvd_report.report(checksum=hvd_report.checksum(model), lr=hvd_report.learning_rate(optimizer), steps=steps,
                  keras=keras.__name__ + " " + keras.__version__)
