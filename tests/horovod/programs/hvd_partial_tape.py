"""A tape loop distributed by hand, half way: Horovod initialised (horovod.tensorflow imported
under another name), but the tape is wrapped after its gradient() was taken (HVD202: nothing
averaged) and nothing broadcasts the initial state (HVD205)."""
import os

import hvd_report
import horovod.tensorflow as htf
import tensorflow as tf

htf.init()
tf.random.set_seed(int(os.environ.get("HOROVOD_RANK", "0")))

model = tf.keras.Sequential([
    tf.keras.layers.Dense(16, activation="relu", input_shape=(8,)),
    tf.keras.layers.Dense(1),
])
loss_fn = tf.keras.losses.MeanSquaredError()
optimizer = tf.keras.optimizers.SGD(0.01)

x_all = tf.random.normal((256, 8))
y_all = tf.reduce_sum(x_all, axis=1, keepdims=True)
dataset = tf.data.Dataset.from_tensor_slices((x_all, y_all)).batch(16)

for step, (x, y) in enumerate(dataset):
    with tf.GradientTape() as tape:
        loss = loss_fn(y, model(x, training=True))
    grads = tape.gradient(loss, model.trainable_variables)
    tape = htf.DistributedGradientTape(tape)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    if step % 4 == 0:
        print("step", step, "loss", float(loss))

hvd_report.report(checksum=hvd_report.checksum(model),
                  lr=round(hvd_report.learning_rate(optimizer), 6))
