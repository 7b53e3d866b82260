"""The training-loop summary (seeds 001/003 section 3), one test per summary rule, and the
HVD100–HVD102 findings built from it."""

from horovodize.analysis.loop import ESTIMATOR, FIT, TAPE, ClassSummary, FuncSummary, ModuleSummary, ValueSummary

from .programs import ESTIMATOR as ESTIMATOR_PROGRAM
from .programs import KERAS_FIT, TAPE_MODULE, TAPE_SPLIT, TRAINER_CLASS

TAPE_STEP = """
    def step(x, y):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(model(x) - y))
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
"""


# -- ModuleSummary ------------------------------------------------------------------------------
def test_import_alias_gives_module_summary(check):
    r = check("import tensorflow as tf\nimport numpy as np\n")
    tf = r.summary.env["tf"]
    assert isinstance(tf, ModuleSummary) and tf.name == "tensorflow" and tf.members is None
    assert r.summary.env["np"].name == "numpy"


def test_dotted_import_nests_module_summaries(check):
    r = check("import tensorflow.keras.optimizers\nimport tensorflow.data\n")
    top = r.summary.env["tensorflow"]
    assert top.name == "tensorflow"
    assert top.members["keras"].name == "tensorflow.keras"
    assert top.members["keras"].members["optimizers"].name == "tensorflow.keras.optimizers"
    assert top.members["data"].name == "tensorflow.data"


def test_from_import_prefixes_the_module(check):
    r = check("from tensorflow.keras import optimizers as opts, layers\nfrom tensorflow import keras\n")
    assert r.summary.env["opts"].name == "tensorflow.keras.optimizers"
    assert r.summary.env["layers"].name == "tensorflow.keras.layers"
    assert r.summary.env["keras"].name == "tensorflow.keras"


def test_dotted_from_import_resolves_constructors(check):
    r = check("""
        import tensorflow as tf
        from tensorflow.keras.optimizers import Adam
        from tensorflow.keras import optimizers
        a = Adam(0.1)
        b = optimizers.SGD(0.2)
    """)
    roles = {b.name: (b.role, b.detail) for b in r.env.bindings}
    assert roles["a"] == ("optimizer", "Adam") and roles["b"] == ("optimizer", "SGD")


def test_import_inside_function_is_local_to_its_scope(check):
    r = check("import tensorflow as tf\ndef f():\n    import numpy as np\n")
    assert "np" not in r.summary.env
    assert r.summary.scope_of("f")["np"].name == "numpy"


# -- FuncSummary ------------------------------------------------------------------------------
def test_function_summary_is_the_join_of_its_body(check):
    r = check("import tensorflow as tf\nmodel = opt = None\n" + TAPE_STEP + "\ndef idle():\n    return 1\n")
    step = r.summary.env["step"]
    assert isinstance(step, FuncSummary) and step.tl == frozenset({TAPE})
    assert r.summary.env["idle"].tl == frozenset()


def test_method_summaries_live_in_their_class(check):
    r = check(TRAINER_CLASS)
    trainer = r.summary.env["Trainer"]
    assert isinstance(trainer, ClassSummary) and not trainer.model
    assert trainer.methods["step"].tl == frozenset({TAPE})
    assert trainer.methods["fit"].tl == frozenset({TAPE})          # through self.step
    assert trainer.methods["__init__"].tl == frozenset()
    assert r.summary.function("Trainer.step").cls == "Trainer"


def test_call_to_summarised_function_gives_its_kind(check):
    r = check(TAPE_SPLIT)
    assert r.summary.function("train_step").tl == frozenset({TAPE})
    assert r.summary.function("train").tl == frozenset({TAPE})
    assert r.summary.function("main").tl == frozenset({TAPE})
    assert r.summary.function("loss_fn").tl == frozenset()
    assert r.summary.module_tl == frozenset({TAPE})     # via the main guard's main()
    assert r.analysis.loop_kind == TAPE


def test_callee_defined_after_caller_is_followed(check):
    r = check("""
        import tensorflow as tf
        def outer():
            for x in range(3):
                inner()
        def inner():
            with tf.GradientTape() as tape:
                pass
        outer()
    """)
    assert r.summary.function("outer").tl == frozenset({TAPE})


def test_recursion_terminates(check):
    r = check("""
        import tensorflow as tf
        def a(n):
            with tf.GradientTape() as tape:
                pass
            return b(n - 1)
        def b(n):
            return a(n)
        a(3)
    """)
    assert r.summary.function("a").tl == r.summary.function("b").tl == frozenset({TAPE})


