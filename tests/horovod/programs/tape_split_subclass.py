"""Training loop split over functions, with a subclassed tf.keras.Model."""
import os

import hvd_report
import tensorflow as tf


class Regressor(tf.keras.Model):
    def __init__(self):
        super().__init__()
        self.hidden = tf.keras.layers.Dense(16, activation="relu")
        self.out = tf.keras.layers.Dense(1)

    def call(self, inputs, training=False):
        return self.out(self.hidden(inputs))


def make_dataset():
    x = tf.random.normal((256, 8))
    y = tf.reduce_sum(x, axis=1, keepdims=True)
    return tf.data.Dataset.from_tensor_slices((x, y)).batch(32)


def compute_loss(model, x, y):
    return tf.reduce_mean(tf.square(model(x, training=True) - y))


@tf.function
def train_step(model, optimizer, x, y):
    with tf.GradientTape() as tape:
        loss = compute_loss(model, x, y)
    gradients = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(gradients, model.trainable_variables))
    return loss


def train(model, optimizer, dataset, epochs):
    seen = 0
    for epoch in range(epochs):
        for x, y in dataset:
            loss = train_step(model, optimizer, x, y)
            seen += int(x.shape[0])
        print("epoch", epoch, "loss", float(loss))
    return seen


def main():
    tf.random.set_seed(int(os.environ.get("HOROVOD_RANK", "0")))
    model = Regressor()
    optimizer = tf.keras.optimizers.SGD(learning_rate=0.01)
    seen = train(model, optimizer, make_dataset(), epochs=2)
    hvd_report.report(checksum=hvd_report.checksum(model), examples=seen,
                     lr=hvd_report.learning_rate(optimizer))


if __name__ == "__main__":
    main()
