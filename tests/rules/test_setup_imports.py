"""HVD001/HVD002 (one Horovod import, hvd.init(), GPU pinning) and HVD003 (no hand-picked
CUDA_VISIBLE_DEVICES)."""

from __future__ import annotations

from horovodize.engine import analyze, convert_text

from rulecase import SETUP_KERAS, SETUP_TF, assert_no_rule, assert_rule, rule_output as rule_text, sites, src

TAPE_LOOP = """
for x, y in dataset:
    with tf.GradientTape() as tape:
        loss = model(x)
    opt.apply_gradients(zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables))
"""


def test_setup_after_the_last_top_import():
    before = "import os\nimport tensorflow as tf\nimport numpy as np\n\nx = np.zeros(3)\n" + src(TAPE_LOOP)
    after = "import os\nimport tensorflow as tf\nimport numpy as np\n" + SETUP_TF + "\nx = np.zeros(3)\n" + src(TAPE_LOOP)
    assert_rule(before, after, "HVD001")


def test_setup_uses_the_tensorflow_alias():
    before = "import tensorflow as t\n" + src(TAPE_LOOP).replace("tf.", "t.")
    after = "import tensorflow as t\n" + SETUP_TF.replace("tf.", "t.") + src(TAPE_LOOP).replace("tf.", "t.")
    assert_rule(before, after, "HVD001")


def test_setup_for_tensorflow_compat_v1():
    before = "import tensorflow.compat.v1 as tf\n\nclassifier = tf.estimator.Estimator(model_fn)\nclassifier.train(input_fn)\n"
    out = convert_text(src(before))
    assert out.startswith("import tensorflow.compat.v1 as tf\n" + SETUP_TF)


def test_keras_only_program_gets_tensorflow_imported_for_the_pinning():
    before = """
        from tensorflow import keras

        model = keras.Sequential([keras.layers.Dense(1)])
        model.compile(optimizer="sgd", loss="mse")
        model.fit(x, y)
        """
    after = """
        from tensorflow import keras
        import tensorflow as tf
        import horovod.tensorflow.keras as hvd
        hvd.init()
        gpus = tf.config.experimental.list_physical_devices('GPU')
        for gpu in gpus:
            tf.config.experimental.set_memory_growth(gpu, True)
        if gpus:
            tf.config.experimental.set_visible_devices(gpus[hvd.local_rank()], 'GPU')

        model = keras.Sequential([keras.layers.Dense(1)])
        model.compile(optimizer="sgd", loss="mse")
        model.fit(x, y)
        """
    assert_rule(before, after, "HVD002")


def test_fit_program_importing_tf_only_uses_the_keras_module():
    before = "import tensorflow as tf\nmodel = tf.keras.Sequential()\nmodel.compile('adam', 'mse')\nmodel.fit(x, y)\n"
    analysis = analyze(before)
    assert [f.code for f in analysis.rule_sites if f.code in ("HVD001", "HVD002")] == ["HVD002"]
    assert rule_text(before, "HVD002").startswith("import tensorflow as tf\n" + SETUP_KERAS)


def test_setup_follows_the_file_indentation_unit():
    before = "import tensorflow as tf\n\n\ndef f():\n\treturn tf.GradientTape()\n"
    out = rule_text(before, "HVD001")
    assert "for gpu in gpus:\n\ttf.config.experimental.set_memory_growth(gpu, True)\n" in out


def test_setup_at_end_of_file_without_newline():
    before = "import tensorflow as tf"
    out = rule_text(before, "HVD001")
    assert out == "import tensorflow as tf\n" + SETUP_TF


def test_setup_keeps_crlf():
    before = "import tensorflow as tf\r\nx = tf.ones(1)\r\n"
    out = rule_text(before, "HVD001")
    assert out == "import tensorflow as tf\r\n" + SETUP_TF.replace("\n", "\r\n") + "x = tf.ones(1)\r\n"


def test_one_setup_for_several_tensorflow_imports():
    before = "import tensorflow as tf\nimport tensorflow.compat.v1 as tf1\nfrom tensorflow import keras\n" + src(TAPE_LOOP)
    out = convert_text(before)
    assert out.count("import horovod") == 1 and out.count("hvd.init()") == 1
    assert "import tensorflow.compat.v1 as tf1\nfrom tensorflow import keras\nimport horovod" in out


