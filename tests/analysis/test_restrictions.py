"""Restrictions R1–R10 and T1–T5: a warning with a precise range on the offending
construct, naming the rules it blocks; the blocked rule yields no edit there. Each has a
positive and a negative case (ordinary training code that must not be flagged)."""

import pytest

from horovodize.analysis.restrictions import SYNC_RULES

from .programs import ALL, ESTIMATOR, KERAS_FIT, TAPE_MODULE, TAPE_SPLIT, TRAINER_CLASS

HEAD = """\
import tensorflow as tf

model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
ds = tf.data.Dataset.from_tensor_slices((tf.ones((4, 2)), tf.ones((4, 1)))).batch(2)
"""
STEP = """
@tf.function
def train_step(x, y):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(model(x) - y))
    grads = tape.gradient(loss, model.trainable_variables)
    opt.apply_gradients(zip(grads, model.trainable_variables))
    return loss
"""
LOOP = """
for x, y in ds:
    train_step(x, y)
"""


def restriction_codes(r):
    return [c for c in r.codes() if c.startswith("HVD-")]


def assert_blocks(r, f, *codes):
    """The finding names exactly these rules, as data and in its message, at warning severity.

    A restriction that stops one synchronisation rule stops all of them (all or nothing)."""
    assert f.severity == "warning"
    if set(codes) & set(SYNC_RULES):
        codes = tuple(dict.fromkeys(codes + SYNC_RULES))
    assert set(f.blocks) == set(codes), f.blocks
    assert "(blocks" not in f.message         # short: the list travels in `blocks` (JSON, hover)


@pytest.mark.parametrize("name", sorted(ALL))
def test_ordinary_programs_have_no_restriction(check, name):
    assert restriction_codes(check(ALL[name])) == []


# -- R1 ------------------------------------------------------------------------------------------
def test_r1_tensorflow_imported_below_code_gets_the_setup_after_it(check):
    r = check("import numpy as np\nnp.random.seed(0)\nimport tensorflow as tf\n" + HEAD.split("\n", 1)[1]
              + "opt = tf.keras.optimizers.Adam(0.1)\n" + STEP + LOOP)
    assert "HVD-R1" not in r.codes() and not r.analysis.refused
    out = r.analysis.converted()
    assert out.startswith("import numpy as np\nnp.random.seed(0)\nimport tensorflow as tf\n"
                          "import horovod.tensorflow as hvd\nhvd.init()\n")
    assert "DistributedGradientTape" in out


def test_r1_late_import_with_an_edit_above_puts_the_setup_at_the_top(check):
    r = check("import numpy as np\nprint('loading')\nimport tensorflow as tf\n" + HEAD.split("\n", 1)[1]
              + "opt = tf.keras.optimizers.Adam(0.1)\n" + STEP + LOOP)
    assert "HVD-R1" not in r.codes()
    out = r.analysis.converted()
    head = out.split("if hvd.rank() == 0: print('loading')")[0]
    assert "import tensorflow as tf\nimport horovod.tensorflow as hvd\nhvd.init()" in head


def test_r1_the_same_import_again_below_code_does_not_block(check):
    """(a course's notebooks: `import tensorflow as tf` at the top, then again in a later cell)
    the set-up follows the first import; the second binds the same name to the same module."""
    r = check("import tensorflow as tf\nprint(tf.__version__)\nimport tensorflow as tf\n"
              "model = tf.keras.Sequential([tf.keras.layers.Dense(1)])\n"
              "model.compile(optimizer='sgd', loss='mse')\nmodel.fit(x, y, epochs=5)\n")
    assert not r.analysis.refused
    out = r.analysis.converted()
    assert out.startswith("import tensorflow as tf\nimport math\nimport horovod.tensorflow.keras as hvd\nhvd.init()\n")
    compile(out, "converted", "exec")


def test_r1_another_import_below_code_still_blocks(check):
    r = check("import tensorflow as tf\nprint(tf.__version__)\nimport tensorflow.compat.v1 as tf\n"
              "model = tf.keras.Sequential([tf.keras.layers.Dense(1)])\n"
              "model.compile(optimizer='sgd', loss='mse')\nmodel.fit([1., 2.], [2., 4.], epochs=5)\n")
    assert "HVD-R1" in r.codes()


def test_r1_import_inside_function(check):
    r = check("import os\ndef main():\n    import tensorflow as tf\n    model = tf.keras.Sequential([])\n    model.fit(x, y)\n")
    f = r.one("HVD-R1")
    assert r.src(f) == "import tensorflow as tf" and "inside a function" in f.message
    assert "move the import to the top of the module" in f.message
    assert r.analysis.conversion_edits() == [] and r.analysis.refused


def test_r1_late_import_the_setup_does_not_need_blocks_nothing(check):
    r = check(HEAD + "tf.random.set_seed(1)\nfrom tensorflow.keras import layers\nopt = tf.keras.optimizers.Adam(0.1)\n" + STEP + LOOP)
    f = r.one("HVD-R1")
    assert r.src(f) == "from tensorflow.keras import layers"
    assert_blocks(r, f)
    assert "HVD001" in r.codes() and "HVD020" in r.codes()


