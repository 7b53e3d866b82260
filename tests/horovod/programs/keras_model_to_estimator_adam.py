"""model_to_estimator on a model compiled with an optimizer name (HVD-T2 used to refuse it:
the conversion now compiles it with the scaled, wrapped legacy Keras class)."""
import os

import hvd_report
import numpy as np
import tensorflow as tf

RANK = int(os.environ.get("HOROVOD_RANK", "0"))
tf.random.set_seed(RANK)


def input_fn():
    rng = np.random.default_rng(RANK)
    x = rng.normal(size=(64, 4)).astype(np.float32)
    return tf.data.Dataset.from_tensor_slices((x, x.sum(axis=1, keepdims=True))).repeat().batch(8)


model = tf.keras.Sequential([tf.keras.layers.Dense(8, activation="relu", input_shape=(4,)),
                             tf.keras.layers.Dense(1)])
model.compile(optimizer="adam", loss="mse")
estimator = tf.keras.estimator.model_to_estimator(keras_model=model, model_dir=hvd_report.out_dir("m2e-adam"))
estimator.train(input_fn, steps=20)
print("model_to_estimator (adam) trained")

weights = [estimator.get_variable_value(name) for name in estimator.get_variable_names()
           if name.startswith("layer_with_weights") and "OPTIMIZER_SLOT" not in name]
hvd_report.report(checksum=hvd_report.checksum(weights), lr=hvd_report.learning_rate(model.optimizer))
