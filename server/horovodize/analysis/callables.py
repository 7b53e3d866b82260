"""Known higher-order calls: the library functions that take a training function and
run it (or a wrapper of it) as it is, so passing the function to them does not hide the
loop from the summary (HVD-T4 stays quiet).

* entry points: ``absl.app.run(main)``, ``tf.compat.v1.app.run(main)``,
  ``horovod.run(main, np=2)``, ``fire.Fire(main)``, ``typer.run(main)`` — they call
  `main` once, in this process (or each worker);
* wrappers: ``tf.function(f)``, ``functools.partial(f, ...)`` — the result runs `f`
  (`Env.call_target` follows ``g = partial(f, ...)`` to `f`);
* ``strategy.run(step_fn)`` on a ``tf.distribute`` strategy (the program gets HVD092);
* ``tf.estimator.Estimator(model_fn=f)``: the Estimator calls `f` to build its training
  graph (the Estimator loop, HVD060/HVD061, and the rules inside `f` apply).

absl, functools, fire and typer are not among the environment's module roots, so their imports are
read here (``from absl import app``, ``import functools as ft``, ``from functools import
partial``).

Requires: env (aliases, imports). Provides: `is_higher_order`, `is_wrapper`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..parse import nodes as N
from ..parse.imports import import_bindings

if TYPE_CHECKING:                 # (env imports this module: annotations only)
    from .env import Env

ENTRY_POINTS = {"tensorflow.app.run", "absl.app.run", "horovod.run", "horovod.runner.run", "fire.Fire", "typer.run"}
WRAPPERS = {"tensorflow.function", "functools.partial"}
MODEL_FN_CALLERS = {"tensorflow.estimator.Estimator", "tensorflow.compat.v1.estimator.Estimator"}
_OTHER_ROOTS = ("absl", "functools", "fire", "typer")


def callee_name(env: Env, call) -> str | None:
    """The callee's qualified name, absl and functools included."""
    q = env.callee_qualname(call)
    if q is not None:
        return q
    d = call.callee_dotted()
    if d is None:
        return None
    table = env.__dict__.get("_other_imports")
    if table is None:
        table = env.__dict__["_other_imports"] = {
            local: full for node in env.imports for local, full in import_bindings(node)
            if full.split(".")[0] in _OTHER_ROOTS}
    root, _, rest = d.partition(".")
    if env._deps is not None:              # (an answer kept across edits depends on this import)
        env._deps.append(root)
    if root not in table:
        return None
    return table[root] + ("." + rest if rest else "")


def is_wrapper(env: Env, call) -> bool:
    """``tf.function(f)`` / ``functools.partial(f, ...)``: the result runs `f`."""
    return callee_name(env, call) in WRAPPERS


def is_higher_order(env: Env, call) -> bool:
    """A call that runs the function passed to it (an entry point, a wrapper, or a
    ``tf.distribute`` strategy's ``run``, which HVD092 reports)."""
    name = callee_name(env, call)
    return name in ENTRY_POINTS | WRAPPERS or name in MODEL_FN_CALLERS or _strategy_run(env, call)


def _strategy_run(env: Env, call) -> bool:
    """``strategy.run(step_fn, args=...)`` on a ``tf.distribute`` strategy."""
    if call.method not in ("run", "experimental_run_v2"):
        return False
    receiver = call.receiver_dotted() or ""
    b = env.lookup(receiver, call.node)
    made = N.as_call(b.value) if b is not None and b.value is not None else None
    q = env.callee_qualname(made) if made is not None else None
    if q is not None:
        return q.startswith("tensorflow.distribute.")
    return receiver.rsplit(".", 1)[-1].lower().endswith("strategy")


__all__ = ["callee_name", "is_higher_order", "is_wrapper"]
