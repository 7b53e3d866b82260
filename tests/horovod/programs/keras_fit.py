"""Keras fit with a user callback, a ModelCheckpoint and model.summary()."""
import os

import hvd_report
import tensorflow as tf

tf.random.set_seed(int(os.environ.get("HOROVOD_RANK", "0")))

x_train = tf.random.normal((256, 8))
y_train = tf.cast(tf.reduce_sum(x_train, axis=1) > 0, tf.int32)

model = tf.keras.Sequential([
    tf.keras.layers.Dense(16, activation="relu", input_shape=(8,)),
    tf.keras.layers.Dense(2),
])
model.summary()

opt = tf.keras.optimizers.Adam(learning_rate=0.001)
model.compile(optimizer=opt,
              loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
              metrics=["accuracy"])


class EpochLogger(tf.keras.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.batches = 0

    def on_train_batch_end(self, batch, logs=None):
        self.batches += 1

    def on_epoch_end(self, epoch, logs=None):
        print("user-callback epoch", epoch, "loss", round(logs["loss"], 4))


logger = EpochLogger()
ckpt_dir = hvd_report.out_dir("fit-ckpt")
callbacks = [
    logger,
    tf.keras.callbacks.ModelCheckpoint(os.path.join(ckpt_dir, "weights-{epoch}.h5"),
                                       save_weights_only=True),
]
model.fit(x_train, y_train, batch_size=32, epochs=2, callbacks=callbacks)

hvd_report.report(checksum=hvd_report.checksum(model), callback_batches=logger.batches,
                 lr=hvd_report.learning_rate(model.optimizer))
