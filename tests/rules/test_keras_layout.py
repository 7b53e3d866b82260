"""HVD094: a Keras 3 archive layout read after Keras 2's get_file (TF 2.15) blocks the
conversion, with a true point-11 reason and the Keras 2 path as the how-to."""

from __future__ import annotations

from horovodize.app import report
from horovodize.engine import analyze, convert_text

TEXT = """import os
import tensorflow as tf

url = "https://ai.stanford.edu/~amaas/data/sentiment/aclImdb_v1.tar.gz"
dataset = tf.keras.utils.get_file("aclImdb_v1", url, untar=True, cache_dir='.', cache_subdir='')
dataset_dir = os.path.join(os.path.dirname(dataset), 'aclImdb_v1')
train_dir = os.path.join(dataset_dir, 'aclImdb', 'train')
ds = tf.keras.utils.text_dataset_from_directory(train_dir, batch_size=32)
model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
model.compile(optimizer=tf.keras.optimizers.SGD(0.01), loss="mse")
model.fit(ds, epochs=4)
"""


def _point(text: str, number: int) -> dict:
    return next(p for p in report.build(analyze(text), "t.py")["points"] if p["point"] == number)


def test_keras3_untar_layout_blocks_with_the_keras2_path():
    a = analyze(TEXT)
    [f] = [f for f in a.findings if f.code == "HVD094"]
    assert TEXT[f.start:f.end] == "os.path.join(os.path.dirname(dataset), 'aclImdb_v1')"
    assert "Keras 2" in f.message and "`os.path.dirname(dataset)` instead of" in f.message
    assert "os.path.join(dataset_dir, 'aclImdb', 'train')" in f.message
    assert a.refused and convert_text(TEXT) == TEXT
    p11 = _point(TEXT, 11)
    assert p11["status"] == "blocked" and "Keras 3 layout" in p11["reason"]


def test_the_keras2_path_the_message_gives_converts():
    fixed = TEXT.replace("os.path.join(os.path.dirname(dataset), 'aclImdb_v1')", "os.path.dirname(dataset)")
    a = analyze(fixed)
    assert not [f for f in a.findings if f.code == "HVD094"] and not a.refused
    assert _point(fixed, 11)["status"] == "nothing to change"
    # untar's folder ./aclImdb_v1 is never made: the others extract again, and point 9 says so
    p9 = _point(fixed, 9)
    assert p9["status"] == "done" and p9["notes"][0]["note"].startswith("done, but ranks > 0 extract the archive again")


def test_extract_layouts():
    base = ("import os\nimport tensorflow as tf\n\n"
            "p = tf.keras.utils.get_file('c.zip', origin='https://x/c.zip', extract=True)\nd = {read}\n"
            "ds = tf.keras.utils.image_dataset_from_directory(d)\n"
            "model = tf.keras.Sequential([tf.keras.layers.Dense(1)])\n"
            "model.compile(optimizer=tf.keras.optimizers.SGD(0.01), loss='mse')\nmodel.fit(ds, epochs=4)\n")
    for read in ("os.path.join(os.path.dirname(p), 'c.zip_extracted', 'c')", "os.path.join(p, 'c')"):
        assert analyze(base.format(read=read)).refused, read
    keras2 = base.format(read="os.path.join(os.path.dirname(p), 'c')")
    assert not analyze(keras2).refused and "HVD094" not in {f.code for f in analyze(keras2).findings}


def test_a_program_that_tells_the_layouts_apart_is_not_refused():
    """handson-ml3 ch. 15 reads the Keras 3 layout only under ``if "_extracted" in filepath:``;
    its else branch is Keras 2's: no HVD094, the program converts (sweep 39c)."""
    text = ('from pathlib import Path\nimport tensorflow as tf\n\n'
            'filepath = tf.keras.utils.get_file("ridership.tgz", "https://x/ridership.tgz", cache_dir=".", extract=True)\n'
            'if "_extracted" in filepath:\n    ridership_path = Path(filepath) / "ridership"\n'
            'else:\n    ridership_path = Path(filepath).with_name("ridership")\n'
            'x = tf.data.experimental.make_csv_dataset(str(ridership_path / "a.csv"), batch_size=8)\n'
            'model = tf.keras.Sequential([tf.keras.layers.Dense(1)])\n'
            'model.compile(optimizer=tf.keras.optimizers.SGD(0.01), loss="mse")\nmodel.fit(x, epochs=4)\n')
    assert not [f for f in analyze(text).findings if f.code == "HVD094"]
    unchecked = text.replace('if "_extracted" in filepath:', 'if True:')
    assert [f.code for f in analyze(unchecked).findings if f.code == "HVD094"] == ["HVD094"]
