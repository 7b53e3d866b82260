"""Keras fit on an infinite tf.data pipeline with steps_per_epoch."""
import os

import hvd_report
import tensorflow as tf

tf.random.set_seed(int(os.environ.get("HOROVOD_RANK", "0")))
features = tf.random.normal((512, 8), seed=1)
labels = tf.reduce_sum(features, axis=1, keepdims=True)
dataset = tf.data.Dataset.from_tensor_slices((features, labels))
dataset = dataset.repeat().shuffle(512).batch(16)

model = tf.keras.Sequential([
    tf.keras.layers.Dense(16, activation="relu", input_shape=(8,)),
    tf.keras.layers.Dense(1),
])
model.compile(optimizer=tf.keras.optimizers.SGD(0.01), loss="mse")
model.fit(dataset, steps_per_epoch=8, epochs=2)

hvd_report.report(checksum=hvd_report.checksum(model), iterations=int(model.optimizer.iterations.numpy()),
                  lr=hvd_report.learning_rate(model.optimizer))
