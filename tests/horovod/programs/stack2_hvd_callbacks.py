"""Already distributed by hand for TF >= 2.16 (tf_keras, TF_USE_LEGACY_KERAS=1): a `fit` with
Horovod's own callbacks, one at a time, each failure caught and reported, to record what
Horovod 0.28.1 does on the second stack. Not converted (the conversion emits none of them
for the tf_keras target)."""
import os

os.environ["TF_USE_LEGACY_KERAS"] = "1"
import hvd_report
import horovod.tensorflow.keras as hvd
import tensorflow as tf
import tf_keras as keras

hvd.init()
x = tf.random.normal((64, 4), seed=1)
y = tf.random.normal((64, 1), seed=2)


def fit(*callbacks):
    model = keras.Sequential([keras.Input(shape=(4,)), keras.layers.Dense(1)])
    model.compile(optimizer=hvd.DistributedOptimizer(keras.optimizers.SGD(0.01 * hvd.size())), loss="mse")
    model.fit(x, y, batch_size=16, epochs=1, verbose=0,
              callbacks=[hvd.callbacks.BroadcastGlobalVariablesCallback(0), *callbacks])


results = {}
for name, make in [("none", lambda: []),
                   ("MetricAverageCallback", lambda: [hvd.callbacks.MetricAverageCallback()]),
                   ("LearningRateWarmupCallback",
                    lambda: [hvd.callbacks.LearningRateWarmupCallback(initial_lr=0.01 * hvd.size(), warmup_epochs=1)]),
                   ("LearningRateScheduleCallback",
                    lambda: [hvd.callbacks.LearningRateScheduleCallback(initial_lr=0.01 * hvd.size(), multiplier=0.5)])]:
    try:
        fit(*make())
        results[name] = "ok"
    except Exception as e:
        results[name] = f"{type(e).__name__}: {e}"

hvd_report.report(results=results, keras_module=hvd.callbacks.keras.__name__ if hasattr(hvd.callbacks, "keras") else None)
