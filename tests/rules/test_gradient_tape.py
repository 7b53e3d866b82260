"""HVD020 (hvd.DistributedGradientTape after the tape's ``with``, or before a ``tape.gradient``
inside it) and HVD021 (broadcast model and optimizer variables once, after the first
``apply_gradients``, guarded by a ``tf.Variable`` flag per site defined after the set-up)."""

from __future__ import annotations

from horovodize.engine import analyze, convert_text

from rulecase import assert_no_rule, assert_rule, compiles, rule_output, sites, src

BROADCAST = """\
{i}if not {flag}:
{i}    hvd.broadcast_variables([v for _, v in hvd_grads_and_vars], root_rank=0)
{i}    hvd.broadcast_variables({opt}.variables() if callable({opt}.variables) else {opt}.variables, root_rank=0)
{i}    {flag}.assign(True)
"""
FLAG = "hvd_broadcast_done"


def broadcast(opt: str, indent: str = "    ", flag: str = FLAG) -> str:
    return BROADCAST.format(i=indent, opt=opt, flag=flag)


def flag_def(flag: str = FLAG, tf: str = "tf") -> str:
    """The flag's module-level definition (right after the last top import when there is no set-up)."""
    return f"{flag} = {tf}.Variable(False, trainable=False)\n"


# -- HVD020 ------------------------------------------------------------------------------
def test_tape_is_wrapped_after_its_with_block():
    before = """
        import tensorflow as tf

        opt = tf.keras.optimizers.SGD(0.1)


        @tf.function
        def step(x):
            with tf.GradientTape() as tape:  # record
                loss = model(x)
                # end of the forward pass
            grads = tape.gradient(loss, model.trainable_variables)
            opt.apply_gradients(zip(grads, model.trainable_variables))
        """
    after = """
        import tensorflow as tf

        opt = tf.keras.optimizers.SGD(0.1)


        @tf.function
        def step(x):
            with tf.GradientTape() as tape:  # record
                loss = model(x)
                # end of the forward pass
            tape = hvd.DistributedGradientTape(tape)
            grads = tape.gradient(loss, model.trainable_variables)
            opt.apply_gradients(zip(grads, model.trainable_variables))
        """
    assert_rule(before, after, "HVD020")


def test_two_tapes_in_one_with():
    before = """
        import tensorflow as tf

        with tf.GradientTape() as g_tape, tf.GradientTape(persistent=True) as d_tape:
            g_loss, d_loss = losses()
        g_grads = g_tape.gradient(g_loss, g_vars)
        g_opt.apply_gradients(zip(g_grads, g_vars))
        """
    after = """
        import tensorflow as tf

        with tf.GradientTape() as g_tape, tf.GradientTape(persistent=True) as d_tape:
            g_loss, d_loss = losses()
        g_tape = hvd.DistributedGradientTape(g_tape)
        d_tape = hvd.DistributedGradientTape(d_tape)
        g_grads = g_tape.gradient(g_loss, g_vars)
        g_opt.apply_gradients(zip(g_grads, g_vars))
        """
    assert_rule(before, after, "HVD020")


def test_tape_with_another_context_manager_and_an_alias():
    before = """
        import tensorflow as t

        for batch in data:
            with t.device("/gpu:0"), t.GradientTape() as tape:
                loss = f(batch)
            opt.apply_gradients(zip(tape.gradient(loss, v), v))
        """
    after = """
        import tensorflow as t

        for batch in data:
            with t.device("/gpu:0"), t.GradientTape() as tape:
                loss = f(batch)
            tape = hvd.DistributedGradientTape(tape)
            opt.apply_gradients(zip(tape.gradient(loss, v), v))
        """
    assert_rule(before, after, "HVD020")


def test_gradient_taken_inside_the_with_block_is_averaged_right_after():
    # after the block would be too late (the gradients are already taken), and a
    # DistributedGradientTape made inside the block fails on a non-persistent tape
    before = """
        import tensorflow as tf

        opt = tf.keras.optimizers.SGD(0.1)


        def step(x):
            with tf.GradientTape() as tape:
                loss = model(x)
                grads = tape.gradient(loss, model.trainable_variables)
            opt.apply_gradients(zip(grads, model.trainable_variables))
        """
    after = """
        import tensorflow as tf

        opt = tf.keras.optimizers.SGD(0.1)


        def step(x):
            with tf.GradientTape() as tape:
                loss = model(x)
                grads = tape.gradient(loss, model.trainable_variables)
                grads = [None if g is None else hvd.allreduce(g) for g in grads]
            opt.apply_gradients(zip(grads, model.trainable_variables))
        """
    assert_rule(before, after, "HVD020")


