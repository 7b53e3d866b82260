"""Resumable custom loop: restore the latest checkpoint if there is one, train, save."""
import os

import hvd_report
import tensorflow as tf

tf.random.set_seed(int(os.environ.get("HOROVOD_RANK", "0")))

model = tf.keras.Sequential([
    tf.keras.layers.Dense(16, activation="relu", input_shape=(8,)),
    tf.keras.layers.Dense(1),
])
optimizer = tf.keras.optimizers.Adam(0.001)
checkpoint_dir = hvd_report.out_dir("resume-ckpt")
checkpoint = tf.train.Checkpoint(model=model, optimizer=optimizer)
latest = tf.train.latest_checkpoint(checkpoint_dir)
if latest:
    checkpoint.restore(latest)
    print("resumed from", latest)

x_all = tf.random.normal((128, 8))
y_all = tf.reduce_sum(x_all, axis=1, keepdims=True)
dataset = tf.data.Dataset.from_tensor_slices((x_all, y_all)).batch(16)


@tf.function
def train_step(x, y):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(model(x, training=True) - y))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss


for x, y in dataset:
    loss = train_step(x, y)
print("loss", float(loss), "step", int(optimizer.iterations.numpy()))
checkpoint.save(os.path.join(checkpoint_dir, "ckpt"))

hvd_report.report(checksum=hvd_report.checksum(model), iterations=int(optimizer.iterations.numpy()),
                  resumed=bool(latest), lr=hvd_report.learning_rate(optimizer))
