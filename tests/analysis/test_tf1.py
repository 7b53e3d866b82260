"""TF1 graph-mode programs: the Session loop site (HVD103) with its related information,
the shapes that are refused and why (HVD-S1..S3, all or nothing), premade Estimators'
optimizers, and Python 2 files (one clear line, no edit)."""

import subprocess
import sys
from pathlib import Path

import pytest

from horovodize.parse import py2
from horovodize.engine import convert_text
from horovodize.parse.source import ParseError

HEAD = """\
import tensorflow.compat.v1 as tf

w = tf.get_variable("w", [3])
loss = tf.reduce_sum(w * w)
optimizer = tf.train.GradientDescentOptimizer(0.1)
train_op = optimizer.minimize(loss)
"""


def test_session_loop_site_and_related(check):
    r = check(HEAD + """
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for step in range(100):
        sess.run(train_op)
""")
    site = r.one("HVD103")
    assert r.src(site) == "sess.run(train_op)"
    related = r.related(site)
    assert ("for step in range(100):", "the `for` loop that drives this training step") in related
    assert ("tf.Session()", "the session `sess` is created here") in related
    assert ("optimizer.minimize(loss)", "`train_op` is the train op this step runs") in related
    assert r.summary.label == "Session"
    assert set(r.codes()) >= {"HVD001", "HVD010", "HVD011", "HVD070", "HVD071", "HVD073"}


def test_session_not_training_is_not_a_loop(check):
    """A session that only evaluates (no train op fetched) is not converted."""
    r = check("""\
import tensorflow.compat.v1 as tf

w = tf.get_variable("w", [3])
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    print(sess.run(w))
""")
    assert "HVD103" not in r.codes() and "HVD070" not in r.codes()
    assert r.analysis.summary.label == "none"


def test_converted_session_is_stable_and_reports_nothing(check):
    text = HEAD + """
sess = tf.Session()
sess.run(tf.global_variables_initializer())
for step in range(100):
    sess.run(train_op)
"""
    once = convert_text(text)
    assert "sess.run(hvd.broadcast_global_variables(0))\nfor step in range(max(1, 100 // hvd.size())):" in once
    assert "set_visible_devices" not in once           # graph mode pins in the session config only
    assert convert_text(once) == once
    assert "HVD103" not in check(once).codes()


def test_s1_session_run_in_another_function_is_refused(check):
    """Two sessions named `sess`; the step runs on a parameter: which one trains is a guess."""
    r = check(HEAD + """

def make():
    sess = tf.Session()
    sess.run(tf.global_variables_initializer())
    return sess


def evaluate():
    sess = tf.Session()
    return sess.run(w)


def train(sess):
    for step in range(100):
        sess.run(train_op)
""")
    f = r.one("HVD-S1")
    assert r.src(f) == "sess.run(train_op)"
    assert "HVD071" in f.blocks and "HVD001" in f.blocks
    assert r.converted() == r.text                       # all or nothing


def test_session_passed_to_a_function_is_followed_when_unique(check):
    """One session in the file: the step running on a parameter is that session's."""
    r = check(HEAD + """

def train(sess, steps):
    for step in range(steps):
        sess.run(train_op)


def main():
    sess = tf.Session()
    sess.run(tf.global_variables_initializer())
    train(sess, 100)
""")
    assert "HVD-S1" not in r.codes()
    out = r.converted()
    assert "    sess.run(tf.global_variables_initializer())\n    sess.run(hvd.broadcast_global_variables(0))\n" in out
    assert "for step in range(max(1, steps // hvd.size())):" in out


def test_s2_no_initializer_is_refused(check):
    r = check(HEAD + """
sess = tf.Session()
init_everything(sess)
for step in range(100):
    sess.run(train_op)
""")
    f = r.one("HVD-S2")
    assert r.src(f) == "tf.Session()"
    assert r.related(f) == [("sess.run(train_op)", "the training step")]
    assert r.converted() == r.text


