"""Scripts as people write them today (issue 12): Keras 3 / keras_core, entry points that
take a function, tapes that do not train, XLA steps, CPU-forcing environments and
tf.distribute programs. Each program is analysed and converted; the conversion parses."""

from horovodize.parse.source import Source

KERAS3_SEQUENTIAL = """\
import keras
from keras import layers

model = keras.Sequential([keras.Input(shape=(28, 28)), layers.Flatten(), layers.Dense(10)])
model.compile(optimizer=keras.optimizers.Adam(1e-3), loss="sparse_categorical_crossentropy")
model.fit(x_train, y_train, batch_size=128, epochs=2, callbacks=[keras.callbacks.ModelCheckpoint("m.keras")])
"""

KERAS_CORE_FUNCTIONAL = """\
import keras_core as keras
from keras_core import layers, ops

inputs = keras.Input(shape=(784,))
x = layers.Dense(64, activation="relu")(inputs)
x = layers.Lambda(lambda t: ops.relu(t))(x)
model = keras.Model(inputs, layers.Dense(10)(x))
model.compile(optimizer="adam", loss="mse")
model.fit(x_train, y_train, epochs=3)
"""

KERAS3_CUSTOM_TRAIN_STEP = """\
import keras
import tensorflow as tf


class CustomModel(keras.Model):
    def train_step(self, data):
        x, y = data
        with tf.GradientTape() as tape:
            y_pred = self(x, training=True)
            loss = self.compute_loss(y=y, y_pred=y_pred)
        gradients = tape.gradient(loss, self.trainable_variables)
        self.optimizer.apply(gradients, self.trainable_variables)
        return {"loss": loss}


inputs = keras.Input(shape=(32,))
model = CustomModel(inputs, keras.layers.Dense(1)(inputs))
model.compile(optimizer=keras.optimizers.SGD(0.01), loss="mse")
model.fit(x, y, epochs=3)
"""

WGAN_GP = """\
import tensorflow as tf

generator = tf.keras.Sequential([tf.keras.layers.Dense(4)])
discriminator = tf.keras.Sequential([tf.keras.layers.Dense(1)])
d_optimizer = tf.keras.optimizers.Adam(2e-4)


def gradient_penalty(real, fake):
    alpha = tf.random.uniform([tf.shape(real)[0], 1])
    interpolated = real + alpha * (fake - real)
    with tf.GradientTape() as gp_tape:
        gp_tape.watch(interpolated)
        pred = discriminator(interpolated, training=True)
    grads = gp_tape.gradient(pred, [interpolated])[0]
    norm = tf.sqrt(tf.reduce_sum(tf.square(grads), axis=[1]))
    return tf.reduce_mean((norm - 1.0) ** 2)


@tf.function
def train_step(real):
    noise = tf.random.normal([tf.shape(real)[0], 4])
    with tf.GradientTape() as tape:
        fake = generator(noise, training=True)
        d_cost = tf.reduce_mean(discriminator(fake)) - tf.reduce_mean(discriminator(real))
        d_loss = d_cost + 10.0 * gradient_penalty(real, fake)
    d_gradient = tape.gradient(d_loss, discriminator.trainable_variables)
    d_optimizer.apply_gradients(zip(d_gradient, discriminator.trainable_variables))
    return d_loss


for _ in range(3):
    train_step(tf.random.normal([8, 4]))
"""

SALIENCY = """\
import tensorflow as tf
import matplotlib.pyplot as plt

model = tf.keras.applications.MobileNetV2()
image = tf.random.uniform([1, 224, 224, 3])
with tf.GradientTape() as tape:
    tape.watch(image)
    top = tf.reduce_max(model(image), axis=1)
grads = tape.gradient(top, image)
plt.imshow(tf.reduce_max(tf.abs(grads), axis=-1)[0])

x = tf.Variable(3.0)
with tf.GradientTape() as t2:
    y = x * x
print(t2.gradient(y, x))
"""

