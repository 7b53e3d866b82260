"""absl app.run(main): a tape loop over a finite dataset inside main (the TF models style)."""
import os

import hvd_report
import tensorflow as tf
from absl import app


def main(argv):
    del argv
    tf.random.set_seed(int(os.environ.get("HOROVOD_RANK", "0")))
    features = tf.random.normal((90, 8), seed=1)
    labels = tf.reduce_sum(features, axis=1, keepdims=True)
    dataset = tf.data.Dataset.from_tensor_slices((features, labels)).batch(10)
    model = tf.keras.Sequential([tf.keras.layers.Dense(1, input_shape=(8,))])
    optimizer = tf.keras.optimizers.SGD(0.01)
    for epoch in range(2):
        for x, y in dataset:
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.square(model(x, training=True) - y))
            grads = tape.gradient(loss, model.trainable_variables)
            optimizer.apply_gradients(zip(grads, model.trainable_variables))
        print(f"epoch {epoch} loss {float(loss):.4f}")
    hvd_report.report(checksum=hvd_report.checksum(model), iterations=int(optimizer.iterations.numpy()),
                      lr=hvd_report.learning_rate(optimizer))


if __name__ == "__main__":
    app.run(main)
