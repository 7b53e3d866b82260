"""``horovodize check --format json`` through the installed console script: loop kind,
related information and restrictions on programs split across functions and classes."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from horovodize.analysis.restrictions import SYNC_RULES

from .programs import ESTIMATOR, KERAS_FIT, TAPE_SPLIT, TRAINER_CLASS

SCRIPT = Path(sys.executable).parent / "horovodize"
KEYS = {"path", "code", "severity", "message", "line", "column", "end_line", "end_column", "fixable", "blocks", "related"}


def run_check(tmp_path, text: str, *extra: str, name: str = "prog.py"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    proc = subprocess.run([str(SCRIPT), "check", "--format", "json", *extra, str(path)],
                          capture_output=True, text=True, timeout=120, check=False)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def by_code(results, code):
    return [r for r in results if r["code"] == code]


def test_console_script_exists():
    assert SCRIPT.exists(), SCRIPT


def test_split_tape_loop(tmp_path):
    rc, results = run_check(tmp_path, TAPE_SPLIT)
    assert rc == 1
    assert all(set(r) == KEYS for r in results)
    [loop] = by_code(results, "HVD100")
    lines = TAPE_SPLIT.splitlines()
    assert loop["severity"] == "information" and not loop["fixable"]
    assert lines[loop["line"] - 1][loop["column"] - 1:loop["end_column"] - 1] == "tf.GradientTape() as tape"
    driver, apply, created = loop["related"]
    assert lines[driver["line"] - 1].strip() == "for x, y in dataset:"
    assert "apply_gradients" in lines[apply["line"] - 1]
    assert created["message"] == "optimizer `optimizer` is created here"
    assert {r["code"] for r in results} >= {"HVD001", "HVD010", "HVD020", "HVD021", "HVD030"}
    assert not [r for r in results if r["code"].startswith("HVD-")]
    assert {r["severity"] for r in results if r["code"] in ("HVD020", "HVD021")} == {"hint"}


def test_loop_through_classes(tmp_path):
    _, results = run_check(tmp_path, TRAINER_CLASS)
    [loop] = by_code(results, "HVD100")
    assert [r["message"] for r in loop["related"]] == [
        "the `for` loop that drives this training step",
        "`self.optimizer.apply_gradients` applies this tape's gradients",
        "optimizer `opt` is created here"]
    assert by_code(results, "HVD021")


@pytest.mark.parametrize("text, code", [(KERAS_FIT, "HVD101"), (ESTIMATOR, "HVD102")])
def test_fit_and_estimator_loops(tmp_path, text, code):
    _, results = run_check(tmp_path, text)
    [loop] = by_code(results, code)
    assert loop["severity"] == "information"
    assert len([r for r in results if r["code"] in ("HVD100", "HVD101", "HVD102")]) == 1


def test_restriction_reports_blocked_rules(tmp_path):
    text = ("import tensorflow as tf\nimport os\nmodel = tf.keras.Sequential([])\n"
            "if os.path.exists('/tmp/x'):\n    opt = tf.keras.optimizers.SGD(0.1)\nelse:\n    opt = tf.keras.optimizers.Adam()\n"
            "model.compile(optimizer=opt, loss='mse')\nmodel.fit(x, y)\n")
    _, results = run_check(tmp_path, text)
    r7 = by_code(results, "HVD-R7")
    assert [(r["line"], r["column"], r["end_column"]) for r in r7] == [(5, 5, 39), (7, 5, 37)]
    assert all(r["severity"] == "warning" and r["blocks"][:3] == ["HVD010", "HVD011", "HVD021"]
               and set(r["blocks"]) == {"HVD010", "HVD011", "HVD021"} | set(SYNC_RULES) for r in r7)
    assert all("(blocks" not in r["message"] and len(r["message"]) < 120 for r in r7)   # the list is in "blocks"
    assert r7[0]["related"] == [{"line": 4, "column": 1, "message": "the condition"}]
    assert not by_code(results, "HVD010") and not by_code(results, "HVD011")
    assert not by_code(results, "HVD050")   # all or nothing: the fit loop is not half converted


def test_select_restrictions_only(tmp_path):
    text = "import tensorflow as tf\nAdam = tf.optimizers.Adam\nopt = Adam(0.1)\n"
    rc, results = run_check(tmp_path, text, "--select", "R3")
    assert [r["code"] for r in results] == ["HVD-R3"] and rc == 1


def test_half_typed_buffer(tmp_path):
    broken = TAPE_SPLIT.replace("    return tf.reduce_mean(tf.square(model(x, training=True) - y))",
                                "    return tf.reduce_mean(tf.square(model(x, training=True")
    rc, results = run_check(tmp_path, broken)
    assert rc == 2 and len(by_code(results, "HVD100")) == 1     # exit 2: it does not parse; findings still listed


def test_already_distributed_program(tmp_path):
    text = ("import tensorflow as tf\nimport horovod.tensorflow as hvd\nhvd.init()\n"
            "model = tf.keras.Sequential([])\nopt = tf.keras.optimizers.SGD(0.01 * hvd.size())\n"
            "for x in ds:\n    with tf.GradientTape() as tape:\n        loss = model(x)\n"
            "    tape = hvd.DistributedGradientTape(tape)\n")
    _, results = run_check(tmp_path, text)
    assert not [r for r in results if r["code"] in ("HVD100", "HVD101", "HVD102")]


def test_non_tensorflow_file(tmp_path):
    rc, results = run_check(tmp_path, "import numpy as np\nprint(np.zeros(2))\n")
    assert rc == 0 and results == []
