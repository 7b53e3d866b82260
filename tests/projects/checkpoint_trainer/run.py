"""The driver: builds the model and hands it to a library Trainer that keeps it in a checkpoint."""
import os

import hvd_report
import tensorflow as tf

from trainer import Trainer

tf.random.set_seed(int(os.environ.get("HOROVOD_RANK", "0")))
x = tf.random.stateless_normal((256, 8), seed=(5, 6))
y = tf.reduce_sum(x, axis=1, keepdims=True)
data = tf.data.Dataset.from_tensor_slices((x, y)).batch(16)

model = tf.keras.Sequential([tf.keras.layers.Dense(16, activation="relu"), tf.keras.layers.Dense(1)])
trainer = Trainer(model, hvd_report.out_dir("trainer"))
steps = trainer.train(data)
hvd_report.report(checksum=hvd_report.checksum(model), steps=steps,
                  lr=hvd_report.learning_rate(trainer.checkpoint.optimizer))