def test_r1_negative_docstring_environ_and_future_before_imports(check):
    r = check('"""Doc."""\nfrom __future__ import annotations\nimport os\nos.environ["TF_CPP_MIN_LOG_LEVEL"] = "2"\n'
              "import tensorflow as tf\nmodel = tf.keras.Sequential([])\nmodel.fit(x, y)\n")
    assert "HVD-R1" not in r.codes() and "HVD002" in r.codes()


# -- R2 ------------------------------------------------------------------------------------------
def test_r2_module_rebound_by_assignment(check):
    r = check("import tensorflow\ntf = tensorflow\nmodel = tf.keras.Sequential([])\nmodel.fit(x, y)\n")
    f = r.one("HVD-R2")
    assert r.src(f) == "tf = tensorflow"
    assert_blocks(r, f, "HVD001", "HVD002")
    assert r.analysis.conversion_edits() == []
    assert "HVD101" in r.codes()      # the alias is followed, so the loop is still found


def test_r2_module_bound_by_import_module(check):
    r = check("import importlib\ntf = importlib.import_module('tensorflow')\nwith tf.GradientTape() as t:\n    pass\n")
    f = r.one("HVD-R2")
    assert r.src(f) == "tf = importlib.import_module('tensorflow')"
    assert "HVD100" in r.codes() and r.analysis.conversion_edits() == []


def test_r2_negative_import_aliases(check):
    r = check("import tensorflow as tf\nimport tensorflow.compat.v1 as tf1\n")
    assert "HVD-R2" not in r.codes()


# -- R3 ------------------------------------------------------------------------------------------
def test_r3_member_alias_blocks_what_is_created_through_it(check):
    r = check(HEAD + "Adam = tf.optimizers.Adam\nopt = Adam(0.01)\n" + STEP + LOOP)
    f = r.one("HVD-R3")
    assert r.src(f) == "Adam = tf.optimizers.Adam"
    assert_blocks(r, f, "HVD010", "HVD011", "HVD021")
    assert r.related(f) == [("Adam(0.01)", "created through `Adam` here")]
    assert "HVD010" not in r.codes() and "HVD021" not in r.codes()
    assert r.edits_within("opt = Adam(0.01)") == []
    assert "HVD020" not in r.codes()             # all or nothing: the tape is not wrapped either


def test_r3_module_alias_converts(check):
    """``keras = tf.keras`` binds a module: what is created through it resolves to its
    qualified name (``tensorflow.keras.optimizers.SGD``), so the rules rewrite it in place."""
    r = check("import tensorflow as tf\nkeras = tf.keras\nmodel = keras.Sequential([])\n"
              "opt = keras.optimizers.SGD(0.1)\nmodel.compile(optimizer=opt, loss='mse')\nmodel.fit(x, y)\n")
    assert restriction_codes(r) == [] and not r.analysis.refused
    assert {"HVD010", "HVD011", "HVD050", "HVD051"} <= set(r.codes())
    assert "opt = keras.optimizers.SGD(0.1 * hvd.size())\nopt = hvd.DistributedOptimizer(opt)\n" in r.converted()


def test_r3_member_alias_of_a_class_still_blocks(check):
    r = check("import tensorflow as tf\nSGD = tf.keras.optimizers.SGD\nmodel = tf.keras.Sequential([])\n"
              "opt = SGD(0.1)\nmodel.compile(optimizer=opt, loss='mse')\nmodel.fit(x, y)\n")
    f = r.one("HVD-R3")
    assert {"HVD010", "HVD011", "HVD050"} <= set(f.blocks)
    assert not {"HVD010", "HVD011", "HVD050"} & set(r.codes())


def test_r3_negative_aliases_no_rule_uses(check):
    r = check(HEAD + "layers = tf.keras.layers\nAUTOTUNE = tf.data.AUTOTUNE\nDense = tf.keras.layers.Dense\n")
    assert "HVD-R3" not in r.codes()


def test_r3_applications_functions_create_nothing_trainable(check):
    r = check("import tensorflow as tf\npreprocess_input = tf.keras.applications.mobilenet_v2.preprocess_input\n"
              "decode = tf.keras.applications.resnet50.decode_predictions\n"
              "base = tf.keras.applications.MobileNetV2(weights=None)\nx = preprocess_input(tf.zeros((1, 224, 224, 3)))\n"
              "model = tf.keras.Sequential([base])\nmodel.compile(optimizer=tf.keras.optimizers.Adam(0.1), loss='mse')\n"
              "model.fit(x, x)\n")
    assert "HVD-R3" not in r.codes() and not r.analysis.refused
    assert {"HVD010", "HVD011", "HVD050"} <= set(r.codes())
    assert r.analysis.env.lookup("x", None, "model") is None     # a preprocessed tensor is not a model


def test_r3_alias_of_an_applications_model_constructor_still_reported(check):
    r = check("import tensorflow as tf\nNet = tf.keras.applications.MobileNetV2\nmodel = Net(weights=None)\n"
              "model.compile(optimizer='adam', loss='mse')\nmodel.fit(x, y)\n")
    assert r.one("HVD-R3")


# -- R4 ------------------------------------------------------------------------------------------
def test_r4_print_with_side_effect_is_not_guarded(check):
    r = check(HEAD + "it = iter(ds)\nprint(next(it))\nprint('size', 3)\n")
    f = r.one("HVD-R4")
    assert r.src(f) == "next(it)"
    assert_blocks(r, f, "HVD030")
    assert r.at("HVD030") == ["print('size', 3)"]
    assert r.edits_within("print(next(it))") == []


