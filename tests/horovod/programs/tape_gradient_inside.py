"""Single-GPU custom training loop taking the gradients inside the `with tf.GradientTape()`
block (non-persistent tape): one epoch eager, one in a @tf.function."""
import os

import hvd_report
import tensorflow as tf

tf.random.set_seed(int(os.environ.get("HOROVOD_RANK", "0")))

model = tf.keras.Sequential([
    tf.keras.layers.Dense(16, activation="relu", input_shape=(8,)),
    tf.keras.layers.Dense(1),
])
loss_fn = tf.keras.losses.MeanSquaredError()
optimizer = tf.keras.optimizers.Adam(0.003)

x_all = tf.random.normal((256, 8))
y_all = tf.reduce_sum(x_all, axis=1, keepdims=True)
dataset = tf.data.Dataset.from_tensor_slices((x_all, y_all)).batch(16)


@tf.function
def train_step(x, y):
    with tf.GradientTape() as tape:
        loss = loss_fn(y, model(x, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss


examples = 0
# epoch 0: eager
for step, (x, y) in enumerate(dataset):
    with tf.GradientTape() as tape:
        loss = loss_fn(y, model(x, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    examples += int(x.shape[0])
    if step % 4 == 0:
        print("eager step", step, "loss", float(loss))

# epoch 1: @tf.function
for step, (x, y) in enumerate(dataset):
    loss = train_step(x, y)
    examples += int(x.shape[0])
    if step % 4 == 0:
        print("function step", step, "loss", float(loss))

hvd_report.report(checksum=hvd_report.checksum(model), examples=examples,
                 lr=hvd_report.learning_rate(optimizer))
