"""The keras3 target's adapters: the four Horovod Keras entry points a converted program
calls, written into the program once, after the set-up, for Keras 3 on the TensorFlow
backend (docs/keras3.md says why they are written in, not imported).

Horovod 0.28's Keras layer is Keras 2: on Keras 3 its ``DistributedOptimizer`` trains
without averaging (its hooks are ones Keras 3 never calls), its broadcast callback and
``DistributedGradientTape`` die on ``.ref()``, its metric callback on ``keras.backend``.
Its TensorFlow ops work on the ``tf.Variable`` behind each Keras 3 variable (``v.value``).
Each adapter is named as the Horovod API it replaces and its docstring starts with
``hvd.<API> for Keras 3``: `analysis.hvd_facts` reads a module-level definition so marked as
that API, so a converted program converts to itself (idempotence).

A rule asks for one with `use` (the name to call and a placeholder edit); the engine calls
`merged` once every rule has run, which puts the adapters the whole file needs into one
block (in `ORDER`) and gives that block to every fix that asked for any.

Requires: analysis.keras3 (the adapters' APIs), parse (imports); the engine passes where the
set-up ends. Provides: `ORDER`, `APIS`, `MARK`, `use`, `merged`, `adapter_text`, `keras_module`.
"""

from __future__ import annotations

import re

from ..analysis.keras3 import ADAPTER_APIS as APIS, ADAPTER_MARK as MARK
from ..parse.imports import import_bindings
from ..parse.source import Edit
from .base import Fix, RuleContext

ORDER = ("DistributedOptimizer", "DistributedGradientTape", "BroadcastGlobalVariablesCallback",
         "MetricAverageCallback")
_PLACEHOLDER = "\0keras3-adapter:"


def use(ctx: RuleContext, name: str) -> tuple[str, list[Edit]]:
    """(the name to call, [placeholder edit]) for adapter `name`; the program's own (no edit)
    when it already defines it. `merged` replaces the placeholder."""
    if name in _defined(ctx):
        return name, []
    return name, [Edit(0, 0, _PLACEHOLDER + name)]


def _defined(ctx: RuleContext) -> set:
    return {local for local, full in ctx.facts.locals.items() if APIS.get(local) == full}


def merged(ctx: RuleContext, findings: list, at: int | None, tf: str) -> list:
    """`findings` with every adapter placeholder replaced by the one block of all the adapters
    the file needs, inserted at `at` (right after the set-up; `tf`: the name of the tensorflow
    module there); the engine runs this after the rules. Other lines inserted at `at` (a
    broadcast flag) go below the block: each fix that inserts there starts with it. Without a
    module-level set-up (`at` None) a fix that needs an adapter has nowhere to put it: dropped."""
    fixes = [fix for f in findings for fix in [f.fix, *f.alternatives] if fix is not None]
    wanted = [e for fix in fixes for e in fix.edits if e.new_text.startswith(_PLACEHOLDER)]
    if not wanted:
        return findings
    if at is None:
        for f in findings:
            if f.fix is not None and any(e.new_text.startswith(_PLACEHOLDER) for e in f.fix.edits):
                f.fix = None
            f.alternatives = [a for a in f.alternatives if not any(e.new_text.startswith(_PLACEHOLDER) for e in a.edits)]
        return findings
    names = {e.new_text[len(_PLACEHOLDER):] for e in wanted}
    setup = {id(f.fix) for f in findings if f.code in ("HVD001", "HVD002") and f.fix is not None}

    def below(fix) -> bool:      # lines this fix inserts where the block goes
        return id(fix) not in setup and any(e.start == e.end == at and not e.new_text.startswith(_PLACEHOLDER)
                                            for e in fix.edits)
    followed = any(below(fix) for fix in fixes)
    block = _block(ctx, [n for n in ORDER if n in names], at, tf, followed)
    for fix in fixes:
        if any(e.new_text.startswith(_PLACEHOLDER) for e in fix.edits) or below(fix):
            fix.edits = [block] + [e for e in fix.edits if not e.new_text.startswith(_PLACEHOLDER)]
    return findings


def keras_module(ctx: RuleContext, at: int) -> tuple[str, bool]:
    """(the name of the keras module the callback adapters derive from, whether the program
    binds it at its top before offset `at`, where they go). A program that imports only members
    (``from keras import layers``), or the module only further down (a notebook's later cell),
    gets ``import keras`` from the set-up (`rules.setup_imports.setup_code`), under another
    name when ``keras`` names something else."""
    bound = next((local for node in ctx.env.imports if node.parent.parent is ctx.source.module
                  and ctx.source.offset(node.start_pos) < at
                  for local, full in import_bindings(node) if full in ("keras", "keras_core")), None)
    if bound is not None:
        return bound, True
    taken = ctx.env.bindings_of("keras", ctx.source.module)
    return ("hvd_keras" if taken else "keras"), False


