"""Keras fit on NumPy arrays with EarlyStopping, ModelCheckpoint and ReduceLROnPlateau."""
import os

import hvd_report
import numpy as np
import tensorflow as tf

tf.random.set_seed(int(os.environ.get("HOROVOD_RANK", "0")))
rng = np.random.default_rng(0)
x_train = rng.normal(size=(256, 8)).astype("float32")
y_train = (x_train.sum(axis=1) > 0).astype("int32")

model = tf.keras.Sequential([
    tf.keras.layers.Dense(16, activation="relu", input_shape=(8,)),
    tf.keras.layers.Dense(2),
])
opt = tf.keras.optimizers.Adam(learning_rate=0.001)
model.compile(optimizer=opt, loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))

callbacks = [
    tf.keras.callbacks.EarlyStopping(monitor="loss", patience=20),
    tf.keras.callbacks.ModelCheckpoint(os.path.join(hvd_report.out_dir("wd-fit-ckpt"), "w-{epoch}.h5"),
                                       save_weights_only=True),
    tf.keras.callbacks.ReduceLROnPlateau(monitor="loss", factor=0.5, patience=0, min_delta=10.0),
]
model.fit(x_train, y_train, batch_size=32, epochs=4, callbacks=callbacks)

hvd_report.report(checksum=hvd_report.checksum(model), iterations=int(model.optimizer.iterations.numpy()),
                  lr=hvd_report.learning_rate(model.optimizer))
