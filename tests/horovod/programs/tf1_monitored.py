"""TF1 graph mode: MonitoredTrainingSession with StopAtStepHook and checkpoint_dir (Horovod's
tensorflow_mnist.py shape, before Horovod)."""
import os

import hvd_report
import numpy as np
import tensorflow.compat.v1 as tf

tf.disable_v2_behavior()
RANK = int(os.environ.get("HOROVOD_RANK", "0"))
tf.set_random_seed(RANK)
FINAL = {}


class ReadWeights(tf.train.SessionRunHook):
    """Reads the variables when the session ends (test instrumentation)."""

    def end(self, session):
        FINAL["weights"] = session.run(tf.trainable_variables())


x = tf.placeholder(tf.float32, [None, 8])
y = tf.placeholder(tf.float32, [None, 1])
hidden = tf.layers.dense(x, 16, activation=tf.nn.relu)
loss = tf.reduce_mean(tf.square(tf.layers.dense(hidden, 1) - y))
opt = tf.train.AdamOptimizer(0.001)
global_step = tf.train.get_or_create_global_step()
train_op = opt.minimize(loss, global_step=global_step)

hooks = [
    tf.train.StopAtStepHook(last_step=20),
    ReadWeights(),
]
config = tf.ConfigProto()
config.gpu_options.allow_growth = True
checkpoint_dir = hvd_report.out_dir("mts-ckpt")

rng = np.random.default_rng(RANK)
steps = 0
with tf.train.MonitoredTrainingSession(checkpoint_dir=checkpoint_dir, hooks=hooks, config=config) as mon_sess:
    while not mon_sess.should_stop():
        batch = rng.normal(size=(16, 8)).astype(np.float32)
        mon_sess.run(train_op, feed_dict={x: batch, y: batch.sum(axis=1, keepdims=True)})
        steps += 1
print("monitored training done after", steps, "steps")

hvd_report.report(checksum=hvd_report.checksum(FINAL["weights"]), steps=steps, lr=hvd_report.learning_rate(opt))