def test_tf_function_alias_runs_the_wrapped_function(check):
    r = check("""
        import tensorflow as tf
        model = opt = None
        def raw_step(x):
            with tf.GradientTape() as tape:
                pass
        step = tf.function(raw_step)
        def loop():
            for x in range(2):
                step(x)
    """)
    assert r.summary.function("loop").tl == frozenset({TAPE})
    assert [rel for rel in r.related(r.one("HVD100")) if "drives" in rel[1]] == [("for x in range(2):", "the `for` loop that drives this training step")]


# -- ClassSummary ------------------------------------------------------------------------------
def test_class_deriving_keras_model_is_a_model(check):
    r = check("""
        import tensorflow as tf
        import keras
        from tensorflow.keras import Model
        class A(tf.keras.Model): pass
        class B(keras.Model): pass
        class C(Model): pass
        class D(tf.keras.models.Model): pass
        class E(object): pass
    """)
    env = r.summary.env
    assert [env[n].arg for n in "ABCDE"] == ["Model", "Model", "Model", "Model", None]


def test_class_deriving_a_summarised_model_class_is_a_model(check):
    r = check("""
        import tensorflow as tf
        class Base(tf.keras.Model): pass
        class Net(Base): pass
        class Deeper(Net): pass
        class Plain: pass
        class NotModel(Plain): pass
    """)
    env = r.summary.env
    assert env["Net"].model and env["Deeper"].model and not env["NotModel"].model
    assert env["Deeper"].bases == ["Net"]


def test_class_with_keyword_base_is_a_model(check):
    r = check("import tensorflow as tf\nclass K(base=tf.keras.Model): pass\n")
    assert r.summary.env["K"].model


# -- ValueSummary ------------------------------------------------------------------------------
def test_instance_of_model_class_is_model_instance(check):
    r = check("""
        import tensorflow as tf
        class Net(tf.keras.Model): pass
        class Helper: pass
        net = Net()
        seq = tf.keras.Sequential([])
        helper = Helper()
        def main():
            local = Net(3)
    """)
    env = r.summary.env
    assert isinstance(env["net"], ValueSummary) and env["net"].kind == "model_instance" and env["net"].cls == "Net"
    assert env["seq"].kind == "model_instance"
    assert env["helper"].kind == "instance" and env["helper"].cls == "Helper"
    assert r.summary.scope_of("main")["local"].kind == "model_instance"


def test_self_attributes_are_summarised_on_the_class(check):
    r = check("""
        import tensorflow as tf
        class Net(tf.keras.Model): pass
        class Trainer:
            def __init__(self):
                self.net = Net()
    """)
    assert r.summary.env["Trainer"].attrs["self.net"].kind == "model_instance"


# -- statements carrying their body's kind -----------------------------------------------------
def test_for_body_carries_its_kind(check):
    r = check(TAPE_MODULE)
    assert r.summary.module_tl == frozenset({TAPE})


def test_while_body_carries_its_kind(check):
    r = check("""
        import tensorflow as tf
        model = tf.keras.Sequential([])
        while True:
            model.fit(x, y)
    """)
    assert r.summary.module_tl == frozenset({FIT})


def test_with_body_carries_its_kind(check):
    r = check("""
        import tensorflow as tf
        model = tf.keras.Sequential([])
        with tf.device("/cpu:0"):
            model.fit(x, y)
    """)
    assert r.summary.module_tl == frozenset({FIT})
    assert r.codes().count("HVD101") == 1


def test_try_body_carries_its_kind(check):
    r = check("""
        import tensorflow as tf
        def run():
            try:
                with tf.GradientTape() as tape:
                    pass
            except RuntimeError:
                pass
    """)
    assert r.summary.function("run").tl == frozenset({TAPE})
    assert "HVD-T5" not in r.codes()


# -- expressions ---------------------------------------------------------------------------------
def test_gradient_tape_through_an_alias(check):
    r = check("import tensorflow as t\ndef f():\n    with t.GradientTape() as g:\n        pass\n")
    assert r.summary.function("f").tl == frozenset({TAPE})
    assert r.at("HVD100") == ["t.GradientTape() as g"]


def test_fit_on_model_gives_keras_fit(check):
    r = check(KERAS_FIT)
    assert r.summary.kinds == frozenset({FIT})
    assert r.summary.hvd_module == "horovod.tensorflow.keras"


def test_fit_on_compiled_name_gives_keras_fit(check):
    r = check("""
        import tensorflow as tf
        def go(model):
            model.compile(optimizer="adam", loss="mse")
            model.fit(x, y)
    """)
    assert r.summary.function("go").tl == frozenset({FIT})


def test_fit_on_something_else_is_bottom(check):
    r = check("import tensorflow as tf\nfrom sklearn.linear_model import Ridge\nreg = Ridge()\nreg.fit(x, y)\n")
    assert r.summary.kinds == frozenset()
    assert "HVD101" not in r.codes()


