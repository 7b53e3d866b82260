"""The driver: iterates the data, prints, and saves with a CheckpointManager."""
import os

import hvd_report
import tensorflow as tf

from agent.core import Agent

tf.random.set_seed(int(os.environ.get("HOROVOD_RANK", "0")))
x = tf.random.stateless_normal((256, 8), seed=(5, 6))
y = tf.reduce_sum(x, axis=1, keepdims=True)
data = tf.data.Dataset.from_tensor_slices((x, y)).batch(16)

agent = Agent()
ckpt = tf.train.Checkpoint(net=agent.net, optimizer=agent.optimizer)
manager = tf.train.CheckpointManager(ckpt, hvd_report.out_dir("agent"), max_to_keep=2)
steps = 0
for step, (bx, by) in enumerate(data):
    loss = agent.train(bx, by)
    steps += 1
    if step % 4 == 0:
        print("agent step", step, float(loss))
manager.save()
hvd_report.report(checksum=hvd_report.checksum(agent.net), steps=steps, lr=hvd_report.learning_rate(agent.optimizer))
