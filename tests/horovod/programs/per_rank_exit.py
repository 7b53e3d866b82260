"""Single-GPU tape loop that runs until its running loss is low enough (the shape of the
reinforcement-learning scripts' ``while True: ... if running_reward > 195: break``).

On N ranks each rank draws its own batches, and rank r's targets carry noise of scale r:
rank 0 reaches the threshold after a few steps, rank 1 only much later. Converted without
HVD080 the ranks leave the loop at different steps and the last one waits in the
gradients' allreduce (hang, or Horovod's shut-down error); with it they decide on the
average and stop together.
"""
import os

import hvd_report
import numpy as np
import tensorflow as tf

seed = int(os.environ.get("HOROVOD_RANK", "0"))
rng = np.random.RandomState(seed)

model = tf.keras.Sequential([tf.keras.layers.Dense(1, input_shape=(4,))])
loss_fn = tf.keras.losses.MeanSquaredError()
optimizer = tf.keras.optimizers.SGD(0.05)

running_loss = 10.0
step = 0
while True:
    x = tf.random.normal((64, 4))          # a fresh batch each step, each rank its own
    noise = rng.normal(0.0, 1.0, size=(64, 1)).astype("float32") * seed
    y = tf.reduce_sum(x, axis=1, keepdims=True) + noise
    with tf.GradientTape() as tape:
        loss = loss_fn(y, model(x, training=True))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    step += 1
    running_loss = 0.7 * running_loss + 0.3 * float(loss)
    if running_loss < 0.8 or step >= 400:
        break

print("stopped at step", step, "running loss", running_loss)
hvd_report.report(checksum=hvd_report.checksum(model), steps=step, lr=hvd_report.learning_rate(optimizer))
