"""Everything in main(), started by `if __name__ == "__main__":` (fit on a finite dataset)."""
import os

import hvd_report
import tensorflow as tf


def main():
    tf.random.set_seed(int(os.environ.get("HOROVOD_RANK", "0")))
    features = tf.random.normal((200, 8), seed=1)
    labels = tf.reduce_sum(features, axis=1, keepdims=True)
    dataset = tf.data.Dataset.from_tensor_slices((features, labels)).shuffle(200).batch(20)
    model = tf.keras.Sequential([
        tf.keras.layers.Dense(16, activation="relu", input_shape=(8,)),
        tf.keras.layers.Dense(1),
    ])
    model.compile(optimizer=tf.keras.optimizers.Adam(0.002), loss="mse")
    model.fit(dataset, epochs=3)
    print("done")
    hvd_report.report(checksum=hvd_report.checksum(model), iterations=int(model.optimizer.iterations.numpy()),
                      lr=hvd_report.learning_rate(model.optimizer))


if __name__ == "__main__":
    main()
