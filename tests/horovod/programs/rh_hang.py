"""Rehearsal mutant: each rank leaves its training loop after its own number of steps, so
rank 0 waits in a final collective while rank 1 waits in a gradient allreduce: a hang
(run with `verify --as-is --timeout S`)."""
import horovod.tensorflow as hvd
import tensorflow as tf

hvd.init()
w = tf.Variable([1.0, 2.0])
opt = tf.keras.optimizers.SGD(0.1)
for step in range(3 + hvd.rank()):          # per-rank loop exit
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(w * w)
    tape = hvd.DistributedGradientTape(tape)
    grads = tape.gradient(loss, [w])
    opt.apply_gradients(zip(grads, [w]))
    if step == 0:
        hvd.broadcast_variables([w], root_rank=0)
hvd.allreduce(tf.constant(0), name="barrier")
