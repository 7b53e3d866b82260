"""Keras fit on tf.keras.utils.image_dataset_from_directory over ./images (written by the test):
a batched source of known size, sharded by batch after conversion (HVD041)."""
import hvd_report
import tensorflow as tf

train_ds = tf.keras.utils.image_dataset_from_directory("images", image_size=(8, 8), batch_size=8, seed=1)
class_names = train_ds.class_names
train_ds = train_ds.map(lambda x, y: (x / 255.0, y))

model = tf.keras.Sequential([
    tf.keras.layers.Flatten(input_shape=(8, 8, 3)),
    tf.keras.layers.Dense(len(class_names)),
])
model.compile(optimizer=tf.keras.optimizers.SGD(0.01),
              loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
model.fit(train_ds, epochs=3)

hvd_report.report(checksum=hvd_report.checksum(model), iterations=int(model.optimizer.iterations.numpy()),
                  lr=hvd_report.learning_rate(model.optimizer))
