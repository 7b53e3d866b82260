"""TF1 save and restore in two sessions (aymericdamien save_restore_model, through
tensorflow.compat.v1): the first session trains from per-rank initial weights and saves,
the second initializes again, restores what rank 0 saved (a path both ranks see) and
trains on. Each session needs its broadcast, and the restore a barrier the session runs."""
import os
import tempfile

import hvd_report
import numpy as np
import tensorflow.compat.v1 as tf

tf.disable_v2_behavior()
RANK = int(os.environ.get("HOROVOD_RANK", "0"))
tf.set_random_seed(RANK)
shared = os.environ.get("HVD_OUT_DIR") or tempfile.gettempdir()
os.makedirs(shared, exist_ok=True)
model_path = os.path.join(shared, "two-sessions.ckpt")

x = tf.placeholder(tf.float32, [None, 4])
y = tf.placeholder(tf.float32, [None, 1])
w = tf.Variable(tf.random_normal([4, 1]))
cost = tf.reduce_mean(tf.square(tf.matmul(x, w) - y))
optimizer = tf.train.AdamOptimizer(learning_rate=0.001).minimize(cost)
init = tf.global_variables_initializer()
saver = tf.train.Saver()
rng = np.random.default_rng(RANK)
steps = 0

with tf.Session() as sess:
    sess.run(init)
    for i in range(20):
        batch = rng.normal(size=(16, 4)).astype(np.float32)
        sess.run(optimizer, feed_dict={x: batch, y: batch.sum(axis=1, keepdims=True)})
        steps += 1
    first = sess.run(w)
    save_path = saver.save(sess, model_path)

with tf.Session() as sess:
    sess.run(init)
    saver.restore(sess, model_path)
    for i in range(20):
        batch = rng.normal(size=(16, 4)).astype(np.float32)
        sess.run(optimizer, feed_dict={x: batch, y: batch.sum(axis=1, keepdims=True)})
        steps += 1
    final = sess.run(w)

hvd_report.report(checksum=hvd_report.checksum([first]) + hvd_report.checksum([final]), steps=steps)
