#!/usr/bin/env bash
# Run train.py on 8 Horovod rank(s) on 2 host(s) (CPU ranks).
# Made by: horovodize launch --emit horovodrun train.py --np 8 --hosts host1:4,host2:4 -- --epochs 3
# The hosts must reach each other, and this one must ssh to the others without a prompt
# (Horovod's docs: "Failures due to SSH issues"). Run it where `horovodrun` is on PATH.
# --gloo: the pinned Horovod is built with Gloo and without MPI; with an MPI build, drop
# it to let horovodrun use mpirun.
set -euo pipefail

horovodrun --gloo -np 8 -H host1:4,host2:4 python train.py --epochs 3
