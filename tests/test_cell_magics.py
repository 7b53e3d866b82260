"""A notebook exported as a script (nbconvert) runs a ``%%time`` cell from a string:
``get_ipython().run_cell_magic('time', '', 'train(ds, EPOCHS)')``. The conversion follows the
code in that string (the training it starts, what it writes), edits around it as anywhere
else, and refuses only when an edit would have to go inside the string."""

from __future__ import annotations

from pathlib import Path

from horovodize.engine import conversion
from horovodize.parse import cell_magics

# a GradientTape GAN-shaped program whose %%time cell trains from a string (also a golden of HVD033)
GAN_EXPORT = (Path(__file__).parent / "fixtures" / "HVD033" / "read_after_training_run_from_cell_magic.py").read_text()


def test_unwrap_keeps_every_offset():
    text = "x = 1\nget_ipython().run_cell_magic('time', '', 'f(x)')\n"
    unwrapped, spans = cell_magics.unwrap(text)
    assert len(unwrapped) == len(text)
    (start, end, b0, b1), = spans
    assert unwrapped[b0:b1] == text[b0:b1] == "f(x)"
    assert unwrapped.splitlines()[1].startswith("0;") and compile(unwrapped, "t", "exec")
    # a magic whose body is not Python, or a body of several lines (escaped), is left as written
    for other in ("get_ipython().run_cell_magic('bash', '', 'ls')\n",
                  "get_ipython().run_cell_magic('time', '', 'for i in x:\\\\n    f(i)')\n"):
        assert cell_magics.unwrap(other) == (other, [])


def test_training_started_from_the_string_is_followed():
    analysis = conversion(GAN_EXPORT)
    assert not analysis.refused
    out = analysis.converted()
    assert "get_ipython().run_cell_magic('time', '', 'train(dataset, 4)')" in out
    # the checkpoint train() writes on rank 0 is read back on rank 0, its variables broadcast
    assert 'if hvd.rank() == 0: checkpoint.restore(tf.train.latest_checkpoint("ckpt"))\nhvd.broadcast_variables(' in out
    assert "hvd.DistributedGradientTape(tape)" in out and "0;" not in out
    assert conversion(out).converted() == out


def test_one_line_guards_go_inside_the_string():
    text = GAN_EXPORT.replace("'train(dataset, 4)'", "'train(dataset, 4); model.save(path)'").replace(
        "\n\n\ndef train", "\npath = 'model.h5'\n\n\ndef train")
    out = conversion(text).converted()
    assert "run_cell_magic('time', '', 'train(dataset, 4); model.save(path) if hvd.rank() == 0 else None')" in out


def test_what_the_original_takes_as_it_is():
    text = "get_ipython().run_cell_magic('time', '', 'f(x)')\n"
    _, spans = cell_magics.unwrap(text)
    b0 = text.index("f(x)")
    assert cell_magics.outside(spans, 0, 0, "barrier()\n")                   # a line before the call
    assert cell_magics.outside(spans, b0, b0 + 4, "f(x) if r == 0 else None")
    assert not cell_magics.outside(spans, b0, b0, "if r == 0:\n    ")       # a line break in the string
    assert not cell_magics.outside(spans, b0, b0, 'g("a"); ')               # a quote that ends it
    assert not cell_magics.outside(spans, 2, b0 + 1, "")                    # across the call's head
