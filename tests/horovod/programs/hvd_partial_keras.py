"""Keras fit distributed by hand, half way: init and DistributedOptimizer under the program's
own alias, but no broadcast callback, an unscaled rate and prints on every rank."""
import os

import hvd_report
import horovod.tensorflow.keras as hk
import tensorflow as tf

hk.init()
tf.random.set_seed(int(os.environ.get("HOROVOD_RANK", "0")))

x_train = tf.random.normal((256, 8))
y_train = tf.cast(tf.reduce_sum(x_train, axis=1) > 0, tf.int32)

model = tf.keras.Sequential([
    tf.keras.layers.Dense(16, activation="relu", input_shape=(8,)),
    tf.keras.layers.Dense(2),
])

opt = tf.keras.optimizers.Adam(learning_rate=0.001)
opt = hk.DistributedOptimizer(opt)
model.compile(optimizer=opt,
              loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
              metrics=["accuracy"])
print("training on", hk.size(), "ranks")
model.fit(x_train, y_train, batch_size=32, epochs=2, verbose=0)

hvd_report.report(checksum=hvd_report.checksum(model),
                  lr=round(hvd_report.learning_rate(model.optimizer), 6))
