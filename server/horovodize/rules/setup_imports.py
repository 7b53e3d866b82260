"""Set-up rules: one Horovod import, ``hvd.init()`` and GPU pinning per file (HVD001,
HVD002), and no hand-picked ``CUDA_VISIBLE_DEVICES`` (HVD003).

Requires: env (import aliases, top-of-file block), loop (which Horovod module).
"""

from __future__ import annotations

import ast
import re
from typing import Iterator

from ..analysis.loop import FIT
from ..parse import nodes as N
from ..parse.source import Edit
from .base import Finding, Fix, RuleContext, finding
from . import shared_values
from .estimator import pinned_by_run_config
from .keras3_adapters import keras_module
from .tapes import keras_step_tapes, tape_loops_beside_fit, tf_module_alias

RULES = {
    "HVD001": ("horovod-setup", "Add Horovod set-up (import, hvd.init(), GPU pinning)"),
    "HVD002": ("horovod-keras-setup", "Add Horovod Keras set-up (import, hvd.init(), GPU pinning)"),
    "HVD003": ("drop-cuda-visible-devices", "Remove CUDA_VISIBLE_DEVICES: each rank pins its GPU"),
}


def tf_name(ctx: RuleContext) -> str:
    """The name the set-up uses for the tensorflow module (bound by the set-up if needed)."""
    tf = ctx.env.tf_alias()
    if tf is None:  # `from tensorflow import keras` only: the pinning needs the module
        tf = "tf" if "tf" not in ctx.env.index.names else "hvd_tf"
    return tf


def setup_code(ctx: RuleContext) -> str:
    """The set-up block, one statement per line, ``\\n``-separated and unindented."""
    env, unit = ctx.env, ctx.source.indent_unit
    lines = []
    tf = tf_name(ctx)
    if env.tf_alias() is None:
        lines.append(f"import tensorflow as {tf}")
    # (the keras3 target: horovod.tensorflow alone, whose ops its adapters call; the Keras layer,
    # horovod.tensorflow.keras, is Keras 2's: rules/keras3_adapters.py)
    keras3 = ctx.keras_target == "keras3"
    if keras3 and FIT in ctx.summary.kinds:
        # (fit's callback adapters derive from keras.callbacks.Callback: a program that imports
        # only members of keras gets the module)
        anchor = env.setup_after
        keras, bound = keras_module(ctx, ctx.stmt_end(anchor) if anchor is not None else len(ctx.source.text))
        if not bound:
            lines.append("import keras" if keras == "keras" else f"import keras as {keras}")
    lines.append(f"import {'horovod.tensorflow' if keras3 else ctx.summary.hvd_module} as hvd")
    if ctx.summary.hvd_module.endswith("keras") and not keras3:
        # a tape needs horovod.tensorflow's wrapper, a shared value its broadcast_object, a read
        # of rank 0's file its broadcasts (`bind_tf_module`)
        if keras_step_tapes(ctx) or tape_loops_beside_fit(ctx) or shared_values.sites(ctx) or \
                ctx.__dict__.get("_bind_tf_module"):
            lines.append(f"import horovod.tensorflow as {tf_module_alias(ctx)}")
    lines.append("hvd.init()")
    if "Session" in ctx.summary.kinds or pinned_by_run_config(ctx):   # pinned in the session config (HVD070)
        return "\n".join(lines)
    lines += [
        f"gpus = {tf}.config.experimental.list_physical_devices('GPU')",
        "for gpu in gpus:",
        f"{unit}{tf}.config.experimental.set_memory_growth(gpu, True)",
        "if gpus:",
        f"{unit}{tf}.config.experimental.set_visible_devices(gpus[hvd.local_rank()], 'GPU')",
    ]
    return "\n".join(lines)


def setup_site(ctx: RuleContext) -> Finding | None:
    """The HVD001/HVD002 finding with the set-up edit, or None when not applicable."""
    env = ctx.env
    if ctx.facts.uses_horovod:
        return _missing_module_import(ctx)
    if env.tf_import is None and env.keras_import is None:
        return None
    anchor = env.setup_after
    code = "HVD002" if ctx.summary.hvd_module.endswith("keras") else "HVD001"
    site_node = env.tf_import or env.keras_import
    if anchor is None or ctx.blocked(code, site_node):
        return None
    edit = ctx.insert_after_stmt(anchor, setup_code(ctx), indent="")
    message = ("TensorFlow Keras program without Horovod set-up" if code == "HVD002"
               else "TensorFlow program without Horovod set-up")
    return finding(ctx, code, site_node, message, Fix(RULES[code][1], [edit], needs_setup=False))