def test_r4_print_calling_a_state_changing_function(check):
    r = check(HEAD + "count = 0\ndef bump():\n    global count\n    count += 1\n    return count\nprint(bump())\n")
    assert r.src(r.one("HVD-R4")) == "bump()"


def test_r4_negative_pure_arguments(check):
    r = check(HEAD + "def fmt(v):\n    return f'{v:.3f}'\nloss = 1.0\n"
              "print(f'loss {float(loss):.2f}', fmt(loss), len([1]), model.count_params())\n")
    assert "HVD-R4" not in r.codes() and len(r.all("HVD030")) == 1


# -- R5 ------------------------------------------------------------------------------------------
def test_r5_optimizer_created_twice(check):
    r = check(HEAD + "opt = tf.keras.optimizers.Adam(0.01)\nopt = tf.keras.optimizers.SGD(0.1)\n" + STEP + LOOP)
    f = r.one("HVD-R5")
    assert r.src(f) == "opt = tf.keras.optimizers.SGD(0.1)"
    assert_blocks(r, f, "HVD010", "HVD011", "HVD021")
    assert r.related(f) == [("opt = tf.keras.optimizers.Adam(0.01)", "first created here")]
    assert not {"HVD010", "HVD021"} & set(r.codes())


def test_r5_optimizer_aliased(check):
    r = check(HEAD + "opt = tf.keras.optimizers.Adam(0.01)\nopt2 = opt\n" + STEP + LOOP)
    f = r.one("HVD-R5")
    assert r.src(f) == "opt2 = opt" and "aliased" in f.message
    assert "HVD021" not in r.codes()


def test_r5_dataset_created_in_a_loop(check):
    r = check(HEAD + "for path in paths:\n    data = tf.data.TFRecordDataset(path)\n    data = data.take(10)\n")
    f = r.one("HVD-R5")
    assert r.src(f) == "data = tf.data.TFRecordDataset(path)" and "inside a loop" in f.message
    assert_blocks(r, f, "HVD040")
    assert "HVD040" not in r.codes()


def test_r5_inline_optimizer_passed_as_argument(check):
    r = check(HEAD + "def train(model, opt):\n    pass\ntrain(model, tf.keras.optimizers.Adam(0.1))\n")
    f = r.one("HVD-R5")
    assert r.src(f) == "tf.keras.optimizers.Adam(0.1)" and "without an assignment" in f.message


def test_r5_negative_derived_datasets_and_wrapped_optimizer(check):
    r = check(HEAD + "ds = ds.shuffle(8)\nds = ds.map(lambda x, y: (x, y)).batch(2)\n"
              "test = tf.data.Dataset.range(3)\nmodel.compile(optimizer=tf.keras.optimizers.Adam(0.1), loss='mse')\n"
              "opt = tf.keras.optimizers.Adam(0.01)\nopt = tf.keras.mixed_precision.LossScaleOptimizer(opt)\n")
    assert restriction_codes(r) == []


def test_r5_negative_optimizer_given_to_the_keras3_adapter(check):
    # a keras3 conversion's `DistributedOptimizer(...)`, a function of the program (docs/keras3.md):
    # a wrapper, as Horovod's is (`check` on a converted program flagged it)
    r = check(HEAD + "def DistributedOptimizer(optimizer):\n    return optimizer\n"
              "model.compile(optimizer=DistributedOptimizer(tf.keras.optimizers.Adam(0.1)), loss='mse')\n")
    assert restriction_codes(r) == []


# -- R6 ------------------------------------------------------------------------------------------
def test_r6_optimizer_variable_reassigned(check):
    r = check(HEAD + "opt = tf.keras.optimizers.Adam(0.01)\n" + STEP + LOOP + "opt = None\n")
    f = r.one("HVD-R6")
    assert r.src(f) == "opt = None"
    assert_blocks(r, f, "HVD010", "HVD011", "HVD021")
    assert not {"HVD010", "HVD021"} & set(r.codes())


def test_r6_negative_placeholder_before_creation(check):
    r = check(HEAD + "opt = None\nopt = tf.keras.optimizers.Adam(0.01)\n" + STEP + LOOP)
    assert restriction_codes(r) == [] and "HVD021" in r.codes()


# -- R7 ------------------------------------------------------------------------------------------
def test_r7_optimizer_created_in_if(check):
    r = check(HEAD + "import random\nif random.random() < 0.5:\n    opt = tf.keras.optimizers.SGD(0.1)\nelse:\n"
              "    opt = tf.keras.optimizers.Adam(0.01)\n" + STEP + LOOP)
    found = r.all("HVD-R7")
    assert [r.src(f) for f in found] == ["opt = tf.keras.optimizers.SGD(0.1)", "opt = tf.keras.optimizers.Adam(0.01)"]
    assert_blocks(r, found[0], "HVD010", "HVD011", "HVD021")
    assert r.related(found[0]) == [("if random.random() < 0.5:", "the condition")]
    assert "may differ between ranks" in found[0].message
    assert not {"HVD010", "HVD021"} & set(r.codes())
    assert "hvd.size()" not in r.converted()


FIT_TAIL = "model.compile(optimizer=opt, loss='mse')\nmodel.fit(ds, epochs=2)\n"


