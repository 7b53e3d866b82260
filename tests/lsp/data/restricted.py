import os

import tensorflow as tf

model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
if os.path.exists("/tmp/fast"):
    optimizer = tf.keras.optimizers.SGD(0.1)
else:
    optimizer = tf.keras.optimizers.Adam(0.001)


def train_step(x, y):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean((model(x) - y) ** 2)
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))


for step in range(10):
    train_step(tf.ones((4, 2)), tf.zeros((4, 1)))
