"""The command ``horovodize.launchRecipe``: the text of ``horovodize launch`` for a file.

Arguments: ``[{"uri", "kind", "np", "hosts"?, "gpusPerNode"?, "image"?, "python"?,
"args"?}]`` (``kind``: horovodrun, slurm, mpijob or ray; ``hosts``: ``"host1:4,host2:4"``).
The script is named by its file name, the job starting in the file's directory (as the
rehearsal runs there). Returns ``{"text", "name"}``: the recipe and the file name it is
usually kept under (``train.slurm.sh``); the editor opens or saves it. An input no recipe
can serve (``--hosts`` not HOST:SLOTS, fewer slots than ``np``, ``mpijob`` without
``image``) is an invalid-params error with the command line's one-line message.

Requires: app.launch, lsp.server, lsp.handlers.
"""

from __future__ import annotations

import os
import shlex

from pygls.exceptions import JsonRpcInvalidParams

from ..app import launch
from ..errors import UserError
from .handlers import _display
from .server import SERVER as server
from .server import HorovodizeServer

LAUNCH_RECIPE = "horovodize.launchRecipe"
_USAGE = (f"{LAUNCH_RECIPE} expects [{{\"uri\": uri, \"kind\": \"horovodrun\"|\"slurm\"|\"mpijob\"|\"ray\", "
          "\"np\": int, \"hosts\"?: \"host1:4,host2:4\", \"gpusPerNode\"?: int, \"image\"?: str, \"python\"?: str, "
          "\"args\"?: [str]}]")


def _get(opts: dict, key: str, kind: type, default=None):
    """`opts[key]` of type `kind` (`default` when absent)."""
    if key not in opts:
        return default
    value = opts[key]
    if not isinstance(value, kind) or isinstance(value, bool):
        raise JsonRpcInvalidParams(f"{LAUNCH_RECIPE}: `{key}` must be {'an integer' if kind is int else 'a string'}")
    return value


def request(args) -> launch.LaunchRequest:
    """The command's arguments as a `launch.LaunchRequest`; `JsonRpcInvalidParams` otherwise."""
    args = list(args)
    opts = args[0] if len(args) == 1 else None
    if hasattr(opts, "_asdict"):                      # (pygls may pass an object as a namedtuple)
        opts = opts._asdict()
    if not isinstance(opts, dict) or not isinstance(opts.get("uri"), str) or "kind" not in opts or "np" not in opts:
        raise JsonRpcInvalidParams(_USAGE)
    if not opts["uri"].startswith("file:"):
        raise JsonRpcInvalidParams(f"{LAUNCH_RECIPE}: {opts['uri']} is not a file on disk")
    kind, np_ = _get(opts, "kind", str), _get(opts, "np", int)
    hosts, image = _get(opts, "hosts", str), _get(opts, "image", str)
    gpus, python = _get(opts, "gpusPerNode", int, 0), _get(opts, "python", str, "python")
    script_args = opts.get("args", [])
    if not isinstance(script_args, list) or not all(isinstance(a, str) for a in script_args):
        raise JsonRpcInvalidParams(f"{LAUNCH_RECIPE}: `args` must be a list of strings")
    script = os.path.basename(_display(opts["uri"]))
    argv = ["horovodize", "launch", "--emit", kind, script, "--np", str(np_)]
    for flag, value in (("--hosts", hosts), ("--gpus-per-node", gpus or None), ("--image", image),
                        ("--python", None if python == "python" else python)):
        if value is not None:
            argv += [flag, str(value)]
    if script_args:
        argv += ["--", *script_args]
    try:
        req = launch.LaunchRequest(kind=kind, script=script, np=np_,
                                   hosts=launch.parse_hosts(hosts) if hosts is not None else (),
                                   gpus_per_node=gpus, image=image, python=python, args=tuple(script_args),
                                   command=shlex.join(argv))
        launch.check_request(req)
    except UserError as e:
        raise JsonRpcInvalidParams(f"{LAUNCH_RECIPE}: {e}")
    return req


@server.command(LAUNCH_RECIPE)
def launch_recipe(ls: HorovodizeServer, *args):
    req = request(args)
    return {"text": launch.recipe(req), "name": launch.default_name(req)}
