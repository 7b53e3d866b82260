"""HVD010 (scale the learning rate), HVD011 (hvd.DistributedOptimizer), HVD012
(``compile('adam')``), HVD013 (scale a schedule's rate, not the schedule)."""

from __future__ import annotations

import pytest

from horovodize.engine import analyze

from rulecase import assert_no_rule, assert_rule, assert_unchanged, rule_output, sites, src

TAPE = """
for x, y in dataset:
    with tf.GradientTape() as tape:
        loss = model(x)
    opt.apply_gradients(zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables))
"""
FIT = """
model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
model.compile(optimizer=opt, loss="mse")
model.fit(x, y)
"""


# -- HVD010 ------------------------------------------------------------------------------
@pytest.mark.parametrize("before, after", [
    ("tf.keras.optimizers.Adam(learning_rate=0.01)", "tf.keras.optimizers.Adam(learning_rate=0.01 * hvd.size())"),
    ("tf.keras.optimizers.Adam(0.01, beta_1=0.8)", "tf.keras.optimizers.Adam(0.01 * hvd.size(), beta_1=0.8)"),
    ("tf.optimizers.SGD(lr)", "tf.optimizers.SGD(lr * hvd.size())"),
    ("tf.keras.optimizers.legacy.SGD(lr=0.1)", "tf.keras.optimizers.legacy.SGD(lr=0.1 * hvd.size())"),
    ("tf.keras.optimizers.SGD(momentum=0.9)", "tf.keras.optimizers.SGD(momentum=0.9, learning_rate=0.01 * hvd.size())"),
    ("tf.keras.optimizers.Adam()", "tf.keras.optimizers.Adam(learning_rate=0.001 * hvd.size())"),
    ("tf.keras.optimizers.Lion()", "tf.keras.optimizers.Lion(learning_rate=0.0001 * hvd.size())"),
    ("tf.keras.optimizers.Adam(base + 0.1)", "tf.keras.optimizers.Adam((base + 0.1) * hvd.size())"),
    ("tf.keras.optimizers.Adam(base / 10)", "tf.keras.optimizers.Adam(base / 10 * hvd.size())"),
    ("tf.keras.optimizers.Adam(a if b else c)", "tf.keras.optimizers.Adam((a if b else c) * hvd.size())"),
    ("tf.keras.optimizers.Adam(-x)", "tf.keras.optimizers.Adam(-x * hvd.size())"),
    ("tf.keras.optimizers.Adam(config['lr'])", "tf.keras.optimizers.Adam(config['lr'] * hvd.size())"),
])
def test_learning_rate_is_scaled(before, after):
    assert_rule(f"import tensorflow as tf\nopt = {before}\n" + src(TAPE), f"import tensorflow as tf\nopt = {after}\n" + src(TAPE), "HVD010")


def test_learning_rate_aliases_of_the_keras_module():
    before = """
        from tensorflow import keras
        from tensorflow.keras import optimizers
        from tensorflow.keras.optimizers import Adam

        a = keras.optimizers.SGD(0.1)
        b = optimizers.RMSprop(learning_rate=0.001)
        c = Adam(3e-4)
        """
    after = """
        from tensorflow import keras
        from tensorflow.keras import optimizers
        from tensorflow.keras.optimizers import Adam

        a = keras.optimizers.SGD(0.1 * hvd.size())
        b = optimizers.RMSprop(learning_rate=0.001 * hvd.size())
        c = Adam(3e-4 * hvd.size())
        """
    assert_rule(before, after, "HVD010")


def test_tf1_optimizers():
    before = """
        import tensorflow.compat.v1 as tf

        def model_fn(features, labels, mode):
            loss = tf.reduce_mean(features)
            opt = tf.train.GradientDescentOptimizer(learning_rate=0.5)
            adam = tf.train.AdamOptimizer()
            momentum = tf.train.MomentumOptimizer(momentum=0.9)
            return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=opt.minimize(loss))

        classifier = tf.estimator.Estimator(model_fn)
        classifier.train(input_fn)
        """
    out = rule_output(src(before), "HVD010")
    assert "tf.train.GradientDescentOptimizer(learning_rate=0.5 * hvd.size())" in out
    assert "tf.train.AdamOptimizer(learning_rate=0.001 * hvd.size())" in out
    # MomentumOptimizer has no default rate to scale: left alone.
    assert "tf.train.MomentumOptimizer(momentum=0.9)\n" in out