def test_s3_while_loop_step_count_is_refused(check):
    r = check(HEAD + """
sess = tf.Session()
sess.run(tf.global_variables_initializer())
step = 0
while step < 100:
    sess.run(train_op)
    step += 1
""")
    f = r.one("HVD-S3")
    assert r.src(f) == "while step < 100:"
    assert r.converted() == r.text


def test_monitored_session_while_should_stop_is_accepted(check):
    r = check(HEAD + """
hooks = [tf.train.StopAtStepHook(last_step=1000)]
with tf.train.MonitoredTrainingSession(checkpoint_dir="/tmp/ckpt", hooks=hooks) as mon_sess:
    while not mon_sess.should_stop():
        mon_sess.run(train_op)
""")
    assert not [c for c in r.codes() if c.startswith("HVD-")]
    assert r.at("HVD072") == ['tf.train.MonitoredTrainingSession(checkpoint_dir="/tmp/ckpt", hooks=hooks)', '"/tmp/ckpt"']
    out = r.converted()
    assert "StopAtStepHook(last_step=max(1, 1000 // hvd.size()))" in out
    assert 'checkpoint_dir="/tmp/ckpt" if hvd.rank() == 0 else None' in out
    assert "hooks=list(hooks or []) + [hvd.BroadcastGlobalVariablesHook(0)]" in out


def test_minimize_on_a_tf_compat_v1_optimizer_in_a_tf2_file(check):
    """`import tensorflow as tf` + tf.compat.v1 graph code: still wrapped and pinned as TF1."""
    r = check("""\
import tensorflow as tf

tf.compat.v1.disable_eager_execution()
w = tf.compat.v1.get_variable("w", [3])
train_op = tf.compat.v1.train.AdamOptimizer().minimize(tf.reduce_sum(w * w))
sess = tf.compat.v1.Session()
sess.run(tf.compat.v1.global_variables_initializer())
for _ in range(10):
    sess.run(train_op)
""")
    out = r.converted()
    assert ("hvd.DistributedOptimizer(tf.compat.v1.train.AdamOptimizer(learning_rate=0.001 * hvd.size()))"
            ".minimize(") in out
    assert "tf.compat.v1.Session(config=tf.compat.v1.ConfigProto(gpu_options=tf.compat.v1.GPUOptions(" in out
    assert "HVD-T2" not in r.codes()


# -- premade Estimators ----------------------------------------------------------------------
@pytest.mark.parametrize("given, expected", [
    ("", "optimizer=hvd.DistributedOptimizer(tf.train.AdagradOptimizer(learning_rate=0.05 * hvd.size())), "),
    ("optimizer='SGD', ", "optimizer=hvd.DistributedOptimizer(tf.train.GradientDescentOptimizer(learning_rate=0.05 * hvd.size())), "),
    ("optimizer=tf.train.AdamOptimizer, ", "optimizer=hvd.DistributedOptimizer(tf.train.AdamOptimizer(learning_rate=0.001 * hvd.size())), "),
    ("optimizer=tf.train.AdamOptimizer(1e-3), ", "optimizer=hvd.DistributedOptimizer(tf.train.AdamOptimizer(1e-3 * hvd.size())), "),
])
def test_premade_optimizer_forms(check, given, expected):
    r = check(f"""\
import tensorflow.compat.v1 as tf

columns = [tf.feature_column.numeric_column("x")]
est = tf.estimator.DNNRegressor({given}hidden_units=[4], feature_columns=columns)
est.train(lambda: tf.data.Dataset.from_tensors(({{"x": [[1.0]]}}, [[1.0]])).repeat(), steps=100)
""")
    assert f"tf.estimator.DNNRegressor({expected}hidden_units=[4]" in r.converted()
    assert not [c for c in r.codes() if c.startswith("HVD-")]


def test_premade_optimizer_instance_not_blocked_as_inline_creation(check):
    """An optimizer created inside the premade Estimator's call is not R5's 'passed as an
    argument': it is wrapped in place."""
    r = check("""\
import tensorflow.compat.v1 as tf

est = tf.estimator.LinearRegressor([tf.feature_column.numeric_column("x")],
                                   optimizer=tf.train.FtrlOptimizer(learning_rate=0.1, l1_regularization_strength=0.01))
est.train(lambda: None, hooks=None, steps=100)
""")
    assert "HVD-R5" not in r.codes()
    assert "hvd.DistributedOptimizer(tf.train.FtrlOptimizer(learning_rate=0.1 * hvd.size()," in r.converted()