@pytest.mark.parametrize("head, test", [
    ("import argparse\np = argparse.ArgumentParser()\np.add_argument('--sgd', action='store_true')\n"
     "args = p.parse_args()\n", "args.sgd"),
    ("from absl import flags\nFLAGS = flags.FLAGS\n", "FLAGS.optimizer == 'sgd'"),
    ("USE_SGD = False\n", "USE_SGD"),
    ("import sys\n", "len(sys.argv) > 1"),
])
def test_r7_optimizer_chosen_by_a_test_the_same_on_every_rank_converts(check, head, test):
    """A flag, a command-line value or a module constant takes the same branch on every
    rank: each branch's creation is scaled, the chosen optimizer is wrapped."""
    r = check(HEAD + head + f"if {test}:\n    opt = tf.keras.optimizers.SGD(0.1)\nelse:\n"
              "    opt = tf.keras.optimizers.Adam(0.01)\n" + FIT_TAIL)
    assert restriction_codes(r) == [] and not r.analysis.refused
    out = r.converted()
    assert "SGD(0.1 * hvd.size())" in out and "Adam(0.01 * hvd.size())" in out
    assert out.count("opt = hvd.DistributedOptimizer(opt)") == 2
    r = check(HEAD + head + f"opt = tf.keras.optimizers.SGD(0.1) if {test} else tf.keras.optimizers.Adam(0.01)\n"
              + FIT_TAIL)
    assert restriction_codes(r) == []
    assert "SGD(0.1 * hvd.size()) if" in r.converted() and "opt = hvd.DistributedOptimizer(opt)" in r.converted()


@pytest.mark.parametrize("test", ["hvd.rank() == 0", "np.random.rand() > 0.5", "os.path.exists('/tmp/x')", "i > 2"])
def test_r7_optimizer_chosen_by_a_per_rank_or_unknown_test_blocks(check, test):
    r = check(HEAD + "import numpy as np\nimport os\nimport horovod.tensorflow.keras as hvd\nhvd.init()\n"
              "for i in range(3):\n    pass\n"
              f"opt = tf.keras.optimizers.SGD(0.1) if {test} else tf.keras.optimizers.Adam(0.01)\n" + FIT_TAIL)
    assert [f.code for f in r.all("HVD-R7")] == ["HVD-R7"], r.codes()
    assert "0.1 * hvd.size()" not in r.converted()


def test_r5_optimizer_created_for_two_experiments_converts_with_fit(check):
    """Two fit experiments, one name: each creation scaled and wrapped where it is made."""
    r = check(HEAD + "opt = tf.keras.optimizers.Adam(0.01)\n" + FIT_TAIL + "opt = tf.keras.optimizers.SGD(0.1)\n"
              + FIT_TAIL)
    assert restriction_codes(r) == []
    out = r.converted()
    assert "Adam(0.01 * hvd.size())" in out and "SGD(0.1 * hvd.size())" in out
    assert out.count("opt = hvd.DistributedOptimizer(opt)") == 2


def test_r5_default_argument_optimizer_from_a_helper_converts(check):
    """tensorflow/docs overfit_and_underfit: ``if optimizer is None: optimizer = get_optimizer()``."""
    r = check(HEAD + "def get_optimizer():\n    return tf.keras.optimizers.Adam(0.001)\n"
              "def compile_and_fit(model, name, optimizer=None):\n    if optimizer is None:\n"
              "        optimizer = get_optimizer()\n    model.compile(optimizer=optimizer, loss='mse')\n"
              "    return model.fit(ds, epochs=2)\ncompile_and_fit(model, 'tiny')\n")
    assert restriction_codes(r) == []
    out = r.converted()
    assert "return tf.keras.optimizers.Adam(0.001 * hvd.size())" in out
    assert "        optimizer = get_optimizer()\n        optimizer = hvd.DistributedOptimizer(optimizer)\n" in out


def test_r7_conditional_expression_and_except_handler(check):
    r = check(HEAD + "opt = tf.keras.optimizers.SGD(0.1) if fast else tf.keras.optimizers.Adam()\n"
              "try:\n    data = tf.data.Dataset.range(4)\nexcept OSError:\n    data = tf.data.Dataset.range(2)\n")
    assert r.at("HVD-R7") == ["opt = tf.keras.optimizers.SGD(0.1) if fast else tf.keras.optimizers.Adam()",
                              "data = tf.data.Dataset.range(2)"]
    assert r.related(r.all("HVD-R7")[1]) == [("except OSError:", "the condition")]


def test_r7_negative_main_guard_try_body_and_with(check):
    r = check(HEAD + 'if __name__ == "__main__":\n    opt = tf.keras.optimizers.Adam(0.01)\n'
              + STEP.replace("\n", "\n    ") + "\n"
              "    try:\n        data = tf.data.Dataset.range(4)\n    finally:\n        pass\n"
              "    with tf.device('/cpu:0'):\n        ckpt = tf.train.Checkpoint(model=model)\n"
              "    for x, y in ds:\n        train_step(x, y)\n")
    assert restriction_codes(r) == []
    assert "HVD021" in r.codes()


