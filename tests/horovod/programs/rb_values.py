"""Read-back of plain values (contract point 13): a Keras fit program writes a checkpoint per
epoch, a NumPy array, a JSON history and a pickled config, then every rank reads them back and
goes on from what it read. Converted, rank 0 reads each file it wrote and broadcasts the value
(`hvd_tf.broadcast_object`): no rank reads a file from another host's disk (`verify --hosts 2`)."""
import json
import os
import pickle

import numpy as np
import tensorflow as tf

EPOCHS = 2
ckpt_dir = "rb_ckpt"

x = np.random.RandomState(0).rand(64, 4).astype("float32")
y = x.sum(axis=1, keepdims=True)
dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(8)

model = tf.keras.Sequential([tf.keras.layers.Dense(1, input_shape=(4,))])
model.compile(optimizer=tf.keras.optimizers.SGD(0.01), loss="mse")
checkpoint = tf.keras.callbacks.ModelCheckpoint(os.path.join(ckpt_dir, "weights-{epoch:02d}.h5"), save_weights_only=True)
history = model.fit(dataset, epochs=EPOCHS, callbacks=[checkpoint])
np.save("rb_kernel.npy", model.get_weights()[0] * 2.0)
with open("rb_history.json", "w") as fh:
    json.dump({"loss": [float(v) for v in history.history["loss"]]}, fh)
with open("rb_config.pkl", "wb") as fh:
    pickle.dump({"scale": 0.5}, fh)

names = sorted(os.listdir(ckpt_dir))
kernel = np.load("rb_kernel.npy")
losses = json.load(open("rb_history.json"))["loss"]
config = pickle.load(open("rb_config.pkl", "rb"))

# every rank goes on from what it read: the last checkpoint, then the saved kernel, scaled
# if the loss went down
model.load_weights(os.path.join(ckpt_dir, names[-1]))
scale = config["scale"] if losses[-1] < losses[0] else 1.0
model.set_weights([kernel * scale, model.get_weights()[1]])
print("final loss", model.evaluate(dataset, verbose=0))