def _block(ctx: RuleContext, names: list[str], at: int, tf: str, followed: bool) -> Edit:
    keras = keras_module(ctx, at)[0]
    unit = ctx.source.indent_unit
    text = "\n".join("\n\n" + adapter_text(n, keras, ctx.hvd, tf, unit) for n in names)
    after = ctx.source.text[at:]
    blank = re.match(r"(?:[ \t]*(?:\r\n|\r|\n))*", after).group().count("\n") if after else 2
    # two blank lines below it: before the lines inserted below it, or with the file's own
    text += "\n\n" if followed else "\n" * max(0, 2 - blank)
    return Edit(at, at, ctx.lines(text, ""))


def adapter_text(name: str, keras: str, hvd: str, tf: str, unit: str) -> str:
    """The definition of adapter `name`, lines separated by ``\\n``, unindented; `unit` is one
    indent level."""
    u1, u2, u3 = unit, unit * 2, unit * 3
    average = f"None if g is None else {hvd}.allreduce(g, op={hvd}.Average)"
    if name == "DistributedOptimizer":
        return "\n".join([
            "def DistributedOptimizer(optimizer):",
            f'{u1}"""hvd.DistributedOptimizer {MARK}: the same optimizer, averaging the gradients over',
            f"{u1}the ranks before it applies them (fit and apply_gradients go through apply). As Horovod's,",
            f'{u1}a subclass under the class\'s own name: a saved model loads it as that class."""',
            f"{u1}cls = type(optimizer)",
            "",
            f"{u1}def apply(self, grads, trainable_variables=None):",
            f"{u2}grads = [{average} for g in grads]",
            f"{u2}return super(distributed, self).apply(grads, trainable_variables)",
            f'{u1}distributed = type(cls.__name__, (cls,), {{"apply": apply, "__module__": cls.__module__}})',
            f"{u1}return distributed.from_config(optimizer.get_config())",
        ])
    if name == "DistributedGradientTape":
        return "\n".join([
            "class DistributedGradientTape:",
            f'{u1}"""hvd.DistributedGradientTape {MARK} variables (Horovod\'s calls `.ref()`, which',
            f'{u1}they lack): the tape\'s gradients, averaged over the ranks."""',
            "",
            f"{u1}def __init__(self, tape):",
            f"{u2}self.tape = tape",
            "",
            f"{u1}def gradient(self, target, sources, *args, **kwargs):",
            f"{u2}grads = self.tape.gradient(target, sources, *args, **kwargs)",
            f"{u2}return {tf}.nest.map_structure(lambda g: {average}, grads)",
        ])
    if name == "BroadcastGlobalVariablesCallback":
        return "\n".join([
            f"class BroadcastGlobalVariablesCallback({keras}.callbacks.Callback):",
            f'{u1}"""hvd.callbacks.BroadcastGlobalVariablesCallback {MARK}: rank 0\'s model and optimizer',
            f'{u1}variables to every rank after the first batch (the optimizer builds its own in it)."""',
            "",
            f"{u1}def __init__(self, root_rank):",
            f"{u2}super().__init__()",
            f"{u2}self.root_rank = root_rank",
            f"{u2}self.done = False",
            "",
            f"{u1}def on_train_batch_end(self, batch, logs=None):",
            f"{u2}if not self.done:",
            f"{u3}variables = self.model.weights + self.model.optimizer.variables",
            f"{u3}{hvd}.broadcast_variables([v.value for v in variables], root_rank=self.root_rank)",
            f"{u3}self.done = True",
        ])
    if name == "MetricAverageCallback":
        return "\n".join([
            f"class MetricAverageCallback({keras}.callbacks.Callback):",
            f'{u1}"""hvd.callbacks.MetricAverageCallback {MARK}: the epoch\'s logs averaged over the ranks."""',
            "",
            f"{u1}def on_epoch_end(self, epoch, logs=None):",
            f"{u2}for key in sorted(logs or {{}}):",
            f"{u3}logs[key] = float({hvd}.allreduce({tf}.constant(float(logs[key]), {tf}.float64), "
            f'name=f"metric_{{key}}"))',
        ])
    raise KeyError(name)


__all__ = ["ORDER", "APIS", "MARK", "use", "merged", "adapter_text", "keras_module"]