def test_tape_at_end_of_file_without_newline():
    before = "import tensorflow as tf\nwith tf.GradientTape() as tape:\n    loss = f()"
    assert rule_output(before, "HVD020") == before + "\ntape = hvd.DistributedGradientTape(tape)\n"


def test_tape_with_tabs_and_crlf():
    before = "import tensorflow as tf\r\ndef f():\r\n\twith tf.GradientTape() as tape:\r\n\t\tloss = g()\r\n\treturn tape\r\n"
    after = ("import tensorflow as tf\r\ndef f():\r\n\twith tf.GradientTape() as tape:\r\n\t\tloss = g()\r\n"
             "\ttape = hvd.DistributedGradientTape(tape)\r\n\treturn tape\r\n")
    assert rule_output(before, "HVD020") == after


def test_negative_tape_already_wrapped_or_not_a_name():
    text = """
        import tensorflow as tf
        import horovod.tensorflow as hvd

        hvd.init()
        with tf.GradientTape() as tape:
            loss = f()
        tape = hvd.DistributedGradientTape(tape, compression=hvd.Compression.fp16)


        class T:
            def run(self):
                with tf.GradientTape() as self.tape:
                    loss = f()
        """
    assert_no_rule(text, "HVD020")
    assert convert_text(src(text)) == src(text)


def test_keras_fit_programs_have_no_tape_rules():
    text = """
        import tensorflow as tf

        model = tf.keras.Sequential()
        model.compile("adam", "mse")
        model.fit(x, y)
        with tf.GradientTape() as tape:
            y = model(x)
        """
    assert_no_rule(text, "HVD020")


# -- HVD021 ------------------------------------------------------------------------------
def test_broadcast_after_apply_gradients_statement():
    before = """
        import tensorflow as tf

        opt = tf.keras.optimizers.Adam(0.001)
        for x in data:
            with tf.GradientTape() as tape:
                loss = model(x)
            grads = tape.gradient(loss, model.trainable_variables)
            opt.apply_gradients(zip(grads, model.trainable_variables))  # update
            step += 1
        """
    after = src("""
        import tensorflow as tf
        hvd_broadcast_done = tf.Variable(False, trainable=False)

        opt = tf.keras.optimizers.Adam(0.001)
        for x in data:
            with tf.GradientTape() as tape:
                loss = model(x)
            grads = tape.gradient(loss, model.trainable_variables)
            hvd_grads_and_vars = list(zip(grads, model.trainable_variables))
            opt.apply_gradients(hvd_grads_and_vars)  # update
        """) + broadcast("opt") + "    step += 1\n"
    assert_rule(before, after, "HVD021")


def test_broadcast_after_an_assignment_with_keyword_argument():
    before = """
        import tensorflow as tf

        class Trainer:
            def __init__(self):
                self.opt = tf.keras.optimizers.SGD(0.1)

            def step(self, pairs):
                it = self.opt.apply_gradients(grads_and_vars=pairs, name="step")
                return it
        """
    after = src("""
        import tensorflow as tf

        class Trainer:
            def __init__(self):
                self.hvd_broadcast_done = tf.Variable(False, trainable=False)
                self.opt = tf.keras.optimizers.SGD(0.1)

            def step(self, pairs):
                hvd_grads_and_vars = list(pairs)
                it = self.opt.apply_gradients(grads_and_vars=hvd_grads_and_vars, name="step")
        """) + broadcast("self.opt", " " * 8, f"self.{FLAG}") + "        return it\n"
    assert_rule(before, after, "HVD021")


def test_multiline_apply_gradients():
    before = """
        import tensorflow as tf

        opt = tf.keras.optimizers.SGD(0.1)


        def step(grads, variables):
            opt.apply_gradients(
                zip(grads, variables),
            )
        """
    after = src("""
        import tensorflow as tf
        hvd_broadcast_done = tf.Variable(False, trainable=False)

        opt = tf.keras.optimizers.SGD(0.1)


        def step(grads, variables):
            hvd_grads_and_vars = list(zip(grads, variables))
            opt.apply_gradients(
                hvd_grads_and_vars,
            )
        """) + broadcast("opt")
    assert_rule(before, after, "HVD021")


