"""Two sources of known size the conversion shards at the source: a Keras fit on
`tf.data.Dataset.zip` of two datasets (its size is the smaller one's), then a GradientTape
loop over `keras.utils.timeseries_dataset_from_array` windows (batched by the utility)."""
import os

import hvd_report
import numpy as np
import tensorflow as tf

tf.random.set_seed(int(os.environ.get("HOROVOD_RANK", "0")))
features = tf.random.normal((100, 8), seed=1)
labels = tf.reduce_sum(features, axis=1, keepdims=True)
pairs = tf.data.Dataset.zip((tf.data.Dataset.from_tensor_slices(features),
                             tf.data.Dataset.from_tensor_slices(labels)))
pairs = pairs.shuffle(100).batch(10)

model = tf.keras.Sequential([
    tf.keras.layers.Dense(16, activation="relu", input_shape=(8,)),
    tf.keras.layers.Dense(1),
])
model.compile(optimizer=tf.keras.optimizers.SGD(0.01), loss="mse")
model.fit(pairs, epochs=2, verbose=0)

series = np.sin(np.arange(130, dtype="float32") / 5.0)
windows = tf.keras.utils.timeseries_dataset_from_array(series[:-8], series[8:], sequence_length=8, batch_size=10)
head = tf.keras.Sequential([tf.keras.layers.Dense(1, input_shape=(8,))])
optimizer = tf.keras.optimizers.SGD(0.01)
for x, y in windows:
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean((head(x)[:, 0] - y) ** 2)
    grads = tape.gradient(loss, head.trainable_variables)
    optimizer.apply_gradients(zip(grads, head.trainable_variables))

hvd_report.report(checksum=hvd_report.checksum(model) + hvd_report.checksum(head),
                  iterations=int(model.optimizer.iterations.numpy()) + int(optimizer.iterations.numpy()),
                  lr=hvd_report.learning_rate(model.optimizer))
