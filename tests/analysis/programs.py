"""Test programs for the analysis tests (written for these tests, not copied)."""

TAPE_SPLIT = '''\
"""A custom loop spread over train() -> train_step() -> tape."""
import tensorflow as tf


def make_model():
    return tf.keras.Sequential([tf.keras.layers.Dense(4), tf.keras.layers.Dense(1)])


def loss_fn(model, x, y):
    return tf.reduce_mean(tf.square(model(x, training=True) - y))


@tf.function
def train_step(model, optimizer, x, y):
    with tf.GradientTape() as tape:
        loss = loss_fn(model, x, y)
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss


def train(model, optimizer, dataset, epochs):
    for epoch in range(epochs):
        for x, y in dataset:
            loss = train_step(model, optimizer, x, y)
        print("epoch", epoch, float(loss))


def main():
    model = make_model()
    optimizer = tf.keras.optimizers.SGD(learning_rate=0.05)
    dataset = tf.data.Dataset.from_tensor_slices((tf.ones((8, 3)), tf.ones((8, 1)))).batch(4)
    train(model, optimizer, dataset, epochs=3)


if __name__ == "__main__":
    main()
'''

TRAINER_CLASS = '''\
import tensorflow as tf


class Regressor(tf.keras.Model):
    def __init__(self):
        super().__init__()
        self.dense = tf.keras.layers.Dense(1)

    def call(self, x):
        return self.dense(x)


class Trainer:
    def __init__(self, model, optimizer):
        self.model = model
        self.optimizer = optimizer

    def step(self, x, y):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(self.model(x) - y))
        grads = tape.gradient(loss, self.model.trainable_variables)
        self.optimizer.apply_gradients(zip(grads, self.model.trainable_variables))
        return loss

    def fit(self, dataset, epochs):
        for _ in range(epochs):
            for x, y in dataset:
                self.step(x, y)


model = Regressor()
opt = tf.keras.optimizers.Adam(0.01)
data = tf.data.Dataset.range(8).map(lambda i: (tf.ones((1, 2)), tf.ones((1, 1))))
trainer = Trainer(model, opt)
trainer.fit(data, 2)
'''

KERAS_FIT = '''\
import numpy as np
from tensorflow import keras

x = np.ones((32, 4), dtype="float32")
y = np.ones((32, 1), dtype="float32")
model = keras.Sequential([keras.layers.Dense(8, activation="relu"), keras.layers.Dense(1)])
opt = keras.optimizers.Adam(learning_rate=0.001)
model.compile(optimizer=opt, loss="mse")
model.fit(x, y, batch_size=8, epochs=2)
model.save_weights("/tmp/weights.h5")
'''

ESTIMATOR = '''\
import tensorflow.compat.v1 as tf


def model_fn(features, labels, mode):
    logits = tf.layers.dense(features["x"], 1)
    loss = tf.losses.mean_squared_error(labels, logits)
    optimizer = tf.train.GradientDescentOptimizer(learning_rate=0.1)
    train_op = optimizer.minimize(loss, global_step=tf.train.get_or_create_global_step())
    return tf.estimator.EstimatorSpec(mode=mode, loss=loss, train_op=train_op)


def input_fn():
    return tf.data.Dataset.from_tensors(({"x": [[1.0]]}, [[2.0]])).repeat().batch(1)


estimator = tf.estimator.Estimator(model_fn=model_fn, model_dir="/tmp/est")
estimator.train(input_fn=input_fn, steps=5)
'''

TAPE_MODULE = '''\
import tensorflow as tf

model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
opt = tf.keras.optimizers.Adam(0.01)
ds = tf.data.Dataset.from_tensor_slices((tf.ones((4, 2)), tf.ones((4, 1)))).batch(2)
ckpt = tf.train.Checkpoint(model=model, optimizer=opt)

for step, (x, y) in enumerate(ds.take(2)):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(model(x) - y))
    grads = tape.gradient(loss, model.trainable_variables)
    opt.apply_gradients(zip(grads, model.trainable_variables))
    print("step", step, float(loss))
ckpt.save("/tmp/ckpt")
'''

ALL = {"tape_split": TAPE_SPLIT, "trainer_class": TRAINER_CLASS, "keras_fit": KERAS_FIT,
       "estimator": ESTIMATOR, "tape_module": TAPE_MODULE}

# Every construct the restriction checks look at, for the tolerance property test.
KITCHEN_SINK = '''\
import os
import tensorflow as tf
from tensorflow import keras
from .helpers import run_elsewhere
Adam = tf.optimizers.Adam
k = tf.keras
os.environ["CUDA_VISIBLE_DEVICES"] = "0"
strategy = tf.distribute.MirroredStrategy()


class Net(keras.Model):
    def train_step(self, data):
        with tf.GradientTape() as tape:
            loss = self.compiled_loss(data[1], self(data[0]))
        self.optimizer.apply_gradients(zip(tape.gradient(loss, self.trainable_variables), self.trainable_variables))
        return {"loss": loss}


class Loop:
    def __init__(self, model, opt=None):
        self.model, self.opt = model, opt
        self.opt = opt
        self.fast = tf.function(self.step)

    @staticmethod
    def helper(x):
        return x

    def step(self, x):
        with tf.GradientTape() as t1, tf.GradientTape() as t2:
            y = self.model(x)
        return [self.opt.apply_gradients(zip(t1.gradient(y, self.model.trainable_variables), self.model.trainable_variables))]


def train(model, opt, ds, *args, **kwargs):
    global counter
    counter = 0
    for x in ds.take(3):
        print(next(iter(ds)), counter := counter + 1)
        Loop(model, opt).step(x)
    if kwargs:
        def inner():
            with tf.GradientTape() as tape:
                pass
        return inner


opt = Adam(0.1) if os.getpid() % 2 else tf.keras.optimizers.SGD()
opt2 = opt
ds = tf.data.Dataset.range(4).batch(2)
ds = ds.take(2)
ckpt = tf.train.Checkpoint(model=None)
try:
    model = Net()
except Exception:
    model = keras.Sequential([])
model.compile(optimizer="adam", loss="mse")
model.fit(ds, callbacks=[train], verbose=0)
run_elsewhere(model, opt)
tf.train.Checkpoint().save("/tmp/x")
match os.name:
    case "nt":
        est = tf.estimator.Estimator(model_fn=train)
        est.train(lambda: ds, steps=1)
    case _:
        pass
if __name__ == "__main__":
    train(model, opt, ds)
    opt = None
'''