def test_two_optimizers_and_the_same_optimizer_twice():
    text = src("""
        import tensorflow as tf

        g_opt = tf.keras.optimizers.Adam(1e-4)
        d_opt = tf.keras.optimizers.Adam(1e-4)


        def step(g_grads, d_grads, e_grads):
            g_opt.apply_gradients(zip(g_grads, g_vars))
            d_opt.apply_gradients(zip(d_grads, d_vars))
            g_opt.apply_gradients(zip(e_grads, e_vars))
        """)
    out = rule_output(text, "HVD021")
    # one step: one flag and one broadcast after its last apply_gradients, of every site's
    # variables and of each optimizer's once (Horovod's idiom; review: tfdocs_dcgan's two flags)
    names = ["hvd_grads_and_vars", "hvd_grads_and_vars_2", "hvd_grads_and_vars_3"]
    assert [out.count(f"{n} = list(") for n in names] == [1, 1, 1]
    assert out.startswith("import tensorflow as tf\n" + flag_def(FLAG) + "\n") and f"{FLAG}_2" not in out
    block = out[out.index(f"    if not {FLAG}:"):]
    assert out.index(f"    if not {FLAG}:") > out.index("g_opt.apply_gradients(hvd_grads_and_vars_3)")
    assert [block.count(f"[v for _, v in {n}]") for n in names] == [1, 1, 1]
    assert block.count("g_opt.variables() if callable") == 1 and block.count("d_opt.variables() if callable") == 1
    assert block.count(f"{FLAG}.assign(True)") == 1
    compiles(out)


def test_optimizer_passed_as_an_argument():
    before = """
        import tensorflow as tf


        def train_step(model, optimizer, x):
            with tf.GradientTape() as tape:
                loss = model(x)
            optimizer.apply_gradients(zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables))


        def main():
            optimizer = tf.keras.optimizers.SGD(0.01)
            train_step(model, optimizer, x)
        """
    out = rule_output(src(before), "HVD021")
    assert out.startswith("import tensorflow as tf\n" + flag_def() + "\n")
    assert "    hvd_grads_and_vars = list(zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables))\n" \
           "    optimizer.apply_gradients(hvd_grads_and_vars)\n" + broadcast("optimizer") in out


def test_apply_gradients_at_end_of_file_without_newline():
    text = "import tensorflow as tf\nopt = tf.keras.optimizers.SGD(0.1)\nopt.apply_gradients(pairs)"
    expected = ("import tensorflow as tf\n" + flag_def() + "opt = tf.keras.optimizers.SGD(0.1)\n"
                "hvd_grads_and_vars = list(pairs)\nopt.apply_gradients(hvd_grads_and_vars)\n" + broadcast("opt", ""))
    if sites(analyze(text), "HVD021"):
        assert rule_output(text, "HVD021") == expected
    compiles(convert_text(text))


def test_flag_name_skips_a_name_already_used():
    before = """
        import tensorflow as tf

        hvd_broadcast_done = 0
        opt = tf.keras.optimizers.SGD(0.1)


        def step(grads):
            opt.apply_gradients(zip(grads, model.trainable_variables))
        """
    after = src("""
        import tensorflow as tf
        hvd_broadcast_done_2 = tf.Variable(False, trainable=False)

        hvd_broadcast_done = 0
        opt = tf.keras.optimizers.SGD(0.1)


        def step(grads):
            hvd_grads_and_vars = list(zip(grads, model.trainable_variables))
            opt.apply_gradients(hvd_grads_and_vars)
        """) + broadcast("opt", flag=f"{FLAG}_2")
    assert_rule(before, after, "HVD021")


