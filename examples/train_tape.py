"""Single-GPU MNIST-style training with a custom GradientTape loop."""
import os

import tensorflow as tf

os.environ["CUDA_VISIBLE_DEVICES"] = "0"  # train on the first GPU

(x_train, y_train), _ = (tf.random.normal([1024, 28, 28]), tf.random.uniform([1024], maxval=10, dtype=tf.int64)), None
dataset = tf.data.Dataset.from_tensor_slices((x_train, y_train))
dataset = dataset.shuffle(1024).batch(32)

model = tf.keras.Sequential([
    tf.keras.layers.Flatten(input_shape=(28, 28)),
    tf.keras.layers.Dense(128, activation="relu"),
    tf.keras.layers.Dense(10),
])
loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
optimizer = tf.keras.optimizers.Adam(learning_rate=0.001)
checkpoint = tf.train.Checkpoint(model=model, optimizer=optimizer)


@tf.function
def train_step(images, labels):
    with tf.GradientTape() as tape:
        logits = model(images, training=True)
        loss = loss_fn(labels, logits)
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss


for step, (images, labels) in enumerate(dataset.take(100)):
    loss = train_step(images, labels)
    if step % 10 == 0:
        print("step", step, "loss", float(loss))

checkpoint.save("./checkpoints/ckpt")