# -- R8 ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("line, where", [
    ("results = [opt.apply_gradients(zip(grads, model.trainable_variables))]", "inside a list"),
    ("log(opt.apply_gradients(zip(grads, model.trainable_variables)))", "an argument of a call"),
    ("return opt.apply_gradients(zip(grads, model.trainable_variables))", "returned"),
])
def test_r8_apply_gradients_not_a_statement(check, line, where):
    step = STEP.replace("    opt.apply_gradients(zip(grads, model.trainable_variables))\n    return loss", "    " + line)
    r = check(HEAD + "opt = tf.keras.optimizers.Adam(0.01)\n" + step + LOOP)
    f = r.one("HVD-R8")
    assert r.src(f) == "opt.apply_gradients(zip(grads, model.trainable_variables))" and where in f.message
    assert_blocks(r, f, "HVD021")
    assert not {"HVD020", "HVD021"} & set(r.codes())   # all or nothing


def test_r8_negative_statement_and_assignment(check):
    step = STEP.replace("    opt.apply_gradients(", "    op = opt.apply_gradients(")
    r = check(HEAD + "opt = tf.keras.optimizers.Adam(0.01)\n" + step + LOOP)
    assert "HVD-R8" not in r.codes() and "HVD021" in r.codes()


def test_r8_negative_tf1_optimizer_in_an_estimator_model_fn(check):
    """``EstimatorSpec(train_op=optimizer.apply_gradients(...))``: the TF1 optimizer is
    wrapped where it is created and the Estimator broadcasts by a hook, so nothing is
    inserted after the call and its place does not matter."""
    r = check(ESTIMATOR.replace(
        "train_op = optimizer.minimize(loss, global_step=tf.train.get_or_create_global_step())\n"
        "    return tf.estimator.EstimatorSpec(mode=mode, loss=loss, train_op=train_op)",
        "return tf.estimator.EstimatorSpec(mode=mode, loss=loss, train_op=optimizer.apply_gradients(\n"
        "        optimizer.compute_gradients(loss), global_step=tf.train.get_or_create_global_step()))"))
    assert restriction_codes(r) == [] and not r.analysis.refused
    assert {"HVD010", "HVD011", "HVD060"} <= set(r.codes())


def test_fit_with_unpacked_arguments_is_reported_not_done(check):
    """``model.fit(**params)``: no edit can reach its callbacks; the report says so."""
    r = check(KERAS_FIT.replace("model.fit(x, y, batch_size=8, epochs=2)", "params = dict(x=x, y=y)\nmodel.fit(**params)"))
    notes = [(p, text) for p, _line, text in r.analysis.notes]
    assert [p for p, _ in notes] == [2, 6, 7] and all("unpacked" in t and "BroadcastGlobalVariablesCallback" in t
                                                      for _, t in notes)


# -- R9 ------------------------------------------------------------------------------------------
def test_r9_global_optimizer_defined_after_the_function_using_it(check):
    r = check(HEAD + STEP + "opt = tf.keras.optimizers.Adam(0.01)\n" + LOOP)
    f = r.one("HVD-R9")
    assert r.src(f) == "opt = tf.keras.optimizers.Adam(0.01)"
    assert_blocks(r, f, "HVD021")
    assert r.related(f) == [("opt", "`train_step` uses `opt` here")]
    assert not {"HVD010", "HVD021"} & set(r.codes())   # all or nothing


def test_r9_global_optimizer_changed_inside_a_function(check):
    r = check(HEAD + "opt = tf.keras.optimizers.Adam(0.01)\ndef reset():\n    global opt\n"
              "    opt = tf.keras.optimizers.Adam(0.001)\n" + STEP + LOOP)
    f = next(f for f in r.all("HVD-R9"))
    assert r.src(f) == "opt = tf.keras.optimizers.Adam(0.001)" and "inside `reset`" in f.message
    assert_blocks(r, f, "HVD010", "HVD011", "HVD021")


def test_r9_negative_defined_before_or_passed_as_parameter(check):
    r = check(HEAD + "opt = tf.keras.optimizers.Adam(0.01)\n" + STEP + LOOP)
    assert "HVD-R9" not in r.codes()
    r = check(TAPE_SPLIT)
    assert "HVD-R9" not in r.codes()


# -- R10 -----------------------------------------------------------------------------------------
def test_r10_checkpoint_aliased_and_rebound(check):
    r = check(HEAD + "ckpt = tf.train.Checkpoint(model=model)\nbackup = ckpt\nbackup = None\nckpt.save('/tmp/c')\n")
    f = r.one("HVD-R10")
    assert r.src(f) == "backup = ckpt"
    assert_blocks(r, f, "HVD031")
    assert "HVD031" not in r.codes() and r.edits_within("ckpt.save('/tmp/c')") == []


def test_r10_negative_checkpoint_given_a_second_name_once(check):
    """``mgr = self.manager; mgr.save()`` (sweep 40c, krasserm/super-resolution's shape): HVD031
    follows the second name, so both saves are rank 0's and nothing is restricted."""
    r = check(HEAD + "opt = tf.keras.optimizers.Adam(0.1)\n" + STEP + LOOP
              + "ckpt = tf.train.Checkpoint(model=model)\nbackup = ckpt\nbackup.save('/tmp/b')\nckpt.save('/tmp/c')\n")
    assert restriction_codes(r) == [] and r.codes().count("HVD031") == 2
    out = r.converted()
    assert out.endswith("backup = ckpt\nif hvd.rank() == 0:\n    backup.save('/tmp/b')\n    ckpt.save('/tmp/c')\n")


