"""Read-back of a checkpoint into the training state (contract point 13): a custom loop saves
a tf.train.Checkpoint of the model, the optimizer, a step counter and a hand-made rate factor,
tries an epoch with a larger rate, then goes back to the saved state and trains on. Converted,
rank 0 restores and broadcasts every variable the checkpoint holds (the counter and the rate
too: they are not the model's or the optimizer's), so no rank reads another host's disk and
the ranks go on in step (`verify --hosts 2`)."""
import os

import tensorflow as tf

ckpt_dir = "rb_tape_ckpt"
x_all = tf.random.stateless_normal((128, 8), seed=(1, 2))
y_all = tf.reduce_sum(x_all, axis=1, keepdims=True)
dataset = tf.data.Dataset.from_tensor_slices((x_all, y_all)).batch(16)

model = tf.keras.Sequential([tf.keras.layers.Dense(1, input_shape=(8,))])
optimizer = tf.keras.optimizers.Adam(0.01)
step = tf.Variable(0, dtype=tf.int64)
rate = tf.Variable(1.0)
checkpoint = tf.train.Checkpoint(model=model, optimizer=optimizer, step=step, rate=rate)


@tf.function
def train_step(x, y):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(model(x, training=True) - y))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip([g * rate for g in grads], model.trainable_variables))
    step.assign_add(1)
    return loss


for x, y in dataset:
    loss = train_step(x, y)
checkpoint.save(os.path.join(ckpt_dir, "ckpt"))

rate.assign(8.0)          # a trial epoch with a larger rate
for x, y in dataset:
    loss = train_step(x, y)

checkpoint.restore(tf.train.latest_checkpoint(ckpt_dir))     # it diverged: back to the saved state
rate.assign(rate * 0.5)
for x, y in dataset:
    loss = train_step(x, y)
print("loss", float(loss), "step", int(step))
