"""HVD060 (``hooks`` gain hvd.BroadcastGlobalVariablesHook(0)) and HVD061 (``model_dir``
on rank 0 only) for TF1 Estimators."""

from __future__ import annotations

import pytest

from horovodize.engine import convert_text

from rulecase import assert_no_rule, assert_rule, src

HOOK = "hvd.BroadcastGlobalVariablesHook(0)"
HEAD = "import tensorflow.compat.v1 as tf\nest = tf.estimator.Estimator(model_fn)\n"


@pytest.mark.parametrize("before, after", [
    ("est.train(input_fn)", f"est.train(input_fn, hooks=[{HOOK}])"),
    ("est.train(input_fn, steps=10)", f"est.train(input_fn, steps=10, hooks=[{HOOK}])"),
    ("est.train(input_fn, hooks=[log])", f"est.train(input_fn, hooks=[log] + [{HOOK}])"),
    ("est.train(input_fn, [log])", f"est.train(input_fn, [log] + [{HOOK}])"),
    ("est.train(input_fn, hooks=hooks)", f"est.train(input_fn, hooks=list(hooks or []) + [{HOOK}])"),
    ("est.train(input_fn, hooks=h if c else None)", f"est.train(input_fn, hooks=list((h if c else None) or []) + [{HOOK}])"),
    ("est.train(input_fn, hooks=None)", f"est.train(input_fn, hooks=[{HOOK}])"),
    ("est.train(input_fn, hooks=make_hooks() or [])", f"est.train(input_fn, hooks=list(make_hooks() or [] or []) + [{HOOK}])"),
    ("est.train(\n    input_fn,\n    steps=10,\n)", f"est.train(\n    input_fn,\n    steps=10,\n    hooks=[{HOOK}],\n)"),
])
def test_hooks(before, after):
    assert_rule(HEAD + before + "\n", HEAD + after + "\n", "HVD060")


def test_canned_estimators_and_the_classifier_variable():
    before = """
        import tensorflow.compat.v1 as tf

        classifier = tf.estimator.DNNClassifier(hidden_units=[10], feature_columns=columns, n_classes=3)
        classifier.train(input_fn=train_input_fn, steps=2000)
        """
    after = f"""
        import tensorflow.compat.v1 as tf

        classifier = tf.estimator.DNNClassifier(hidden_units=[10], feature_columns=columns, n_classes=3)
        classifier.train(input_fn=train_input_fn, steps=2000, hooks=[{HOOK}])
        """
    assert_rule(before, after, "HVD060")


def test_train_of_something_else_is_not_an_estimator():
    assert_no_rule("""
        import tensorflow.compat.v1 as tf

        trainer = Trainer()
        trainer.train(input_fn)
        """, "HVD060")


@pytest.mark.parametrize("before, after", [
    ('model_dir="/tmp/m"', 'model_dir="/tmp/m" if hvd.rank() == 0 else None'),
    ("model_dir=MODEL_DIR", "model_dir=MODEL_DIR if hvd.rank() == 0 else None"),
    ("model_dir=os.path.join(root, 'm')", "model_dir=os.path.join(root, 'm') if hvd.rank() == 0 else None"),
    ("model_dir=d if keep else None", "model_dir=(d if keep else None) if hvd.rank() == 0 else None"),
])
def test_model_dir(before, after):
    text = "import tensorflow.compat.v1 as tf\nest = tf.estimator.Estimator(model_fn, {})\nest.train(input_fn)\n"
    assert_rule(text.format(before), text.format(after), "HVD061")


def test_no_model_dir_no_edit():
    assert_no_rule(HEAD + "est.train(input_fn)\n", "HVD061")


def test_negative_horovod_estimator_example():
    text = """
        import tensorflow.compat.v1 as tf
        import horovod.tensorflow as hvd

        hvd.init()
        model_dir = "./mnist_convnet_model" if hvd.rank() == 0 else None
        mnist_classifier = tf.estimator.Estimator(model_fn=cnn_model_fn, model_dir=model_dir)
        bcast_hook = hvd.BroadcastGlobalVariablesHook(0)
        mnist_classifier.train(input_fn=train_input_fn, steps=20000 // hvd.size(), hooks=[logging_hook, bcast_hook])
        """
    assert_no_rule(text, "HVD060")
    assert_no_rule(text, "HVD061")
    assert convert_text(src(text)) == src(text)
