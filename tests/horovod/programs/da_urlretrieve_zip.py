"""urllib.request.urlretrieve of a zip (no cache: it downloads again on every call) into the
working directory, then ZipFile/extractall/close and training on what it extracted: the
shape of horse_human-like scripts."""
import os
import urllib.request
import zipfile

import hvd_report
import numpy as np
import tensorflow as tf

URL = os.environ["HVD_DATA_URL"]

tf.random.set_seed(int(os.environ.get("HOROVOD_RANK", "0")))
file_name = "features.zip"
urllib.request.urlretrieve(URL, file_name)
zip_ref = zipfile.ZipFile(file_name, "r")
zip_ref.extractall("data")
zip_ref.close()
data = np.load(os.path.join("data", "features.npz"))
x_train, y_train = data["x"], data["y"]

model = tf.keras.Sequential([
    tf.keras.layers.Dense(16, activation="relu", input_shape=(8,)),
    tf.keras.layers.Dense(2),
])
model.compile(optimizer=tf.keras.optimizers.Adam(learning_rate=0.001),
              loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
model.fit(x_train, y_train, batch_size=32, epochs=4)

hvd_report.report(checksum=hvd_report.checksum(model), iterations=int(model.optimizer.iterations.numpy()))