ENTRY_POINTS = """\
import functools
from absl import app
import tensorflow as tf

model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
optimizer = tf.keras.optimizers.Adam(0.01)


def train_step(x, y, scale):
    with tf.GradientTape() as tape:
        loss = scale * tf.reduce_mean((model(x) - y) ** 2)
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss


def main(argv):
    step = tf.function(functools.partial(train_step, scale=1.0))
    train = tf.function(train_step)
    for _ in range(10):
        step(tf.random.normal([4, 2]), tf.ones([4, 1]))
        train(tf.ones([4, 2]), tf.ones([4, 1]), 1.0)


if __name__ == "__main__":
    tf.compat.v1.app.run(main)
"""

XLA_STEP = """\
import tensorflow as tf

model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
optimizer = tf.keras.optimizers.Adam(0.01)


@tf.function(jit_compile=True)
def train_step(x, y):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean((model(x) - y) ** 2)
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))


for _ in range(3):
    train_step(tf.random.normal([2, 2]), tf.ones([2, 1]))
"""

STRATEGY = """\
import tensorflow as tf

strategy = tf.distribute.MultiWorkerMirroredStrategy()
with strategy.scope():
    model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
    model.compile(optimizer=tf.keras.optimizers.SGD(0.1), loss="mse")
os.environ["CUDA_VISIBLE_DEVICES"] = "0"
print("training")
model.fit(strategy.experimental_distribute_dataset(ds), epochs=2)
"""


def converted(r) -> str:
    text = r.converted()
    Source(text).check_parses()
    compile(text, "<converted>", "exec")
    return text


def test_keras3_sequential_fit_is_converted_on_tf_keras(check):
    r = check(KERAS3_SEQUENTIAL)
    assert {"HVD101", "HVD011", "HVD050"} <= set(r.codes())
    assert [f.severity for f in r.all("HVD090")] == ["warning", "warning"]   # on every import line
    assert r.at("HVD090") == ["import keras", "from keras import layers"]
    assert "Keras 2" in r.all("HVD090")[0].message and "rewritten to tf.keras" in r.all("HVD090")[0].message
    out = converted(r)
    assert out.startswith("from tensorflow import keras\nfrom tensorflow.keras import layers\n")
    assert "hvd.DistributedOptimizer(keras.optimizers.Adam(1e-3 * hvd.size()))" in out
    assert "BroadcastGlobalVariablesCallback(0)" in out


def test_keras_core_functional_with_keras_ops_gets_the_keras3_target(check):
    """Keras-3-only API (`ops.relu`) is no longer refused: the program stays Keras 3, on its
    TensorFlow backend, with the keras3 target's adapters (docs/keras3.md)."""
    r = check(KERAS_CORE_FUNCTIONAL)
    assert "HVD101" in r.codes() and "HVD-T1" not in r.codes()
    f = r.all("HVD090")[0]
    assert len(r.all("HVD090")) == 2 and "`keras_core` is Keras 3: the keras3 target" in f.message
    assert "chosen for `keras.ops` (line 2)" in f.message
    assert not r.analysis.refused and r.analysis.keras_target == "keras3"
    out = converted(r)
    assert "import keras_core as keras\nfrom keras_core import layers, ops\n" in out
    assert "optimizer=DistributedOptimizer(keras.optimizers.Adam(learning_rate=0.001 * hvd.size()))" in out
    assert "jit_compile=False" in out and "class BroadcastGlobalVariablesCallback(keras.callbacks.Callback):" in out