def test_multiline_optimizer_call_keeps_its_layout():
    before = """
        import tensorflow as tf

        opt = tf.keras.optimizers.SGD(
            momentum=0.9,
            nesterov=True,
        )
        opt2 = tf.keras.optimizers.RMSprop(
            rho=0.8  # smoothing
        )
        """
    after = """
        import tensorflow as tf

        opt = tf.keras.optimizers.SGD(
            momentum=0.9,
            nesterov=True,
            learning_rate=0.01 * hvd.size(),
        )
        opt2 = tf.keras.optimizers.RMSprop(
            rho=0.8,  # smoothing
            learning_rate=0.001 * hvd.size(),
        )
        """
    assert_rule(before, after, "HVD010")


def test_star_arguments_and_lambdas_are_left_alone():
    assert_no_rule("""
        import tensorflow as tf

        opt = tf.keras.optimizers.Adam(**config)
        opt2 = tf.keras.optimizers.Adam(learning_rate=lambda: 0.1)
        """, "HVD010")


def test_negative_already_scaled():
    text = """
        import tensorflow as tf
        import horovod.tensorflow as hvd

        hvd.init()
        scaled = 0.01 * hvd.size()
        opt = tf.keras.optimizers.SGD(scaled)
        opt2 = tf.keras.optimizers.Adam(learning_rate=0.001 * hvd.size())
        """
    assert_no_rule(text, "HVD010")
    assert_unchanged(text)


# -- HVD011 ------------------------------------------------------------------------------
def test_keras_program_wraps_the_optimizer_variable():
    before = "import tensorflow as tf\nopt = tf.keras.optimizers.Adam(0.001)  # Adam\n" + src(FIT)
    after = ("import tensorflow as tf\nopt = tf.keras.optimizers.Adam(0.001)  # Adam\n"
             "opt = hvd.DistributedOptimizer(opt)\n" + src(FIT))
    assert_rule(before, after, "HVD011")


def test_keras_program_wraps_an_optimizer_built_in_compile():
    before = """
        import tensorflow as tf

        model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
        model.compile(
            optimizer=tf.keras.optimizers.Adam(1e-3),
            loss="mse",
        )
        model.fit(x, y)
        """
    after = """
        import tensorflow as tf

        model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
        model.compile(
            optimizer=hvd.DistributedOptimizer(tf.keras.optimizers.Adam(1e-3)),
            loss="mse",
        )
        model.fit(x, y)
        """
    assert_rule(before, after, "HVD011")


def test_wrap_after_a_multiline_optimizer_in_a_method():
    before = """
        import tensorflow as tf


        class Trainer:
            def __init__(self, model):
                self.model = model
                self.opt = tf.keras.optimizers.SGD(
                    learning_rate=0.1,
                )
                self.model.compile(optimizer=self.opt, loss="mse")

            def run(self, x, y):
                self.model.fit(x, y)
        """
    after = """
        import tensorflow as tf


        class Trainer:
            def __init__(self, model):
                self.model = model
                self.opt = tf.keras.optimizers.SGD(
                    learning_rate=0.1,
                )
                self.opt = hvd.DistributedOptimizer(self.opt)
                self.model.compile(optimizer=self.opt, loss="mse")

            def run(self, x, y):
                self.model.fit(x, y)
        """
    assert_rule(before, after, "HVD011")


def test_tf1_optimizer_is_wrapped():
    before = """
        import tensorflow.compat.v1 as tf

        def model_fn(features, labels, mode):
            loss = tf.reduce_mean(features)
            optimizer = tf.train.AdagradOptimizer(0.01)
            return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=optimizer.minimize(loss))

        classifier = tf.estimator.Estimator(model_fn)
        classifier.train(input_fn)
        """
    out = rule_output(src(before), "HVD011")
    assert "    optimizer = tf.train.AdagradOptimizer(0.01)\n    optimizer = hvd.DistributedOptimizer(optimizer)\n" in out


def test_tape_programs_average_in_the_tape_not_the_optimizer():
    assert_no_rule("import tensorflow as tf\nopt = tf.keras.optimizers.Adam(0.1)\n" + src(TAPE), "HVD011")


