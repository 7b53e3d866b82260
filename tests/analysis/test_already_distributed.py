"""Programs already distributed by hand, in the styles of Horovod's examples and users'
repositories: `convert` is a no-op on each and `check` reports no misuse (HVD2xx).
Partly distributed programs get only what is missing, in the program's own alias."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from horovodize.engine import analyze, convert_text

PROGRAMS = {
    "keras_horovod_keras_warmup": """
        import keras
        import tensorflow as tf
        import horovod.keras as hvd

        hvd.init()
        config = tf.compat.v1.ConfigProto()
        config.gpu_options.visible_device_list = str(hvd.local_rank())

        (x_train, y_train), (x_test, y_test) = keras.datasets.mnist.load_data()
        train_batches = len(x_train) // 128
        model = keras.Sequential([keras.layers.Flatten(), keras.layers.Dense(10, activation="softmax")])
        scaled_lr = 1.0 * hvd.size()
        opt = keras.optimizers.Adadelta(learning_rate=scaled_lr)
        opt = hvd.DistributedOptimizer(opt)
        model.compile(loss="sparse_categorical_crossentropy", optimizer=opt, metrics=["accuracy"])
        callbacks = [
            hvd.callbacks.BroadcastGlobalVariablesCallback(0),
            hvd.callbacks.MetricAverageCallback(),
            hvd.callbacks.LearningRateWarmupCallback(initial_lr=scaled_lr, warmup_epochs=5, verbose=1),
            keras.callbacks.ReduceLROnPlateau(patience=10, verbose=1),
        ]
        if hvd.rank() == 0:
            callbacks.append(keras.callbacks.ModelCheckpoint("./checkpoint-{epoch}.h5"))
        model.fit(x_train, y_train, batch_size=128, steps_per_epoch=train_batches // hvd.size(),
                  callbacks=callbacks, epochs=24, verbose=1 if hvd.rank() == 0 else 0)
        """,
    "tf_keras_from_import_alias": """
        import tensorflow as tf
        from horovod import tensorflow as horovod_tf
        import horovod.tensorflow.keras as hk

        hk.init()
        gpus = tf.config.list_physical_devices("GPU")
        if gpus:
            tf.config.set_visible_devices(gpus[hk.local_rank()], "GPU")
        (x, y), _ = tf.keras.datasets.mnist.load_data(path="mnist-%d.npz" % hk.rank())
        ds = tf.data.Dataset.from_tensor_slices((x / 255.0, y)).repeat().batch(64)
        model = tf.keras.Sequential([tf.keras.layers.Flatten(), tf.keras.layers.Dense(10)])
        lr = 0.001
        model.compile(optimizer=hk.DistributedOptimizer(tf.keras.optimizers.Adam(lr * hk.size())),
                      loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        verbose = 1 if hk.rank() == 0 else 0
        cbs = [hk.callbacks.BroadcastGlobalVariablesCallback(0), tf.keras.callbacks.EarlyStopping(patience=3)]
        if hk.rank() == 0:
            cbs.append(tf.keras.callbacks.TensorBoard("./logs"))
        model.fit(ds, steps_per_epoch=200 // hk.size(), epochs=3, callbacks=cbs, verbose=verbose)
        """,
    "tape_first_batch_horovod_run": """
        import sys

        import tensorflow as tf
        import horovod
        import horovod.tensorflow as hvd


        def train():
            hvd.init()
            gpus = tf.config.experimental.list_physical_devices("GPU")
            for gpu in gpus:
                tf.config.experimental.set_memory_growth(gpu, True)
            if gpus:
                tf.config.experimental.set_visible_devices(gpus[hvd.local_rank()], "GPU")
            (images, labels), _ = tf.keras.datasets.mnist.load_data(path="mnist-%d.npz" % hvd.rank())
            dataset = tf.data.Dataset.from_tensor_slices((images / 255.0, labels)).repeat().shuffle(1000).batch(128)
            model = tf.keras.Sequential([tf.keras.layers.Flatten(), tf.keras.layers.Dense(10)])
            loss = tf.losses.SparseCategoricalCrossentropy(from_logits=True)
            opt = tf.optimizers.Adam(0.001 * hvd.size())
            checkpoint = tf.train.Checkpoint(model=model, optimizer=opt)

            @tf.function
            def training_step(images, labels, first_batch):
                with tf.GradientTape() as tape:
                    loss_value = loss(labels, model(images, training=True))
                tape = hvd.DistributedGradientTape(tape)
                grads = tape.gradient(loss_value, model.trainable_variables)
                opt.apply_gradients(zip(grads, model.trainable_variables))
                if first_batch:
                    hvd.broadcast_variables(model.variables, root_rank=0)
                    hvd.broadcast_variables(opt.variables(), root_rank=0)
                return loss_value

            for batch, (images, labels) in enumerate(dataset.take(10000 // hvd.size())):
                loss_value = training_step(images, labels, batch == 0)
                if batch % 10 == 0 and hvd.local_rank() == 0:
                    print("Step #%d\\tLoss: %.6f" % (batch, loss_value))
            if hvd.rank() == 0:
                checkpoint.save("./checkpoints")


        if __name__ == "__main__":
            if len(sys.argv) == 2:
                print("Running training through horovod.run")
                horovod.run(train, np=int(sys.argv[1]), use_gloo=True)
            else:
                train()
        """,
    "elastic_tape": """
        import tensorflow as tf
        import horovod.tensorflow as hvd

        hvd.init()
        (images, labels), _ = tf.keras.datasets.mnist.load_data(path="mnist-%d.npz" % hvd.rank())
        dataset = tf.data.Dataset.from_tensor_slices((images / 255.0, labels)).repeat().batch(128)
        model = tf.keras.Sequential([tf.keras.layers.Flatten(), tf.keras.layers.Dense(10)])
        loss = tf.losses.SparseCategoricalCrossentropy(from_logits=True)
        lr = 0.001
        opt = tf.optimizers.Adam(lr * hvd.size())


        @tf.function
        def training_step(images, labels, allreduce=True):
            with tf.GradientTape() as tape:
                loss_value = loss(labels, model(images, training=True))
            if allreduce:
                tape = hvd.DistributedGradientTape(tape)
            grads = tape.gradient(loss_value, model.trainable_variables)
            opt.apply_gradients(zip(grads, model.trainable_variables))
            return loss_value


        for images, labels in dataset.take(1):
            training_step(images, labels, allreduce=False)


        @hvd.elastic.run
        def train(state):
            for batch_idx, (images, labels) in enumerate(dataset.skip(state.batch).take(1000 // hvd.size())):
                state.batch = batch_idx
                training_step(images, labels)
                state.commit()


        def on_state_reset():
            opt.lr.assign(lr * hvd.size())


        state = hvd.elastic.TensorFlowKerasState(model, opt, batch=0)
        state.register_reset_callbacks([on_state_reset])
        train(state)
        """,
    "elastic_keras": """
        import tensorflow as tf
        import horovod.tensorflow.keras as hvd

        hvd.init()
        (images, labels), _ = tf.keras.datasets.mnist.load_data(path="mnist-%d.npz" % hvd.rank())
        dataset = tf.data.Dataset.from_tensor_slices((images / 255.0, labels)).repeat().batch(128)
        model = tf.keras.Sequential([tf.keras.layers.Flatten(), tf.keras.layers.Dense(10)])
        opt = hvd.DistributedOptimizer(tf.optimizers.Adam(0.001 * hvd.size()))
        model.compile(loss=tf.losses.SparseCategoricalCrossentropy(from_logits=True), optimizer=opt)
        model.fit(dataset, steps_per_epoch=1, epochs=1, callbacks=None, verbose=0)
        state = hvd.elastic.KerasState(model, batch=0, epoch=0)
        callbacks = [hvd.elastic.UpdateEpochStateCallback(state), hvd.elastic.CommitStateCallback(state)]
        if hvd.rank() == 0:
            callbacks.append(tf.keras.callbacks.ModelCheckpoint("./checkpoint-{epoch}.h5"))


        @hvd.elastic.run
        def train(state):
            state.model.fit(dataset, steps_per_epoch=500 // hvd.size(), epochs=24 - state.epoch,
                            callbacks=callbacks, verbose=1 if hvd.rank() == 0 else 0)


        train(state)
        """,
    "estimator_broadcast_hook": """
        import tensorflow.compat.v1 as tf
        import horovod.tensorflow as hvd

        hvd.init()


        def model_fn(features, labels, mode):
            logits = tf.layers.dense(features["x"], 10)
            loss = tf.losses.sparse_softmax_cross_entropy(labels=labels, logits=logits)
            optimizer = tf.train.MomentumOptimizer(learning_rate=0.001 * hvd.size(), momentum=0.9)
            optimizer = hvd.DistributedOptimizer(optimizer)
            train_op = optimizer.minimize(loss, global_step=tf.train.get_global_step())
            return tf.estimator.EstimatorSpec(mode=mode, loss=loss, train_op=train_op)


        model_dir = "./mnist_convnet_model" if hvd.rank() == 0 else None
        classifier = tf.estimator.Estimator(model_fn=model_fn, model_dir=model_dir)
        bcast_hook = hvd.BroadcastGlobalVariablesHook(0)
        classifier.train(input_fn=lambda: None, steps=20000 // hvd.size(), hooks=[bcast_hook])
        """,
    "synthetic_benchmark": """
        import timeit

        import tensorflow as tf
        import horovod.tensorflow as hvd

        hvd.init()
        model = tf.keras.applications.ResNet50(weights=None)
        opt = tf.optimizers.SGD(0.01)
        data = tf.random.uniform([32, 224, 224, 3])
        target = tf.random.uniform([32, 1], minval=0, maxval=999, dtype=tf.int64)


        @tf.function
        def benchmark_step(first_batch):
            with tf.GradientTape() as tape:
                probs = model(data, training=True)
                loss = tf.losses.sparse_categorical_crossentropy(target, probs)
            tape = hvd.DistributedGradientTape(tape, compression=hvd.Compression.none)
            gradients = tape.gradient(loss, model.trainable_variables)
            opt.apply_gradients(zip(gradients, model.trainable_variables))
            if first_batch:
                hvd.broadcast_variables(model.variables, root_rank=0)
                hvd.broadcast_variables(opt.variables(), root_rank=0)


        def log(s):
            if hvd.rank() != 0:
                return
            print(s)


        benchmark_step(first_batch=True)
        for x in range(10):
            time = timeit.timeit(lambda: benchmark_step(first_batch=False), number=10)
            log("Iter #%d: %.1f img/sec per %d ranks" % (x, 32 * 10 / time, hvd.size()))
        """,
    "callbacks_from_helper": """
        import argparse

        import tensorflow as tf
        import horovod.tensorflow.keras as hvd


        def get_callbacks(args):
            callbacks = [hvd.callbacks.BroadcastGlobalVariablesCallback(0), hvd.callbacks.MetricAverageCallback(),
                         tf.keras.callbacks.EarlyStopping(monitor="val_loss", patience=args.patience)]
            if hvd.rank() == 0:
                callbacks.append(tf.keras.callbacks.TensorBoard(log_dir=args.log_dir))
            return callbacks


        def main(args):
            hvd.init()
            (x, y), (xv, yv) = tf.keras.datasets.mnist.load_data()
            x, y = x[hvd.rank()::hvd.size()] / 255.0, y[hvd.rank()::hvd.size()]
            model = tf.keras.Sequential([tf.keras.layers.Flatten(), tf.keras.layers.Dense(10)])
            opt = hvd.DistributedOptimizer(tf.keras.optimizers.Adam(args.lr * hvd.size()))
            model.compile(optimizer=opt, loss="sparse_categorical_crossentropy")
            model.fit(x, y, validation_data=(xv, yv), epochs=args.epochs, callbacks=get_callbacks(args),
                      verbose=2 if hvd.rank() == 0 else 0)


        if __name__ == "__main__":
            parser = argparse.ArgumentParser()
            parser.add_argument("--log-dir", default="./logs")
            parser.add_argument("--patience", type=int, default=3)
            parser.add_argument("--lr", type=float, default=1e-3)
            parser.add_argument("--epochs", type=int, default=20)
            main(parser.parse_args())
        """,
    "from_import_members": """
        import tensorflow as tf
        from horovod.tensorflow import DistributedGradientTape, broadcast_variables
        import horovod.tensorflow as horovod_tf

        horovod_tf.init()
        model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
        lr = 0.01
        optimizer = tf.keras.optimizers.Adam(lr * horovod_tf.size())
        dataset = tf.data.Dataset.from_tensor_slices((tf.random.normal([512, 4]), tf.random.normal([512, 1])))
        dataset = dataset.shard(horovod_tf.size(), horovod_tf.rank()).batch(32).take(512 // 32 // horovod_tf.size())


        def step(x, y, first):
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.square(model(x) - y))
            tape = DistributedGradientTape(tape)
            grads = tape.gradient(loss, model.trainable_variables)
            optimizer.apply_gradients(zip(grads, model.trainable_variables))
            if first:
                broadcast_variables(model.variables, root_rank=0)
                broadcast_variables(optimizer.variables(), root_rank=0)
            return loss


        for i, (x, y) in enumerate(dataset):
            step(x, y, i == 0)
        """,
}


def program(name: str) -> str:
    return textwrap.dedent(PROGRAMS[name]).lstrip()


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_convert_is_a_no_op(name):
    text = program(name)
    assert convert_text(text) == text


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_no_misuse_reported(name):
    codes = [f.code for f in analyze(program(name)).findings if f.code.startswith("HVD2")]
    assert codes == []


def test_partly_distributed_gets_only_what_is_missing_in_its_alias():
    text = textwrap.dedent("""
        import tensorflow as tf
        import horovod.keras as hk

        hk.init()
        (x, y), _ = tf.keras.datasets.mnist.load_data(path="mnist-%d.npz" % hk.rank())
        model = tf.keras.Sequential([tf.keras.layers.Flatten(), tf.keras.layers.Dense(10)])
        model.compile(optimizer=tf.keras.optimizers.Adadelta(1.0 * hk.size()), loss="sparse_categorical_crossentropy")
        model.fit(x, y, epochs=2, callbacks=[tf.keras.callbacks.EarlyStopping(patience=2)])
        """).lstrip()
    out = convert_text(text)
    assert "import horovod" not in out.replace("import horovod.keras as hk", "")   # no second import
    assert out.count("hk.init()") == 1
    assert "hk.DistributedOptimizer(tf.keras.optimizers.Adadelta(1.0 * hk.size()))" in out   # scaled once
    # the broadcast first, once, in the program's alias; the user's EarlyStopping kept on every
    # rank, its patience divided with the epochs (HVD043)
    assert "callbacks=[hk.callbacks.BroadcastGlobalVariablesCallback(0), " in out
    assert out.count("BroadcastGlobalVariablesCallback") == 1
    assert "tf.keras.callbacks.EarlyStopping(patience=int(math.ceil(2 / hk.size())))]" in out
    assert "if hk.rank() == 0" not in out
    assert convert_text(out) == out


def test_a_print_hint_is_a_quick_fix_but_not_in_the_whole_file_fix():
    text = program("keras_horovod_keras_warmup") + 'print("done")\n'
    analysis = analyze(text)
    assert any(f.code == "HVD030" for f in analysis.rule_sites)
    assert convert_text(text) == text


def test_set_up_goes_above_a_print_guard_at_the_same_offset():
    text = textwrap.dedent("""
        import tensorflow as tf
        print("TensorFlow", tf.__version__)
        model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
        opt = tf.keras.optimizers.SGD(0.1)
        for x, y in tf.data.Dataset.from_tensor_slices(([[1.0]], [[2.0]])).batch(1):
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.square(model(x) - y))
            grads = tape.gradient(loss, model.trainable_variables)
            opt.apply_gradients(zip(grads, model.trainable_variables))
        """).lstrip()
    out = convert_text(text)
    lines = out.splitlines()
    flag = next(i for i, line in enumerate(lines) if line.startswith("hvd_broadcast_done = "))
    guard = next(i for i, line in enumerate(lines) if line.startswith('if hvd.rank() == 0: print("TensorFlow"'))
    assert flag < guard                      # the flag is defined on every rank
    assert convert_text(out) == out          # idempotent


RUN_PROGRAMS = Path(__file__).resolve().parents[1] / "horovod" / "programs"


def test_run_tier_correct_program_is_left_byte_identical():
    """The already-correct program the Horovod tier trains on 2 ranks (hvd_correct_keras.py)."""
    text = (RUN_PROGRAMS / "hvd_correct_keras.py").read_bytes().decode("utf-8")
    assert convert_text(text) == text
    assert [f.code for f in analyze(text).findings if f.code.startswith("HVD2")] == []


@pytest.mark.parametrize("name", ["hvd_partial_keras.py", "hvd_partial_tape.py"])
def test_run_tier_partial_programs_get_only_the_broadcast(name):
    text = (RUN_PROGRAMS / name).read_bytes().decode("utf-8")
    out = convert_text(text)
    alias = "hk" if "keras" in name else "htf"
    assert out != text and out.count("import horovod") == 1
    assert out.count(f"{alias}.init()") == 1 and "hvd." not in out
    assert f"{alias}.callbacks.BroadcastGlobalVariablesCallback(0)" in out or f"{alias}.broadcast_variables(" in out
    assert convert_text(out) == out
    assert [f.code for f in analyze(out).findings if f.code.startswith("HVD2") and f.code != "HVD207"] == []
