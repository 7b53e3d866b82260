"""Keras fit on tf.data.Dataset.list_files over ./records/*.tfrecord (written by the test),
read with interleave(TFRecordDataset): the files are sharded at list_files after conversion
(HVD041), list_files seeded so the ranks' shards are disjoint."""
import hvd_report
import tensorflow as tf

FEATURES = {"x": tf.io.FixedLenFeature([4], tf.float32), "y": tf.io.FixedLenFeature([1], tf.float32)}


def parse(record):
    example = tf.io.parse_single_example(record, FEATURES)
    return example["x"], example["y"]


train_ds = (
    tf.data.Dataset.list_files("records/train-*.tfrecord")
    .interleave(tf.data.TFRecordDataset, cycle_length=2)
    .map(parse)
    .shuffle(64)
    .batch(8)
)
model = tf.keras.Sequential([tf.keras.layers.Dense(8, activation="relu", input_shape=(4,)), tf.keras.layers.Dense(1)])
model.compile(optimizer=tf.keras.optimizers.SGD(0.01), loss="mse")
model.fit(train_ds, epochs=3)

hvd_report.report(checksum=hvd_report.checksum(model), iterations=int(model.optimizer.iterations.numpy()),
                  lr=hvd_report.learning_rate(model.optimizer))
