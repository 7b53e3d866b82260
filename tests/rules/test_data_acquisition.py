"""HVD044 (data acquired once per host) and the report's point 9, through the engine (no LSP),
and HVD043's rounding up (``ceil``) with its ``import math``."""

from __future__ import annotations

from horovodize.app import report
from horovodize.engine import analyze, conversion, convert_text

FIT_TAIL = """
model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
model.compile(optimizer=tf.keras.optimizers.SGD(0.01), loss="mse")
model.fit(x, y, epochs=4)
"""


def point(text: str, number: int) -> dict:
    data = report.build(conversion(text))
    return next(p for p in data["points"] if p["point"] == number)


def test_report_point_9_done_with_the_wrapper():
    text = "import tensorflow as tf\n\n(x, y), _ = tf.keras.datasets.cifar10.load_data()\n" + FIT_TAIL
    p = point(text, 9)
    assert p["status"] == "done" and [c["code"] for c in p["changes"]] == ["HVD044"]
    out = convert_text(text)
    # every rank calls the allreduce exactly once: before the fetch on the others, after it on local rank 0
    assert out.count('name="data_barrier"') == 2
    assert out.index("local_rank() != 0") < out.index("cifar10.load_data()") < out.index("local_rank() == 0")


def test_report_point_9_nothing_to_change_and_not_done():
    plain = "import numpy as np\nimport tensorflow as tf\n\nx = np.zeros((8, 1))\ny = x\n" + FIT_TAIL
    assert point(plain, 9)["status"] == "nothing to change"
    in_return = ("import tensorflow as tf\n\n\ndef data():\n    return tf.keras.datasets.cifar10.load_data()[0]\n\n\n"
                 "x, y = data()\n" + FIT_TAIL)
    p = point(in_return, 9)
    assert p["status"] == "not done" and "return" in p["notes"][0]["note"]
    assert "data_barrier" not in convert_text(in_return)


def test_report_point_9_left_to_the_user_in_a_program_distributed_by_hand():
    text = ("import math\nimport tensorflow as tf\nimport horovod.tensorflow.keras as hvd\n\nhvd.init()\n"
            "(x, y), _ = tf.keras.datasets.cifar10.load_data()\n"
            "model = tf.keras.Sequential([tf.keras.layers.Dense(1)])\n"
            "model.compile(optimizer=hvd.DistributedOptimizer(tf.keras.optimizers.SGD(0.01 * hvd.size())), loss='mse')\n"
            "model.fit(x, y, epochs=int(math.ceil(4 / hvd.size())), "
            "callbacks=[hvd.callbacks.BroadcastGlobalVariablesCallback(0)])\n")
    assert any(f.code == "HVD044" for f in analyze(text).rule_sites)     # offered as a quick fix
    assert convert_text(text) == text                                    # not applied by convert
    p = point(text, 9)
    assert p["status"] == "not done" and "HVD044" in p["reason"]


def test_no_wrapper_where_ranks_do_not_all_arrive():
    hvd_program = ("import tensorflow as tf\nimport horovod.tensorflow.keras as hvd\n\nhvd.init()\n\n\n"
                   "def fetch():\n    tf.keras.utils.get_file('a.zip', 'http://x/a.zip')\n\n\n{call}\n")
    # a function only rank 0 calls: an allreduce in it would wait for ranks that never come
    only_rank0 = hvd_program.format(call="if hvd.rank() == 0:\n    fetch()")
    assert not [f for f in analyze(only_rank0).rule_sites if f.code == "HVD044"]
    everywhere = hvd_program.format(call="fetch()")
    assert [f for f in analyze(everywhere).rule_sites if f.code == "HVD044"]
    trains = ("import tensorflow as tf\nimport tensorflow_datasets as tfds\n\n"
              "model = tf.keras.Sequential([tf.keras.layers.Dense(1)])\n"
              "model.compile(optimizer=tf.keras.optimizers.SGD(0.01), loss='mse')\n"
              "model.fit(tfds.load('mnist', split='train', as_supervised=True).batch(8), epochs=2)\n")
    out = convert_text(trains)
    assert "data_barrier" not in out       # local rank 0 would train alone and hang in its allreduce
    assert point(trains, 9)["status"] == "not done"