def _missing_module_import(ctx: RuleContext) -> Finding | None:
    """A program that uses Horovod only through from-imports (``from horovod.tensorflow import
    DistributedGradientTape``) gets the module imported once, for the edits that name it."""
    facts = ctx.facts
    if facts.module_name is not None or not facts.imports:
        return None
    full = next((f for f in facts.locals.values() if f.startswith("horovod.tensorflow.keras") or f.startswith("horovod.keras")),
                None)
    module = "horovod.tensorflow.keras" if full else "horovod.tensorflow"
    code = "HVD002" if full else "HVD001"
    edit = ctx.insert_after_stmt(N.statement_of(facts.imports[-1]), f"import {module} as {ctx.hvd}", indent="")
    return finding(ctx, code, facts.imports[-1], "Horovod is imported by member only; the edits need its module",
                   Fix(RULES[code][1], [edit], needs_setup=False))


SETUP_MARKERS = ("init()", "list_physical_devices", "set_memory_growth", "set_visible_devices")


def after_setup(ctx: RuleContext, at=None) -> int | None:
    """Offset where state that needs the set-up goes: right after the set-up (where
    HVD001/HVD002 inserts it, or after an existing one, GPU pinning included), before any
    other code. When the program initialises Horovod inside the function that holds `at`
    (``def train(): hvd.init() ...``), right after the set-up in that function: a variable
    created at module level would touch the GPUs before they are pinned."""
    env, facts = ctx.env, ctx.facts
    last = env.setup_after
    if facts.uses_horovod:
        block = ctx.source.module
        fn = _init_function(ctx, at)
        if fn is not None:
            block, last = fn.children[-1], None
        for stmt in block.children:
            if stmt.type in ("funcdef", "classdef", "decorated", "while_stmt", "with_stmt", "async_stmt"):
                break
            code = stmt.get_code(include_prefix=False)
            if stmt.type == "simple_stmt" and stmt.children[0].type in ("import_name", "import_from") \
                    or any(m in code for m in SETUP_MARKERS):
                last = stmt
            elif stmt.type in ("for_stmt", "if_stmt"):
                break
    return ctx.stmt_end(last) if last is not None else None


def _init_function(ctx: RuleContext, at):
    """The function holding `at` that calls ``hvd.init()`` itself, when no module-level code does."""
    facts = ctx.facts
    inits = facts.init_calls
    if at is None or not inits or any(N.enclosing(c.node, {"funcdef"}) is None for c in inits):
        return None
    for c in inits:
        fn = N.enclosing(c.node, {"funcdef"})
        if fn is not None and fn.start_pos <= at.start_pos and at.end_pos <= fn.end_pos \
                and N.statement_of(c.node).parent is fn.children[-1]:
            return fn
    return None


def placed(ctx: RuleContext, findings: list[Finding]) -> list[Finding]:
    """TensorFlow imported below other code (``data = load(); import tensorflow as tf``):
    the set-up follows that import, unless an edit of the conversion lands above it (a
    guarded print, a rank-0 download), which would run before ``hvd.init()``; then the
    set-up goes at the top of the module, before the first code, with its own copy of the
    import. Returns `findings` with the set-up's edit moved when needed."""
    env = ctx.env
    _bind_tf_module(ctx, findings)
    late = env.setup_after
    if late is None or late is env.top_imports_end or env.top_block_end is None:
        return findings
    setup = next((f for f in findings if f.code in ("HVD001", "HVD002") and f.fix is not None), None)
    if setup is None or not setup.fix.edits:
        return findings
    at = setup.fix.edits[0].start
    if not any(e.start < at and _runs_horovod(ctx, e) for f in findings if f is not setup and f.fix is not None
               for e in f.fix.edits):
        return findings
    top = ctx.insert_before_stmt(env.top_block_end, late.get_code(include_prefix=False) + "\n" + setup_code(ctx))
    setup.fix.edits = [top]
    return findings