def test_keras3_custom_train_step_is_a_fit_loop(check):
    r = check(KERAS3_CUSTOM_TRAIN_STEP)
    assert "HVD-T3" not in r.codes() and "HVD100" not in r.codes()
    assert r.summary.label == "Keras fit"
    # Keras 3's optimizer.apply: the keras3 target, the train_step's tape averaged by the adapter
    assert "chosen for `self.optimizer.apply` (line 12)" in r.one("HVD090").message and not r.analysis.refused
    out = converted(r)
    assert "import keras\n" in out and "        tape = DistributedGradientTape(tape)\n" in out
    assert "keras.optimizers.SGD(0.01 * hvd.size()), loss=\"mse\", jit_compile=False)" in out
    r = check(KERAS3_CUSTOM_TRAIN_STEP.replace("self.optimizer.apply(gradients, self.trainable_variables)",
                                               "self.optimizer.apply_gradients(zip(gradients, self.trainable_variables))"))
    out = converted(r)
    assert out.startswith("from tensorflow import keras\nimport tensorflow as tf\n")
    # the step takes its own gradients: DistributedOptimizer would not average them (only minimize
    # does), so the tape is wrapped with horovod.tensorflow's DistributedGradientTape, alone
    # (Horovod's idiom: the optimizer stays plain, scaled)
    assert "keras.optimizers.SGD(0.01 * hvd.size())" in out and "DistributedOptimizer(" not in out
    assert "import horovod.tensorflow as hvd_tf\n" in out
    assert "        tape = hvd_tf.DistributedGradientTape(tape)\n" in out


def test_wgan_gp_penalty_tape_is_left_alone(check):
    r = check(WGAN_GP)
    assert r.at("HVD020") == ["tf.GradientTape() as tape"]
    out = converted(r)
    assert "gp_tape = hvd.DistributedGradientTape" not in out
    assert "    tape = hvd.DistributedGradientTape(tape)" in out


def test_saliency_and_printed_gradients_are_not_training(check):
    r = check(SALIENCY)
    assert "HVD020" not in r.codes() and "HVD100" not in r.codes() and r.summary.label == "none"
    assert "DistributedGradientTape" not in converted(r)


def test_entry_points_and_wrappers_do_not_block(check):
    r = check(ENTRY_POINTS)
    assert "HVD-T4" not in r.codes()
    assert {"HVD020", "HVD021", "HVD010"} <= set(r.codes())
    assert "tape = hvd.DistributedGradientTape(tape)" in converted(r)


def test_self_train_step_rebound_to_tf_function_does_not_block(check):
    r = check("""\
        import tensorflow as tf


        class Trainer:
            def __init__(self):
                self.model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
                self.optimizer = tf.keras.optimizers.SGD(0.1)
                self.train_step = tf.function(self.train_step)

            def train_step(self, x, y):
                with tf.GradientTape() as tape:
                    loss = tf.reduce_mean((self.model(x) - y) ** 2)
                grads = tape.gradient(loss, self.model.trainable_variables)
                self.optimizer.apply_gradients(zip(grads, self.model.trainable_variables))

            def fit(self, steps):
                for _ in range(steps):
                    self.train_step(tf.random.normal([4, 2]), tf.ones([4, 1]))


        Trainer().fit(5)
        """)
    assert "HVD-T4" not in r.codes() and "HVD020" in r.codes()
    converted(r)


def test_xla_step_loses_jit_compile_and_is_converted(check):
    r = check(XLA_STEP)
    f = r.one("HVD091")
    assert r.src(f) == "jit_compile=True" and f.severity == "warning"
    assert "XLA cannot compile" in f.message and "removes `jit_compile=True`" in f.message
    out = converted(r)
    assert "DistributedGradientTape" in out and "\n@tf.function\ndef train_step" in out
    r = check(XLA_STEP.replace("jit_compile=True", "jit_compile=False"))
    assert "HVD091" not in r.codes()
    r = check(XLA_STEP.replace("(jit_compile=True)", "").replace("\n\n\n@tf", "\ntf.config.optimizer.set_jit(True)\n\n\n@tf"))
    assert r.at("HVD091") == ["tf.config.optimizer.set_jit(True)"]


def test_cpu_forcing_cuda_visible_devices_is_kept(check):
    r = check('import os\nimport tensorflow as tf\nos.environ["CUDA_VISIBLE_DEVICES"] = "-1"\n' + XLA_STEP.split("\n", 1)[1])
    assert "HVD003" not in r.codes()
    assert 'os.environ["CUDA_VISIBLE_DEVICES"] = "-1"' in converted(r)


def test_tf_distribute_program_gets_hvd092_and_no_edit(check):
    r = check(STRATEGY)
    f = r.one("HVD092")
    assert "tf.distribute.MultiWorkerMirroredStrategy" in f.message and f.severity == "warning"
    assert any("strategy.scope" in text for text, _ in r.related(f))
    assert "HVD-T2" not in r.codes() and "HVD101" not in r.codes()    # not a single-GPU loop
    assert r.analysis.conversion_edits() == [] and r.converted() == STRATEGY