def test_flag_goes_after_the_existing_set_up():
    before = """
        import tensorflow as tf
        import horovod.tensorflow as hvd

        hvd.init()
        opt = tf.keras.optimizers.SGD(0.1 * hvd.size())
        opt.apply_gradients(pairs)
        """
    after = src("""
        import tensorflow as tf
        import horovod.tensorflow as hvd

        hvd.init()
        hvd_broadcast_done = tf.Variable(False, trainable=False)
        opt = tf.keras.optimizers.SGD(0.1 * hvd.size())
        hvd_grads_and_vars = list(pairs)
        opt.apply_gradients(hvd_grads_and_vars)
        """) + broadcast("opt", "")
    assert_rule(before, after, "HVD021")


def test_apply_gradients_inside_an_expression_is_not_rewritten():
    assert_no_rule("""
        import tensorflow as tf

        opt = tf.keras.optimizers.SGD(0.1)
        ops = [opt.apply_gradients(zip(g, v))]
        print(opt.apply_gradients(zip(g, v)))
        """, "HVD021")


def test_tf1_optimizers_are_broadcast_by_the_hook_not_here():
    assert_no_rule("""
        import tensorflow.compat.v1 as tf

        def model_fn(features, labels, mode):
            opt = tf.train.GradientDescentOptimizer(0.1)
            train_op = opt.apply_gradients(opt.compute_gradients(loss), global_step=tf.train.get_global_step())
            return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)

        classifier = tf.estimator.Estimator(model_fn)
        classifier.train(input_fn)
        """, "HVD021")


def test_negative_already_broadcast():
    text = """
        import tensorflow as tf
        import horovod.tensorflow as hvd

        hvd.init()
        opt = tf.keras.optimizers.SGD(0.01 * hvd.size())


        @tf.function
        def step(x, first_batch):
            with tf.GradientTape() as tape:
                loss = model(x)
            tape = hvd.DistributedGradientTape(tape)
            opt.apply_gradients(zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables))
            if first_batch:
                hvd.broadcast_variables(model.variables, root_rank=0)
                hvd.broadcast_variables(opt.variables(), root_rank=0)
        """
    assert_no_rule(text, "HVD021")
    assert convert_text(src(text)) == src(text)


def test_negative_already_converted_flag_form():
    text = src("""
        import tensorflow as tf
        import horovod.tensorflow as hvd
        hvd.init()
        gpus = tf.config.experimental.list_physical_devices('GPU')
        for gpu in gpus:
            tf.config.experimental.set_memory_growth(gpu, True)
        if gpus:
            tf.config.experimental.set_visible_devices(gpus[hvd.local_rank()], 'GPU')
        hvd_broadcast_done = tf.Variable(False, trainable=False)

        opt = tf.keras.optimizers.SGD(0.01 * hvd.size())


        @tf.function
        def step(x):
            with tf.GradientTape() as tape:
                loss = model(x)
            tape = hvd.DistributedGradientTape(tape)
            grads = tape.gradient(loss, model.trainable_variables)
            hvd_grads_and_vars = list(zip(grads, model.trainable_variables))
            opt.apply_gradients(hvd_grads_and_vars)
        """) + broadcast("opt")
    assert_no_rule(text, "HVD021")
    assert_no_rule(text, "HVD020")
    assert convert_text(text) == text
    assert not analyze(text).rule_sites


def test_optimizer_reached_through_a_checkpoint_is_broadcast():
    """``self.checkpoint.optimizer.apply_gradients`` (krasserm/super-resolution's Trainer, sweep
    40c): σ names no optimizer there, but the averaged tape's gradients reach it, so its step
    broadcasts the variables as written (before: the tape wrapped and no broadcast, 2 ranks
    ending 0.198 apart)."""
    text = src("""
        import tensorflow as tf


        class Trainer:
            def __init__(self, model):
                optimizer = tf.keras.optimizers.Adam(0.01)
                self.checkpoint = tf.train.Checkpoint(optimizer=optimizer, model=model)

            @tf.function
            def train_step(self, x, y):
                with tf.GradientTape() as tape:
                    loss = tf.reduce_mean(tf.square(self.checkpoint.model(x) - y))
                grads = tape.gradient(loss, self.checkpoint.model.trainable_variables)
                self.checkpoint.optimizer.apply_gradients(zip(grads, self.checkpoint.model.trainable_variables))
                return loss


        trainer = Trainer(tf.keras.Sequential([tf.keras.layers.Dense(1)]))
        for x, y in tf.data.Dataset.from_tensor_slices((tf.ones((8, 2)), tf.ones((8, 1)))).batch(2):
            trainer.train_step(x, y)
        """)
    a = analyze(text)
    assert not a.refused and [f.code for f in a.rule_sites if f.code == "HVD021"] == ["HVD021"]
    out = a.converted()
    assert "        self.checkpoint.optimizer.apply_gradients(hvd_grads_and_vars)\n" + broadcast(
        "self.checkpoint.optimizer", "        ", f"self.{FLAG}") in out


