"""Read-back of a whole Keras model (contract point 13): a fit program saves its model, loads
it back with load_model and trains the loaded model on every rank. A Keras model does not
travel by broadcast_object (its pickle is rebuilt from the Keras format without Horovod's
optimizer class), so the conversion keeps the barrier and its report says "needs a shared
filesystem": on two hosts (`verify --hosts 2`) host 1 does not find the file ("own disks")."""
import numpy as np
import tensorflow as tf

EPOCHS = 2

x = np.random.RandomState(0).rand(64, 4).astype("float32")
y = x.sum(axis=1, keepdims=True)
dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(8)

model = tf.keras.Sequential([tf.keras.layers.Dense(1, input_shape=(4,))])
model.compile(optimizer=tf.keras.optimizers.SGD(0.01), loss="mse")
model.fit(dataset, epochs=EPOCHS)
model.save("rb_model.keras")
model = tf.keras.models.load_model("rb_model.keras")
model.fit(dataset, epochs=EPOCHS)