def test_r10_checkpoint_without_assignment(check):
    r = check(HEAD + "tf.train.Checkpoint(model=model).save('/tmp/c')\n")
    f = r.one("HVD-R10")
    assert r.src(f) == "tf.train.Checkpoint(model=model)" and "without an assignment" in f.message


def test_r10_negative_checkpoint_and_manager(check):
    r = check(HEAD + "ckpt = tf.train.Checkpoint(model=model)\n"
              "manager = tf.train.CheckpointManager(ckpt, '/tmp/c', max_to_keep=2)\nmanager.save()\n")
    assert restriction_codes(r) == [] and "HVD031" in r.codes()


# -- T1 ------------------------------------------------------------------------------------------
def test_t1_training_continues_in_another_file(check):
    r = check(HEAD + "from .loops import run_epochs\nopt = tf.keras.optimizers.Adam(0.01)\nrun_epochs(model, opt, ds)\n")
    f = r.one("HVD-T1")
    assert r.src(f) == "run_epochs(model, opt, ds)" and "`.loops`" in f.message
    assert_blocks(r, f, "HVD010", "HVD011", "HVD021")
    assert "HVD010" not in r.codes()


def test_t1_negative_reporting_helper_and_libraries(check):
    r = check(HEAD + "import report\nimport numpy as np\nopt = tf.keras.optimizers.Adam(0.01)\n" + STEP + LOOP
              + "report.log_lr(opt)\nnp.save('/tmp/w', model)\n")
    assert "HVD-T1" not in r.codes()


# -- T2 ------------------------------------------------------------------------------------------
def test_distribution_strategy_is_hvd092_not_t2(check):
    r = check(HEAD + "strategy = tf.distribute.MirroredStrategy()\nwith strategy.scope():\n"
              "    model2 = tf.keras.Sequential([])\nmodel2.fit(x, y)\n")
    f = r.one("HVD092")
    assert r.src(f) == "tf.distribute.MirroredStrategy()" and f.severity == "warning"
    assert "HVD-T2" not in r.codes()
    assert r.analysis.conversion_edits() == []


def test_a_strategy_made_under_a_flag_names_the_flag_and_how_to_unblock(check):
    """yolov3-tf2's ``if FLAGS.multi_gpu: strategy = MirroredStrategy()``: still no edit (the
    flag may be set), but the message names the test and says which branch to remove."""
    r = check(HEAD + "multi_gpu = False\nif multi_gpu:\n    strategy = tf.distribute.MirroredStrategy()\n"
              "model.compile('sgd', 'mse')\nmodel.fit(x, y)\n")
    f = r.one("HVD092")
    assert "when `multi_gpu` holds" in f.message and "remove that branch" in f.message
    assert r.analysis.conversion_edits() == []
    plain = check(HEAD + "strategy = tf.distribute.MirroredStrategy()\nmodel.fit(x, y)\n").one("HVD092")
    assert "holds" not in plain.message and "remove the strategy" in plain.message


def test_t2_minimize_loop(check):
    r = check(HEAD + "opt = tf.keras.optimizers.SGD(0.1)\nfor x, y in ds:\n"
              "    opt.minimize(lambda: tf.reduce_mean(model(x)), model.trainable_variables)\n")
    f = r.one("HVD-T2")
    assert r.src(f).startswith("opt.minimize(")
    assert_blocks(r, f, "HVD010", "HVD011", "HVD021")
    assert "HVD010" not in r.codes()


def test_t2_gradients_inside_the_block_into_several_names(check):
    # HVD020 can average `grads = tape.gradient(...)` taken inside the block, not `dw, db = ...`
    step = ("def step(x):\n    with tf.GradientTape() as tape:\n        loss = model(x)\n"
            "        dw, db = tape.gradient(loss, [w, b])\n    opt.apply_gradients(zip([dw, db], [w, b]))\n")
    r = check(HEAD + "opt = tf.keras.optimizers.SGD(0.1)\n" + step)
    f = r.one("HVD-T2")
    assert r.src(f) == "dw, db = tape.gradient(loss, [w, b])"
    assert_blocks(r, f, "HVD020")
    assert not {"HVD010", "HVD020", "HVD021"} & set(r.codes())
    single = check(HEAD + "opt = tf.keras.optimizers.SGD(0.1)\n" + step.replace("dw, db = ", "grads = ")
                   .replace("zip([dw, db]", "zip(grads"))
    assert "HVD-T2" not in single.codes() and "HVD020" in single.codes()


def test_t2_negative_estimator_minimize_and_get_strategy(check):
    r = check(ESTIMATOR + "strategy = tf.distribute.get_strategy()\n")
    assert "HVD-T2" not in r.codes()


# -- T3 ------------------------------------------------------------------------------------------
def test_t3_fit_and_tape_on_one_model_is_reported_not_guessed(check):
    r = check(HEAD + "opt = tf.keras.optimizers.Adam(0.01)\nmodel.compile(optimizer=opt, loss='mse')\n"
              + STEP + LOOP + "model.fit(ds, epochs=1)\nmodel.fit(ds, epochs=2)\n")
    f = r.one("HVD-T3")
    assert r.src(f) == "model.fit(ds, epochs=1)"
    assert {"HVD001", "HVD002", "HVD020", "HVD021", "HVD050", "HVD051"} <= set(f.blocks)
    assert r.related(f)[0] == ("tf.GradientTape() as tape", "the GradientTape loop training the same model")
    assert r.analysis.conversion_edits() == []
    assert "HVD100" in r.codes() and "HVD101" in r.codes()