# -- Python 2 files ------------------------------------------------------------------------
PY2 = """\
import tensorflow as tf

w = tf.Variable(1.0)
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    # `backticks` and <> in a comment are not the reason
    print "w", sess.run(w)
"""


@pytest.mark.parametrize("line, what", [
    ('    print "w", sess.run(w)\n', "`print x` statement"),
    ("    except IOError, e:\n", "`except E, e:`"),
    ('    exec "x = 1"\n', '`exec "..."` statement'),
    ("    y = `w`\n", "backtick repr"),
    ("    if 1 <> 2: pass\n", "`<>` operator"),
    ("    mode = 0755\n", "octal literal"),
    ("    raise ValueError, 'bad'\n", "`raise E, msg`"),
])
def test_python2_construct_is_named(line, what):
    text = PY2.replace('    print "w", sess.run(w)\n', line)
    if "except" in line:
        text = text.replace(line, "    try:\n        pass\n" + line + "        pass\n")
    found = py2.find(text)
    assert found is not None and what in found.what
    assert found.line == text.splitlines().index(line.rstrip("\n")) + 1 if "except" not in line else True
    with pytest.raises(ParseError) as e:
        convert_text(text)
    assert "Python 2" in e.value.message and "2to3" in e.value.message


def test_python3_syntax_error_is_not_called_python2():
    text = "import tensorflow as tf\nx = (1,\n"
    assert py2.find(text) is None
    with pytest.raises(ParseError) as e:
        convert_text(text)
    assert "Python 2" not in e.value.message


def test_cli_reports_python2_in_one_line_and_edits_nothing(tmp_path):
    path = tmp_path / "old_train.py"
    path.write_text(PY2)
    for cmd in (["check", str(path)], ["convert", "--write", str(path)]):
        proc = subprocess.run([sys.executable, "-m", "horovodize", *cmd], capture_output=True, text=True,
                              cwd=Path(__file__).resolve().parents[2] / "server")
        assert proc.returncode == 2, proc
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and f"{path}:7:5:" in lines[0] and "Python 2 `print x` statement" in lines[0], proc.stderr
        assert proc.stdout == ""
    assert path.read_text() == PY2


# -- shapes from real scripts -----------------------------------------------------------------
def test_init_op_run_in_the_session_block_and_graph_keyword(check):
    """Horovod's word2vec: ``init.run()`` in ``with tf.Session(graph=graph) as session:``."""
    r = check("""\
import tensorflow.compat.v1 as tf

graph = tf.Graph()
with graph.as_default():
    w = tf.Variable(tf.zeros([3]))
    train_op = tf.train.GradientDescentOptimizer(1.0).minimize(tf.reduce_sum(w * w))
    init = tf.global_variables_initializer()

with tf.Session(graph=graph) as session:
    init.run()
    for step in range(100001):
        session.run([train_op], feed_dict={})
""")
    out = r.converted()
    assert "    init.run()\n    session.run(hvd.broadcast_global_variables(0))\n" in out   # the with makes graph default
    assert "range(max(1, 100001 // hvd.size()))" in out


def test_session_with_graph_outside_a_with_builds_the_broadcast_in_that_graph(check):
    r = check("""\
import tensorflow.compat.v1 as tf

g = tf.Graph()
with g.as_default():
    w = tf.Variable(tf.zeros([3]))
    train_op = tf.train.GradientDescentOptimizer(1.0).minimize(tf.reduce_sum(w * w))
    init = tf.global_variables_initializer()
sess = tf.Session(graph=g)
sess.run(init)
for step in range(10):
    sess.run(train_op)
""")
    assert "sess.run(init)\nwith g.as_default(): sess.run(hvd.broadcast_global_variables(0))\n" in r.converted()


