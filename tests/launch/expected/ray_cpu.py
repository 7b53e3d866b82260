#!/usr/bin/env python3
"""Run train.py on 2 Horovod worker(s) with Ray (CPU ranks).

horovod.ray.RayExecutor (Horovod 0.28.1; its Ray integration is Gloo only, like the
pinned build) starts the workers as Ray actors, sets each one's Horovod rank and
rendezvous, and each runs the converted script as `python SCRIPT` would (its
`__main__` block included), in the directory this driver was started from.

    python train_ray.py       # a Ray cluster of this machine alone
    RAY_ADDRESS=auto python train_ray.py   # the running cluster (`ray start`)

On a cluster of several machines every node needs the script (and its data) at the
same path, and the same Python environment (Ray, Horovod with Gloo, TensorFlow).

Made by: horovodize launch --emit ray train.py --np 2
"""

import os
import runpy
import sys

import ray
from horovod.ray import RayExecutor

SCRIPT = 'train.py'
ARGS = []
NUM_WORKERS = 2
USE_GPU = False


def train(workdir):
    """One worker: the script as its own `__main__`, with its arguments."""
    os.chdir(workdir)
    sys.argv = [SCRIPT, *ARGS]
    runpy.run_path(SCRIPT, run_name="__main__")
    # (nothing returned: the script's globals do not travel back to the driver)


def main():
    ray.init(address=os.environ.get("RAY_ADDRESS"))
    settings = RayExecutor.create_settings(timeout_s=120)
    executor = RayExecutor(settings, num_workers=NUM_WORKERS, use_gpu=USE_GPU,
                           cpus_per_worker=1)
    executor.start()
    try:
        workdir = os.getcwd()
        executor.run(train, args=[workdir])
    finally:
        executor.shutdown()


if __name__ == "__main__":
    main()
