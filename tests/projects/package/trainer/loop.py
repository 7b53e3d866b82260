import os

import hvd_report
import tensorflow as tf

from . import nets
from .inputs import train_data


class Count(tf.keras.callbacks.Callback):
    batches = 0

    def on_train_batch_end(self, batch, logs=None):
        Count.batches += 1


def run(args):
    tf.random.set_seed(int(os.environ.get("HOROVOD_RANK", "0")))
    model = nets.regressor()
    optimizer = tf.keras.optimizers.Adam(args.lr)
    model.compile(optimizer=optimizer, loss="mse")
    model.fit(train_data(), epochs=args.epochs, callbacks=[Count()])
    model.save(os.path.join(hvd_report.out_dir("package"), "model.h5"))
    hvd_report.report(checksum=hvd_report.checksum(model), batches=Count.batches,
                      lr=hvd_report.learning_rate(model.optimizer))
