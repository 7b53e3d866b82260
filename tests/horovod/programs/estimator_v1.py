"""TF1-style Estimator written against tensorflow.compat.v1."""
import os

import hvd_report
import numpy as np
import tensorflow.compat.v1 as tf

tf.logging.set_verbosity(tf.logging.ERROR)
RANK = int(os.environ.get("HOROVOD_RANK", "0"))
OPTIMIZERS = []


def model_fn(features, labels, mode):
    tf.set_random_seed(RANK)
    hidden = tf.layers.dense(features["x"], 16, activation=tf.nn.relu)
    predictions = tf.layers.dense(hidden, 1)
    loss = tf.losses.mean_squared_error(labels, predictions)
    optimizer = tf.train.AdamOptimizer(learning_rate=0.001)
    train_op = optimizer.minimize(loss, global_step=tf.train.get_or_create_global_step())
    OPTIMIZERS.append(optimizer)
    return tf.estimator.EstimatorSpec(mode=mode, loss=loss, train_op=train_op)


def train_input_fn():
    rng = np.random.default_rng(RANK)
    x = rng.normal(size=(256, 8)).astype(np.float32)
    y = x.sum(axis=1, keepdims=True)
    return tf.data.Dataset.from_tensor_slices(({"x": x}, y)).repeat().batch(16)


model_dir = hvd_report.out_dir("estimator")
classifier = tf.estimator.Estimator(model_fn=model_fn, model_dir=model_dir)
classifier.train(input_fn=train_input_fn, steps=20)
print("trained; global step", classifier.get_variable_value("global_step"))

weights = [classifier.get_variable_value(name) for name in classifier.get_variable_names()
           if name.startswith("dense") and "Adam" not in name]
hvd_report.report(checksum=hvd_report.checksum(weights),
                 steps=int(classifier.get_variable_value("global_step")),
                 lr=hvd_report.learning_rate(OPTIMIZERS[-1]))
