"""TF1 graph mode: a Session loop feeding batches, Saver checkpoints (tensorflow.compat.v1)."""
import os

import hvd_report
import numpy as np
import tensorflow.compat.v1 as tf

tf.disable_v2_behavior()
RANK = int(os.environ.get("HOROVOD_RANK", "0"))
tf.set_random_seed(RANK)

x = tf.placeholder(tf.float32, [None, 8])
y = tf.placeholder(tf.float32, [None, 1])
hidden = tf.layers.dense(x, 16, activation=tf.nn.relu)
prediction = tf.layers.dense(hidden, 1)
loss = tf.reduce_mean(tf.square(prediction - y))
opt = tf.train.GradientDescentOptimizer(0.01)
train_op = opt.minimize(loss)
saver = tf.train.Saver()
checkpoint_prefix = hvd_report.out_dir("session-ckpt")     # files <prefix>.index, .data-*

rng = np.random.default_rng(RANK)
steps = 0
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for step in range(20):
        batch = rng.normal(size=(16, 8)).astype(np.float32)
        _, value = sess.run([train_op, loss], feed_dict={x: batch, y: batch.sum(axis=1, keepdims=True)})
        steps += 1
        if step % 5 == 0:
            print("step", step, "loss", value)
    saver.save(sess, checkpoint_prefix)
    weights = sess.run(tf.trainable_variables())

hvd_report.report(checksum=hvd_report.checksum(weights), steps=steps, lr=hvd_report.learning_rate(opt))