def _bind_tf_module(ctx: RuleContext, findings: list[Finding]) -> None:
    """A Keras program whose other edits call horovod.tensorflow (the broadcasts of a read of
    rank 0's file, `read_back`) gets it bound by its set-up, when `setup_code` did not already."""
    setup = next((f for f in findings if f.code == "HVD002" and f.fix is not None and f.fix.edits), None)
    alias = tf_module_alias(ctx)
    if setup is None or alias is None or ctx.__dict__.get("_bind_tf_module") or \
            f"import horovod.tensorflow as {alias}" in setup.fix.edits[0].new_text:
        return
    if any(f"{alias}." in e.new_text for f in findings if f is not setup and f.fix is not None for e in f.fix.edits):
        ctx.__dict__["_bind_tf_module"] = True
        setup.fix.edits = [ctx.insert_after_stmt(ctx.env.setup_after, setup_code(ctx), indent="")]


def _runs_horovod(ctx: RuleContext, edit) -> bool:
    """An edit that names Horovod (a guard, a barrier); an added ``import math`` runs nothing
    the set-up must precede."""
    return re.search(rf"\b{re.escape(ctx.hvd)}\b|\bhvd", edit.new_text) is not None


def check(ctx: RuleContext) -> Iterator[Finding]:
    site = setup_site(ctx)
    if site is not None:
        yield site
    yield from _cuda_visible_devices(ctx)


def _cuda_visible_devices(ctx: RuleContext) -> Iterator[Finding]:
    os_names = {n for n, q in ctx.env.aliases.items() if q == "os"}
    if not os_names or "CUDA_VISIBLE_DEVICES" not in ctx.source.text:
        return
    for node, _owner in ctx.env.index.assignments:
        parts = N.assign_parts(node)
        if not parts or len(parts[0]) != 1:
            continue
        target = parts[0][0]
        code = target.get_code(include_prefix=False).replace(" ", "")
        if not any(code in (f"{o}.environ['CUDA_VISIBLE_DEVICES']", f'{o}.environ["CUDA_VISIBLE_DEVICES"]') for o in os_names):
            continue
        if _forces_cpu(parts[1]):
            continue      # "-1" / "": the user runs on the CPU on purpose; every rank should too
        if ctx.blocked("HVD003", node):
            continue
        edit = _delete_statement(ctx, node)
        if edit is not None:
            yield finding(ctx, "HVD003", node, "CUDA_VISIBLE_DEVICES is set by hand; Horovod pins one GPU per rank",
                          Fix(RULES["HVD003"][1], [edit]))


def _forces_cpu(value) -> bool:
    """``"-1"`` or ``""``: no GPU visible at all (not a hand-picked GPU)."""
    if value.type != "string":
        return False
    try:
        text = ast.literal_eval(value.get_code(include_prefix=False))
    except (ValueError, SyntaxError):
        return False
    return isinstance(text, str) and text.strip() in ("", "-1")


def _delete_statement(ctx: RuleContext, small) -> Edit | None:
    """Delete a statement alone on its line; keep a trailing comment; `pass` if the block empties."""
    src = ctx.source
    if N.is_bare_statement(small):          # last line of a file without a final line break
        block, line_end = small.parent, len(src.text)
    else:
        line = N.simple_stmt_of(small)
        if line is None or len([c for c in line.children if c.type != "newline"]) != 1:
            return None
        block = line.parent
        newline_leaf = line.children[-1]
        line_end = src.offset(newline_leaf.start_pos) if newline_leaf.type == "newline" else src.line_end(src.offset(small.end_pos))
    if block is None or block.type not in ("suite", "file_input"):
        return None
    start = src.line_start(src.offset(small.start_pos))
    stmt_start = src.offset(small.start_pos)
    end = src.offset(small.end_pos)
    comment_start = src.text.find("#", end, line_end)
    siblings = [c for c in block.children if c.type == "simple_stmt" or c.type in N.COMPOUND or N.is_bare_statement(c)]
    if block.type == "suite" and len(siblings) == 1:
        return Edit(stmt_start, end, "pass")
    if comment_start != -1:
        return Edit(stmt_start, comment_start, "")
    return Edit(start, src.line_end(end), "")
