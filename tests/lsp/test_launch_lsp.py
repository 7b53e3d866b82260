"""``workspace/executeCommand horovodize.launchRecipe``: the recipe of ``horovodize launch``
for an editor's file, the same text as the command line's, and its argument errors."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException

EXE = Path(sys.executable).parent / "horovodize"
TRAIN = Path(__file__).resolve().parents[1] / "launch" / "train.py"


async def launch_recipe(client, *arguments):
    result = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="horovodize.launchRecipe", arguments=list(arguments)))
    return result if isinstance(result, dict) else result._asdict()


def cli(*args: str) -> str:
    proc = subprocess.run([str(EXE), "launch", *args], capture_output=True, text=True, cwd=TRAIN.parent, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


async def test_launch_recipe_is_advertised(client):
    assert "horovodize.launchRecipe" in client.init_result.capabilities.execute_command_provider.commands


@pytest.mark.parametrize("options, argv", [
    ({"kind": "horovodrun", "np": 8, "hosts": "host1:4,host2:4"},
     ["--emit", "horovodrun", "train.py", "--np", "8", "--hosts", "host1:4,host2:4"]),
    ({"kind": "slurm", "np": 8, "gpusPerNode": 4, "args": ["--epochs", "3"]},
     ["--emit", "slurm", "train.py", "--np", "8", "--gpus-per-node", "4", "--", "--epochs", "3"]),
    ({"kind": "mpijob", "np": 2, "image": "registry.example.com/t:1", "python": "python3"},
     ["--emit", "mpijob", "train.py", "--np", "2", "--image", "registry.example.com/t:1", "--python", "python3"]),
    ({"kind": "ray", "np": 2}, ["--emit", "ray", "train.py", "--np", "2"]),
])
async def test_launch_recipe_is_the_command_lines(client, options, argv):
    result = await launch_recipe(client, {"uri": TRAIN.as_uri(), **options})
    assert result["text"] == cli(*argv)
    assert result["name"] == {"horovodrun": "train.horovodrun.sh", "slurm": "train.slurm.sh",
                              "mpijob": "train.mpijob.yaml", "ray": "train_ray.py"}[options["kind"]]


@pytest.mark.parametrize("arguments, message", [
    ([], "expects"),
    (["file:///a.py"], "expects"),
    ([{"uri": "file:///a.py", "kind": "slurm"}], "expects"),
    ([{"uri": "untitled:1", "kind": "slurm", "np": 2}], "not a file on disk"),
    ([{"uri": "file:///a.py", "kind": "slurm", "np": "2"}], "`np` must be an integer"),
    ([{"uri": "file:///a.py", "kind": "slurm", "np": 2, "args": "--x"}], "`args` must be a list of strings"),
    ([{"uri": "file:///a.py", "kind": "pbs", "np": 2}], "unknown launch kind 'pbs'"),
    ([{"uri": "file:///a.py", "kind": "slurm", "np": 4, "hosts": "a:x"}], "'a:x' is not HOST:SLOTS"),
    ([{"uri": "file:///a.py", "kind": "slurm", "np": 8, "hosts": "a:2,b:2"}], "fewer than --np 8"),
    ([{"uri": "file:///a.py", "kind": "mpijob", "np": 2}], "needs --image"),
])
async def test_launch_recipe_argument_errors(client, arguments, message):
    with pytest.raises(JsonRpcException, match="horovodize.launchRecipe") as raised:
        await launch_recipe(client, *arguments)
    assert message in str(raised.value)
