"""Already distributed, the way Horovod's tensorflow2_keras_mnist example does it: scaled rate,
DistributedOptimizer, broadcast + metric-average + warm-up callbacks, a checkpoint appended on
rank 0, divided steps, progress on rank 0. `horovodize convert` must leave it byte-identical."""
import os

import hvd_report
import horovod.tensorflow.keras as hvd
import tensorflow as tf

hvd.init()
tf.random.set_seed(int(os.environ.get("HOROVOD_RANK", "0")))

x_all = tf.random.normal((512, 8))
y_all = tf.cast(tf.reduce_sum(x_all, axis=1) > 0, tf.int64)
dataset = tf.data.Dataset.from_tensor_slices((x_all, y_all)).repeat().shuffle(256).batch(32)

model = tf.keras.Sequential([
    tf.keras.layers.Dense(16, activation="relu", input_shape=(8,)),
    tf.keras.layers.Dense(2),
])

scaled_lr = 0.001 * hvd.size()
opt = tf.keras.optimizers.Adam(scaled_lr)
opt = hvd.DistributedOptimizer(opt)
model.compile(loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
              optimizer=opt, metrics=["accuracy"], experimental_run_tf_function=False)

callbacks = [
    hvd.callbacks.BroadcastGlobalVariablesCallback(0),
    hvd.callbacks.MetricAverageCallback(),
    hvd.callbacks.LearningRateWarmupCallback(initial_lr=scaled_lr, warmup_epochs=1, verbose=1),
]
if hvd.rank() == 0:
    callbacks.append(tf.keras.callbacks.ModelCheckpoint(
        os.path.join(hvd_report.out_dir("correct-ckpt"), "checkpoint-{epoch}.h5"), save_weights_only=True))

verbose = 1 if hvd.rank() == 0 else 0
model.fit(dataset, steps_per_epoch=16 // hvd.size(), callbacks=callbacks, epochs=2, verbose=verbose)

if hvd.rank() == 0:
    print("correct-keras trained")
hvd_report.report(checksum=hvd_report.checksum(model), lr=hvd_report.learning_rate(model.optimizer))
