"""keras-io's "customizing fit" GAN shape: a subclassed model whose own `compile` takes two
optimizers built inline (`d_optimizer=Adam(...)`, `g_optimizer=Adam(...)`) and whose
`train_step` applies gradients from two tapes. Both optimizers must average gradients."""
import os

import hvd_report
import numpy as np
import tensorflow as tf
from tensorflow import keras

tf.random.set_seed(int(os.environ.get("HOROVOD_RANK", "0")))
rng = np.random.default_rng(int(os.environ.get("HOROVOD_RANK", "0")))
real = rng.normal(size=(128, 8)).astype("float32")


class GAN(keras.Model):
    def __init__(self, discriminator, generator, latent_dim):
        super().__init__()
        self.discriminator = discriminator
        self.generator = generator
        self.latent_dim = latent_dim

    def compile(self, d_optimizer, g_optimizer, loss_fn):
        super().compile()
        self.d_optimizer = d_optimizer
        self.g_optimizer = g_optimizer
        self.loss_fn = loss_fn

    def train_step(self, real_batch):
        batch_size = tf.shape(real_batch)[0]
        noise = tf.random.normal(shape=(batch_size, self.latent_dim))
        combined = tf.concat([self.generator(noise), real_batch], axis=0)
        labels = tf.concat([tf.ones((batch_size, 1)), tf.zeros((batch_size, 1))], axis=0)
        with tf.GradientTape() as tape:
            d_loss = self.loss_fn(labels, self.discriminator(combined))
        grads = tape.gradient(d_loss, self.discriminator.trainable_weights)
        self.d_optimizer.apply_gradients(zip(grads, self.discriminator.trainable_weights))

        noise = tf.random.normal(shape=(batch_size, self.latent_dim))
        with tf.GradientTape() as tape:
            g_loss = self.loss_fn(tf.zeros((batch_size, 1)), self.discriminator(self.generator(noise)))
        grads = tape.gradient(g_loss, self.generator.trainable_weights)
        self.g_optimizer.apply_gradients(zip(grads, self.generator.trainable_weights))
        return {"d_loss": d_loss, "g_loss": g_loss}


discriminator = keras.Sequential([keras.Input(shape=(8,)), keras.layers.Dense(8, activation="relu"), keras.layers.Dense(1)])
generator = keras.Sequential([keras.Input(shape=(4,)), keras.layers.Dense(8)])
gan = GAN(discriminator=discriminator, generator=generator, latent_dim=4)
gan.compile(
    d_optimizer=keras.optimizers.Adam(learning_rate=0.001),
    g_optimizer=keras.optimizers.Adam(learning_rate=0.002),
    loss_fn=keras.losses.BinaryCrossentropy(from_logits=True),
)
dataset = tf.data.Dataset.from_tensor_slices(real).batch(16)
gan.fit(dataset, epochs=2)

hvd_report.report(checksum=hvd_report.checksum(discriminator.get_weights() + generator.get_weights()),
                 lr=hvd_report.learning_rate(gan.d_optimizer), lr2=hvd_report.learning_rate(gan.g_optimizer))
