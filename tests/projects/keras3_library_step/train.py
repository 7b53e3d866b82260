import keras
import numpy as np
import tensorflow as tf
from model import TapeModel

x = np.random.normal(size=(512, 8)).astype("float32")
y = x.sum(axis=1, keepdims=True)
dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(32)
inputs = keras.Input(shape=(8,))
model = TapeModel(inputs, keras.layers.Dense(1)(inputs))
model.compile(optimizer=keras.optimizers.SGD(0.01), loss="mse")
model.fit(dataset, epochs=2)