def test_t3_two_models_with_fit_and_tape_convert_with_both_modules(check):
    r = check(HEAD + "other = tf.keras.Sequential([])\nother.compile(optimizer='sgd', loss='mse')\n"
              "opt = tf.keras.optimizers.Adam(0.01)\n" + STEP + LOOP + "other.fit(ds)\n")
    assert "HVD-T3" not in r.codes() and not r.analysis.refused
    assert {"HVD002", "HVD020", "HVD021", "HVD050", "HVD012"} <= set(r.codes())
    out = r.analysis.converted()
    assert "import horovod.tensorflow.keras as hvd\nimport horovod.tensorflow as hvd_tf\nhvd.init()" in out


def test_t3_fit_and_an_estimator_still_block(check):
    r = check(ESTIMATOR + "\nmodel = tf.keras.Sequential([])\nmodel.compile(optimizer='sgd', loss='mse')\n"
              "model.fit(x, y)\n")
    f = r.one("HVD-T3")
    assert "fit and an Estimator" in f.message and "its own script" in f.message
    assert r.analysis.refused and r.analysis.conversion_edits() == []


def test_t3_negative_two_models_two_tapes(check):
    r = check(HEAD + """
gen = tf.keras.Sequential([])
disc = tf.keras.Sequential([])
g_opt = tf.keras.optimizers.Adam(1e-4)
d_opt = tf.keras.optimizers.Adam(1e-4)
@tf.function
def step(x):
    with tf.GradientTape() as gt, tf.GradientTape() as dt:
        fake = gen(x)
        g_loss, d_loss = tf.reduce_mean(disc(fake)), tf.reduce_mean(disc(x))
    g_opt.apply_gradients(zip(gt.gradient(g_loss, gen.trainable_variables), gen.trainable_variables))
    d_opt.apply_gradients(zip(dt.gradient(d_loss, disc.trainable_variables), disc.trainable_variables))
for x, _ in ds:
    step(x)
""")
    assert restriction_codes(r) == [] and len(r.all("HVD100")) == 2 and len(r.all("HVD021")) == 2


# -- T4 ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("line, shown, how", [
    ("worker = threading.Thread(target=train_step)", "train_step", "passed as an argument"),
    ("step = train_step", "train_step", "assigned to a variable"),
    ("schedule(train_step)", "train_step", "passed as an argument"),
])
def test_t4_training_function_as_value(check, line, shown, how):
    r = check(HEAD + "import threading\nopt = tf.keras.optimizers.Adam(0.01)\n" + STEP + line + "\n" + LOOP)
    f = r.one("HVD-T4")
    assert r.src(f) == shown and how in f.message
    assert_blocks(r, f, "HVD020", "HVD021")
    assert not {"HVD020", "HVD021"} & set(r.codes())
    assert "HVD010" not in r.codes()   # all or nothing


def test_t4_method_passed_as_value(check):
    r = check(TRAINER_CLASS.replace("        for _ in range(epochs):", "        run(self.step)\n        for _ in range(epochs):"))
    f = r.one("HVD-T4")
    assert r.src(f) == "self.step"


def test_t4_negative_calls_decorators_and_non_training_functions(check):
    r = check(HEAD + "opt = tf.keras.optimizers.Adam(0.01)\n" + STEP.replace("@tf.function\n", "")
              + "def preprocess(x, y):\n    return x, y\nds = ds.map(preprocess)\nfast = tf.function(train_step)\n"
              "concrete = train_step.get_concrete_function\nclassifier = tf.estimator.LinearRegressor([])\n"
              "def train(): pass\nclassifier.train(input_fn=lambda: ds)\nrun(train_step=1)\n" + LOOP)
    assert "HVD-T4" not in r.codes()


def test_t4_a_name_used_before_its_def_is_not_the_function(check):
    r = check(HEAD + "opt = tf.keras.optimizers.Adam(0.01)\ntrain_step = tf.constant(1.0)\nprint(train_step)\n"
              + STEP.replace("@tf.function\n", "") + LOOP)
    assert "HVD-T4" not in r.codes() and not r.analysis.refused
    assert {"HVD020", "HVD021"} <= set(r.codes())


def test_t4_a_name_used_before_its_def_inside_a_function_body_still_blocks(check):
    # a function body runs later: `train_step` there is the def below, handed to a thread
    r = check(HEAD + "import threading\nopt = tf.keras.optimizers.Adam(0.01)\n"
              "def start():\n    threading.Thread(target=train_step).start()\n" + STEP + LOOP)
    assert r.one("HVD-T4")


def test_t4_estimator_is_a_known_caller_of_its_model_fn(check):
    r = check(ESTIMATOR.replace("    train_op = optimizer.minimize(loss, global_step=tf.train.get_or_create_global_step())\n",
                                "    with tf.GradientTape() as tape:\n        pred = tf.layers.dense(features['x'], 1)\n"
                                "        loss = tf.losses.mean_squared_error(labels, pred)\n"
                                "    grads = tape.gradient(loss, tf.trainable_variables())\n"
                                "    train_op = optimizer.apply_gradients(zip(grads, tf.trainable_variables()))\n"))
    assert "HVD-T4" not in r.codes() and not r.analysis.refused
    assert {"HVD020", "HVD060"} <= set(r.codes())


