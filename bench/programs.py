"""Generated TensorFlow training programs of a given size, for the latency benchmark.

The shape is a realistic single-GPU custom training loop: imports at the top, a config
block, a dataset pipeline, a model subclass, an optimizer created once before the
functions that use it, a ``@tf.function`` train step with a GradientTape, a driving loop
with prints and checkpoint saves, and many helper functions (preprocessing, metrics,
logging, layers) that make up the bulk of the file.

`project` is the same bulk as a program of two modules: an entry script and the large
module of definitions it imports (the model, data and optimizer it trains).
"""

from __future__ import annotations

HEADER = '''\
"""Image classification with a custom training loop (generated benchmark input)."""
import argparse
import math
import os
import time

import numpy as np
import tensorflow as tf

BATCH_SIZE = 64
EPOCHS = 3
IMAGE_SIZE = 32
NUM_CLASSES = 10
LOG_EVERY = 50

optimizer = tf.keras.optimizers.Adam(learning_rate=0.001)
loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
train_accuracy = tf.keras.metrics.SparseCategoricalAccuracy(name="train_accuracy")

'''

HELPERS = [
    '''\
def normalize_{i}(image, label):
    """Scale pixels to [0, 1] and cast the label."""
    image = tf.cast(image, tf.float32) / 255.0
    image = tf.image.resize(image, (IMAGE_SIZE, IMAGE_SIZE))
    label = tf.cast(label, tf.int64)
    return image, label

''',
    '''\
def augment_{i}(image, label, seed=None):
    """Random flips, crops and brightness (helper {i})."""
    image = tf.image.random_flip_left_right(image, seed=seed)
    image = tf.image.resize_with_crop_or_pad(image, IMAGE_SIZE + 4, IMAGE_SIZE + 4)
    image = tf.image.random_crop(image, size=(IMAGE_SIZE, IMAGE_SIZE, 3), seed=seed)
    image = tf.image.random_brightness(image, max_delta=0.1)
    if {i} % 2 == 0:
        image = tf.image.random_contrast(image, 0.9, 1.1)
    return image, label

''',
    '''\
def conv_block_{i}(x, filters, kernel_size=3, dropout=0.1):
    """Conv -> BN -> ReLU -> Dropout."""
    x = tf.keras.layers.Conv2D(filters, kernel_size, padding="same", use_bias=False)(x)
    x = tf.keras.layers.BatchNormalization()(x)
    x = tf.keras.layers.ReLU()(x)
    if dropout:
        x = tf.keras.layers.Dropout(dropout)(x)
    return x

''',
    '''\
def top_k_accuracy_{i}(labels, logits, k=5):
    """Fraction of examples whose label is in the top-k predictions."""
    top = tf.math.top_k(logits, k=k).indices
    hits = tf.reduce_any(tf.equal(top, tf.expand_dims(labels, -1)), axis=-1)
    return tf.reduce_mean(tf.cast(hits, tf.float32))

''',
    '''\
def cosine_lr_{i}(step, total_steps, base_lr=0.001, warmup=100):
    """Cosine decay with linear warm-up (plain Python, used for logging)."""
    if step < warmup:
        return base_lr * (step + 1) / warmup
    progress = (step - warmup) / max(1, total_steps - warmup)
    return 0.5 * base_lr * (1.0 + math.cos(math.pi * progress))

''',
    '''\
def format_metrics_{i}(metrics, prefix=""):
    """`name=value` pairs sorted by name."""
    parts = []
    for name, value in sorted(metrics.items()):
        if isinstance(value, float):
            parts.append(f"{{prefix}}{{name}}={{value:.4f}}")
        else:
            parts.append(f"{{prefix}}{{name}}={{value}}")
    return " ".join(parts)

''',
    '''\
class Residual{i}(tf.keras.layers.Layer):
    """Two conv blocks with a skip connection."""

    def __init__(self, filters, **kwargs):
        super().__init__(**kwargs)
        self.conv_a = tf.keras.layers.Conv2D(filters, 3, padding="same")
        self.conv_b = tf.keras.layers.Conv2D(filters, 3, padding="same")
        self.norm = tf.keras.layers.BatchNormalization()

    def call(self, inputs, training=False):
        x = self.conv_a(inputs)
        x = tf.nn.relu(self.norm(x, training=training))
        x = self.conv_b(x)
        return tf.nn.relu(x + inputs)

''',
    '''\
def confusion_{i}(labels, predictions, num_classes=NUM_CLASSES):
    """Confusion matrix as a numpy array."""
    matrix = tf.math.confusion_matrix(labels, predictions, num_classes=num_classes)
    totals = np.maximum(matrix.numpy().sum(axis=1, keepdims=True), 1)
    return matrix.numpy() / totals

''',
]