def test_no_setup_when_horovod_is_imported():
    assert_no_rule("import tensorflow as tf\nimport horovod.tensorflow as hvd\nhvd.init()\n", "HVD001")
    assert_no_rule("import tensorflow as tf\nimport horovod.tensorflow.keras as hvd\nhvd.init()\n", "HVD002")


def test_not_a_tensorflow_program():
    text = "import os\nimport torch\n\nprint(os.getcwd())\nos.environ['CUDA_VISIBLE_DEVICES'] = '0'\n"
    assert analyze(text).findings == []
    assert convert_text(text) == text


def test_an_import_under_a_condition_blocks_the_setup_and_every_rule():
    text = src("""
        x = 1
        if x:
            import tensorflow as tf
        print(x)
        """)
    analysis = analyze(text)
    assert analysis.rule_sites == []
    assert "HVD-R1" in {f.code for f in analysis.findings}
    assert convert_text(text) == text


def test_an_import_below_code_gets_the_setup_right_after_it():
    text = src("""
        x = 1
        import tensorflow as tf
        y = 2
        """)
    analysis = analyze(text)
    assert "HVD-R1" not in {f.code for f in analysis.findings}
    setup = analysis.setup.fix.edits[0]
    assert text[:setup.start] == "x = 1\nimport tensorflow as tf\n"


# -- HVD003 ------------------------------------------------------------------------------
def test_cuda_visible_devices_line_is_deleted():
    before = """
        import os
        import tensorflow as tf

        os.environ["CUDA_VISIBLE_DEVICES"] = "0"
        os.environ['CUDA_VISIBLE_DEVICES'] = '1'
        x = 1
        """
    after = """
        import os
        import tensorflow as tf

        x = 1
        """
    assert_rule(before, after, "HVD003")


def test_cuda_visible_devices_trailing_comment_is_kept():
    before = 'import os\nimport tensorflow as tf\nos.environ["CUDA_VISIBLE_DEVICES"] = "0"  # first GPU\nx = 1\n'
    after = 'import os\nimport tensorflow as tf\n# first GPU\nx = 1\n'
    assert_rule(before, after, "HVD003")


def test_cuda_visible_devices_comment_above_is_kept():
    before = 'import os\nimport tensorflow as tf\n# pin the GPU\nos.environ["CUDA_VISIBLE_DEVICES"] = "0"\nx = 1\n'
    after = 'import os\nimport tensorflow as tf\n# pin the GPU\nx = 1\n'
    assert_rule(before, after, "HVD003")


def test_cuda_visible_devices_only_statement_of_a_block_becomes_pass():
    before = """
        import os
        import tensorflow as tf

        if gpu is not None:
            os.environ["CUDA_VISIBLE_DEVICES"] = gpu  # chosen by flag
        else:
            pass


        def pin(i):
            os.environ["CUDA_VISIBLE_DEVICES"] = str(i)
        """
    after = """
        import os
        import tensorflow as tf

        if gpu is not None:
            pass  # chosen by flag
        else:
            pass


        def pin(i):
            pass
        """
    assert_rule(before, after, "HVD003")


def test_cuda_visible_devices_with_an_os_alias():
    before = "import os as _os\nimport tensorflow as tf\n_os.environ['CUDA_VISIBLE_DEVICES'] = '0'\n"
    assert_rule(before, "import os as _os\nimport tensorflow as tf\n", "HVD003")


def test_cuda_visible_devices_crlf():
    before = "import os\r\nimport tensorflow as tf\r\nos.environ['CUDA_VISIBLE_DEVICES'] = '0'\r\nx = 1\r\n"
    assert rule_text(before, "HVD003") == "import os\r\nimport tensorflow as tf\r\nx = 1\r\n"


def test_other_environment_variables_and_shared_lines_are_left_alone():
    assert_no_rule("""
        import os
        import tensorflow as tf

        os.environ["TF_CPP_MIN_LOG_LEVEL"] = "2"
        os.environ["CUDA_VISIBLE_DEVICES"] = "0"; x = 1
        print(os.environ["CUDA_VISIBLE_DEVICES"])
        """, "HVD003")


def test_no_cuda_visible_devices_in_a_converted_file():
    text = src("""
        import os
        import tensorflow as tf
        import horovod.tensorflow as hvd

        hvd.init()
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
        """)
    assert_no_rule(text, "HVD003")
    assert convert_text(text) == text
    assert not sites(analyze(text), "HVD001")