def test_a_step_whose_broadcast_has_no_place_refuses_the_conversion():
    """The averaged tape's gradients reach ``opts[0].apply_gradients``: no name to broadcast the
    optimizer through. Averaging alone would leave each rank on its own weights, so point 2 is
    not done and nothing is converted (contract point 8), never "nothing to change"."""
    from horovodize.app.report import build
    text = src("""
        import tensorflow as tf

        model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
        opts = [tf.keras.optimizers.SGD(0.1)]


        @tf.function
        def train_step(x, y):
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.square(model(x) - y))
            grads = tape.gradient(loss, model.trainable_variables)
            opts[0].apply_gradients(zip(grads, model.trainable_variables))
            return loss


        for x, y in tf.data.Dataset.from_tensor_slices((tf.ones((8, 2)), tf.ones((8, 1)))).batch(2).take(4):
            train_step(x, y)
        """)
    a = analyze(text)
    assert a.refused and convert_text(text) == text
    (reason,) = [r for r in build(a)["reasons"] if r["code"] == "point 2"]
    assert reason["line"] == 12 and "`opts[0].apply_gradients(...)`" in reason["message"]


def test_flag_per_instance_of_a_plain_trainer_class():
    """A Trainer made once per model (k-fold, sweeps, pre-train then fine-tune): a
    module-level flag, set by the first instance's step, would leave every later model
    unbroadcast (sweep 40d r14). The flag is made in ``__init__``, one per instance."""
    out = convert_text(src("""
        import tensorflow as tf


        class Runner:
            def __init__(self, net):
                self.net = net
                self.sgd = tf.keras.optimizers.SGD(0.1)

            @tf.function
            def step(self, x):
                with tf.GradientTape() as tape:
                    loss = tf.reduce_sum(self.net(x))
                self.sgd.apply_gradients(zip(tape.gradient(loss, self.net.trainable_variables), self.net.trainable_variables))


        for n in (1, 2):
            runner = Runner(tf.keras.Sequential([tf.keras.layers.Dense(n)]))
            for x in tf.data.Dataset.from_tensor_slices(tf.ones((8, 2))).batch(2):
                runner.step(x)
        """))
    assert "        self.hvd_broadcast_done = tf.Variable(False, trainable=False)\n        self.net = net\n" in out
    assert f"\n{FLAG} = " not in out and "        if not self.hvd_broadcast_done:\n" in out
    compiles(out)


def test_flag_stays_at_module_level_where_a_local_one_would_not_hold():
    """A Keras class would track a variable attribute as one of its weights, a staticmethod
    has no instance, and a function that tf.function traces cannot make a variable at each
    trace: the flag stays at module level there."""
    keras = "class Net(tf.keras.Model):\n    def __init__(self):\n        super().__init__()\n\n    def fit_step(self, x):\n"
    static = "class Steps:\n    def __init__(self):\n        pass\n\n    @staticmethod\n    def fit_step(x):\n"
    for head, call in ((keras, "Net().fit_step(x)"), (static, "Steps.fit_step(x)"),
                       ("@tf.function\ndef outer(x):\n    def fit_step(x):\n", "outer(x)")):
        body = ("        with tf.GradientTape() as tape:\n            loss = tf.reduce_sum(model(x))\n"
                "        opt.apply_gradients(zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables))\n")
        if head.startswith("@"):
            body += "    return fit_step(x)\n"
        text = ("import tensorflow as tf\n\nmodel = tf.keras.Sequential([tf.keras.layers.Dense(1)])\n"
                "opt = tf.keras.optimizers.SGD(0.1)\nx = tf.ones((2, 2))\n\n\n" + head + body + "\n\n" + call + "\n")
        out = rule_output(text, "HVD021")
        assert out.startswith("import tensorflow as tf\n" + flag_def()), head
        assert f"if not {FLAG}:" in out and f"self.{FLAG}" not in out, head
