"""Rehearsal mutants: a Horovod Keras program written by hand (run with `verify --as-is`).
MUTANTS (argv[1], comma-separated) each break one thing: `shared_checkpoint`, `undivided`,
`print`, `download` (argv[2]: the origin), or nothing (`none`)."""
import sys

import numpy as np
import tensorflow as tf
import horovod.tensorflow.keras as hvd

hvd.init()
MUTANTS = set((sys.argv[1] if len(sys.argv) > 1 else "none").split(","))
EPOCHS = 2

if "download" in MUTANTS:
    # every rank downloads into one cache file; urlretrieve writes whether or not the file is
    # there (get_file skips a file a faster rank already wrote: a race the test could miss)
    import os
    import urllib.request
    cache = os.path.join(os.path.expanduser("~"), ".keras", "datasets")
    os.makedirs(cache, exist_ok=True)
    hvd.allreduce(tf.constant(0), name="start")   # the ranks start together, as on a cluster
    path, _ = urllib.request.urlretrieve(sys.argv[2], os.path.join(cache, "rh_data.npz"))

rng = np.random.RandomState(0)
x = rng.rand(64, 4).astype("float32")
y = x.sum(axis=1, keepdims=True)
dataset = tf.data.Dataset.from_tensor_slices((x, y))
if "undivided" not in MUTANTS:
    dataset = dataset.shard(hvd.size(), hvd.rank())
dataset = dataset.batch(8)

model = tf.keras.Sequential([tf.keras.layers.Dense(1, input_shape=(4,))])
model.compile(optimizer=hvd.DistributedOptimizer(tf.keras.optimizers.SGD(0.01 * hvd.size())), loss="mse")
model.fit(dataset, epochs=EPOCHS, callbacks=[hvd.callbacks.BroadcastGlobalVariablesCallback(0)],
          verbose=1 if hvd.rank() == 0 else 0)
if "shared_checkpoint" in MUTANTS:
    # every rank, the same path (np.save, not h5py: h5py's file lock makes one rank die of
    # BlockingIOError some of the time, and the mutant must fail exactly one check)
    np.save("rh_shared.npy", model.get_weights()[0])
elif hvd.rank() == 0:
    model.save_weights("rh_rank0.h5")
if "print" in MUTANTS:
    print("trained", hvd.rank())                # every rank