def test_file_system_if_is_wrapped_whole():
    text = ("import os\nimport numpy as np\nimport tensorflow as tf\n\n"
            "if not os.path.exists('d.csv'):\n    tf.keras.utils.get_file('d.csv', 'http://x/d.csv')\n"
            "x = np.loadtxt('d.csv')\ny = x\n" + FIT_TAIL)
    out = convert_text(text)
    # the `if` is inside the wrapper: a rank that finds the file already there still joins the allreduce
    assert out.index('name="data_barrier"') < out.index("if not os.path.exists") < out.index("local_rank() == 0")


DOWNLOAD = ("import os\nimport urllib.request\nimport zipfile\nimport numpy as np\nimport tensorflow as tf\n\n"
            "if not os.path.exists('d.zip'):\n    urllib.request.urlretrieve('http://x/d.zip', 'd.zip')\n"
            "zip_ref = zipfile.ZipFile('d.zip', 'r')\nzip_ref.extractall('d')\nzip_ref.close()\n"
            "x = np.loadtxt('d/d.csv')\ny = x\n")


def test_download_without_cache_runs_on_local_rank0_only():
    # urlretrieve has no cache: the others must not download again after local rank 0, so
    # the download, the ZipFile it opens, the extraction and the close are one local-rank-0 block
    out = convert_text(DOWNLOAD + FIT_TAIL)
    block = ("if hvd.local_rank() == 0:\n    if not os.path.exists('d.zip'):\n"
             "        urllib.request.urlretrieve('http://x/d.zip', 'd.zip')\n"
             "    zip_ref = zipfile.ZipFile('d.zip', 'r')\n    zip_ref.extractall('d')\n    zip_ref.close()\n"
             "hvd.allreduce(tf.constant(0), name=\"data_barrier\")")
    assert block in out and out.count("data_barrier") == 1 and "local_rank() != 0" not in out
    p = point(DOWNLOAD + FIT_TAIL, 9)
    assert p["status"] == "done" and "no cache" in p["changes"][0]["message"]
    assert "this host's cache" not in out


def test_download_whose_binding_every_rank_reads_is_not_done():
    # `zip_ref` is read after the block by every rank: the others would skip its binding
    text = DOWNLOAD.replace("zip_ref.close()\n", "") + "print(zip_ref.namelist())\n" + FIT_TAIL
    p = point(text, 9)
    assert p["status"] == "not done" and "`zip_ref`" in p["notes"][0]["note"]
    assert "data_barrier" not in convert_text(text)


def test_epochs_rounded_up_and_one_epoch_left_alone():
    arrays = "import numpy as np\nimport tensorflow as tf\n\nx = np.zeros((8, 1))\ny = x\n"
    out = convert_text(arrays + FIT_TAIL)
    assert "epochs=int(math.ceil(4 / hvd.size()))" in out and "\nimport math\n" in out
    aliased = "import math as m\n" + arrays + FIT_TAIL
    assert "epochs=int(m.ceil(4 / hvd.size()))" in convert_text(aliased)
    one = arrays.replace("y = x\n", "y = x\nEPOCHS = 1\n") + FIT_TAIL.replace("epochs=4", "epochs=EPOCHS")
    out = convert_text(one)
    assert "epochs=EPOCHS," in out and "math" not in out and "x[hvd.rank():len(x)" in out   # (sliced instead)
    assert point(one, 5)["status"] == "done"


def test_converted_output_offers_no_second_fix():
    """The conversion's own wrapper is recognised: its output (a Horovod program, where HVD044
    would be a hint) reports no HVD044 inside or after it, nor on the per-rank path."""
    from pathlib import Path

    fixtures = Path(__file__).resolve().parent.parent / "fixtures" / "HVD044"
    for expected in sorted(fixtures.glob("*.expected.py")):
        found = [f for f in analyze(expected.read_text()).findings if f.code == "HVD044"]
        assert not found, f"{expected.name}: {[f.message for f in found]}"


