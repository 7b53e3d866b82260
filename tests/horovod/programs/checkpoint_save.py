"""Custom loop with tf.train.Checkpoint and checkpoint.save(...)."""
import os

import hvd_report
import tensorflow as tf

tf.random.set_seed(int(os.environ.get("HOROVOD_RANK", "0")))

model = tf.keras.Sequential([
    tf.keras.layers.Dense(16, activation="relu", input_shape=(8,)),
    tf.keras.layers.Dense(1),
])
optimizer = tf.keras.optimizers.Adam(0.001)
checkpoint_dir = hvd_report.out_dir("ckpt")
checkpoint_prefix = os.path.join(checkpoint_dir, "ckpt")
checkpoint = tf.train.Checkpoint(model=model, optimizer=optimizer)

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


for epoch in range(2):
    for x, y in dataset:
        loss = train_step(x, y)
    checkpoint.save(checkpoint_prefix)
    print("epoch", epoch, "loss", float(loss))

hvd_report.report(checksum=hvd_report.checksum(model), lr=hvd_report.learning_rate(optimizer))