def test_negative_already_wrapped():
    text = """
        import tensorflow as tf
        import horovod.tensorflow.keras as hvd

        hvd.init()
        opt = tf.keras.optimizers.Adam(0.001 * hvd.size())
        opt = hvd.DistributedOptimizer(opt, backward_passes_per_step=2)
        model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
        model.compile(optimizer=opt, loss="mse")
        model.compile(optimizer=hvd.DistributedOptimizer(tf.keras.optimizers.SGD(0.1 * hvd.size())), loss="mse")
        """
    assert_no_rule(text, "HVD011")


# -- HVD012 ------------------------------------------------------------------------------
@pytest.mark.parametrize("name, cls, rate", [
    ("'adam'", "Adam", "0.001"), ('"sgd"', "SGD", "0.01"), ('"RMSprop"', "RMSprop", "0.001"),
    ("'adagrad'", "Adagrad", "0.001"), ("'Nadam'", "Nadam", "0.001"),
])
def test_compile_with_an_optimizer_name(name, cls, rate):
    before = f"import tensorflow as tf\nmodel = tf.keras.Sequential()\nmodel.compile({name}, loss='mse')\nmodel.fit(x, y)\n"
    after = ("import tensorflow as tf\nmodel = tf.keras.Sequential()\n"
             f"model.compile(hvd.DistributedOptimizer(tf.keras.optimizers.{cls}(learning_rate={rate} * hvd.size())), loss='mse')\n"
             "model.fit(x, y)\n")
    assert_rule(before, after, "HVD012")


def test_compile_keyword_uses_the_keras_alias():
    before = """
        from tensorflow import keras

        model = keras.Sequential()
        model.compile(loss="mse", optimizer="adam", metrics=["mae"])
        model.fit(x, y)
        """
    after = """
        from tensorflow import keras

        model = keras.Sequential()
        model.compile(loss="mse", optimizer=hvd.DistributedOptimizer(keras.optimizers.Adam(learning_rate=0.001 * hvd.size())), metrics=["mae"])
        model.fit(x, y)
        """
    assert_rule(before, after, "HVD012")


def test_unknown_names_and_f_strings_are_left_alone():
    assert_no_rule("""
        import tensorflow as tf

        model = tf.keras.Sequential()
        model.compile("lamb", loss="mse")
        model.compile(f"{name}", loss="mse")
        model.compile(loss="mse")
        model.fit(x, y)
        """, "HVD012")


# -- HVD013 ------------------------------------------------------------------------------
def test_schedule_variable_rate_is_scaled_not_the_schedule():
    before = """
        import tensorflow as tf

        schedule = tf.keras.optimizers.schedules.ExponentialDecay(
            initial_learning_rate=0.1,
            decay_steps=1000,
            decay_rate=0.96,
        )
        opt = tf.keras.optimizers.SGD(learning_rate=schedule)
        """
    after = """
        import tensorflow as tf

        schedule = tf.keras.optimizers.schedules.ExponentialDecay(
            initial_learning_rate=0.1 * hvd.size(),
            decay_steps=1000,
            decay_rate=0.96,
        )
        opt = tf.keras.optimizers.SGD(learning_rate=schedule)
        """
    assert_rule(before, after, "HVD013")
    assert_no_rule(before, "HVD010")


def test_inline_schedules():
    before = """
        import tensorflow as tf

        a = tf.keras.optimizers.Adam(tf.keras.optimizers.schedules.CosineDecay(1e-3, 1000))
        b = tf.keras.optimizers.Adam(tf.keras.optimizers.schedules.PolynomialDecay(0.1, 1000, end_learning_rate=0.01))
        c = tf.keras.optimizers.SGD(tf.keras.optimizers.schedules.PiecewiseConstantDecay([100, 200], [0.1, 0.01, 0.001]))
        d = tf.keras.optimizers.SGD(tf.keras.optimizers.schedules.PiecewiseConstantDecay(boundaries=[10], values=rates))
        """
    after = """
        import tensorflow as tf

        a = tf.keras.optimizers.Adam(tf.keras.optimizers.schedules.CosineDecay(1e-3 * hvd.size(), 1000))
        b = tf.keras.optimizers.Adam(tf.keras.optimizers.schedules.PolynomialDecay(0.1 * hvd.size(), 1000, end_learning_rate=0.01))
        c = tf.keras.optimizers.SGD(tf.keras.optimizers.schedules.PiecewiseConstantDecay([100, 200], [0.1 * hvd.size(), 0.01 * hvd.size(), 0.001 * hvd.size()]))
        d = tf.keras.optimizers.SGD(tf.keras.optimizers.schedules.PiecewiseConstantDecay(boundaries=[10], values=[rate * hvd.size() for rate in rates]))
        """
    assert_rule(before, after, "HVD013")


