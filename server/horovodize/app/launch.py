"""``horovodize launch``: the file that runs a converted program on N ranks.

Provides `recipe(LaunchRequest)`, the text of one of four launch recipes, each read like
the form Horovod's docs and the schedulers' own examples show:

* ``horovodrun``: a shell script with the ``horovodrun -np N -H host:slots,...`` line;
* ``slurm``: an sbatch batch script that builds ``-H`` from the allocation's nodes
  (``scontrol show hostnames``) and starts one ``horovodrun --gloo``;
* ``mpijob``: a Kubeflow MPIJob (``kubeflow.org/v2beta1``) whose launcher runs
  ``horovodrun --gloo --hostfile /etc/mpi/hostfile`` over the operator's ssh;
* ``ray``: a Python driver that runs the script on N ``horovod.ray.RayExecutor`` workers.

The stack these recipes target is the pinned one (``scripts/hvd_env.sh``): Horovod 0.28.1
built with Gloo and without MPI. So no recipe uses ``mpirun`` or ``srun --mpi=pmi2``: those
start the ranks themselves and leave Horovod to find its peers through MPI, which that build
lacks; ``horovodrun --gloo`` starts every rank and connects them itself. Each recipe says so
in a comment.

`check_request` raises `UserError` for an input no recipe can serve (exit 2 on the command
line). The recipes are pure (text in, text out); `add_arguments` / `run` are the command
line's part (read the script, print or write the recipe), as in `doctor`.

Needs: nothing but the standard library and `errors`.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import UserError

KINDS = ("horovodrun", "slurm", "mpijob", "ray")
HOSTFILE = "/etc/mpi/hostfile"          # where mpi-operator mounts the hostfile it writes
_HOST = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_SLOTS = re.compile(r"[0-9]+")


@dataclass(frozen=True)
class Host:
    name: str
    slots: int

    def __str__(self) -> str:
        return f"{self.name}:{self.slots}"


@dataclass(frozen=True)
class LaunchRequest:
    """What to launch: `script` as the job will see it (a path relative to the directory
    the job starts in, or absolute), on `np` ranks."""

    kind: str
    script: str
    np: int
    hosts: tuple[Host, ...] = ()
    gpus_per_node: int = 0
    image: str | None = None
    python: str = "python"
    args: tuple[str, ...] = ()
    command: str = field(default="", compare=False)   # the command line that made it (a comment)


def parse_hosts(text: str) -> tuple[Host, ...]:
    """``host1:4,host2:4`` (horovodrun's ``-H`` form) as hosts; a one-line error otherwise."""
    hosts = []
    for item in text.split(","):
        name, sep, slots = item.strip().rpartition(":")
        if not sep or not _HOST.fullmatch(name) or not _SLOTS.fullmatch(slots) or int(slots) < 1:
            raise UserError(f"--hosts {text!r}: {item.strip()!r} is not HOST:SLOTS (a host name and a number of "
                            "slots >= 1, as in host1:4,host2:4)")
        hosts.append(Host(name, int(slots)))
    names = [h.name for h in hosts]
    if len(set(names)) != len(names):
        raise UserError(f"--hosts {text!r}: a host is named twice")
    return tuple(hosts)


def check_request(req: LaunchRequest) -> None:
    """Raise `UserError` for a request no recipe can serve."""
    if req.kind not in KINDS:
        raise UserError(f"unknown launch kind {req.kind!r}; one of {', '.join(KINDS)}")
    if req.np < 1:
        raise UserError(f"--np {req.np}: the number of ranks must be at least 1")
    if req.gpus_per_node < 0:
        raise UserError(f"--gpus-per-node {req.gpus_per_node}: must be 0 (CPU) or more")
    if req.hosts:
        total = sum(h.slots for h in req.hosts)
        if total < req.np:
            raise UserError(f"--hosts give {total} slot(s) in all, fewer than --np {req.np}: give each host as "
                            "many slots as ranks it runs (host:slots)")
        if req.kind in ("mpijob", "ray"):
            where = "the MPI operator names the worker pods" if req.kind == "mpijob" else "Ray places the workers"
            raise UserError(f"--hosts does not apply to --emit {req.kind}: {where}; give --np "
                            "(and --gpus-per-node) only")
    elif req.kind == "horovodrun" and req.gpus_per_node and req.np > req.gpus_per_node:
        raise UserError(f"--np {req.np} with --gpus-per-node {req.gpus_per_node} needs "
                        f"{math.ceil(req.np / req.gpus_per_node)} nodes: name them with --hosts host1:"
                        f"{req.gpus_per_node},host2:{req.gpus_per_node},...")
    if req.kind == "mpijob" and not req.image:
        raise UserError("--emit mpijob needs --image IMAGE: an image with Horovod (Gloo), TensorFlow, "
                        "an ssh server and the script at the path given")


def shape(req: LaunchRequest) -> tuple[int, int]:
    """(nodes, ranks per node) of the job: a GPU per rank when `gpus_per_node` (fewer ranks
    than GPUs: one node of those ranks), else the hosts' shape, else one node (slurm) or
    one rank per worker pod (mpijob)."""
    if req.gpus_per_node:
        return math.ceil(req.np / req.gpus_per_node), min(req.np, req.gpus_per_node)
    if req.hosts:
        return len(req.hosts), max(h.slots for h in req.hosts)
    if req.kind == "mpijob":
        return req.np, 1
    return 1, req.np


def recipe(req: LaunchRequest) -> str:
    """The text of the recipe `req.kind` (checked first)."""
    check_request(req)
    return {"horovodrun": _horovodrun, "slurm": _slurm, "mpijob": _mpijob, "ray": _ray}[req.kind](req)


def default_name(req: LaunchRequest) -> str:
    """The file name a recipe is usually kept under: ``train.slurm.sh`` for ``train.py``."""
    stem = _stem(req.script)
    return {"horovodrun": f"{stem}.horovodrun.sh", "slurm": f"{stem}.slurm.sh",
            "mpijob": f"{stem}.mpijob.yaml", "ray": f"{stem}_ray.py"}[req.kind]


# -- the recipes ----------------------------------------------------------------------------
def _program(req: LaunchRequest) -> str:
    return shlex.join([req.python, req.script, *req.args])


def _made_by(req: LaunchRequest, lead: str = "#") -> str:
    return f"{lead} Made by: {req.command}\n" if req.command else ""


def _gpu_words(req: LaunchRequest) -> str:
    return "one GPU per rank" if req.gpus_per_node else "CPU ranks"


def _horovodrun(req: LaunchRequest) -> str:
    hosts = ",".join(map(str, req.hosts)) if req.hosts else f"localhost:{req.np}"
    where = f"{len(req.hosts)} host(s)" if req.hosts else "this machine"
    remote = ("# The hosts must reach each other, and this one must ssh to the others without a prompt\n"
              "# (Horovod's docs: \"Failures due to SSH issues\"). Run it where `horovodrun` is on PATH.\n"
              if req.hosts else "# Run it where `horovodrun` is on PATH (the environment that has Horovod).\n")
    return (
        "#!/usr/bin/env bash\n"
        f"# Run {req.script} on {req.np} Horovod rank(s) on {where} ({_gpu_words(req)}).\n"
        f"{_made_by(req)}"
        f"{remote}"
        "# --gloo: the pinned Horovod is built with Gloo and without MPI; with an MPI build, drop\n"
        "# it to let horovodrun use mpirun.\n"
        "set -euo pipefail\n"
        "\n"
        f"horovodrun --gloo -np {req.np} -H {hosts} {_program(req)}\n"
    )


def _slurm(req: LaunchRequest) -> str:
    nodes, per_node = shape(req)
    gpus = f"#SBATCH --gpus-per-node={per_node}\n" if req.gpus_per_node else ""
    nodelist = f"#SBATCH --nodelist={','.join(h.name for h in req.hosts)}\n" if req.hosts else ""
    return (
        "#!/bin/bash\n"
        f"# Slurm batch script: {req.script} on {req.np} Horovod rank(s), {nodes} node(s) of up to\n"
        f"# {per_node} rank(s) ({_gpu_words(req)}). Submit it from the environment whose python and\n"
        f"# horovodrun have Horovod (sbatch passes that environment on): sbatch {default_name(req)}\n"
        f"{_made_by(req)}"
        f"#SBATCH --job-name={_stem(req.script)}\n"
        f"#SBATCH --nodes={nodes}\n"
        f"#SBATCH --ntasks={req.np}\n"
        f"#SBATCH --ntasks-per-node={per_node}\n"
        f"{gpus}{nodelist}"
        "#SBATCH --output=%x-%j.out\n"
        "\n"
        "# Why horovodrun and not `srun --mpi=pmi2 python ...` (Horovod's docs for Slurm): srun\n"
        "# starts the ranks itself and Horovod then finds its peers through MPI, and the pinned\n"
        "# Horovod is built with Gloo only (no MPI). So this script, which Slurm runs on the\n"
        "# first node of the allocation, starts one `horovodrun --gloo`: it starts every rank (over\n"
        "# ssh on the other nodes: they must accept it without a prompt) and Gloo connects them.\n"
        "# -H is the allocation's nodes, each with its $SLURM_NTASKS_PER_NODE slots.\n"
        "set -euo pipefail\n"
        "\n"
        "mapfile -t nodes < <(scontrol show hostnames \"$SLURM_JOB_NODELIST\")\n"
        "hosts=\"\"\n"
        "for node in \"${nodes[@]}\"; do\n"
        "    hosts=\"${hosts:+$hosts,}$node:$SLURM_NTASKS_PER_NODE\"\n"
        "done\n"
        "\n"
        f"horovodrun --gloo -np \"$SLURM_NTASKS\" -H \"$hosts\" {_program(req)}\n"
    )


def _yaml_str(s: str) -> str:
    """A YAML scalar for `s`: plain when it cannot be read as anything but that string,
    else double-quoted (a JSON string is a YAML double-quoted scalar)."""
    if re.fullmatch(r"[A-Za-z/_.][A-Za-z0-9/_.:=,+-]*", s) and s.lower() not in (
            "true", "false", "yes", "no", "on", "off", "null", "y", "n", "~"):
        return s
    return json.dumps(s)


def _dns_name(text: str) -> str:
    """A Kubernetes object name (DNS-1123 label, short enough for the worker pods' names)."""
    name = re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-")[:40].strip("-")
    return name or "horovod-job"


def _mpijob(req: LaunchRequest) -> str:
    nodes, per_node = shape(req)
    command = ["horovodrun", "--gloo", "-np", str(req.np), "--hostfile", HOSTFILE, req.python, req.script, *req.args]
    items = "".join(f"            - {_yaml_str(c)}\n" for c in command)
    gpu = (f"            resources:\n"
           f"              limits:\n"
           f"                nvidia.com/gpu: {per_node}\n") if req.gpus_per_node else ""
    image = _yaml_str(req.image or "")
    return (
        f"# Kubeflow MPIJob: {req.script} on {req.np} Horovod rank(s), {nodes} worker pod(s) of\n"
        f"# {per_node} slot(s) ({_gpu_words(req)}). kubectl apply -f {default_name(req)}\n"
        f"{_made_by(req)}"
        "# The pinned Horovod is built with Gloo and without MPI, so the launcher runs\n"
        "# `horovodrun --gloo`, not the operator's usual mpirun. It reads the hostfile the operator\n"
        f"# writes ({HOSTFILE}, `pod slots=N` lines, the format horovodrun --hostfile reads) and\n"
        "# starts the ranks over the ssh the operator sets up (its keys in /root/.ssh; the worker\n"
        "# pods run `sshd -De`: the image needs openssh-server, and root or sshAuthMountPath).\n"
        "# The launcher is made once the workers are ready (launcherCreationPolicy), so its first\n"
        "# ssh finds them up. The image holds Horovod, TensorFlow and the script at that path.\n"
        "apiVersion: kubeflow.org/v2beta1\n"
        "kind: MPIJob\n"
        "metadata:\n"
        f"  name: {_dns_name(_stem(req.script))}\n"
        "  annotations:\n"
        "    horovodize/launcher: horovodrun --gloo over the operator's ssh (Horovod built without MPI)\n"
        "spec:\n"
        f"  slotsPerWorker: {per_node}\n"
        "  launcherCreationPolicy: WaitForWorkersReady\n"
        "  runPolicy:\n"
        "    cleanPodPolicy: Running\n"
        "  mpiReplicaSpecs:\n"
        "    Launcher:\n"
        "      replicas: 1\n"
        "      template:\n"
        "        spec:\n"
        "          containers:\n"
        "          - name: launcher\n"
        f"            image: {image}\n"
        "            command:\n"
        f"{items}"
        "    Worker:\n"
        f"      replicas: {nodes}\n"
        "      template:\n"
        "        spec:\n"
        "          containers:\n"
        "          - name: worker\n"
        f"            image: {image}\n"
        f"{gpu}"
    )


def _ray(req: LaunchRequest) -> str:
    gpu = req.gpus_per_node > 0
    return (
        "#!/usr/bin/env python3\n"
        f'"""Run {req.script} on {req.np} Horovod worker(s) with Ray ({_gpu_words(req)}).\n'
        "\n"
        "horovod.ray.RayExecutor (Horovod 0.28.1; its Ray integration is Gloo only, like the\n"
        "pinned build) starts the workers as Ray actors, sets each one's Horovod rank and\n"
        "rendezvous, and each runs the converted script as `python SCRIPT` would (its\n"
        "`__main__` block included), in the directory this driver was started from.\n"
        "\n"
        f"    {req.python} {default_name(req)}       # a Ray cluster of this machine alone\n"
        f"    RAY_ADDRESS=auto {req.python} {default_name(req)}   # the running cluster (`ray start`)\n"
        "\n"
        "On a cluster of several machines every node needs the script (and its data) at the\n"
        "same path, and the same Python environment (Ray, Horovod with Gloo, TensorFlow).\n"
        f"{chr(10) + _made_by(req, '').lstrip() if req.command else ''}"
        '"""\n'
        "\n"
        "import os\n"
        "import runpy\n"
        "import sys\n"
        "\n"
        "import ray\n"
        "from horovod.ray import RayExecutor\n"
        "\n"
        f"SCRIPT = {req.script!r}\n"
        f"ARGS = {list(req.args)!r}\n"
        f"NUM_WORKERS = {req.np}\n"
        f"USE_GPU = {gpu!r}\n"
        "\n"
        "\n"
        "def train(workdir):\n"
        "    \"\"\"One worker: the script as its own `__main__`, with its arguments.\"\"\"\n"
        "    os.chdir(workdir)\n"
        "    sys.argv = [SCRIPT, *ARGS]\n"
        "    runpy.run_path(SCRIPT, run_name=\"__main__\")\n"
        "    # (nothing returned: the script's globals do not travel back to the driver)\n"
        "\n"
        "\n"
        "def main():\n"
        "    ray.init(address=os.environ.get(\"RAY_ADDRESS\"))\n"
        "    settings = RayExecutor.create_settings(timeout_s=120)\n"
        "    executor = RayExecutor(settings, num_workers=NUM_WORKERS, use_gpu=USE_GPU,\n"
        f"                           cpus_per_worker=1{', gpus_per_worker=1' if gpu else ''})\n"
        "    executor.start()\n"
        "    try:\n"
        "        workdir = os.getcwd()\n"
        "        executor.run(train, args=[workdir])\n"
        "    finally:\n"
        "        executor.shutdown()\n"
        "\n"
        "\n"
        "if __name__ == \"__main__\":\n"
        "    main()\n"
    )


def _stem(script: str) -> str:
    name = script.replace("\\", "/").rsplit("/", 1)[-1]
    return name[:-3] if name.endswith(".py") else name


# -- the command line -----------------------------------------------------------------------
USAGE = ("horovodize launch --emit {horovodrun,slurm,mpijob,ray} SCRIPT --np N [--hosts HOST:SLOTS,...] "
         "[--gpus-per-node G] [--image IMAGE] [--python PY] [-o FILE] [-- ARGS ...]")
_IMPORTS_HOROVOD = re.compile(r"^\s*(import|from)\s+horovod\b", re.M)


def _options(p: argparse.ArgumentParser, suppress: bool = False) -> None:
    d = {"default": argparse.SUPPRESS} if suppress else {}
    p.add_argument("--emit", choices=KINDS, metavar="KIND", **d,
                   help="the recipe: horovodrun (a shell script), slurm (an sbatch script), mpijob (a Kubeflow "
                   "MPIJob manifest) or ray (a Python driver using horovod.ray.RayExecutor)")
    p.add_argument("--np", type=int, metavar="N", **d, help="number of ranks")
    p.add_argument("--hosts", metavar="HOST:SLOTS[,...]", **d,
                   help="horovodrun's -H form, e.g. host1:4,host2:4 (horovodrun: default localhost:N; slurm: "
                   "the nodes to ask for)")
    p.add_argument("--gpus-per-node", type=int, metavar="G", **(d or {"default": 0}),
                   help="GPUs per node: one rank per GPU (0, the default: CPU ranks)")
    p.add_argument("--image", metavar="IMAGE", **d, help="the container image (mpijob, where it is required)")
    p.add_argument("--python", metavar="PY", **(d or {"default": "python"}),
                   help="the interpreter the ranks run (default: python)")
    p.add_argument("-o", "--output", metavar="FILE", **d,
                   help="write the recipe to FILE (made executable, but for mpijob)")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """`launch [options] SCRIPT [options] [-- ARGS]`: as in `verify`, SCRIPT and what follows
    are taken as a remainder and parsed again in `run`, so options may come after SCRIPT."""
    parser.usage = USAGE
    _options(parser)
    parser.add_argument("rest", nargs=argparse.REMAINDER, metavar="SCRIPT [-- ARGS ...]",
                        help="the converted training script, as the job sees it (relative to the directory the "
                        "job starts in), then its arguments after --")


def _parse_rest(args: argparse.Namespace) -> argparse.Namespace:
    rest = list(getattr(args, "rest", None) or [])
    head, script_args = (rest[:rest.index("--")], rest[rest.index("--") + 1:]) if "--" in rest else (rest, [])
    sub = argparse.ArgumentParser(prog="horovodize launch", usage=USAGE)
    _options(sub, suppress=True)
    sub.add_argument("script", metavar="SCRIPT")
    args = sub.parse_args(head, namespace=args)
    for flag, value in (("--emit", args.emit), ("--np", args.np)):
        if value is None:
            sub.error(f"the following arguments are required: {flag}")
    args.script_args = script_args
    return args


def request_from_args(args: argparse.Namespace) -> LaunchRequest:
    """The request the command line asks for; `UserError` when SCRIPT is not a readable
    script (a notebook: convert it to one first). A script that does not import Horovod
    gets a warning on stderr: it would train alone on each rank."""
    script = Path(args.script)
    if script.suffix == ".ipynb":
        raise UserError(f"{script}: a notebook is not launched as it is; convert it to a script first "
                        f"(horovodize convert {script} --to-script {script.with_suffix('.py').name})")
    if not script.is_file():
        raise UserError(f"{script}: {'not a regular file' if script.exists() else 'no such file'}")
    try:
        text = script.read_text(encoding="utf-8", errors="replace")
    except OSError as e:
        raise UserError(f"{script}: cannot read: {e.strerror or e}")
    if not _IMPORTS_HOROVOD.search(text):
        print(f"horovodize: warning: {script} does not import Horovod: convert it first "
              f"(horovodize convert {script} --write), or each rank trains alone", file=sys.stderr)
    argv = ["horovodize", "launch", "--emit", args.emit, args.script, "--np", str(args.np)]
    for flag, value in (("--hosts", args.hosts), ("--gpus-per-node", args.gpus_per_node or None),
                        ("--image", args.image), ("--python", None if args.python == "python" else args.python)):
        if value is not None:
            argv += [flag, str(value)]
    if args.script_args:
        argv += ["--", *args.script_args]
    return LaunchRequest(kind=args.emit, script=args.script, np=args.np,
                         hosts=parse_hosts(args.hosts) if args.hosts is not None else (),
                         gpus_per_node=args.gpus_per_node, image=args.image, python=args.python,
                         args=tuple(args.script_args), command=shlex.join(argv))


def run(args: argparse.Namespace) -> int:
    """Print the recipe, or write it to ``-o FILE`` (a script made executable); 2 on bad input."""
    args = _parse_rest(args)
    try:
        text = recipe(request_from_args(args))
        if args.output and args.output != "-":
            out = Path(args.output)
            try:
                out.write_text(text, encoding="utf-8", newline="")
                if args.emit != "mpijob":
                    mask = os.umask(0)
                    os.umask(mask)
                    out.chmod(out.stat().st_mode | (0o111 & ~mask))
            except OSError as e:
                raise UserError(f"{out}: cannot write: {e.strerror or e}")
        else:
            sys.stdout.write(text)
    except UserError as e:
        print(e.line(), file=sys.stderr)
        return 2
    return 0