# -- T5 ------------------------------------------------------------------------------------------
def test_t5_training_function_defined_under_a_condition(check):
    r = check(HEAD + "import sys\nopt = tf.keras.optimizers.Adam(0.01)\nif sys.argv[1:]:" +
              STEP.replace("\n", "\n    ").rstrip() + "\n" + LOOP)
    f = r.one("HVD-T5")
    assert r.src(f) == "train_step"
    assert_blocks(r, f, "HVD020", "HVD021")
    assert r.related(f) == [("if sys.argv[1:]:", "the condition")]
    assert not {"HVD010", "HVD020", "HVD021"} & set(r.codes())   # all or nothing


def test_t5_fit_under_a_condition(check):
    r = check(KERAS_FIT.replace("model.fit(x, y, batch_size=8, epochs=2)",
                                "if train:\n    model.fit(x, y, batch_size=8, epochs=2)"))
    f = r.one("HVD-T5")
    assert r.src(f) == "model.fit(x, y, batch_size=8, epochs=2)"
    assert_blocks(r, f, "HVD050", "HVD051")
    assert not {"HVD050", "HVD051"} & set(r.codes()) and "HVD101" in r.codes()


@pytest.mark.parametrize("head, test", [
    ("data_augmentation = True\n", "not data_augmentation"),
    ("import argparse\nparser = argparse.ArgumentParser()\nargs = parser.parse_args()\n", "args.epochs > 1"),
    ("from absl import flags\nFLAGS = flags.FLAGS\n", "FLAGS.mode == 'fit'"),
])
def test_t5_fit_and_fit_generator_under_a_test_the_same_on_every_rank_convert(check, head, test):
    """keras cifar10_cnn: ``if not data_augmentation: fit(...) else: fit_generator(...)``: every
    rank takes the same branch, so both are converted (fit_generator is fit on a generator)."""
    body = KERAS_FIT.replace("model.fit(x, y, batch_size=8, epochs=2)",
                             head + f"if {test}:\n    model.fit(x, y, batch_size=8, epochs=2)\nelse:\n"
                             "    model.fit_generator(gen, epochs=2)")
    r = check(body)
    assert restriction_codes(r) == [] and not r.analysis.refused
    assert len(r.all("HVD050")) == 2 and len(r.all("HVD051")) == 2
    out = r.converted()
    assert "    model.fit_generator(gen, epochs=int(math.ceil(2 / hvd.size())), " \
        "callbacks=[hvd.callbacks.BroadcastGlobalVariablesCallback(0), hvd.callbacks.MetricAverageCallback()], " \
        "verbose=1 if hvd.rank() == 0 else 0)" in out


@pytest.mark.parametrize("test", ["hvd.rank() == 0", "np.random.rand() > 0.5", "loss > 1", "os.path.exists(p)"])
def test_t5_fit_under_a_per_rank_or_unknown_test_still_blocks(check, test):
    r = check(KERAS_FIT.replace("model.fit(x, y, batch_size=8, epochs=2)",
                                "import os\nimport horovod.tensorflow.keras as hvd\nloss, p = 2.0, '/tmp/x'\n"
                                f"if {test}:\n    model.fit(x, y, batch_size=8, epochs=2)"))
    f = r.one("HVD-T5")
    assert "may differ between ranks" in f.message and "test only constants or flags" in f.message


def test_fit_generator_positional_callbacks_and_verbose(check):
    """fit_generator(generator, steps_per_epoch, epochs, verbose, callbacks): its own positions."""
    r = check(KERAS_FIT.replace("model.fit(x, y, batch_size=8, epochs=2)",
                                "model.fit_generator(gen, 4, 2, 1, [cb])"))
    out = r.converted()
    assert "model.fit_generator(gen, max(1, 4 // hvd.size()), 2, 1 if hvd.rank() == 0 else 0, [hvd.callbacks.BroadcastGlobalVariablesCallback(0), " in out, out


def test_t5_negative_main_guard_and_try(check):
    r = check(TAPE_SPLIT)
    assert "HVD-T5" not in r.codes()
    r = check(TAPE_MODULE.replace("for step", "try:\n  for step").replace("\n    ", "\n      ")
              .replace('ckpt.save("/tmp/ckpt")', 'except KeyboardInterrupt:\n  pass\nckpt.save("/tmp/ckpt")')
              .replace("    with tf.GradientTape", "      with tf.GradientTape"))
    assert "HVD-T5" not in r.codes() and "HVD100" in r.codes()


# -- interaction with the rules ----------------------------------------------------------------
def test_every_blocked_site_has_no_edit_and_others_still_convert(check):
    r = check(HEAD + "it = iter(ds)\nopt = tf.keras.optimizers.Adam(0.01)\n" + STEP + LOOP + "print(next(it))\nprint('done')\n")
    converted = r.converted()
    assert "if hvd.rank() == 0: print('done')" in converted
    assert "if hvd.rank() == 0: print(next(it))" not in converted
    assert "DistributedGradientTape" in converted


def test_problems_are_sorted_and_deterministic(check):
    text = HEAD + "opt = tf.keras.optimizers.Adam(0.01)\nopt2 = opt\nopt = None\nprint(next(iter(ds)))\n"
    first = [(f.code, f.start, f.message) for f in check(text).analysis.findings]
    for _ in range(3):
        assert [(f.code, f.start, f.message) for f in check(text).analysis.findings] == first