def test_custom_schedule_subclass():
    before = """
        import tensorflow as tf


        class Warmup(tf.keras.optimizers.schedules.LearningRateSchedule):
            def __init__(self, steps, peak_lr):
                self.steps, self.peak_lr = steps, peak_lr

            def __call__(self, step):
                return self.peak_lr * tf.minimum(1.0, step / self.steps)


        class NoamSchedule(tf.keras.optimizers.schedules.LearningRateSchedule):
            def __init__(self, d_model):
                self.d_model = d_model

            def __call__(self, step):
                return self.d_model ** -0.5


        a = tf.keras.optimizers.Adam(Warmup(100, peak_lr=3e-4))
        schedule = Warmup(100, 1e-3)
        b = tf.keras.optimizers.Adam(schedule)
        c = tf.keras.optimizers.Adam(NoamSchedule(512))
        """
    out = rule_output(src(before), "HVD013")
    assert "Warmup(100, peak_lr=3e-4 * hvd.size())" in out
    assert "schedule = Warmup(100, 1e-3 * hvd.size())" in out
    # Not a rate parameter: neither scaled nor is the schedule object multiplied.
    assert "NoamSchedule(512))" in out
    assert "hvd.size()" not in rule_output(src(before), "HVD010")


def test_negative_schedule_already_scaled():
    text = """
        import tensorflow as tf
        import horovod.tensorflow as hvd

        hvd.init()
        schedule = tf.keras.optimizers.schedules.InverseTimeDecay(0.1 * hvd.size(), 100, 0.5)
        opt = tf.keras.optimizers.SGD(schedule)
        """
    assert_no_rule(text, "HVD013")
    assert_no_rule(text, "HVD010")


def test_one_site_per_optimizer():
    text = src("import tensorflow as tf\nopt = tf.keras.optimizers.Adam(0.1)\n" + src(TAPE))
    assert len(sites(analyze(text), "HVD010")) == 1


@pytest.mark.parametrize("made", [
    "import argparse\np = argparse.ArgumentParser()\np.add_argument('--opt', default='adam')\nargs = p.parse_args()\nopt = args.opt\n",
    "import os\nopt = getattr(tf.keras.optimizers, os.environ.get('OPT', 'Adam'))(learning_rate=0.01)\n",
    "opt = tf.keras.optimizers.get('sgd')\n",
])
def test_an_optimizer_compile_gets_by_name_blocks_the_conversion(made):
    """``compile(optimizer=args.opt)``, ``getattr(tf.keras.optimizers, name)(...)``,
    ``optimizers.get(...)``: nothing would wrap it, so nothing would average the gradients
    (the ranks diverged with exit 0 and "3. gradients averaged: nothing to change"). Refused,
    with what to do; an optimizer built in the program converts."""
    head = "import numpy as np\nimport tensorflow as tf\n"
    tail = ("x = np.ones((64, 3), 'float32')\nmodel = tf.keras.Sequential([tf.keras.layers.Dense(1)])\n"
            "model.compile(loss='mse', optimizer=opt)\nmodel.fit(x, x[:, :1], epochs=2)\n")
    a = analyze(src(head + made + tail))
    (reason,) = [r for r in a.refusal_reasons() if r[0] == "point 3"]
    assert "not averaged" in reason[2] and "build it in the program" in reason[2]
    built = analyze(src(head + "opt = tf.keras.optimizers.SGD(0.01)\n" + tail))
    assert not built.refusal_reasons() and "HVD011" in {f.code for f in built.findings}


