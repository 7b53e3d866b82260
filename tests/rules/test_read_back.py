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


def test_an_npz_archive_keeps_the_barrier():
    text = HEAD + """
    np.savez("arrays.npz", w=model.get_weights()[0])
    arrays = np.load("arrays.npz")
    model.set_weights([arrays["w"], model.get_weights()[1]])
    """
    out = conversion(src(text)).converted()
    assert "broadcast_object" not in out, out
    assert out.count('name="barrier")') == 1, out


def test_a_restore_status_checked_after_it_is_restored_on_rank0_with_its_checks():
    """``status = ckpt.restore(p)`` is the restore it is: on rank 0, with the variables
    broadcast after it; the status exists on rank 0 alone, so its checks run there too."""
    before = HEAD + """
    ckpt = tf.train.Checkpoint(model=model)
    ckpt.save("ckpt/m")
    status = ckpt.restore(tf.train.latest_checkpoint("ckpt")).expect_partial()
    status.assert_existing_objects_matched()
    """
    after = HEAD + """
    ckpt = tf.train.Checkpoint(model=model)
    ckpt.save("ckpt/m")
    if hvd.rank() == 0: status = ckpt.restore(tf.train.latest_checkpoint("ckpt")).expect_partial()
    hvd.broadcast_variables(model.variables, root_rank=0)
    if hvd.rank() == 0: status.assert_existing_objects_matched()
    """
    assert_rule(before, after, "HVD033")
    assert not point7_notes(before)


def test_a_restore_status_used_otherwise_keeps_the_barrier_on_every_rank():
    """The status printed (on rank 0) or passed on: the restore stays on every rank behind the
    barrier. It is not read on rank 0 alone as a value only rank 0 uses would be: the variables
    it fills are every rank's."""
    for use in ("print(status)", "checks = [status]"):
        text = HEAD + f"""
    ckpt = tf.train.Checkpoint(model=model)
    ckpt.save("ckpt/m")
    status = ckpt.restore(tf.train.latest_checkpoint("ckpt"))
    {use}
    """
        out = conversion(src(text)).converted()
        assert 'hvd.allreduce(tf.constant(0), name="barrier")\nstatus = ckpt.restore(' in out, out
        assert "broadcast_variables(model" not in out, out


def test_a_managers_restore_or_initialize_is_a_restore_of_its_checkpoint():
    """In a function called twice, after the first call's save: rank 0 restores, and what the
    manager's checkpoint holds is broadcast (the loop's first-step broadcast ran in the first
    call). A manager with an ``init_fn`` (it would run on rank 0 alone) keeps the barrier."""
    text = """
    import tensorflow as tf

    model = tf.keras.Sequential([tf.keras.layers.Dense(1, input_shape=(4,))])
    opt = tf.keras.optimizers.SGD(0.01)
    step = tf.Variable(0)
    ckpt = tf.train.Checkpoint(model=model, optimizer=opt, step=step)
    manager = tf.train.CheckpointManager(ckpt, "ckpts", max_to_keep=2)
    ds = tf.data.Dataset.from_tensor_slices((tf.ones([32, 4]), tf.ones([32, 1]))).batch(8)


    def train():
        manager.restore_or_initialize()
        for x, y in ds:
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean((model(x) - y) ** 2)
            opt.apply_gradients(zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables))
            step.assign_add(1)
        manager.save()


    train()
    train()
    """
    out = conversion(src(text)).converted()
    assert ("    if hvd.rank() == 0: manager.restore_or_initialize()\n"
            "    hvd.broadcast_variables(model.variables + opt.variables() + [step], root_rank=0)\n") in out, out
    assert 'name="barrier"' not in out and not point7_notes(text)
    init = text.replace('max_to_keep=2)', 'max_to_keep=2, init_fn=lambda: None)')
    out = conversion(src(init)).converted()
    assert '    hvd.allreduce(tf.constant(0), name="barrier")\n    manager.restore_or_initialize()\n' in out, out


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



BUILT = """
    import tensorflow as tf


    class Net(tf.keras.Model):
        def __init__(self):
            super().__init__()
            self.d = tf.keras.layers.Dense(1)

        def call(self, x):
            return self.d(x)


    model = Net()
    opt = tf.keras.optimizers.SGD(0.01)
    ds = tf.data.Dataset.from_tensor_slices((tf.ones([32, 4]), tf.ones([32, 1]))).batch(8)
    for x, y in ds:
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((model(x) - y) ** 2)
        opt.apply_gradients(zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables))
    model.save_weights("w.h5")
    fresh = Net()


    def warm_up():
        fresh(tf.zeros([1, 4]))


    WARM_BEFORE
    fresh.load_weights("w.h5")
    WARM_AFTER
    y = fresh(tf.ones([1, 4]))
    """


def test_a_subclassed_model_is_built_by_a_call_that_runs_before_the_read():
    """The model's first call in a function called before the read builds it (its variables
    are broadcast after the read); in one only called after, not, though its text is before
    the read (the read keeps its barrier: the weights would be restored at that later first
    call, after any broadcast here)."""
    for before, after, shared in (("warm_up()", "", True), ("", "warm_up()", False)):
        text = BUILT.replace("WARM_BEFORE", before).replace("WARM_AFTER", after)
        out = conversion(src(text)).converted()
        assert ("hvd.broadcast_variables(fresh.variables, root_rank=0)" in out) is shared, out
        assert ('name="barrier")' in out) is not shared, out