CLEANED = """import os
import shutil

import numpy as np
import tensorflow as tf

path = tf.keras.utils.get_file("data.zip", origin="https://example.org/data.zip", {how})
d = os.path.join(os.path.dirname(path), "data", "unsup")
if os.path.isdir(d): shutil.rmtree(d)
x = np.load(os.path.join(os.path.dirname(path), "data", "x.npy"))
y = x
""" + FIT_TAIL + "shutil.rmtree('logs')\n"


def test_extraction_and_cleaning_run_on_local_rank0_only():
    out = convert_text(CLEANED.format(how="extract=True"))
    # Keras 2.15's get_file extracts on every call: the others get the archive's path only
    assert 'origin="https://example.org/data.zip", extract=hvd.local_rank() == 0)' in out
    # the cleaning is in the wrapper, on local rank 0 (every host cleans its own cache), not on rank 0
    assert "if os.path.isdir(d): shutil.rmtree(d) if hvd.local_rank() == 0 else None" in out
    assert out.count('name="data_barrier"') == 2 and "data_extracted" not in out
    assert out.index("shutil.rmtree(d)") < out.index("if hvd.local_rank() == 0:\n    hvd.allreduce") \
        < out.index("np.load")
    assert "if hvd.rank() == 0: shutil.rmtree('logs')" in out      # after training: HVD032's as before
    p = point(CLEANED.format(how="extract=True"), 9)
    assert p["status"] == "done" and not p.get("notes")
    assert convert_text(out) == out


def test_untar_extracts_again_so_the_cleaning_follows_every_extraction():
    text = CLEANED.format(how="untar=True")
    out = convert_text(text)
    assert "untar=True)" in out                    # no other way to get untar's path on ranks > 0
    order = [out.index(s) for s in ('name="data_extracted"', 'local_rank() != 0:\n    hvd.allreduce(tf.constant(0), '
                                    'name="data_cleaned")', "shutil.rmtree(d) if hvd.local_rank() == 0 else None",
                                    'local_rank() == 0:\n    hvd.allreduce(tf.constant(0), name="data_cleaned")',
                                    "np.load")]
    assert order == sorted(order) and out.count('name="data_cleaned"') == 2
    p = point(text, 9)
    # right (every extraction ends before the cleaning and the reads), only slower: advisory, the
    # point is done and the conversion goes ahead (all or nothing blocks only what is wrong)
    assert p["status"] == "done" and p["notes"][0]["note"].startswith("done, but") and "untar" in p["notes"][0]["note"]


CHECKPOINTED = """import numpy as np
import tensorflow as tf

x = np.zeros((64, 4))
y = np.zeros((64, 1))
n = 2
cp = tf.keras.callbacks.ModelCheckpoint("ck/cp-{{epoch:04d}}.ckpt", save_weights_only=True, save_freq={freq})
model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
model.compile(optimizer=tf.keras.optimizers.SGD(0.01), loss="mse")
model.fit(x, y, epochs=50, callbacks=[cp])
"""


def test_checkpoint_interval_in_epochs_follows_the_divided_epochs():
    out = convert_text(CHECKPOINTED.format(freq="5 * n"))
    assert "save_freq=max(1, 5 // hvd.size()) * n)" in out and "int(math.ceil(50 / hvd.size()))" in out
    assert point(CHECKPOINTED.format(freq="5 * n"), 5)["status"] == "done"
    # an interval in batches it cannot read as k epochs: said, not silently kept
    p = point(CHECKPOINTED.format(freq="500"), 5)
    assert p["status"] == "partly done" and "save_freq=500" in p["notes"][0]["note"]
    assert "save_freq=500)" in convert_text(CHECKPOINTED.format(freq="500"))
    # once per epoch: nothing to keep consistent
    p = point(CHECKPOINTED.format(freq="'epoch'"), 5)
    assert p["status"] == "done" and not p["notes"]


