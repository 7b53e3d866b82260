"""Keras fit on one model and a GradientTape loop on another, each in its own function
chosen by a flag (HVD-T3 used to refuse this shape; both loops convert in one program)."""
import argparse
import os

import hvd_report
import tensorflow as tf

tf.random.set_seed(int(os.environ.get("HOROVOD_RANK", "0")))

parser = argparse.ArgumentParser()
parser.add_argument("--mode", default="both", choices=["fit", "custom", "both"])
args = parser.parse_args()

x_all = tf.random.normal((256, 8))
y_all = tf.reduce_sum(x_all, axis=1, keepdims=True)
results = {}


def build_model():
    return tf.keras.Sequential([
        tf.keras.layers.Dense(16, activation="relu", input_shape=(8,)),
        tf.keras.layers.Dense(1),
    ])


def keras_fit():
    model = build_model()
    model.compile(optimizer=tf.keras.optimizers.Adam(learning_rate=0.001), loss="mse")
    model.fit(x_all, y_all, batch_size=32, epochs=2)
    results["fit"] = (hvd_report.checksum(model), hvd_report.learning_rate(model.optimizer))


def custom_loop():
    model = build_model()
    optimizer = tf.keras.optimizers.SGD(0.002)
    dataset = tf.data.Dataset.from_tensor_slices((x_all, y_all)).batch(16)
    steps = 0
    for step, (x, y) in enumerate(dataset):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(model(x, training=True) - y))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        steps += 1
        if step % 4 == 0:
            print("custom step", step, "loss", float(loss))
    results["custom"] = (hvd_report.checksum(model), hvd_report.learning_rate(optimizer), steps)


if args.mode in ("fit", "both"):
    keras_fit()
if args.mode in ("custom", "both"):
    custom_loop()

hvd_report.report(checksum=results["fit"][0] + results["custom"][0], lr=results["fit"][1],
                 lr2=results["custom"][1], steps=results["custom"][2])