def test_estimator_train_gives_estimator(check):
    r = check(ESTIMATOR_PROGRAM)
    assert r.summary.kinds == frozenset({ESTIMATOR})
    assert r.summary.env["estimator"].kind == "estimator"


def test_train_and_evaluate_gives_estimator(check):
    r = check("""
        import tensorflow as tf
        est = tf.estimator.DNNRegressor(hidden_units=[2], feature_columns=[])
        tf.estimator.train_and_evaluate(est, train_spec, eval_spec)
    """)
    f = r.one("HVD102")
    assert r.src(f) == "tf.estimator.train_and_evaluate(est, train_spec, eval_spec)"
    assert r.related(f)[0][1] == "estimator `est` is created here"


# -- interprocedural and methods ------------------------------------------------------------------
def test_loop_through_instance_of_local_class(check):
    r = check(TRAINER_CLASS)
    assert r.summary.module_tl == frozenset({TAPE})
    assert r.summary.env["trainer"].kind == "instance"
    f = r.one("HVD100")
    rel = r.related(f)
    assert rel[0] == ("for x, y in dataset:", "the `for` loop that drives this training step")
    assert ("self.optimizer.apply_gradients(zip(grads, self.model.trainable_variables))",
            "`self.optimizer.apply_gradients` applies this tape's gradients") in rel
    assert ("opt = tf.keras.optimizers.Adam(0.01)", "optimizer `opt` is created here") in rel


def test_method_on_fresh_instance(check):
    r = check("""
        import tensorflow as tf
        class Loop:
            def run(self):
                with tf.GradientTape() as tape:
                    pass
        Loop().run()
    """)
    assert r.summary.module_tl == frozenset({TAPE})


def test_inherited_method_through_self(check):
    r = check("""
        import tensorflow as tf
        class Base:
            def step(self):
                with tf.GradientTape() as tape:
                    pass
        class Child(Base):
            def train(self):
                for _ in range(3):
                    self.step()
        Child().train()
    """)
    assert r.summary.function("Child.train").tl == frozenset({TAPE})
    assert "for _ in range(3):" in [t for t, _ in r.related(r.one("HVD100"))]


def test_parameters_resolve_through_call_sites(check):
    r = check(TAPE_SPLIT)
    step = r.summary.function("train_step").node
    inside = next(c.node for c, owner in r.env.index.calls if owner is step and c.method == "apply_gradients")
    b = r.env.lookup("optimizer", inside, "optimizer")
    assert b is not None and b.detail == "SGD" and b.scope is r.summary.function("main").node
    # so the rule sites inside the split loop are found
    assert r.at("HVD021") == ["optimizer.apply_gradients(zip(grads, model.trainable_variables))"]
    assert r.at("HVD010") == ["0.05"]


def test_keras_train_step_override_belongs_to_fit(check):
    r = check("""
        import tensorflow as tf
        class Net(tf.keras.Model):
            def train_step(self, data):
                x, y = data
                with tf.GradientTape() as tape:
                    loss = self.compiled_loss(y, self(x))
                grads = tape.gradient(loss, self.trainable_variables)
                self.optimizer.apply_gradients(zip(grads, self.trainable_variables))
                return {"loss": loss}
        model = Net()
        model.compile(optimizer="sgd", loss="mse")
        model.fit(x, y)
    """)
    assert r.summary.kinds == frozenset({FIT})
    assert "HVD100" not in r.codes() and "HVD-T3" not in r.codes()
    assert ("tf.GradientTape() as tape", "the custom `train_step` of `Net` runs inside this fit") in r.related(r.one("HVD101"))


def test_mixed_kinds_are_kept(check):
    r = check("""
        import tensorflow as tf
        model = tf.keras.Sequential([])
        other = tf.keras.Sequential([])
        model.fit(x, y)
        with tf.GradientTape() as tape:
            loss = other(x)
    """)
    assert r.summary.kinds == frozenset({FIT, TAPE})
    assert r.summary.label == "mixed"


# -- the HVD10x findings ------------------------------------------------------------------------
def test_tape_finding_range_severity_and_related(check):
    r = check(TAPE_MODULE)
    f = r.one("HVD100")
    assert r.src(f) == "tf.GradientTape() as tape"
    assert f.severity == "information"
    assert r.related(f) == [
        ("for step, (x, y) in enumerate(ds.take(2)):", "the `for` loop that drives this training step"),
        ("opt.apply_gradients(zip(grads, model.trainable_variables))", "`opt.apply_gradients` applies this tape's gradients"),
        ("opt = tf.keras.optimizers.Adam(0.01)", "optimizer `opt` is created here"),
    ]