def test_http_body_written_to_file_is_a_download_and_a_decoded_reply_is_not():
    body = ("import requests\nimport numpy as np\nimport tensorflow as tf\n\n"
            "r = requests.get('http://x/d.npz')\nwith open('d.npz', 'wb') as f:\n    f.write(r.content)\n"
            "x = np.load('d.npz')['x']\ny = x\n" + FIT_TAIL)
    out = convert_text(body)
    assert ("if hvd.local_rank() == 0:\n    r = requests.get('http://x/d.npz')\n    with open('d.npz', 'wb') as f:\n"
            "        f.write(r.content)\nhvd.allreduce(tf.constant(0), name=\"data_barrier\")") in out
    assert "hvd.rank() == 0" not in out.split("data_barrier")[0]      # not HVD032's rank-0 guard as well
    reply = body.replace("r.content", "json.dumps(r.json())").replace("'wb'", "'w'")
    out = convert_text("import json\n" + reply)
    assert "data_barrier" not in out and "if hvd.rank() == 0:\n    with open('d.npz', 'w')" in out


def test_pretrained_weights_are_fetched_on_local_rank0_first():
    head = "import numpy as np\nimport tensorflow as tf\n\nx = np.zeros((8, 32, 32, 3))\ny = np.zeros((8,))\n"
    tail = FIT_TAIL.replace("[tf.keras.layers.Dense(1)]", "[base, tf.keras.layers.Flatten(), tf.keras.layers.Dense(1)]")
    for call in ("tf.keras.applications.MobileNetV2(include_top=False, weights='imagenet')",
                 "tf.keras.applications.resnet50.ResNet50(include_top=False)"):       # weights='imagenet' by default
        out = convert_text(head + f"base = {call}\n" + tail)
        assert out.index("local_rank() != 0") < out.index(call) < out.index("local_rank() == 0"), call
        assert "pretrained weights" in point(head + f"base = {call}\n" + tail, 9)["changes"][0]["message"]
    none = head + "base = tf.keras.applications.MobileNetV2(include_top=False, weights=None)\n" + tail
    assert "data_barrier" not in convert_text(none) and point(none, 9)["status"] == "nothing to change"


def test_urlretrieve_into_its_own_temporary_file_is_not_a_shared_download():
    # no filename: each process downloads into a temporary file of its own; only the
    # extraction writes the shared folder, on local rank 0 first
    text = ("import urllib.request\nimport zipfile\nimport numpy as np\nimport tensorflow as tf\n\n"
            "zip_path, _ = urllib.request.urlretrieve('http://x/d.zip')\n"
            "with zipfile.ZipFile(zip_path) as f:\n    f.extractall('data')\n"
            "x = np.loadtxt('data/d.csv')\ny = x\n" + FIT_TAIL)
    out = convert_text(text)
    assert out.index("local_rank() != 0") < out.index("urlretrieve") < out.index("local_rank() == 0")
    assert "if hvd.local_rank() == 0: f.extractall('data')" in out
    assert point(text, 9)["status"] == "done"


def test_a_constant_every_rank_reads_stays_out_of_the_download_block():
    # `training_dir` is bound between the download and its extraction and read by every rank
    # later: it stays on every rank, the runs around it go on local rank 0
    text = ("import urllib.request\nimport zipfile\nimport numpy as np\nimport tensorflow as tf\n\n"
            "urllib.request.urlretrieve('http://x/d.zip', 'd.zip')\ntraining_dir = 'data/'\n"
            "zip_ref = zipfile.ZipFile('d.zip', 'r')\nzip_ref.extractall(training_dir)\nzip_ref.close()\n"
            "x = np.loadtxt(training_dir + 'd.csv')\ny = x\n" + FIT_TAIL)
    out = convert_text(text)
    assert ("if hvd.local_rank() == 0:\n    urllib.request.urlretrieve('http://x/d.zip', 'd.zip')\n"
            "training_dir = 'data/'\nif hvd.local_rank() == 0:\n    zip_ref = zipfile.ZipFile('d.zip', 'r')\n"
            "    zip_ref.extractall(training_dir)\n    zip_ref.close()\n"
            "hvd.allreduce(tf.constant(0), name=\"data_barrier\")") in out
    assert point(text, 9)["status"] == "done"