def test_train_op_run_method_in_an_interactive_tutorial_shape(check):
    """``train_step.run(feed_dict=...)`` runs the step in the default (with-)session."""
    r = check("""\
import tensorflow.compat.v1 as tf

w = tf.Variable(tf.zeros([3]))
train_step = tf.train.AdamOptimizer(1e-4).minimize(tf.reduce_sum(w * w))
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for i in range(20000):
        train_step.run(feed_dict={})
""")
    assert r.at("HVD103") == ["train_step.run(feed_dict={})"]
    out = r.converted()
    assert "sess.run(hvd.broadcast_global_variables(0))\n    for i in range(max(1, 20000 // hvd.size())):" in out


def test_train_op_built_in_another_module_is_refused_as_t1(check):
    """tensorflow/models cifar10_train.py: ``train_op = cifar10.train(loss, global_step)``."""
    r = check("""\
import tensorflow.compat.v1 as tf

import cifar10

loss = cifar10.loss()
train_op = cifar10.train(loss, tf.train.get_or_create_global_step())
with tf.train.MonitoredTrainingSession(checkpoint_dir="/tmp/c",
                                       hooks=[tf.train.StopAtStepHook(last_step=1000)]) as mon_sess:
    while not mon_sess.should_stop():
        mon_sess.run(train_op)
""")
    f = r.one("HVD-T1")
    assert r.src(f) == "mon_sess.run(train_op)" and "cifar10.train" in f.message
    assert r.converted() == r.text


def test_boosted_trees_are_refused(check):
    r = check("""\
import tensorflow.compat.v1 as tf

columns = [tf.feature_column.bucketized_column(tf.feature_column.numeric_column("x"), [0.0, 1.0])]
est = tf.estimator.BoostedTreesClassifier(columns, n_batches_per_layer=1, model_dir="/tmp/bt")
est.train(lambda: None, max_steps=100)
""")
    f = r.one("HVD-T2")
    assert "gradient-boosted trees" in f.message and r.src(f).startswith("tf.estimator.BoostedTreesClassifier(")
    assert r.converted() == r.text


@pytest.mark.parametrize("optimizer, refused", [
    ("tf.keras.optimizers.Adam(0.01)", True),
    ("tf.keras.optimizers.legacy.Adam(0.01)", False),
])
def test_tf2_premade_needs_a_legacy_keras_optimizer(check, optimizer, refused):
    r = check(f"""\
import tensorflow as tf

opt = {optimizer}
reg = tf.estimator.DNNRegressor(hidden_units=[8], feature_columns=[tf.feature_column.numeric_column("x")],
                                optimizer=opt)
reg.train(lambda: None, steps=10)
""")
    assert ("HVD-T2" in r.codes()) == refused
    if refused:
        assert "tf.keras.optimizers.legacy.Adam" in r.one("HVD-T2").message
        assert r.converted() == r.text
    else:
        assert "opt = hvd.DistributedOptimizer(opt)" in r.converted()


@pytest.mark.parametrize("compiled, refused, wrapped", [
    ('optimizer="adam"', False, "tf.keras.optimizers.legacy.Adam(learning_rate=0.001 * hvd.size())"),
    ("optimizer=tf.keras.optimizers.Adam(0.01)", False, "tf.keras.optimizers.legacy.Adam(0.01 * hvd.size())"),
    ("optimizer=tf.keras.optimizers.legacy.Adam(0.01)", False, "tf.keras.optimizers.legacy.Adam(0.01 * hvd.size())"),
    ("optimizer=Adam(0.01)", True, None),            # a new class under another spelling: the user's edit
    ('optimizer="lamb"', True, None),                # a name with no legacy class
])
def test_model_to_estimator(check, compiled, refused, wrapped):
    """The Estimator rebuilds a new Keras optimizer from its config (dropping the Horovod
    wrapper: ranks drift apart on TF 2.15), so the conversion compiles the legacy class;
    wrapped, hooks and model_dir as usual. Spellings it cannot rewrite still block."""
    r = check(f"""\
import tensorflow as tf
from tensorflow.keras.optimizers import Adam

model = tf.keras.Sequential([tf.keras.layers.Dense(1, input_shape=(4,))])
model.compile({compiled}, loss="mse")
est = tf.keras.estimator.model_to_estimator(keras_model=model, model_dir="/tmp/m2e")
est.train(lambda: None, steps=10)
""")
    assert ("HVD-T2" in r.codes()) == refused
    if refused:
        assert r.converted() == r.text
        assert "tf.keras.optimizers.legacy.X(...)" in r.one("HVD-T2").message
    else:
        out = r.converted()
        assert f"model.compile(optimizer=hvd.DistributedOptimizer({wrapped})" in out
        assert 'model_dir="/tmp/m2e" if hvd.rank() == 0 else None' in out
        assert "hooks=[hvd.BroadcastGlobalVariablesHook(0)]" in out


