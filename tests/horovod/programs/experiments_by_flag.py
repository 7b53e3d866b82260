"""Two experiments in one script, as tutorials write them (issue 26: HVD-R5/R7/T5 used to
refuse this shape): the optimizer comes from a helper through a default argument
(``if optimizer is None: optimizer = get_optimizer()``), the second experiment creates its
own optimizer, chosen by a module constant, and the third another one under that name, and training is ``fit`` or
``fit_generator`` (Keras 2.15 still has it) chosen by a module flag."""
import os

import hvd_report
import numpy as np
import tensorflow as tf

tf.random.set_seed(int(os.environ.get("HOROVOD_RANK", "0")))

data_augmentation = True
USE_SGD = True
x_all = np.random.RandomState(0).normal(size=(128, 4, 4, 1)).astype("float32")
y_all = x_all.reshape(128, -1).sum(axis=1, keepdims=True)
results = {}


def build_model():
    return tf.keras.Sequential([
        tf.keras.layers.Flatten(input_shape=(4, 4, 1)),
        tf.keras.layers.Dense(8, activation="relu"),
        tf.keras.layers.Dense(1),
    ])


def batches():
    """Batches for ever, as Keras generators run (ImageDataGenerator needs scipy, absent here)."""
    while True:
        for i in range(0, 128, 16):
            yield np.flip(x_all[i:i + 16], axis=2), y_all[i:i + 16]


def get_optimizer():
    return tf.keras.optimizers.Adam(0.001)


def compile_and_fit(model, name, optimizer=None):
    if optimizer is None:
        optimizer = get_optimizer()
    model.compile(optimizer=optimizer, loss="mse")
    if not data_augmentation:
        model.fit(x_all, y_all, batch_size=16, epochs=2)
    else:
        model.fit_generator(batches(), steps_per_epoch=8, epochs=2)
    results[name] = (hvd_report.checksum(model), hvd_report.learning_rate(model.optimizer))


compile_and_fit(build_model(), "default")

opt = tf.keras.optimizers.SGD(0.002) if USE_SGD else tf.keras.optimizers.Adam(0.002)
compile_and_fit(build_model(), "chosen", opt)
opt = tf.keras.optimizers.SGD(0.003)
compile_and_fit(build_model(), "again", opt)

hvd_report.report(checksum=sum(r[0] for r in results.values()), lr=results["default"][1],
                  lr2=results["chosen"][1], lr3=results["again"][1])
