"""An Estimator whose model_fn takes its gradients with a GradientTape and applies them
(HVD-T4 used to refuse it: the Estimator is a known caller of model_fn)."""
import os

import hvd_report
import numpy as np
import tensorflow.compat.v1 as tf

tf.logging.set_verbosity(tf.logging.ERROR)
RANK = int(os.environ.get("HOROVOD_RANK", "0"))
OPTIMIZERS = []


def tape_model_fn(features, labels, mode):
    tf.set_random_seed(RANK)
    optimizer = tf.train.GradientDescentOptimizer(learning_rate=0.01)
    with tf.GradientTape() as tape:
        hidden = tf.layers.dense(features["x"], 16, activation=tf.nn.relu)
        predictions = tf.layers.dense(hidden, 1)
        loss = tf.losses.mean_squared_error(labels, predictions)
    variables = tf.trainable_variables()
    grads = tape.gradient(loss, variables)
    train_op = optimizer.apply_gradients(zip(grads, variables), global_step=tf.train.get_or_create_global_step())
    OPTIMIZERS.append(optimizer)
    return tf.estimator.EstimatorSpec(mode=mode, loss=loss, train_op=train_op)


def train_input_fn():
    rng = np.random.default_rng(RANK)
    x = rng.normal(size=(256, 8)).astype(np.float32)
    y = x.sum(axis=1, keepdims=True)
    return tf.data.Dataset.from_tensor_slices(({"x": x}, y)).repeat().batch(16)


model_dir = hvd_report.out_dir("tape-estimator")
regressor = tf.estimator.Estimator(model_fn=tape_model_fn, model_dir=model_dir)
regressor.train(input_fn=train_input_fn, steps=20)
print("tape model_fn trained; global step", regressor.get_variable_value("global_step"))

weights = [regressor.get_variable_value(name) for name in regressor.get_variable_names()
           if name.startswith("dense")]
hvd_report.report(checksum=hvd_report.checksum(weights),
                 steps=int(regressor.get_variable_value("global_step")),
                 lr=hvd_report.learning_rate(OPTIMIZERS[-1]))