def test_driver_is_found_through_callers(check):
    r = check(TAPE_SPLIT)
    rel = r.related(r.one("HVD100"))
    assert rel[0] == ("for x, y in dataset:", "the `for` loop that drives this training step")
    assert ("optimizer = tf.keras.optimizers.SGD(learning_rate=0.05)", "optimizer `optimizer` is created here") in rel


def test_apply_gradients_in_caller_is_related(check):
    r = check("""
        import tensorflow as tf
        model = tf.keras.Sequential([])
        opt = tf.keras.optimizers.SGD(0.1)
        def grads_of(x):
            with tf.GradientTape() as tape:
                loss = model(x)
            return tape.gradient(loss, model.trainable_variables)
        def step(x):
            g = grads_of(x)
            opt.apply_gradients(zip(g, model.trainable_variables))
    """)
    assert ("opt.apply_gradients(zip(g, model.trainable_variables))",
            "`opt.apply_gradients` applies this tape's gradients") in r.related(r.one("HVD100"))


def test_fit_finding_range_and_related(check):
    r = check(KERAS_FIT)
    f = r.one("HVD101")
    assert r.src(f) == "model.fit(x, y, batch_size=8, epochs=2)"
    assert f.message == "single-GPU optimizer detected: Keras fit training loop"
    assert [m for _, m in r.related(f)] == [
        "model `model` is created here", "`model.compile` sets the optimizer this fit trains with",
        "optimizer `opt` is created here"]


def test_estimator_finding_range_and_related(check):
    r = check(ESTIMATOR_PROGRAM)
    f = r.one("HVD102")
    assert r.src(f) == "estimator.train(input_fn=input_fn, steps=5)"
    assert r.related(f) == [
        ('estimator = tf.estimator.Estimator(model_fn=model_fn, model_dir="/tmp/est")', "estimator `estimator` is created here"),
        ("optimizer = tf.train.GradientDescentOptimizer(learning_rate=0.1)", "optimizer `optimizer` is created here"),
    ]


def test_distributed_tape_loop_gets_no_loop_finding(check):
    r = check("""
        import tensorflow as tf
        import horovod.tensorflow as hvd
        hvd.init()
        model = tf.keras.Sequential([])
        opt = tf.keras.optimizers.SGD(0.01 * hvd.size())
        for x in ds:
            with tf.GradientTape() as tape:
                loss = model(x)
            tape = hvd.DistributedGradientTape(tape)
            opt.apply_gradients(zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables))
    """)
    assert not {"HVD100", "HVD101", "HVD102"} & set(r.codes())
    assert r.summary.kinds == frozenset({TAPE})


def test_distributed_fit_loop_gets_no_loop_finding(check):
    r = check("""
        import tensorflow as tf
        import horovod.tensorflow.keras as hvd
        hvd.init()
        model = tf.keras.Sequential([])
        opt = hvd.DistributedOptimizer(tf.keras.optimizers.Adam(0.001 * hvd.size()))
        model.compile(optimizer=opt, loss="mse")
        callbacks = [hvd.callbacks.BroadcastGlobalVariablesCallback(0)]
        model.fit(x, y, callbacks=callbacks, verbose=1 if hvd.rank() == 0 else 0)
    """)
    assert not {"HVD100", "HVD101", "HVD102"} & set(r.codes())


def test_distributed_estimator_gets_no_loop_finding(check):
    r = check("""
        import tensorflow.compat.v1 as tf
        import horovod.tensorflow as hvd
        est = tf.estimator.Estimator(model_fn=model_fn)
        est.train(input_fn, hooks=[hvd.BroadcastGlobalVariablesHook(0)])
    """)
    assert "HVD102" not in r.codes()


def test_not_a_tensorflow_program_has_no_summary(check):
    r = check("import numpy as np\nfor x in range(3):\n    print(x)\n")
    assert r.analysis.findings == [] and r.summary is None


def test_gradients_allreduced_by_hand_are_a_distributed_tape(check):
    # keras-io actor_critic as converted: the grads of a tape averaged with hvd.allreduce one
    # by one (no DistributedGradientTape) is Horovod training, not a single-GPU loop
    src = """
import horovod.tensorflow as hvd
import tensorflow as tf
hvd.init()
w = tf.Variable(1.0)
opt = tf.keras.optimizers.Adam(0.01 * hvd.size())
for step in range(3):
    with tf.GradientTape() as tape:
        loss = w * w
    grads = tape.gradient(loss, [w])
    grads = [None if g is None else hvd.allreduce(g) for g in grads]
    opt.apply_gradients(zip(grads, [w]))
"""
    assert "HVD100" not in check(src).codes()
    assert "HVD100" in check(src.replace("hvd.allreduce(g)", "g")).codes()
