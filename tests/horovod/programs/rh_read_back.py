"""Rehearsal on two hosts: a Keras fit program that fetches its data into the Keras cache
(argv[1]: the origin, a file:// URL) and, after training, reads back the weights it saved and
trains on from them. Converted, the fetch runs once per host, the save and the read-back on
rank 0, and the next fit's broadcast gives rank 0's weights to the other host: no filesystem
the hosts share is needed (`verify --hosts 2`: check "own disks")."""
import sys

import numpy as np
import tensorflow as tf

EPOCHS = 2

path = tf.keras.utils.get_file("rh_fetch.npz", origin=sys.argv[1])
data = np.load(path)
dataset = tf.data.Dataset.from_tensor_slices((data["x"], data["y"])).batch(8)

model = tf.keras.Sequential([tf.keras.layers.Dense(1, input_shape=(4,))])
model.compile(optimizer=tf.keras.optimizers.SGD(0.01), loss="mse")
model.fit(dataset, epochs=EPOCHS)
model.save_weights("rh_back.h5")
model.load_weights("rh_back.h5")
model.fit(dataset, epochs=EPOCHS)
print("final loss", model.evaluate(dataset, verbose=0))