def test_convert_report_repeats_the_trap_warnings(tmp_path, capsys):
    from horovodize import cli

    keras3, strategy = tmp_path / "keras3.py", tmp_path / "strategy.py"
    jax = KERAS_CORE_FUNCTIONAL.replace("\ninputs = ", '\nkeras.config.set_backend("jax")\ninputs = ', 1)
    keras3.write_text(jax)
    strategy.write_text(STRATEGY)
    assert cli.main(["convert", "-o", str(tmp_path / "out.py"), str(keras3)]) == 3     # the JAX backend: refused
    err = capsys.readouterr().err
    assert f"{keras3}:1:1: warning: HVD090 `keras_core` is Keras 3" in err
    assert "(also line 2)" in err and f"{keras3}:2:1: warning: HVD090 `keras_core`" not in err    # (one line)
    assert "  NOT CONVERTED: a restriction blocks the training loop; the file is left unchanged:" in err
    assert "    line 4: HVD090 KERAS_BACKEND=jax: Horovod's TensorFlow ops need" in err   # (the refusal says it once)
    assert (tmp_path / "out.py").read_text() == jax
    cli.main(["convert", "--diff", str(strategy)])      # (a refused conversion may exit non-zero)
    out = capsys.readouterr()
    assert "warning: HVD092" in out.err and "+++" not in out.out     # no diff: nothing edited
    assert "HVD-HVD092" not in out.err


def test_fit_next_to_a_saliency_tape_is_not_two_loop_kinds(check):
    r = check(KERAS3_SEQUENTIAL.replace("import keras\n", "import keras\nimport tensorflow as tf\n") + """\
image = tf.random.uniform([1, 28, 28])
with tf.GradientTape() as tape:
    tape.watch(image)
    score = tf.reduce_max(model(image))
saliency = tf.abs(tape.gradient(score, image))
""")
    assert "HVD-T3" not in r.codes() and r.summary.label == "Keras fit"
    out = converted(r)
    assert "hvd.DistributedOptimizer(" in out and "DistributedGradientTape" not in out


def test_fit_and_a_training_tape_on_two_models_convert(check):
    r = check("""\
        import tensorflow as tf

        a = tf.keras.Sequential([tf.keras.layers.Dense(1)])
        a.compile(optimizer="sgd", loss="mse")
        a.fit(x, y)
        b = tf.keras.Sequential([tf.keras.layers.Dense(1)])
        opt = tf.keras.optimizers.SGD(0.1)
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(b(x))
        opt.apply_gradients(zip(tape.gradient(loss, b.trainable_variables), b.trainable_variables))
        """)
    assert "HVD-T3" not in r.codes()      # fit uses horovod.tensorflow.keras, the tape horovod.tensorflow
    out = r.analysis.converted()
    assert "hvd_tf.DistributedGradientTape(tape)" in out and "hvd.callbacks.BroadcastGlobalVariablesCallback" in out


def test_horovod_run_fire_and_typer_launchers_do_not_block(check):
    for launcher, imp in [("horovod.run(main, args=([],), np=2)", "import horovod"), ("fire.Fire(main)", "import fire"),
                          ("typer.run(main)", "import typer")]:
        r = check(ENTRY_POINTS.replace("tf.compat.v1.app.run(main)", launcher)
                  .replace("import functools\n", f"import functools\n{imp}\n"))
        assert "HVD-T4" not in r.codes() and "HVD020" in r.codes(), launcher


