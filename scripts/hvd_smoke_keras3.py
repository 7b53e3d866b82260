"""Keras 3 smoke test of a Horovod build (docs/stacks.md): what horovod.tensorflow does with
Keras 3 variables, on 2 ranks.

    KERAS_BACKEND=tensorflow horovodrun --gloo -np 2 -H localhost:2 python scripts/hvd_smoke_keras3.py

Each rank builds a small keras.Sequential model from a different seed, then:
  1. broadcasts the initial state from rank 0: hvd.broadcast_variables on the Keras 3
     variables themselves, else on their backing tf.Variables (`v.value`);
  2. trains a few steps on its own data: tf.GradientTape, hvd.allreduce(Average) of each
     gradient, the Keras 3 optimizer's apply(grads, model.trainable_variables);
  3. tries hvd.DistributedGradientTape on the same model and, when it works, a few more steps;
  4. tries `import horovod.tensorflow.keras`, then model.fit with its
     BroadcastGlobalVariablesCallback (learning rate 0: do the weights end equal?) and with its
     DistributedOptimizer (are the gradients averaged: do the weights end equal?); these two
     are reported, not required.
Each rank prints `SMOKE rank=R <step> ...` lines and the weights' checksum; rank 0 prints
`SMOKE RESULT ok` when the checksums of steps 1-2 (and 3 when it ran) agree on every rank, and
the script exits 1 otherwise. A failing Horovod call is reported with its traceback (every rank
takes the same path, so no rank waits on a collective the other skipped).
"""
import hashlib
import os
import sys
import traceback

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import keras  # noqa: E402
import horovod  # noqa: E402
import horovod.tensorflow as hvd  # noqa: E402

hvd.init()
RANK, SIZE = hvd.rank(), hvd.size()
STEPS = 5


def say(what, *rest):
    print(f"SMOKE rank={RANK} {what}", *rest, flush=True)


def trace(what, exc):
    lines = traceback.format_exception(exc)
    say(f"{what} FAILED: {type(exc).__name__}: {exc}".splitlines()[0])
    if RANK == 0:
        print("".join(lines[-12:]), flush=True)


def checksum(model):
    """sha256 of the weights' bytes (exact) and their sum (readable)."""
    h = hashlib.sha256()
    total = 0.0
    for w in model.get_weights():
        h.update(np.ascontiguousarray(w, dtype=np.float32).tobytes())
        total += float(np.sum(w, dtype=np.float64))
    return h.hexdigest()[:16], total


def same_on_all_ranks(model):
    digest, total = checksum(model)
    mine = tf.constant([int(digest, 16) % (1 << 62)], dtype=tf.int64)
    every = hvd.allgather(mine, name=f"checksum.{same_on_all_ranks.calls}").numpy().tolist()
    same_on_all_ranks.calls += 1
    return digest, total, len(set(every)) == 1


same_on_all_ranks.calls = 0

say("versions", f"tf={tf.__version__} keras={keras.__version__} horovod={horovod.__version__} "
    f"backend={keras.backend.backend()} size={SIZE}")

keras.utils.set_random_seed(1234 + RANK)   # different initial weights per rank
model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(16, activation="relu"),
                          keras.layers.Dense(1)])
optimizer = keras.optimizers.SGD(learning_rate=0.05)
loss_fn = keras.losses.MeanSquaredError()
say("variable type", f"{type(model.trainable_variables[0]).__module__}."
    f"{type(model.trainable_variables[0]).__name__} (isinstance tf.Variable: "
    f"{isinstance(model.trainable_variables[0], tf.Variable)}; .value is "
    f"{type(model.trainable_variables[0].value).__name__})")
rng = np.random.default_rng(100 + RANK)    # different data per rank
x = rng.normal(size=(64, 8)).astype("float32")
y = (x @ np.arange(1, 9, dtype="float32")[:, None] / 8.0).astype("float32")
results = {}

# --- 1. broadcast the initial state -------------------------------------------------------
digest, total, same = same_on_all_ranks(model)
say("before broadcast", f"checksum={digest} sum={total:.6f} same_on_all_ranks={same}")
broadcast_ok = None
for label, variables in (("broadcast_variables(model.variables)", lambda: model.variables),
                         ("broadcast_variables([v.value for v in model.variables])",
                          lambda: [v.value for v in model.variables])):
    try:
        hvd.broadcast_variables(variables(), root_rank=0)
    except Exception as exc:  # noqa: BLE001 -- the report is the point
        trace(label, exc)
        results[label] = "error"
        continue
    digest, total, same = same_on_all_ranks(model)
    say(label, f"checksum={digest} sum={total:.6f} same_on_all_ranks={same}")
    results[label] = "ok" if same else "ran, weights differ"
    if same:
        broadcast_ok = label
        break
if broadcast_ok is None:
    say("no broadcast worked")
    sys.exit(1)

