"""Entry + factories: a GradientTape loop over a model, optimizer and dataset made in sibling modules."""
import os

import hvd_report
import tensorflow as tf

from data import load
from model import build_model, make_optimizer

tf.random.set_seed(int(os.environ.get("HOROVOD_RANK", "0")))     # each process starts elsewhere


def main():
    model = build_model()
    opt = make_optimizer()
    loss_fn = tf.keras.losses.MeanSquaredError()
    examples = 0
    for step, (x, y) in enumerate(load()):
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
        examples += int(x.shape[0])
        if step % 4 == 0:
            print("factories step", step, "loss", float(loss))
    model.save_weights(os.path.join(hvd_report.out_dir("factories"), "weights"))
    hvd_report.report(checksum=hvd_report.checksum(model), examples=examples, lr=hvd_report.learning_rate(opt))


if __name__ == "__main__":
    main()