def test_model_to_estimator_named_optimizer_becomes_legacy(check):
    r = check("""\
import tensorflow as tf

model = tf.keras.Sequential([tf.keras.layers.Dense(1, input_shape=(4,))])
opt = tf.keras.optimizers.SGD(0.1)
model.compile(optimizer=opt, loss="mse")
est = tf.keras.estimator.model_to_estimator(keras_model=model)
est.train(lambda: None, steps=10)
""")
    assert "HVD-T2" not in r.codes()
    out = r.converted()
    assert "opt = tf.keras.optimizers.legacy.SGD(0.1 * hvd.size())\nopt = hvd.DistributedOptimizer(opt)\n" in out


def test_supervisor_session_is_refused_with_its_maker(check):
    r = check("""\
import tensorflow.compat.v1 as tf

w = tf.get_variable("w", [3])
train_op = tf.train.AdamOptimizer(0.01).minimize(tf.reduce_sum(w * w))
sv = tf.train.Supervisor(logdir="/tmp/mydir")
with sv.managed_session() as sess:
    while not sv.should_stop():
        sess.run(train_op)
""")
    f = r.one("HVD-S1")
    assert "`sv.managed_session()`" in f.message and "MonitoredTrainingSession" in f.message
    assert r.converted() == r.text


def test_model_fn_optimizer_under_the_train_mode_branch_is_converted(check):
    """Horovod's tensorflow_mnist_estimator.py shape: not R7's conditional creation."""
    r = check("""\
import tensorflow.compat.v1 as tf


def model_fn(features, labels, mode):
    loss = tf.reduce_mean(tf.layers.dense(features["x"], 1))
    if mode == tf.estimator.ModeKeys.TRAIN:
        optimizer = tf.train.MomentumOptimizer(learning_rate=0.001, momentum=0.9)
        train_op = optimizer.minimize(loss=loss, global_step=tf.train.get_global_step())
        return tf.estimator.EstimatorSpec(mode=mode, loss=loss, train_op=train_op)
    return tf.estimator.EstimatorSpec(mode=mode, loss=loss)


classifier = tf.estimator.Estimator(model_fn=model_fn)
classifier.train(input_fn=lambda: None, steps=100)
""")
    assert "HVD-R7" not in r.codes()
    assert ("        optimizer = tf.train.MomentumOptimizer(learning_rate=0.001 * hvd.size(), momentum=0.9)\n"
            "        optimizer = hvd.DistributedOptimizer(optimizer)\n") in r.converted()


def test_optimizer_under_another_condition_is_still_r7(check):
    r = check("""\
import tensorflow.compat.v1 as tf


def model_fn(features, labels, mode, params):
    loss = tf.reduce_mean(tf.layers.dense(features["x"], 1))
    if params["sgd"]:
        optimizer = tf.train.GradientDescentOptimizer(0.1)
    else:
        optimizer = tf.train.AdamOptimizer(0.001)
    train_op = optimizer.minimize(loss=loss, global_step=tf.train.get_global_step())
    return tf.estimator.EstimatorSpec(mode=mode, loss=loss, train_op=train_op)


classifier = tf.estimator.Estimator(model_fn=model_fn)
classifier.train(input_fn=lambda: None, steps=100)
""")
    assert "HVD-R7" in r.codes()


