"""Rehearsal: a small Keras fit program whose conversion passes every check of `verify`."""
import numpy as np
import tensorflow as tf

EPOCHS = 2
BATCH_SIZE = 8

rng = np.random.RandomState(0)
x = rng.rand(64, 4).astype("float32")
y = x.sum(axis=1, keepdims=True)
dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(BATCH_SIZE)

model = tf.keras.Sequential([tf.keras.layers.Dense(1, input_shape=(4,))])
model.compile(optimizer=tf.keras.optimizers.SGD(0.01), loss="mse")
model.fit(dataset, epochs=EPOCHS)
model.save_weights("rh_ok_weights.h5")
print("final loss", model.evaluate(dataset, verbose=0))