# --- 2. GradientTape + hvd.allreduce + the Keras 3 optimizer --------------------------------
# (one optimizer step builds the optimizer's own variables; they start equal on every rank)
label = "GradientTape + allreduce(Average) + optimizer.apply"
try:
    for step in range(STEPS):
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        grads = [hvd.allreduce(g, op=hvd.Average, name=f"grad.{i}") for i, g in enumerate(grads)]
        optimizer.apply(grads, model.trainable_variables)
        say(f"step {step}", f"loss={float(loss):.6f}")
    digest, total, same = same_on_all_ranks(model)
    say(f"after {STEPS} steps ({label})", f"checksum={digest} sum={total:.6f} same_on_all_ranks={same}")
    results[label] = "ok" if same else "ran, weights differ"
except Exception as exc:  # noqa: BLE001
    trace(label, exc)
    results[label] = "error"

# --- 3. hvd.DistributedGradientTape -----------------------------------------------------------
label = "DistributedGradientTape"
try:
    for step in range(STEPS):
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        tape = hvd.DistributedGradientTape(tape)
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply(grads, model.trainable_variables)
    digest, total, same = same_on_all_ranks(model)
    say(f"after {STEPS} more steps ({label})", f"checksum={digest} sum={total:.6f} same_on_all_ranks={same}")
    results[label] = "ok" if same else "ran, weights differ"
except Exception as exc:  # noqa: BLE001
    trace(label, exc)
    results[label] = "error"
    label = "DistributedGradientTape on [v.value ...]"
    try:
        # the backing tf.Variables as sources: the tape watched them through the Keras variables
        for step in range(STEPS):
            with tf.GradientTape() as tape:
                loss = loss_fn(y, model(x, training=True))
            tape = hvd.DistributedGradientTape(tape)
            grads = tape.gradient(loss, [v.value for v in model.trainable_variables])
            if any(g is None for g in grads):
                raise RuntimeError("a gradient is None: the tape did not see the tf.Variables")
            optimizer.apply(grads, model.trainable_variables)
        digest, total, same = same_on_all_ranks(model)
        say(f"after {STEPS} more steps ({label})", f"checksum={digest} sum={total:.6f} same_on_all_ranks={same}")
        results[label] = "ok" if same else "ran, weights differ"
    except Exception as exc2:  # noqa: BLE001
        trace(label, exc2)
        results[label] = "error"

# --- 4. horovod.tensorflow.keras --------------------------------------------------------------
label = "import horovod.tensorflow.keras"
try:
    import horovod.tensorflow.keras as hvdk
    results[label] = "ok"
    say(label, "ok")
    for what, make in (
            ("hvdk.DistributedOptimizer(keras.optimizers.SGD())",
             lambda: hvdk.DistributedOptimizer(keras.optimizers.SGD(0.01))),
            ("hvdk.callbacks.BroadcastGlobalVariablesCallback(0)",
             lambda: hvdk.callbacks.BroadcastGlobalVariablesCallback(0))):
        try:
            obj = make()
            say(what, f"ok ({type(obj).__name__})")
            results[what] = "ok"
        except Exception as exc:  # noqa: BLE001
            trace(what, exc)
            results[what] = "error"
except Exception as exc:  # noqa: BLE001
    trace(label, exc)
    results[label] = "error"


def fit_model(label, optimizer, callbacks, broadcast_first):
    keras.utils.set_random_seed(99 + RANK)   # different initial weights per rank again
    m = keras.Sequential([keras.Input((8,)), keras.layers.Dense(16, activation="relu"),
                          keras.layers.Dense(1)])
    if broadcast_first:
        hvd.broadcast_variables([v.value for v in m.variables], root_rank=0)
    try:
        m.compile(optimizer=optimizer, loss="mse")
        m.fit(x, y, batch_size=16, epochs=1, shuffle=False, callbacks=callbacks, verbose=0)
    except Exception as exc:  # noqa: BLE001
        trace(label, exc)
        results[label] = "error"
        return
    digest, total, same = same_on_all_ranks(m)
    say(f"after fit ({label})", f"checksum={digest} sum={total:.6f} same_on_all_ranks={same}")
    results[label] = "ok" if same else "ran, weights differ"


if results.get(label) == "ok":
    fit_model("fit + hvdk BroadcastGlobalVariablesCallback (SGD lr=0)",
              keras.optimizers.SGD(learning_rate=0.0),
              [hvdk.callbacks.BroadcastGlobalVariablesCallback(0)], broadcast_first=False)
    fit_model("fit + hvdk.DistributedOptimizer (weights broadcast first)",
              hvdk.DistributedOptimizer(keras.optimizers.SGD(learning_rate=0.05)),
              [], broadcast_first=True)

# --- verdict ----------------------------------------------------------------------------------
say("results", results)
required = [broadcast_ok, "GradientTape + allreduce(Average) + optimizer.apply"]
ok = all(results.get(k) == "ok" for k in required)
for k in ("DistributedGradientTape", "DistributedGradientTape on [v.value ...]"):
    if results.get(k) == "ran, weights differ":
        ok = False
if RANK == 0:
    print(f"SMOKE RESULT {'ok' if ok else 'FAILED'}", flush=True)
sys.exit(0 if ok else 1)
