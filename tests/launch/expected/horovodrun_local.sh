#!/usr/bin/env bash
# Run train.py on 4 Horovod rank(s) on this machine (CPU ranks).
# Made by: horovodize launch --emit horovodrun train.py --np 4
# Run it where `horovodrun` is on PATH (the environment that has Horovod).
# --gloo: the pinned Horovod is built with Gloo and without MPI; with an MPI build, drop
# it to let horovodrun use mpirun.
set -euo pipefail

horovodrun --gloo -np 4 -H localhost:4 python train.py
