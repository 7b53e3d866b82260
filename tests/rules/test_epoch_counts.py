"""rules/epoch_counts.py: what counts the epochs of a fit whose epochs HVD043 divides."""

from __future__ import annotations

from horovodize.engine import conversion, convert_text

PROGRAM = """import numpy as np
import tensorflow as tf

x = np.load("x.npy")
y = np.load("y.npy")
EPOCHS = 10
path = "training/cp-{{epoch:04d}}.weights.h5"
model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
model.compile(optimizer=tf.keras.optimizers.Adam(0.01), loss="mse")
history = model.fit(x, y, epochs={epochs}, callbacks=[tf.keras.callbacks.ModelCheckpoint(path, save_weights_only=True)])
{after}
"""


def test_initial_epoch_is_divided_with_the_epochs_unless_read_from_the_history():
    out = convert_text(PROGRAM.format(epochs="EPOCHS", after="model.fit(x, y, epochs=20, initial_epoch=10)\n"
                                      "model.fit(x, y, epochs=30, initial_epoch=len(history.epoch))"))
    assert "epochs=int(math.ceil(20 / hvd.size())), initial_epoch=10 // hvd.size()," in out
    assert "initial_epoch=len(history.epoch)," in out


def test_the_epochs_name_read_after_the_fit_is_divided_where_it_is_assigned():
    """Read again after the fit only (the last checkpoint's name): divided at its assignment, so
    that read counts the epochs the ranks ran; read before the fit too (a count derived from
    it), the fit's argument is divided and so is the later read."""
    text = PROGRAM.format(epochs="EPOCHS", after="model.load_weights(path.format(epoch=EPOCHS))")
    out = convert_text(text)
    assert "EPOCHS = int(math.ceil(10 / hvd.size()))" in out and "epochs=EPOCHS," in out
    assert not any("undivided epochs" in n for _p, _l, n in conversion(text).notes)
    text = text.replace('path = "training', 'logged = EPOCHS * 2\npath = "training')
    out = convert_text(text)
    assert "epochs=int(math.ceil(EPOCHS / hvd.size()))" in out
    assert "path.format(epoch=int(math.ceil(EPOCHS / hvd.size())))" in out       # (the later read too)
    assert not any("undivided epochs" in n for _p, _l, n in conversion(text).notes)
    # a literal count, or a name not read again: nothing to say
    assert not any("undivided epochs" in n for _p, _l, n in conversion(PROGRAM.format(epochs="EPOCHS", after="")).notes)
    assert not any("undivided epochs" in n for _p, _l, n in conversion(PROGRAM.format(epochs="10", after="")).notes)


def test_not_divided_epochs_leave_initial_epoch():
    # a dataset that is sharded (HVD041) keeps its epochs: initial_epoch stays too
    text = """import tensorflow as tf

x = tf.random.normal((512, 8))
y = tf.reduce_sum(x, axis=1, keepdims=True)
ds = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(512).batch(32)
model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
model.compile(optimizer=tf.keras.optimizers.Adam(0.01), loss="mse")
model.fit(ds, epochs=20, initial_epoch=10)
"""
    out = convert_text(text)
    assert "epochs=20, initial_epoch=10," in out and "ds.shard(" in out


def test_the_epochs_name_given_to_another_fit_is_not_a_later_read():
    # keras cifar10_cnn: fit or fit_generator by a flag, both with epochs=epochs: the second
    # fit's keyword and value are its own divided count, not a stale read after the first
    text = PROGRAM.format(epochs="EPOCHS", after="if x.size:\n    model.fit_generator(iter([(x, y)]), epochs=EPOCHS)")
    assert not [n for _p, _l, n in conversion(text).notes if "still counts the undivided epochs" in n]


def test_a_file_read_by_its_epoch_keeps_the_epochs_and_slices_the_arrays():
    """``load_weights`` of epoch 10's file of the fit's ModelCheckpoint template: with the epochs
    divided no rank would write it (on 2 ranks the last is epoch 5); the arrays are sliced
    instead. Epoch 1's file is written whatever the division: the epochs are divided."""
    text = PROGRAM.format(epochs="10", after='model.load_weights("training/cp-0010.weights.h5")')
    out = convert_text(text)
    assert "epochs=10," in out and "x[hvd.rank():len(x) // hvd.size() * hvd.size():hvd.size()]" in out
    first = convert_text(PROGRAM.format(epochs="10", after='model.load_weights("training/cp-0001.weights.h5")'))
    assert "epochs=int(math.ceil(10 / hvd.size()))" in first and "x[hvd.rank()" not in first


def test_a_file_read_by_its_epoch_is_named_when_the_arrays_cannot_be_sliced():
    # x given as a call (evaluated twice if sliced): the epochs are divided, and point 5 names
    # the read, its path and its line
    text = PROGRAM.format(epochs="10", after='model.load_weights("training/cp-0010.weights.h5")') \
        .replace("model.fit(x, y,", 'model.fit(np.load("x.npy"), y,')
    out = convert_text(text)
    assert "epochs=int(math.ceil(10 / hvd.size()))" in out
    notes = [(p, line, n) for p, line, n in conversion(text).notes if "the file of epoch 10" in n]
    assert [(p, line) for p, line, _n in notes] == [(5, 11)]
    assert '`"training/cp-0010.weights.h5"` (line 11)' in notes[0][2]
