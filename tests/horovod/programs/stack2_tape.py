"""A tape loop in the Keras 3 idiom (standalone `import keras`, Keras 2 API only): eager steps
with `tf.GradientTape` over a `tf.data` pipeline. Converted with `--keras-target tf_keras`
for the second stack (TF 2.16 + tf_keras)."""
import os

import hvd_report
import keras
import numpy as np
import tensorflow as tf

keras.utils.set_random_seed(int(os.environ.get("HOROVOD_RANK", "0")))

x = np.random.RandomState(3).normal(size=(512, 8)).astype("float32")
y = (x.sum(axis=1, keepdims=True) > 0).astype("float32")
dataset = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(512).batch(32)

model = keras.Sequential([keras.Input(shape=(8,)), keras.layers.Dense(16, activation="relu"), keras.layers.Dense(1)])
loss_fn = keras.losses.BinaryCrossentropy(from_logits=True)
opt = keras.optimizers.SGD(learning_rate=0.01)

steps = 0
for epoch in range(2):
    for step, (xb, yb) in enumerate(dataset):
        with tf.GradientTape() as tape:
            loss = loss_fn(yb, model(xb, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
        steps += 1
        if step == 0:
            print("epoch", epoch, "loss", float(loss))

hvd_report.report(checksum=hvd_report.checksum(model), lr=hvd_report.learning_rate(opt), steps=steps,
                  keras=keras.__name__ + " " + getattr(keras, "__version__", "?"))
