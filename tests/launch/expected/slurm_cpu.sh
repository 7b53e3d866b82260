#!/bin/bash
# Slurm batch script: train.py on 4 Horovod rank(s), 1 node(s) of up to
# 4 rank(s) (CPU ranks). Submit it from the environment whose python and
# horovodrun have Horovod (sbatch passes that environment on): sbatch train.slurm.sh
# Made by: horovodize launch --emit slurm train.py --np 4
#SBATCH --job-name=train
#SBATCH --nodes=1
#SBATCH --ntasks=4
#SBATCH --ntasks-per-node=4
#SBATCH --output=%x-%j.out

# Why horovodrun and not `srun --mpi=pmi2 python ...` (Horovod's docs for Slurm): srun
# starts the ranks itself and Horovod then finds its peers through MPI, and the pinned
# Horovod is built with Gloo only (no MPI). So this script, which Slurm runs on the
# first node of the allocation, starts one `horovodrun --gloo`: it starts every rank (over
# ssh on the other nodes: they must accept it without a prompt) and Gloo connects them.
# -H is the allocation's nodes, each with its $SLURM_NTASKS_PER_NODE slots.
set -euo pipefail

mapfile -t nodes < <(scontrol show hostnames "$SLURM_JOB_NODELIST")
hosts=""
for node in "${nodes[@]}"; do
    hosts="${hosts:+$hosts,}$node:$SLURM_NTASKS_PER_NODE"
done

horovodrun --gloo -np "$SLURM_NTASKS" -H "$hosts" python train.py
