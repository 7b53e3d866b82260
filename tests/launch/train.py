"""Single-GPU MNIST-style training with a custom GradientTape loop."""
import os

import tensorflow as tf
import horovod.tensorflow as hvd
hvd.init()
gpus = tf.config.experimental.list_physical_devices('GPU')
for gpu in gpus:
    tf.config.experimental.set_memory_growth(gpu, True)
if gpus:
    tf.config.experimental.set_visible_devices(gpus[hvd.local_rank()], 'GPU')
hvd_broadcast_done = tf.Variable(False, trainable=False)

# train on the first GPU

(x_train, y_train), _ = (tf.random.normal([1024, 28, 28]), tf.random.uniform([1024], maxval=10, dtype=tf.int64)), None
dataset = tf.data.Dataset.from_tensor_slices((x_train, y_train))
dataset = dataset.shuffle(1024).batch(32)

model = tf.keras.Sequential([
    tf.keras.layers.Flatten(input_shape=(28, 28)),
    tf.keras.layers.Dense(128, activation="relu"),
    tf.keras.layers.Dense(10),
])
loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
optimizer = tf.keras.optimizers.Adam(learning_rate=0.001 * hvd.size())
checkpoint = tf.train.Checkpoint(model=model, optimizer=optimizer)


@tf.function
def train_step(images, labels):
    with tf.GradientTape() as tape:
        logits = model(images, training=True)
        loss = loss_fn(labels, logits)
    tape = hvd.DistributedGradientTape(tape)
    grads = tape.gradient(loss, model.trainable_variables)
    hvd_grads_and_vars = list(zip(grads, model.trainable_variables))
    optimizer.apply_gradients(hvd_grads_and_vars)
    if not hvd_broadcast_done:
        hvd.broadcast_variables([v for _, v in hvd_grads_and_vars], root_rank=0)
        hvd.broadcast_variables(optimizer.variables() if callable(optimizer.variables) else optimizer.variables, root_rank=0)
        hvd_broadcast_done.assign(True)
    return loss


for step, (images, labels) in enumerate(dataset.take(max(1, 100 // hvd.size()))):
    loss = train_step(images, labels)
    if step % 10 == 0:
        if hvd.rank() == 0: print("step", step, "loss", float(loss))

if hvd.rank() == 0: checkpoint.save("./checkpoints/ckpt")
