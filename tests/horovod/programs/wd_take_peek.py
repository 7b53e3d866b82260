"""take(1) to peek at a batch (then indexing it), and take(n) bounding the training loop."""
import os

import hvd_report
import tensorflow as tf

tf.random.set_seed(int(os.environ.get("HOROVOD_RANK", "0")))
features = tf.random.normal((256, 8), seed=1)
labels = tf.reduce_sum(features, axis=1, keepdims=True)
dataset = tf.data.Dataset.from_tensor_slices((features, labels)).repeat().batch(8)

for x, y in dataset.take(1):
    first_example = x[0]
    print("input shape", first_example.shape)

model = tf.keras.Sequential([
    tf.keras.layers.Dense(16, activation="relu", input_shape=(8,)),
    tf.keras.layers.Dense(1),
])
loss_fn = tf.keras.losses.MeanSquaredError()
optimizer = tf.keras.optimizers.SGD(0.01)

for step, (x, y) in enumerate(dataset.take(20)):
    with tf.GradientTape() as tape:
        loss = loss_fn(y, model(x, training=True))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    if step % 10 == 0:
        print(f"step {step} loss {float(loss):.4f}")

hvd_report.report(checksum=hvd_report.checksum(model), iterations=int(optimizer.iterations.numpy()),
                  lr=hvd_report.learning_rate(optimizer))
