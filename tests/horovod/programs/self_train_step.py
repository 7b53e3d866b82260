"""Single-GPU trainer class whose step is compiled in __init__:
``self.train_step = tf.function(self.train_step)``."""
import os

import hvd_report
import tensorflow as tf

tf.random.set_seed(int(os.environ.get("HOROVOD_RANK", "0")))


class Trainer:
    def __init__(self):
        self.model = tf.keras.Sequential([
            tf.keras.layers.Dense(16, activation="relu", input_shape=(8,)),
            tf.keras.layers.Dense(1),
        ])
        self.loss_fn = tf.keras.losses.MeanSquaredError()
        self.optimizer = tf.keras.optimizers.legacy.Adam(learning_rate=0.004)
        self.train_step = tf.function(self.train_step)

    def train_step(self, x, y):
        with tf.GradientTape() as tape:
            loss = self.loss_fn(y, self.model(x, training=True))
        grads = tape.gradient(loss, self.model.trainable_variables)
        self.optimizer.apply_gradients(zip(grads, self.model.trainable_variables))
        return loss

    def train(self, dataset):
        for step, (x, y) in enumerate(dataset):
            loss = self.train_step(x, y)
            if step % 4 == 0:
                print("step", step, "loss", float(loss))


x_all = tf.random.normal((128, 8))
y_all = tf.reduce_sum(x_all, axis=1, keepdims=True)
trainer = Trainer()
trainer.train(tf.data.Dataset.from_tensor_slices((x_all, y_all)).batch(16))
hvd_report.report(checksum=hvd_report.checksum(trainer.model), lr=hvd_report.learning_rate(trainer.optimizer))
