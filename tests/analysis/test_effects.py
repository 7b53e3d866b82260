"""`analysis.effects`: calls classified by what they do, local functions and callback
classes by their bodies."""

from __future__ import annotations

import textwrap

from horovodize.analysis.effects import COLLECTIVE, DISPLAY, PRINT, READ, WRITE, Effects
from horovodize.analysis.env import build_env
from horovodize.parse.source import Source

PROGRAM = textwrap.dedent("""
    import glob, os, shutil, pickle
    import imageio.v2 as iio
    import matplotlib.pyplot as plt
    import horovod.tensorflow.keras as hvd
    import tensorflow as tf
    from tensorflow import keras
    from PIL import Image
    from IPython.display import clear_output

    def save_images(epoch):
        plt.figure().savefig(f"image_{epoch}.png")

    def helper(epoch):
        save_images(epoch)

    class Monitor(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            helper(epoch)

    class Stopper(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            self.model.save("m.keras")
            self.model.stop_training = True

    class Averager(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            hvd.allreduce(0)
            np.save("a.npy", 1)

    Image.open("in.png").save("out.png")
    iio.mimsave("a.gif", [])
    keras.utils.plot_model(model, to_file="model.png")
    os.makedirs("out")
    shutil.rmtree("out")
    pickle.dump(obj, open("p.pkl", "wb"))
    open("log.txt", "a")
    open("log.txt")
    glob.glob("image_*.png")
    iio.imread("a.png")
    tf.train.latest_checkpoint("ckpt")
    model.load_weights("w.h5")
    print("x")
    plt.show()
    clear_output(wait=True)
    hvd.allreduce(0)
    model.fit(x, y)
    helper(3)
    tf.image.resize(x, (2, 2))
    os.path.join("a", "b")
    ta = ta.write(0, v)
    open("log.txt", mode)
    """)


def _kinds():
    env = build_env(Source(PROGRAM))
    fx = Effects(env)
    out = {}
    for call, _owner in env.index.calls:
        text = call.node.get_code(include_prefix=False)
        out[text] = fx.of_call(call)
    return fx, out


def test_library_calls_by_what_they_do():
    _fx, kinds = _kinds()
    want = {
        'Image.open("in.png").save("out.png")': WRITE, 'iio.mimsave("a.gif", [])': WRITE,
        'keras.utils.plot_model(model, to_file="model.png")': WRITE, 'os.makedirs("out")': WRITE,
        'shutil.rmtree("out")': WRITE, 'pickle.dump(obj, open("p.pkl", "wb"))': WRITE,
        'open("log.txt", "a")': WRITE, 'open("log.txt")': READ, 'glob.glob("image_*.png")': READ,
        'iio.imread("a.png")': READ, 'tf.train.latest_checkpoint("ckpt")': READ,
        'model.load_weights("w.h5")': READ, 'print("x")': PRINT, "plt.show()": DISPLAY,
        "clear_output(wait=True)": DISPLAY, "hvd.allreduce(0)": COLLECTIVE, "model.fit(x, y)": COLLECTIVE,
    }
    for text, kind in want.items():
        assert kinds[text] == {kind}, (text, kinds[text])
    for text in ("tf.image.resize(x, (2, 2))", 'os.path.join("a", "b")', "ta.write(0, v)", 'open("log.txt", mode)'):
        assert not kinds[text], (text, kinds[text])


def test_local_functions_and_callback_classes_by_their_bodies():
    fx, kinds = _kinds()
    assert kinds["helper(3)"] == {WRITE}                 # helper -> save_images -> savefig
    assert fx.writing_callback("Monitor")
    assert not fx.writing_callback("Stopper")            # steers training: every rank
    assert not fx.writing_callback("Averager")           # a collective: every rank
    assert fx.callback_class("Stopper") and not fx.callback_class("helper")


SHOWS = textwrap.dedent("""
    import PIL
    import matplotlib.pyplot as plt
    import tensorflow as tf
    import tensorflow_docs.vis.embed as embed
    from IPython.display import Image, display

    display(Image("a.png"))
    display(Image(filename="b.png"), PIL.Image.open("c.png"))
    embed.embed_file(anim_file)
    Image("d.png")
    display(model.predict(x))
    display("text")
    plt.imshow(plt.imread("e.png"))
    tf.profiler.experimental.start(logdir)
    tf.profiler.experimental.stop()
    tf.summary.trace_on(graph=True, profiler=True)
    tf.summary.trace_export(name="trace", step=0, profiler_outdir=logdir)
    """)


def test_display_only_calls_and_the_files_they_show():
    env = build_env(Source(SHOWS))
    fx = Effects(env)
    shown, kinds = {}, {}
    for call, _owner in env.index.calls:
        text = call.node.get_code(include_prefix=False)
        shown[text] = [p.get_code(include_prefix=False) for p in fx.shown_paths(call)]
        kinds[text] = fx.kind(call)
    assert shown['display(Image("a.png"))'] == ['"a.png"']
    assert shown['display(Image(filename="b.png"), PIL.Image.open("c.png"))'] == ['"b.png"', '"c.png"']
    assert shown["embed.embed_file(anim_file)"] == ["anim_file"] and kinds["embed.embed_file(anim_file)"] == DISPLAY
    assert shown['Image("d.png")'] == ['"d.png"']
    # a display of something computed, or a plot of a read, is not display-only of a file
    for text in ("display(model.predict(x))", 'display("text")', 'plt.imshow(plt.imread("e.png"))'):
        assert shown[text] == [], text
    assert kinds['plt.imread("e.png")'] == READ and kinds['PIL.Image.open("c.png")'] == READ
    # the profiler and the trace write files under their log folder
    for text in ("tf.profiler.experimental.start(logdir)", "tf.profiler.experimental.stop()",
                 "tf.summary.trace_on(graph=True, profiler=True)"):
        assert kinds[text] == WRITE, text
    export = 'tf.summary.trace_export(name="trace", step=0, profiler_outdir=logdir)'
    assert kinds[export] == WRITE
