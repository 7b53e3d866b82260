import numpy as np
import tensorflow as tf

from model_fn import model_fn


def input_fn():
    x = np.random.rand(256, 8).astype("float32")
    y = x.sum(axis=1, keepdims=True)
    return tf.data.Dataset.from_tensor_slices(({"x": x}, y)).batch(16).repeat()


if __name__ == "__main__":
    estimator = tf.estimator.Estimator(model_fn, model_dir="model_dir", params={"lr": 0.01})
    estimator.train(input_fn, steps=20)
