"""HVD207 (every rank trains on the whole dataset) follows size()/rank() values through the
program: names, tuple targets, augmented assignments, parameter defaults, ``self``
attributes and subscripts. `hvd_reach` finds the nodes such a value can reach by name
before `HvdFacts.flows_from` is asked; each shape below divides the work only through
that shape (no size()/rank() call written in a counted argument), so a path the reach
misses reports HVD207 where the work is divided."""

from __future__ import annotations

import pytest

from horovodize.engine import analyze

PROGRAM = '''import glob

import tensorflow as tf
import horovod.tensorflow.keras as hvd

hvd.init()
(images, labels), _ = tf.keras.datasets.mnist.load_data()
dataset = tf.data.Dataset.from_tensor_slices((images / 255.0, labels))
{divide}
dataset = dataset.batch(128)
model = tf.keras.Sequential([tf.keras.layers.Flatten(), tf.keras.layers.Dense(10)])
opt = hvd.DistributedOptimizer(tf.keras.optimizers.Adam(0.001 * hvd.size()))
model.compile(optimizer=opt, loss="sparse_categorical_crossentropy")
model.fit(dataset, epochs=5, steps_per_epoch={steps}, callbacks=[hvd.callbacks.BroadcastGlobalVariablesCallback(0)])
'''

SHAPES = {
    "names": ("workers = hvd.size()\nindex = hvd.rank()\ndataset = dataset.shard(workers, index)", "500"),
    "tuple target": ("workers, index = hvd.size(), hvd.rank()\ndataset = dataset.shard(workers, index)", "500"),
    "chain of names": ("n = hvd.size()\nparts = n\nfirst = 0\ndataset = dataset.shard(parts, first)", "500"),
    "augmented assignment": ("steps = 1000\nsteps //= hvd.size()", "steps"),
    "parameter default": ("def split(ds, parts=hvd.size(), part=hvd.rank()):\n    return ds.shard(parts, part)\n\n\n"
                          "dataset = split(dataset)", "500"),
    "self attribute": ("class Split:\n    def __init__(self):\n        self.parts = hvd.size()\n"
                       "        self.part = hvd.rank()\n\n    def __call__(self, ds):\n"
                       "        return ds.shard(self.parts, self.part)\n\n\ndataset = Split()(dataset)", "500"),
    "subscript": ("rank = hvd.rank()\nsize = hvd.size()\nfiles = sorted(glob.glob('data/*.npz'))\nmine = files[rank::size]\n"
                  "dataset = dataset.take(len(mine) * 1000)", "500"),
    # (``lr=`` is not counted where it is written: the value divides the work inside)
    "parameter from a caller": ("def load(ds, lr):\n    global dataset\n    dataset = ds.shard(lr, 0)\n\n\n"
                                "load(dataset, lr=hvd.size())", "500"),
}


def codes(text: str) -> list[str]:
    return [f.code for f in analyze(text).findings]


def test_undivided_work_is_reported():
    assert "HVD207" in codes(PROGRAM.format(divide="", steps="500"))


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_work_divided_through_dataflow_is_seen(shape):
    divide, steps = SHAPES[shape]
    assert "HVD207" not in codes(PROGRAM.format(divide=divide, steps=steps))


# Objects built with a size()-scaled learning rate carry no count of ranks into a call.
OBJECTS = {
    "callable(optimizer attribute)": "print(callable(opt.variables))\n",
    "checkpoint of the optimizer": "checkpoint = tf.train.Checkpoint(model=model, opt=opt)\n",
    "optimizer passed to a helper": "def describe(o):\n    return str(o)\n\n\ndescribe(opt)\n",
}


@pytest.mark.parametrize("use", sorted(OBJECTS))
def test_an_optimizer_with_a_scaled_learning_rate_divides_no_work(use):
    program = PROGRAM.format(divide="", steps="500").replace("model.fit(", OBJECTS[use] + "model.fit(")
    assert "HVD207" in codes(program)
