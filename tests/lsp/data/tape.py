"""Single-GPU custom training loop with a @tf.function train step."""
import os

import tensorflow as tf

tf.random.set_seed(int(os.environ.get("SEED", "0")))

model = tf.keras.Sequential([
    tf.keras.layers.Dense(16, activation="relu", input_shape=(8,)),
    tf.keras.layers.Dense(1),
])
loss_fn = tf.keras.losses.MeanSquaredError()
optimizer = tf.keras.optimizers.Adam(learning_rate=0.002)

x_all = tf.random.normal((256, 8))
y_all = tf.reduce_sum(x_all, axis=1, keepdims=True)
dataset = tf.data.Dataset.from_tensor_slices((x_all, y_all))


@tf.function
def train_step(x, y):
    with tf.GradientTape() as tape:
        loss = loss_fn(y, model(x, training=True))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss


for step, (x, y) in enumerate(dataset.take(64).batch(16)):
    loss = train_step(x, y)
    if step % 4 == 0:
        print("step", step, "loss", float(loss))
