"""Contract point 13, no shared filesystem assumed: a plain value read back from a file rank 0
wrote is read on rank 0 and broadcast (``broadcast_object``), weights read into a model or a
checkpoint are read on rank 0 and their variables broadcast; point 7 of the report names every
other read of such a file that runs on every rank after a barrier (a Keras model's
``load_model``: its path as written, its line), and ``convert --require-local-fs`` refuses such
a program (exit 3, nothing changed), naming them, and converts one whose reads are all shared."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from horovodize.app import report
from horovodize.engine import conversion

SCRIPT = Path(sys.executable).parent / "horovodize"

READS = """import os

import numpy as np
import tensorflow as tf

checkpoint_dir = "ckpts"
x = np.random.rand(64, 4).astype("float32")
y = x.sum(axis=1)
model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
model.compile(optimizer=tf.keras.optimizers.SGD(0.01), loss="mse")
cp = tf.keras.callbacks.ModelCheckpoint(os.path.join(checkpoint_dir, "cp.weights.h5"), save_weights_only=True)
model.fit(x, y, epochs=2, callbacks=[cp])
model.save("model.h5")

restored = tf.keras.models.load_model("model.h5")
names = sorted(os.listdir(checkpoint_dir))
model.load_weights(os.path.join(checkpoint_dir, names[-1]))
print(os.listdir(checkpoint_dir))
restored.fit(x, y, epochs=1)
"""

NO_READS = READS.split("\nrestored")[0] + "\n"
# the same reads but the Keras model's load_model: each is shared by a broadcast
SHARED_READS = READS.replace('restored = tf.keras.models.load_model("model.h5")\n', "").replace(
    "restored.fit(x, y, epochs=1)\n", "")


def point7(text: str, **options) -> dict:
    return {p["point"]: p for p in report.build(conversion(text, **options))["points"]}[7]


def run(*args):
    return subprocess.run([str(SCRIPT), *args], capture_output=True, text=True, timeout=120, check=False)


def test_point7_names_each_read_of_rank0s_files_with_its_line():
    p = point7(READS)
    assert p["status"] == "done", p
    assert [n["line"] for n in p["notes"]] == [15], p      # one note, at the first read that waits
    note = p["notes"][0]["note"]
    # the Keras model's load_model, as the source writes its path; the folder's listing and the
    # weights loaded from it are shared by broadcasts, and the print runs on rank 0 only: not listed
    assert note.startswith('done, but needs a shared filesystem: `"model.h5"` (line 15); '), note
    assert "line 16" not in note and "line 17" not in note and "line 18" not in note
    assert note.endswith("read them on rank 0 only and broadcast the value, or copy the files to each host")


def test_values_and_weights_read_back_are_broadcast_from_rank0():
    out = conversion(READS).converted()
    assert "\nimport horovod.tensorflow as hvd_tf\n" in out
    assert ("\nnames = hvd_tf.broadcast_object(sorted(os.listdir(checkpoint_dir)) if hvd.rank() == 0 else None, "
            "root_rank=0)\nif hvd.rank() == 0: model.load_weights(os.path.join(checkpoint_dir, names[-1]))\n"
            "hvd_tf.broadcast_variables(model.variables, root_rank=0)\n") in out, out
    p = point7(SHARED_READS)
    assert p["status"] == "done" and not p["notes"], p
    assert [(c["code"], c["change"]) for c in p["changes"] if c["code"] == "HVD033"] == [
        ("HVD033", "Read rank 0's file on rank 0 and broadcast the value"),
        ("HVD033", "Restore on rank 0 and broadcast the variables")], p
    again = conversion(conversion(SHARED_READS).converted())
    assert again.converted() == conversion(SHARED_READS).converted()       # idempotent


def test_one_barrier_still_waits_for_all_the_reads():
    out = conversion(READS).converted()
    assert out.count('name="barrier")') == 1
    assert 'hvd.allreduce(tf.constant(0), name="barrier")\nrestored = ' in out


def test_no_read_of_rank0s_files_no_note():
    p = point7(NO_READS)
    assert p["status"] == "done" and not p["notes"], p


def test_a_read_on_rank0_only_is_not_listed():
    text = READS.replace('restored = tf.keras.models.load_model("model.h5")',
                         'print(tf.keras.models.load_model("model.h5"))')
    assert not point7(text)["notes"], point7(text)


def test_the_text_report_shows_the_paths():
    data = report.build(conversion(READS), "train.py")
    assert 'line 15: done, but needs a shared filesystem: `"model.h5"` (line 15)' in report.text(data)


def test_require_local_fs_refuses_naming_paths_and_lines():
    analysis = conversion(READS, require_local_fs=True)
    assert analysis.refused and analysis.converted() == READS
    [(code, line, message)] = analysis.refusal_reasons()
    assert (code, line) == ("point 7", 15)
    assert message.startswith('needs a shared filesystem (--require-local-fs): `"model.h5"` (line 15): ')
    assert "read them on rank 0 only and broadcast the value" in message and "drop --require-local-fs" in message
    # without such reads the switch changes nothing
    plain = conversion(NO_READS, require_local_fs=True)
    assert not plain.refused and plain.converted() == conversion(NO_READS).converted()
    # nor with reads that are all shared by broadcasts
    shared = conversion(SHARED_READS, require_local_fs=True)
    assert not shared.refused and shared.converted() == conversion(SHARED_READS).converted()


ROUNDS = """import numpy as np
import tensorflow as tf

