"""A Keras 3 custom training loop: `tf.GradientTape` (the TensorFlow backend), the loss in
`keras.ops`, the Keras 3 `optimizer.apply(grads, variables)`, eager steps over a tf.data
pipeline. Converted with `--keras-target keras3`."""
import os

import hvd_report
import keras
from keras import ops
import numpy as np
import tensorflow as tf

keras.utils.set_random_seed(int(os.environ.get("HOROVOD_RANK", "0")))

x = np.random.RandomState(3).normal(size=(512, 8)).astype("float32")
y = (x.sum(axis=1, keepdims=True) > 0).astype("float32")
dataset = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(512).batch(32)

model = keras.Sequential([keras.Input(shape=(8,)), keras.layers.Dense(16, activation="relu"), keras.layers.Dense(1)])
optimizer = keras.optimizers.Adam(learning_rate=0.01)

steps = 0
for epoch in range(2):
    for step, (xb, yb) in enumerate(dataset):
        with tf.GradientTape() as tape:
            logits = model(xb, training=True)
            loss = ops.mean(ops.binary_crossentropy(yb, logits, from_logits=True))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply(grads, model.trainable_variables)
        steps += 1
        if step == 0:
            print("epoch", epoch, "loss", float(loss))

hvd_report.report(checksum=hvd_report.checksum(model), lr=hvd_report.learning_rate(optimizer), steps=steps,
                  keras=keras.__name__ + " " + keras.__version__)