TRAINING_SHAPES = {
    "accumulation": """
        accum = [tf.zeros_like(v) for v in model.trainable_variables]
        for step, (x, y) in enumerate(ds):
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(model(x))
            grads = tape.gradient(loss, model.trainable_variables)
            accum = [a + g for a, g in zip(accum, grads)]
            if (step + 1) % 4 == 0:
                opt.apply_gradients(zip(accum, model.trainable_variables))
        """,
    "clipped": """
        for x, y in ds:
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(model(x))
            grads, _ = tf.clip_by_global_norm(tape.gradient(loss, model.trainable_variables), 1.0)
            pairs = list(zip(grads, model.trainable_variables))
            opt.apply_gradients(pairs)
        """,
    "returned_in_a_tuple": """
        def compute(x):
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(model(x))
            return loss, tape.gradient(loss, model.trainable_variables)

        for x, y in ds:
            loss, grads = compute(x)
            opt.apply_gradients(zip(grads, model.trainable_variables))
        """,
    "handed_to_a_helper": """
        def apply(grads):
            opt.apply_gradients(zip(grads, model.trainable_variables))

        for x, y in ds:
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(model(x))
            apply(tape.gradient(loss, model.trainable_variables))
        """,
    "mixed_precision": """
        for x, y in ds:
            with tf.GradientTape() as tape:
                scaled = opt.get_scaled_loss(tf.reduce_mean(model(x)))
            scaled_grads = tape.gradient(scaled, model.trainable_variables)
            grads = opt.get_unscaled_gradients(scaled_grads)
            opt.apply_gradients(zip(grads, model.trainable_variables))
        """,
    "manual_sgd": """
        w = tf.Variable(1.0)
        for _ in range(10):
            x = tf.random.normal([4])
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.square(w * x - x))
            dw = tape.gradient(loss, w)
            w.assign_sub(0.1 * dw)
        """,
    "appended": """
        for x, y in ds:
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(model(x))
            collected = []
            collected.append(tape.gradient(loss, model.trainable_variables))
            opt.apply_gradients(zip(collected[0], model.trainable_variables))
        """,
}
NOT_TRAINING_SHAPES = {
    "logged_norm": """
        for x, y in ds:
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(model(x))
            norm = tf.linalg.global_norm(tape.gradient(loss, model.trainable_variables))
            tf.summary.scalar("grad_norm", norm, step=0)
        """,
    "input_gradient_attack": """
        x = tf.ones((1, 4))
        with tf.GradientTape() as tape:
            tape.watch(x)
            loss = tf.reduce_mean(model(x))
        adversarial = x + 0.1 * tf.sign(tape.gradient(loss, x))
        print(model(adversarial))
        """,
}
HEAD = """\
import tensorflow as tf

model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
opt = tf.keras.optimizers.SGD(0.1)
ds = tf.data.Dataset.from_tensor_slices((tf.ones((8, 4)), tf.ones((8, 1)))).batch(2)
"""


def test_training_gradient_shapes_are_wrapped(check):
    import textwrap

    for name, body in TRAINING_SHAPES.items():
        r = check(HEAD + textwrap.dedent(body))
        assert r.at("HVD020") == ["tf.GradientTape() as tape"], name
        assert "hvd.DistributedGradientTape(tape)" in converted(r), name


def test_gradients_that_train_nothing_are_left_alone(check):
    import textwrap

    for name, body in NOT_TRAINING_SHAPES.items():
        r = check(HEAD + textwrap.dedent(body))
        assert "HVD020" not in r.codes() and "HVD100" not in r.codes(), name


def test_keras3_names_schedules_saving_and_compile_strings(check):
    r = check("""\
        import keras_core as keras

        model = keras.saving.load_model("pretrained.keras")
        schedule = keras.optimizers.schedules.ExponentialDecay(0.01, decay_steps=100, decay_rate=0.9)
        model.compile(optimizer=keras.optimizers.Lamb(schedule), loss="mse")
        model.fit(x, y, epochs=2)
        other = keras.Sequential([keras.layers.Dense(1)])
        other.compile(optimizer="adam", loss="mse")
        other.fit(x, y)
        """)
    assert {"HVD013", "HVD011", "HVD012", "HVD050"} <= set(r.codes()) and len(r.all("HVD101")) == 2
    out = converted(r)
    assert "ExponentialDecay(0.01 * hvd.size()" in out
    assert "hvd.DistributedOptimizer(keras.optimizers.Adam(" in out     # the file's own Keras, not tf.keras
