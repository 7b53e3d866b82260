"""A tf.data input pipeline consumed with dataset.take(n)."""
import os

import hvd_report
import tensorflow as tf

tf.random.set_seed(int(os.environ.get("HOROVOD_RANK", "0")))

STEPS = 24
BATCH = 8

features = tf.random.normal((1024, 8))
labels = tf.reduce_sum(features, axis=1, keepdims=True)
dataset = tf.data.Dataset.from_tensor_slices((features, labels))
dataset = dataset.repeat().shuffle(1024).batch(BATCH)

model = tf.keras.Sequential([
    tf.keras.layers.Dense(16, activation="relu", input_shape=(8,)),
    tf.keras.layers.Dense(1),
])
loss_fn = tf.keras.losses.MeanSquaredError()
opt = tf.keras.optimizers.RMSprop(0.001)


@tf.function
def training_step(x, y):
    with tf.GradientTape() as tape:
        loss_value = loss_fn(y, model(x, training=True))
    grads = tape.gradient(loss_value, model.trainable_variables)
    opt.apply_gradients(zip(grads, model.trainable_variables))
    return loss_value


steps = 0
for batch, (x, y) in enumerate(dataset.take(STEPS)):
    loss_value = training_step(x, y)
    steps += 1
    if batch % 5 == 0:
        print(f"Step #{batch}\tLoss: {float(loss_value):.6f}")

hvd_report.report(checksum=hvd_report.checksum(model), steps=steps, examples=steps * BATCH,
                 lr=hvd_report.learning_rate(opt))
