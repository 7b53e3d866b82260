"""Premade Estimator (tf.compat.v1 DNNRegressor) with its default optimizer, RunConfig(model_dir=)."""
import os

import hvd_report
import numpy as np
import tensorflow.compat.v1 as tf

tf.logging.set_verbosity(tf.logging.ERROR)
RANK = int(os.environ.get("HOROVOD_RANK", "0"))
ADAGRAD = hvd_report.instances(tf.train.AdagradOptimizer)


def train_input_fn():
    rng = np.random.default_rng(RANK)
    x = rng.normal(size=(256, 8)).astype(np.float32)
    y = x.sum(axis=1, keepdims=True)
    return tf.data.Dataset.from_tensor_slices(({"x": x}, y)).repeat().batch(16)


columns = [tf.feature_column.numeric_column("x", shape=[8])]
run_config = tf.estimator.RunConfig(model_dir=hvd_report.out_dir("premade"), tf_random_seed=RANK)
regressor = tf.estimator.DNNRegressor(feature_columns=columns, hidden_units=[16], config=run_config)
regressor.train(input_fn=train_input_fn, steps=20)
print("premade trained; global step", regressor.get_variable_value("global_step"))

weights = [regressor.get_variable_value(name) for name in regressor.get_variable_names()
           if name.startswith("dnn/") and "Adagrad" not in name]
hvd_report.report(checksum=hvd_report.checksum(weights),
                 steps=int(regressor.get_variable_value("global_step")),
                 lr=hvd_report.learning_rate(ADAGRAD[-1]) if ADAGRAD else None)
