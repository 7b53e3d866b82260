"""A textbook's fit on in-memory arrays after global numpy and TensorFlow seeds (issue 39).

numpy's seed makes the data, the same on every rank; TensorFlow's orders fit's shuffle. The
conversion divides the epochs and gives TensorFlow's seed ``+ hvd.rank()`` (HVD049): each
rank then draws its own batches. The labels of the first batch each rank trains on are
summed (a metric, read by a callback at batch 0) so the test sees the batches differ.
"""
import hvd_report
import numpy as np
import tensorflow as tf

np.random.seed(42)
tf.random.set_seed(42)

x_train = np.random.rand(512, 8).astype("float32")
y_train = np.arange(512, dtype="float32").reshape(-1, 1)


def label_sum(y_true, y_pred):
    return tf.reduce_sum(y_true)


class FirstBatch(tf.keras.callbacks.Callback):
    value = None

    def on_train_batch_end(self, batch, logs=None):
        if FirstBatch.value is None:
            FirstBatch.value = float(logs["label_sum"])


model = tf.keras.Sequential([tf.keras.layers.Dense(1, input_shape=(8,))])
model.compile(optimizer=tf.keras.optimizers.SGD(learning_rate=1e-6), loss="mse", metrics=[label_sum])
model.fit(x_train, y_train, epochs=4, batch_size=32, callbacks=[FirstBatch()])

hvd_report.report(checksum=hvd_report.checksum(model), first_batch_labels=FirstBatch.value,
                  lr=hvd_report.learning_rate(model.optimizer))