def test_a_rate_assigned_from_the_optimizers_own_rate_through_a_name_is_not_scaled_again():
    """``cur = K.get_value(opt.lr); opt.lr.assign(cur * 0.1)``: the value is the scaled rate
    decayed; scaling it again would multiply by N at each decay (re-review N2). A value from
    constants is scaled."""
    head = ("import numpy as np\nimport tensorflow as tf\nK = tf.keras.backend\nopt = tf.keras.optimizers.SGD(0.1)\n"
            "model = tf.keras.Sequential([tf.keras.layers.Dense(1)])\nds = tf.data.Dataset.from_tensor_slices("
            "(np.ones((32, 2), 'float32'), np.ones((32, 1), 'float32'))).batch(4)\nfor epoch in range(3):\n"
            "    for x, y in ds:\n        with tf.GradientTape() as tape:\n"
            "            loss = tf.reduce_mean(model(x) - y)\n"
            "        opt.apply_gradients(zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables))\n")
    relative = rule_output(src(head + "    cur = K.get_value(opt.lr)\n    opt.lr.assign(cur * 0.1)\n"), "HVD010")
    assert "opt.lr.assign(cur * 0.1)\n" in relative
    absolute = rule_output(src(head + "    base = 0.1 / (epoch + 1)\n    opt.lr.assign(base)\n"), "HVD010")
    assert "opt.lr.assign(base * hvd.size())\n" in absolute


def test_a_rate_set_by_attribute_or_set_value_is_scaled():
    """``opt.learning_rate = 0.01`` and ``K.set_value(model.optimizer.lr, 0.001)`` between two
    fits replace the scaled rate as ``assign`` does: scaled; a value read from the optimizer's
    own rate is left."""
    text = src("""
        import tensorflow as tf
        from tensorflow.keras import backend as K
        x = tf.random.normal((256, 4))
        y = tf.random.normal((256, 1))
        model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
        opt = tf.keras.optimizers.SGD(0.1)
        model.compile(optimizer=opt, loss="mse")
        model.fit(x, y, epochs=4, batch_size=32)
        opt.learning_rate = 0.01
        K.set_value(model.optimizer.lr, 0.001)
        model.optimizer.learning_rate = model.optimizer.learning_rate * 0.5
        model.fit(x, y, epochs=4, batch_size=32)
        """)
    out = rule_output(text, "HVD010")
    assert "opt.learning_rate = 0.01 * hvd.size()\n" in out
    assert "K.set_value(model.optimizer.lr, 0.001 * hvd.size())\n" in out
    assert "model.optimizer.learning_rate = model.optimizer.learning_rate * 0.5\n" in out


@pytest.mark.parametrize("compile_args", [
    "optimizer=tf.keras.optimizers.Adam(learning_rate=0.01), loss='mse'",
    "tf.keras.optimizers.Adam(learning_rate=0.01), loss='mse'",
])
def test_an_optimizer_built_in_compile_is_reported_once(compile_args):
    # (keras-team/keras examples/demo_functional.py: `check` listed its HVD010 and HVD011 twice)
    text = ("import numpy as np\nimport tensorflow as tf\n\nmodel = tf.keras.Sequential([tf.keras.layers.Dense(1)])\n"
            f"model.compile({compile_args})\nmodel.fit(np.ones((64, 4)), np.ones((64, 1)), epochs=4)\n")
    codes = sorted(f.code for f in analyze(text).findings if f.code in ("HVD010", "HVD011"))
    assert codes == ["HVD010", "HVD011"]


def test_a_named_optimizer_under_a_tape_train_step_is_only_scaled_and_reported_so():
    """compile('adam') for a train_step whose tape is wrapped (HVD020): the optimizer is scaled,
    not distributed (averaging once), and the finding says so (HVD010, point 4), not HVD012's
    'Use a scaled hvd.DistributedOptimizer' under point 3 for an edit that wraps nothing."""
    program = src("""
        import tensorflow as tf

        class M(tf.keras.Model):
            def train_step(self, data):
                x, y = data
                with tf.GradientTape() as tape:
                    loss = tf.reduce_mean((self(x, training=True) - y) ** 2)
                grads = tape.gradient(loss, self.trainable_variables)
                self.optimizer.apply_gradients(zip(grads, self.trainable_variables))
                return {"loss": loss}

        inputs = tf.keras.Input((4,))
        model = M(inputs, tf.keras.layers.Dense(1)(inputs))
        model.compile(optimizer="adam")
        model.fit(x, y, epochs=1)
        """)
    analysis = analyze(program)
    named = [f for f in analysis.rule_sites if f.code in ("HVD010", "HVD012") and "'adam'" in f.message]
    assert [f.code for f in named] == ["HVD010"] and "DistributedGradientTape" in named[0].message
    assert 'model.compile(optimizer=tf.keras.optimizers.Adam(learning_rate=0.001 * hvd.size()))' in analysis.converted()