x = np.random.rand(64, 4).astype("float32")
y = x.sum(axis=1)
model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
model.compile(optimizer=tf.keras.optimizers.SGD(0.01), loss="mse")
for round_ in range(2):
    if round_:
        best = tf.keras.models.load_model("m.h5")
        model.set_weights(best.get_weights())
    model.fit(x, y, epochs=1)
    model.save("m.h5")
"""


def test_a_read_after_the_write_of_the_loops_last_round_waits_and_is_listed():
    """The read comes first in the loop's text, the write it reads last: from the second round
    on it reads what rank 0 wrote in the round before (`may_run_before`). It was neither waited
    for nor listed, and --require-local-fs converted it."""
    out = conversion(ROUNDS).converted()
    assert ('        hvd.allreduce(tf.constant(0), name="barrier")\n'
            '        best = tf.keras.models.load_model("m.h5")\n') in out, out
    p = point7(ROUNDS)
    assert [n["note"].split(";")[0] for n in p["notes"]] == [
        'done, but needs a shared filesystem: `"m.h5"` (line 10)'], p
    refused = conversion(ROUNDS, require_local_fs=True)
    assert refused.refused and [(c, ln) for c, ln, _ in refused.refusal_reasons()] == [("point 7", 10)]


def test_cli_require_local_fs_exits_3_and_changes_nothing(tmp_path):
    path = tmp_path / "train.py"
    path.write_text(READS)
    proc = run("convert", "--require-local-fs", "--write", str(path))
    assert proc.returncode == 3, proc.stderr
    assert path.read_text() == READS
    assert "NOT CONVERTED" in proc.stderr and "line 15: point 7" in proc.stderr, proc.stderr
    assert '`"model.h5"` (line 15)' in proc.stderr and "(line 17)" not in proc.stderr
    proc = run("convert", "--require-local-fs", "--format", "json", str(path))
    data = json.loads(proc.stderr.strip().splitlines()[-1])
    assert proc.returncode == 3 and proc.stdout == READS
    assert data["refused"] and [(r["code"], r["line"]) for r in data["reasons"]] == [("point 7", 15)]
    # the same program converts without the switch, and one with no such read converts with it
    assert run("convert", str(path)).returncode == 0
    for text in (NO_READS, SHARED_READS):
        path.write_text(text)
        proc = run("convert", "--require-local-fs", "--write", str(path))
        assert proc.returncode == 0, proc.stderr
        assert "hvd.init()" in path.read_text()


def test_cli_help_names_the_switch():
    assert "--require-local-fs" in run("convert", "--help").stdout


def test_a_notebook_names_cells_and_lines(tmp_path):
    cells = [READS.split("\nrestored", 1)[0] + "\n", "restored" + READS.split("\nrestored", 1)[1]]
    path = tmp_path / "train.ipynb"
    path.write_text(json.dumps({"cells": [{"cell_type": "code", "metadata": {}, "execution_count": None,
                                           "outputs": [], "source": c.splitlines(True)} for c in cells],
                                "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    proc = run("convert", "--require-local-fs", str(path))
    assert proc.returncode == 3
    assert '`"model.h5"` (cell 2 line 1): ' in proc.stderr and "cell 2 line 2" not in proc.stderr, proc.stderr
    proc = run("convert", str(path))
    assert proc.returncode == 0 and "needs a shared filesystem: `\"model.h5\"` (cell 2 line 1)" in proc.stderr


FIXTURES = Path(__file__).resolve().parent / "fixtures" / "HVD033"


def test_a_resumed_run_reads_its_earlier_checkpoints_on_rank0_or_says_it_needs_a_shared_filesystem():
    """A job resumed from checkpoints rank 0 saved in an earlier run: only rank 0's host has them.
    The newest checkpoint's name and the weights are read on rank 0 and shared (a local
    filesystem is enough); under a test of the filesystem, rank 0's answer is shared too, so
    every rank takes its branch. A Keras model loaded whole at the start is not shared: point 7
    says the resumed run needs a shared filesystem (--require-local-fs refuses)."""
    shared = conversion((FIXTURES / "resume_latest_checkpoint_fit.py").read_text(), require_local_fs=True)
    assert not shared.refused
    assert "latest = hvd_tf.broadcast_object(tf.train.latest_checkpoint(ckpt_dir) if hvd.rank() == 0 else None, " \
           "root_rank=0)" in shared.converted()
    exists = conversion(RESUME_IF_EXISTS, require_local_fs=True)
    assert not exists.refused and not point7(RESUME_IF_EXISTS)["notes"]
    assert '\nif hvd.broadcast_object(os.path.exists("ckpt/last.index") if hvd.rank() == 0 else None, root_rank=0):\n' \
           '    if hvd.rank() == 0: ckpt.restore("ckpt/last")\n    hvd.broadcast_variables([step], root_rank=0)\n' \
        in exists.converted()
    text = (FIXTURES.parent / "HVD011" / "resumed_model_loaded_with_its_optimizer.py").read_text()
    p = point7(text)
    assert [n["line"] for n in p["notes"]] == [10], p
    assert p["notes"][0]["note"].startswith('done, but needs a shared filesystem: `"checkpoint.h5"` (line 10); a resumed run')
    assert conversion(text, require_local_fs=True).refused


def test_a_resume_under_a_test_of_the_filesystem_that_fits_broadcast_carries_is_left_alone():
    """Host 1 finds no file and skips the load; fit's first broadcast gives every rank rank 0's
    restored weights: right as it is, with no shared filesystem, and point 7 says nothing."""
    a = conversion(RESUME_CARRIED_BY_FIT, require_local_fs=True)
    assert not a.refused
    out = a.converted()
    assert '\nif os.path.exists("weights.h5"):\n    model.build((None, 8))\n    model.load_weights("weights.h5")\n' in out
    assert not point7(RESUME_CARRIED_BY_FIT)["notes"]


RESUME_IF_EXISTS = (FIXTURES / "resume_if_file_exists_shares_the_test.py").read_text()

RESUME_CARRIED_BY_FIT = """# A resume under a test of the filesystem: host 1 finds no file and skips it, and fit's first
# broadcast gives every rank rank 0's restored weights: right as it is, no shared filesystem.
import os

import numpy as np
import tensorflow as tf

x = np.random.rand(256, 8).astype("float32")
y = x.sum(axis=1)
model = tf.keras.Sequential([tf.keras.layers.Dense(16, activation="relu"), tf.keras.layers.Dense(1)])
model.compile(optimizer="adam", loss="mse")
if os.path.exists("weights.h5"):
    model.build((None, 8))
    model.load_weights("weights.h5")
model.fit(x, y, epochs=4)
model.save_weights("weights.h5")
"""