CLASSIFIER = '''\
class Classifier(tf.keras.Model):
    """A small ResNet-style classifier."""

    def __init__(self, num_classes=NUM_CLASSES):
        super().__init__()
        self.stem = tf.keras.layers.Conv2D(32, 3, padding="same", activation="relu")
        self.pool = tf.keras.layers.GlobalAveragePooling2D()
        self.head = tf.keras.layers.Dense(num_classes)

    def call(self, inputs, training=False):
        x = self.stem(inputs)
        x = self.pool(x)
        return self.head(x)


def make_dataset(images, labels):
    """Shuffle, map and batch."""
    ds = tf.data.Dataset.from_tensor_slices((images, labels))
    ds = ds.shuffle(10000).map(normalize_0).batch(BATCH_SIZE)
    return ds.prefetch(tf.data.AUTOTUNE)


'''

MODEL = CLASSIFIER + '''\
model = Classifier()
checkpoint = tf.train.Checkpoint(model=model, optimizer=optimizer)


@tf.function
def train_step(images, labels):
    with tf.GradientTape() as tape:
        logits = model(images, training=True)
        loss = loss_fn(labels, logits)
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    train_accuracy.update_state(labels, logits)
    return loss

'''

FOOTER = '''\

def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=EPOCHS)
    args = parser.parse_args()
    (x_train, y_train), _ = tf.keras.datasets.cifar10.load_data()
    dataset = make_dataset(x_train, y_train)
    for epoch in range(args.epochs):
        start = time.time()
        for step, (images, labels) in enumerate(dataset):
            loss = train_step(images, labels)
            if step % LOG_EVERY == 0:
                print("epoch", epoch, "step", step, "loss", float(loss))
        print("epoch", epoch, "took", time.time() - start, "accuracy", float(train_accuracy.result()))
        checkpoint.save(os.path.join("/tmp/ckpt", "ckpt"))


if __name__ == "__main__":
    main()
'''


def program(lines: int) -> str:
    """A program of about `lines` lines (at least the fixed parts)."""
    fixed = HEADER.count("\n") + MODEL.count("\n") + FOOTER.count("\n")
    body: list[str] = []
    count, i = fixed, 0
    while count < lines:
        chunk = HELPERS[i % len(HELPERS)].format(i=i)
        body.append(chunk)
        count += chunk.count("\n")
        i += 1
    half = len(body) // 2
    return HEADER + "".join(body[:half]) + MODEL + "".join(body[half:]) + FOOTER


# -- a project: an entry script and a large module it imports ---------------------------------
MODULE_HEADER = '''\
"""Layers, metrics, the model, the data and the optimizer of a project (generated benchmark input)."""
import math

import numpy as np
import tensorflow as tf

BATCH_SIZE = 64
IMAGE_SIZE = 32
NUM_CLASSES = 10

'''

MODULE_MODEL = CLASSIFIER + '''\
def make_optimizer(lr=0.001):
    return tf.keras.optimizers.Adam(learning_rate=lr)

'''

ENTRY = '''\
"""The entry: trains the model, data and optimizer helpers.py makes (generated benchmark input)."""
import argparse
import os
import time

import tensorflow as tf

from helpers import Classifier, make_dataset, make_optimizer

LOG_EVERY = 50


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=3)
    args = parser.parse_args()
    model = Classifier()
    optimizer = make_optimizer()
    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    checkpoint = tf.train.Checkpoint(model=model, optimizer=optimizer)
    (x_train, y_train), _ = tf.keras.datasets.cifar10.load_data()
    dataset = make_dataset(x_train, y_train)
    for epoch in range(args.epochs):
        start = time.time()
        for step, (images, labels) in enumerate(dataset):
            with tf.GradientTape() as tape:
                loss = loss_fn(labels, model(images, training=True))
            grads = tape.gradient(loss, model.trainable_variables)
            optimizer.apply_gradients(zip(grads, model.trainable_variables))
            if step % LOG_EVERY == 0:
                print("epoch", epoch, "step", step, "loss", float(loss))
        print("epoch", epoch, "took", time.time() - start)
        checkpoint.save(os.path.join("/tmp/ckpt", "ckpt"))


if __name__ == "__main__":
    main()
'''


def project(lines: int) -> dict[str, str]:
    """A program of two modules: ``train.py`` (the entry, 40 lines) and ``helpers.py`` (about
    `lines` lines of definitions: the model, data and optimizer the entry trains, in the
    middle of many helpers)."""
    fixed = MODULE_HEADER.count("\n") + MODULE_MODEL.count("\n")
    body: list[str] = []
    count, i = fixed, 0
    while count < lines:
        chunk = HELPERS[i % len(HELPERS)].format(i=i)
        body.append(chunk)
        count += chunk.count("\n")
        i += 1
    half = len(body) // 2
    return {"train.py": ENTRY,
            "helpers.py": MODULE_HEADER + "".join(body[:half]) + MODULE_MODEL + "".join(body[half:])}


if __name__ == "__main__":
    import sys

    sys.stdout.write(program(int(sys.argv[1]) if len(sys.argv) > 1 else 1000))
