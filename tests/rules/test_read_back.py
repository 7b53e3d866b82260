"""HVD033's reads of rank 0's files that need no shared filesystem (`rules/read_back.py`): a
plain value read on rank 0 and broadcast, weights read on rank 0 with their variables
broadcast; and the forms that keep the barrier (the goldens in tests/fixtures/HVD033 have the
whole conversions)."""

from __future__ import annotations

from rulecase import assert_rule, src

from horovodize.app import report
from horovodize.engine import conversion

HEAD = """
    import json
    import os

    import numpy as np
    import tensorflow as tf

    model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
    opt = tf.keras.optimizers.SGD(0.01)
    ds = tf.data.Dataset.from_tensor_slices((tf.ones([32, 4]), tf.ones([32, 1]))).batch(8)
    for x, y in ds:
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((model(x) - y) ** 2)
        opt.apply_gradients(zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables))
    """


def point7_notes(text: str) -> list[str]:
    points = {p["point"]: p for p in report.build(conversion(src(text)))["points"]}
    return [n["note"] for n in points[7]["notes"]]


def test_a_conditional_value_is_parenthesised():
    before = HEAD + """
    np.save("w.npy", model.get_weights()[0])
    w = np.load("w.npy") if os.path.exists("w.npy") else None
    model.set_weights([w, model.get_weights()[1]])
    """
    after = HEAD + """
    np.save("w.npy", model.get_weights()[0])
    w = hvd.broadcast_object((np.load("w.npy") if os.path.exists("w.npy") else None) if hvd.rank() == 0 else None, root_rank=0)
    model.set_weights([w, model.get_weights()[1]])
    """
    assert_rule(before, after, "HVD033")


def test_a_file_list_given_to_other_code_keeps_the_barrier():
    """The names would be read on every rank by code the rule does not follow (a tf.data
    pipeline): broadcasting the list would not bring the files, so the read stays listed."""
    text = HEAD + """
    np.save("out/part-0.npy", model.get_weights()[0])
    files = sorted(os.listdir("out"))
    parts = tf.data.Dataset.from_tensor_slices(files)
    """
    out = conversion(src(text)).converted()
    assert 'hvd.allreduce(tf.constant(0), name="barrier")\nfiles = sorted(os.listdir("out"))\n' in out, out
    assert "broadcast_object" not in out
    assert any('needs a shared filesystem: `"out"`' in n for n in point7_notes(text))


def test_an_npz_archive_and_a_restore_status_keep_the_barrier():
    text = HEAD + """
    np.savez("arrays.npz", w=model.get_weights()[0])
    arrays = np.load("arrays.npz")
    ckpt = tf.train.Checkpoint(model=model)
    ckpt.save("ckpt/m")
    status = ckpt.restore(tf.train.latest_checkpoint("ckpt"))
    status.assert_existing_objects_matched()
    model.set_weights([arrays["w"], model.get_weights()[1]])
    """
    out = conversion(src(text)).converted()
    assert "broadcast_object" not in out and "broadcast_variables(model" not in out, out
    assert out.count('name="barrier")') == 2, out


def test_a_checkpoint_of_an_object_not_followed_keeps_the_barrier():
    """``step=counter`` where `counter` is not a tf.Variable the rule can see: its state could
    not be named in the broadcast."""
    text = HEAD + """
    counter = make_counter()
    ckpt = tf.train.Checkpoint(model=model, optimizer=opt, step=counter)
    ckpt.save("ckpt/m")
    ckpt.restore(tf.train.latest_checkpoint("ckpt"))
    """
    out = conversion(src(text)).converted()
    assert 'hvd.allreduce(tf.constant(0), name="barrier")\nckpt.restore(' in out, out


def test_a_restore_with_a_variable_is_broadcast_with_it():
    before = HEAD + """
    epoch = tf.Variable(0)
    ckpt = tf.train.Checkpoint(model=model, optimizer=opt, epoch=epoch)
    ckpt.save("ckpt/m")
    ckpt.restore(tf.train.latest_checkpoint("ckpt")).expect_partial()
    """
    after = HEAD + """
    epoch = tf.Variable(0)
    ckpt = tf.train.Checkpoint(model=model, optimizer=opt, epoch=epoch)
    ckpt.save("ckpt/m")
    if hvd.rank() == 0: ckpt.restore(tf.train.latest_checkpoint("ckpt")).expect_partial()
    hvd.broadcast_variables(model.variables + opt.variables() + [epoch], root_rank=0)
    """
    assert_rule(before, after, "HVD033")
    assert not point7_notes(before)


def test_a_with_open_block_that_only_binds_what_it_reads_runs_on_rank0():
    before = HEAD + """
    with open("meta.json", "w") as f:
        json.dump({"steps": 3}, f)
    with open("meta.json") as f:
        meta = json.load(f)
    steps = meta["steps"]
    """
    after = HEAD + """
    with open("meta.json", "w") as f:
        json.dump({"steps": 3}, f)
    meta = None
    if hvd.rank() == 0:
        with open("meta.json") as f:
            meta = json.load(f)
    meta = hvd.broadcast_object(meta, root_rank=0)
    steps = meta["steps"]
    """
    assert_rule(before, after, "HVD033")
    assert not point7_notes(before)


def test_a_file_block_that_does_more_than_bind_keeps_the_barrier():
    """A print in the block (it would then run on rank 0 alone: a guard of its own), the handle
    used after the block, a program's own function (it may reach a collective), a handle
    never closed: the block's form is not this one, the barrier and point 7's line stay."""
    for body in ("""
    with open("meta.json") as f:
        meta = json.load(f)
        print(meta)
    """, """
    with open("meta.json") as f:
        meta = json.load(f)
    print(f.closed)
    """, """
    def parse(fh):
        return json.load(fh)
    with open("meta.json") as f:
        meta = parse(f)
    """, """
    f = open("meta.json")
    meta = json.load(f)
    """):
        text = HEAD + """
    with open("meta.json", "w") as g:
        json.dump({"steps": 3}, g)
    """ + body
        out = conversion(src(text)).converted()
        assert "broadcast_object" not in out and 'name="barrier")' in out, out
        assert any('needs a shared filesystem: `"meta.json"`' in n for n in point7_notes(text)), body
