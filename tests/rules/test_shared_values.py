"""HVD033's shared values: a per-process path that rank 0 writes and every rank reads back
takes rank 0's value (rules/shared_values.py)."""

from __future__ import annotations

import textwrap

from horovodize.engine import convert_text

HEAD = """\
import time
import uuid
import tensorflow as tf

model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
model.compile(optimizer=tf.keras.optimizers.SGD(0.01), loss="mse")
model.fit(tf.ones([8, 4]), tf.ones([8, 1]), epochs=2)
"""


def convert(body: str) -> str:
    return convert_text(HEAD + textwrap.dedent(body))


def test_clock_path_written_then_read_is_broadcast_from_rank0():
    out = convert("""
        stamp = int(time.time())
        path = "/tmp/saved/%d" % stamp
        model.save(path)
        again = tf.keras.models.load_model(path)
        again.fit(x, y)
        """)
    assert "stamp = hvd_tf.broadcast_object(int(time.time()), root_rank=0)" in out
    assert "import horovod.tensorflow as hvd_tf" in out      # the Keras module has no broadcast_object
    assert "if hvd.rank() == 0: model.save(path)" in out
    assert convert_text(out) == out


def test_uuid_name_of_a_file_read_back_is_broadcast():
    out = convert("""
        name = "run-" + uuid.uuid4().hex + ".json"
        with open(name, "w") as f:
            f.write("{}")
        print(open(name).read())
        """)
    assert 'name = hvd_tf.broadcast_object("run-" + uuid.uuid4().hex + ".json", root_rank=0)' in out


def test_clock_path_written_and_never_read_is_left_alone():
    out = convert("""
        log_dir = "logs/" + time.strftime("%Y%m%d-%H%M%S")
        model.save(log_dir)
        """)
    assert "broadcast_object" not in out and "horovod.tensorflow as" not in out


def test_clock_path_in_a_function_only_rank0_calls_is_left_alone():
    text = textwrap.dedent("""
        import time
        import tensorflow as tf
        import horovod.tensorflow.keras as hvd

        hvd.init()
        model = tf.keras.Sequential([tf.keras.layers.Dense(1)])


        def export():
            path = "/tmp/m-%d" % int(time.time())
            model.save(path)
            return tf.keras.models.load_model(path)


        if hvd.rank() == 0:
            export()
        """)
    assert "broadcast_object" not in convert_text(text)   # a collective only rank 0 reaches would hang
