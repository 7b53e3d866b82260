"""Single-GPU custom training loop started by absl's app.run(main) (the TF models style)."""
import os

import hvd_report
import tensorflow as tf
from absl import app

tf.random.set_seed(int(os.environ.get("HOROVOD_RANK", "0")))

model = tf.keras.Sequential([
    tf.keras.layers.Dense(16, activation="relu", input_shape=(8,)),
    tf.keras.layers.Dense(1),
])
loss_fn = tf.keras.losses.MeanSquaredError()
optimizer = tf.keras.optimizers.legacy.SGD(learning_rate=0.01)


@tf.function
def train_step(x, y):
    with tf.GradientTape() as tape:
        loss = loss_fn(y, model(x, training=True))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss


def main(argv):
    del argv
    x_all = tf.random.normal((128, 8))
    y_all = tf.reduce_sum(x_all, axis=1, keepdims=True)
    dataset = tf.data.Dataset.from_tensor_slices((x_all, y_all)).batch(16)
    for step, (x, y) in enumerate(dataset):
        loss = train_step(x, y)
        if step % 4 == 0:
            print("step", step, "loss", float(loss))
    hvd_report.report(checksum=hvd_report.checksum(model), lr=hvd_report.learning_rate(optimizer))


if __name__ == "__main__":
    app.run(main)
