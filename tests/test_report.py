"""`convert` is all or nothing and reports what it did per contract point (stderr; JSON)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(sys.executable).parent / "horovodize"

REFUSED = """import sys
import tensorflow as tf

if sys.argv[1:]:
    opt = tf.keras.optimizers.SGD(0.1)
else:
    opt = tf.keras.optimizers.Adam(0.01)
model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
print("start")
for x in tf.data.Dataset.range(4):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(model(tf.ones((1, 2))))
    grads = tape.gradient(loss, model.trainable_variables)
    opt.apply_gradients(zip(grads, model.trainable_variables))
model.save("m.keras")
"""

FIT = """import numpy as np
import tensorflow as tf

x = np.zeros((64, 2), "float32")
y = np.zeros((64, 1), "float32")
model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
model.compile(optimizer=tf.keras.optimizers.SGD(0.1), loss="mse")
model.fit(x, y, epochs=4)
model.save("m.keras")
restored = tf.keras.models.load_model("m.keras")
"""


CSV = """import tensorflow as tf

train_dataset = tf.data.experimental.make_csv_dataset("train.csv", 32, label_name="y", num_epochs=1)
model = tf.keras.Sequential([tf.keras.layers.Dense(3)])
optimizer = tf.keras.optimizers.SGD(learning_rate=0.01)
for epoch in range(3):
    for x, y in train_dataset:
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(model(tf.stack(list(x.values()), axis=1)))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
"""


def run(*args):
    return subprocess.run([str(SCRIPT), *args], capture_output=True, text=True, timeout=120, check=False)


def test_refused_conversion_changes_nothing_and_exits_3(tmp_path):
    path = tmp_path / "refused.py"
    path.write_text(REFUSED)
    proc = run("convert", str(path))
    assert proc.returncode == 3
    assert proc.stdout == REFUSED                      # no set-up, no print guard, no save guard
    assert "NOT CONVERTED" in proc.stderr and "line 5: HVD-R7" in proc.stderr
    proc = run("convert", "--write", str(path))
    assert proc.returncode == 3 and path.read_text() == REFUSED


def test_report_json_on_stderr_stdout_is_the_program(tmp_path):
    path = tmp_path / "fit.py"
    path.write_text(FIT)
    proc = run("convert", "--format", "json", str(path))
    assert proc.returncode == 0
    compile(proc.stdout, "converted", "exec")
    data = json.loads(proc.stderr.strip().splitlines()[-1])
    assert data["refused"] is False
    points = {p["point"]: p for p in data["points"]}
    assert [c["code"] for c in points[5]["changes"]] == ["HVD043"]
    assert {c["code"] for c in points[7]["changes"]} == {"HVD032", "HVD033", "HVD051"}
    assert points[8]["status"] == "ok"


def test_report_says_why_work_is_not_divided(tmp_path):
    path = tmp_path / "fit1.py"
    path.write_text(FIT.replace("epochs=4", "epochs=1"))
    proc = run("convert", str(path))
    assert proc.returncode == 0
    assert "5. work divided, equal steps on every rank: not done" in proc.stderr
    assert "fit on in-memory data runs 1 epoch, which cannot be divided" in proc.stderr


def test_report_says_why_a_file_source_is_not_sharded(tmp_path):
    path = tmp_path / "csv.py"
    path.write_text(CSV)
    proc = run("convert", "--format", "json", str(path))
    assert proc.returncode == 0
    assert "apply(lambda ds" not in proc.stdout        # no shard without an equal bound
    point5 = json.loads(proc.stderr.strip().splitlines()[-1])["points"][4]
    assert point5["status"] == "not done" and "no size known" in point5["notes"][0]["note"]