def test_a_tf_data_cache_file_is_made_per_rank():
    """``.cache(<file>)`` filled by every rank at once: TensorFlow refuses the second writer,
    and a shared file would keep one rank's share (sweep 40d r13). Each rank gets its own file
    (a literal becomes an f-string; an expression is concatenated, in parentheses where it
    needs them); ``.cache()`` in memory is left alone, and so is the per-rank file (converting
    again changes nothing)."""
    head = ("import tensorflow as tf\n\nx = tf.random.normal((64, 4))\ny = tf.random.normal((64, 1))\n"
            "root = 'tmp'\nlate = False\n")
    tail = "model = tf.keras.Sequential([tf.keras.layers.Dense(1)])\nmodel.compile('sgd', 'mse')\nmodel.fit(ds, epochs=2)\n"
    for arg, after in (('"cache/xy"', 'f"cache/xy-{hvd.rank()}-of-{hvd.size()}"'),
                       ("u'xy'", "f'xy-{hvd.rank()}-of-{hvd.size()}'"),
                       ("r'c:\\\\xy'", "fr'c:\\\\xy-{hvd.rank()}-of-{hvd.size()}'"),
                       ("filename=root + '/a' if late else root",
                        "filename=(root + '/a' if late else root) + f\"-{hvd.rank()}-of-{hvd.size()}\"")):
        text = head + f"ds = tf.data.Dataset.from_tensor_slices((x, y)).cache({arg}).batch(8)\n" + tail
        p = point(text, 9)
        assert p["status"] == "done" and [c["change"] for c in p["changes"]] == ["Give each rank its own cache file"]
        out = convert_text(text)
        assert f".cache({after}).batch(8)" in out, out
        assert convert_text(out) == out
    for arg in ("", '""'):
        text = head + f"ds = tf.data.Dataset.from_tensor_slices((x, y)).cache({arg}).batch(8)\n" + tail
        assert f".cache({arg})" in convert_text(text) and point(text, 9)["status"] == "nothing to change"


def test_a_fetch_function_under_a_test_and_without_one_is_refused_with_that_reason():
    """Two callers of one fetch function, one under a file-system test and one without: no
    wrapper lets every rank reach the same barriers. Refused, and the reason names that (it
    said "a return, a statement that trains, or one that shares its line": sweep 40d r15)."""
    text = """import os
import numpy as np
import tensorflow as tf


def fetch(name):
    tf.keras.utils.get_file(name, "https://example.org/" + name, extract=True)


if not os.path.exists("a"):
    fetch("a.zip")
fetch("b.zip")
x = np.load("a/x.npy")
y = x
""" + FIT_TAIL
    a = conversion(text)
    assert a.refused and convert_text(text) == text
    (reason,) = [r for r in report.build(a)["reasons"] if r["code"] == "point 9"]
    assert reason["line"] == 7 and "`fetch` is called under a file-system test and without one (line 12)" in reason["message"]


def test_scikit_learn_fetchers_are_fetched_on_local_rank0_first():
    """``fetch_*`` downloads into ~/scikit_learn_data and removes its archive: a data acquisition,
    however it is imported; the bundled ``load_*`` and ``download_if_missing=False`` are not."""
    for head, call in (("from sklearn.datasets import fetch_covtype", "fetch_covtype()"),
                       ("from sklearn import datasets as skd", "skd.fetch_openml('adult', version=2)"),
                       ("import sklearn.datasets", "sklearn.datasets.fetch_kddcup99(subset='SA')")):
        text = f"import tensorflow as tf\n{head}\n\nbunch = {call}\nx, y = bunch.data, bunch.target\n" + FIT_TAIL
        out = convert_text(text)
        assert out.index("local_rank() != 0") < out.index(call) < out.index("local_rank() == 0"), call
    for head, call in (("from sklearn.datasets import load_digits", "load_digits()"),
                       ("from sklearn.datasets import fetch_covtype", "fetch_covtype(download_if_missing=False)")):
        text = f"import tensorflow as tf\n{head}\n\nbunch = {call}\nx, y = bunch.data, bunch.target\n" + FIT_TAIL
        assert "data_barrier" not in convert_text(text) and point(text, 9)["status"] == "nothing to change", call
