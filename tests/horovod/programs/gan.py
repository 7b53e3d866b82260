"""A tiny GAN: two models, two optimizers, one @tf.function step."""
import os

import hvd_report
import tensorflow as tf

tf.random.set_seed(int(os.environ.get("HOROVOD_RANK", "0")))

NOISE = 4
generator = tf.keras.Sequential([
    tf.keras.layers.Dense(8, activation="relu", input_shape=(NOISE,)),
    tf.keras.layers.Dense(2),
])
discriminator = tf.keras.Sequential([
    tf.keras.layers.Dense(8, activation="relu", input_shape=(2,)),
    tf.keras.layers.Dense(1),
])
cross_entropy = tf.keras.losses.BinaryCrossentropy(from_logits=True)
generator_optimizer = tf.keras.optimizers.Adam(1e-3)
discriminator_optimizer = tf.keras.optimizers.Adam(2e-3)

real = tf.random.normal((256, 2), mean=3.0)
dataset = tf.data.Dataset.from_tensor_slices(real).batch(32)


@tf.function
def train_step(batch):
    noise = tf.random.normal((tf.shape(batch)[0], NOISE))
    with tf.GradientTape() as gen_tape, tf.GradientTape() as disc_tape:
        fake = generator(noise, training=True)
        real_out = discriminator(batch, training=True)
        fake_out = discriminator(fake, training=True)
        gen_loss = cross_entropy(tf.ones_like(fake_out), fake_out)
        disc_loss = (cross_entropy(tf.ones_like(real_out), real_out)
                     + cross_entropy(tf.zeros_like(fake_out), fake_out))
    gen_grads = gen_tape.gradient(gen_loss, generator.trainable_variables)
    disc_grads = disc_tape.gradient(disc_loss, discriminator.trainable_variables)
    generator_optimizer.apply_gradients(zip(gen_grads, generator.trainable_variables))
    discriminator_optimizer.apply_gradients(zip(disc_grads, discriminator.trainable_variables))
    return gen_loss, disc_loss


examples = 0
for epoch in range(2):
    for batch in dataset:
        gen_loss, disc_loss = train_step(batch)
        examples += int(batch.shape[0])
    print("epoch", epoch, "gen", float(gen_loss), "disc", float(disc_loss))

hvd_report.report(
    checksum=hvd_report.checksum(generator) + hvd_report.checksum(discriminator),
    examples=examples,
    lr=hvd_report.learning_rate(generator_optimizer),
    lr2=hvd_report.learning_rate(discriminator_optimizer),
)
