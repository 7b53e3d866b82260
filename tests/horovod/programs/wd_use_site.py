"""A tape loop over a dataset another module builds (the source is out of reach): 9 batches
of unknown cardinality (a filter), which do not divide by 2 (shards of 5 and 4 batches)."""
import os

import hvd_report
import tensorflow as tf
from wd_data.use_site import make_dataset

tf.random.set_seed(int(os.environ.get("HOROVOD_RANK", "0")))
train_ds = make_dataset()

model = tf.keras.Sequential([
    tf.keras.layers.Dense(16, activation="relu", input_shape=(8,)),
    tf.keras.layers.Dense(1),
])
loss_fn = tf.keras.losses.MeanSquaredError()
optimizer = tf.keras.optimizers.Adam(0.001)


@tf.function
def train_step(x, y):
    with tf.GradientTape() as tape:
        loss = loss_fn(y, model(x, training=True))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss


for epoch in range(2):
    for x, y in train_ds:
        loss = train_step(x, y)
    print(f"epoch {epoch} loss {float(loss):.4f}")

hvd_report.report(checksum=hvd_report.checksum(model), iterations=int(optimizer.iterations.numpy()),
                  lr=hvd_report.learning_rate(optimizer))