def test_interactive_session_with_op_run_initializer(check):
    """The classic TF1 tutorial: InteractiveSession, initializer.run(), train_step.run(...)."""
    r = check("""\
import tensorflow.compat.v1 as tf

sess = tf.InteractiveSession()
w = tf.Variable(tf.zeros([10]))
train_step = tf.train.GradientDescentOptimizer(0.5).minimize(tf.reduce_sum(w * w))
tf.global_variables_initializer().run()
for _ in range(1000):
    train_step.run(feed_dict={})
""")
    assert not [c for c in r.codes() if c.startswith("HVD-")]
    assert ("tf.global_variables_initializer().run()\nsess.run(hvd.broadcast_global_variables(0))\n"
            "for _ in range(max(1, 1000 // hvd.size())):") in r.converted()


# -- HVD093: TF1 API the pinned TensorFlow 2.15 lacks ------------------------------------------
TF1_PLAIN = """import tensorflow as tf
x = tf.placeholder(tf.float32, [None, 4])
y = tf.placeholder(tf.float32, [None, 1])
w = tf.Variable(tf.zeros([4, 1]))
loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - y))
train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for _ in range(10):
        sess.run(train_op, feed_dict={x: [[1.0] * 4], y: [[1.0]]})
"""


def test_hvd093_tf1_api_through_tf2_module_blocks_with_how_to_unblock(check):
    r = check(TF1_PLAIN)
    f = r.one("HVD093")
    assert r.src(f) == "tf.placeholder(tf.float32, [None, 4])"
    assert "tf_upgrade_v2" in f.message and "tensorflow.compat.v1" in f.message
    assert [m for _, m in r.related(f)][:2] == ["`tf.train.GradientDescentOptimizer` is TensorFlow 1 API too",
                                                "`tf.Session` is TensorFlow 1 API too"]
    assert r.analysis.refused and r.converted() == TF1_PLAIN


def test_hvd093_negative_the_same_program_through_compat_v1_converts(check):
    for text in (TF1_PLAIN.replace("import tensorflow as tf", "import tensorflow.compat.v1 as tf\ntf.disable_v2_behavior()"),
                 TF1_PLAIN.replace("tf.placeholder", "tf.compat.v1.placeholder").replace("tf.train.", "tf.compat.v1.train.")
                 .replace("tf.Session", "tf.compat.v1.Session").replace("tf.global_variables", "tf.compat.v1.global_variables")):
        r = check(text)
        assert "HVD093" not in r.codes() and not r.analysis.refused
        assert "hvd.DistributedOptimizer" in r.converted()


def test_hvd093_tensorflow_examples_blocks_whatever_the_module(check):
    text = ("from tensorflow.examples.tutorials.mnist import input_data\n"
            + TF1_PLAIN.replace("import tensorflow as tf", "import tensorflow.compat.v1 as tf"))
    r = check(text)
    f = r.one("HVD093")
    assert r.src(f).startswith("from tensorflow.examples") and "tf.keras.datasets.mnist" in f.message
    assert r.analysis.refused


def test_hvd093_report_point_11_is_blocked():
    """The review saw point 11 say "nothing to change" for a TF1 script on TF 2.15."""
    from horovodize.app.report import build
    from horovodize.engine import analyze
    report = build(analyze(TF1_PLAIN), "tf1.py")
    [p11] = [p for p in report["points"] if p["point"] == 11]
    assert p11["status"] == "blocked" and "TensorFlow 1 API" in p11["reason"], p11


def test_hvd093_how_to_names_tf_upgrade_v2_first_for_tf_contrib(check):
    # aymericdamien's estimator CNN: tf.contrib.layers.flatten is in neither TF 2 nor
    # compat.v1, and tf_upgrade_v2 cannot convert it (TF 2.15's reports an error at that line)
    text = TF1_PLAIN.replace("w = tf.Variable(tf.zeros([4, 1]))", "w = tf.Variable(tf.zeros([4, 1]))\nflat = tf.contrib.layers.flatten(x)")
    f = check(text).one("HVD093")
    assert f.message.index("replace `tf.contrib.layers.flatten` by hand") < f.message.index("tf_upgrade_v2")
    assert "in neither TensorFlow 2 nor compat.v1, and tf_upgrade_v2 cannot convert it" in f.message
