"""A Keras model whose own train_step takes a tape's gradients (keras-io's "customizing fit"),
fit on arrays, then a loss curve plotted and shown (matplotlib's Agg backend).
After conversion: the tape alone averages (no DistributedOptimizer beside it), only rank 0
prints and shows. `plt.show` is counted (Agg cannot show anything)."""
import os

import hvd_report
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from tensorflow import keras  # noqa: E402

SHOWN = []
plt.show = lambda *args, **kwargs: SHOWN.append(len(plt.get_fignums()))

tf.random.set_seed(int(os.environ.get("HOROVOD_RANK", "0")))
rng = np.random.default_rng(int(os.environ.get("HOROVOD_RANK", "0")))
x = rng.normal(size=(128, 4)).astype("float32")
y = (x @ np.arange(1, 5, dtype="float32")[:, None]).astype("float32")


class Regressor(keras.Model):
    def train_step(self, data):
        inputs, targets = data
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(self(inputs, training=True) - targets))
        grads = tape.gradient(loss, self.trainable_variables)
        self.optimizer.apply_gradients(zip(grads, self.trainable_variables))
        return {"loss": loss}


def plot_history(history):
    losses = history.history["loss"]
    plt.figure(figsize=(4, 3))
    plt.plot(range(len(losses)), losses)
    plt.title("train-step-show loss")
    plt.show()


inputs = keras.Input(shape=(4,))
model = Regressor(inputs, keras.layers.Dense(1)(inputs))
model.compile(optimizer=keras.optimizers.SGD(learning_rate=0.01))
history = model.fit(x, y, batch_size=16, epochs=4)
print("train-step-show final loss", history.history["loss"][-1])
plot_history(history)

hvd_report.report(checksum=hvd_report.checksum(model), lr=hvd_report.learning_rate(model.optimizer),
                  shown=len(SHOWN), figures=len(plt.get_fignums()))
