"""Loading an equal part of a ``tfds.load`` split on each rank (HVD041 for TFDS, contract point 5):
which ``split=`` a dataset comes from (through assignments, unpacked results and subscripts),
and ``tfds.even_splits(split, n=hvd.size(), drop_remainder=True)[hvd.rank()]`` in its place.

Requires: pipelines (assignments, unwrapping of a pipeline's calls). Used by `work_division`
and `use_site`.
"""

from __future__ import annotations

from typing import Iterator

from ..parse import nodes as N
from ..parse.imports import import_bindings
from ..parse.source import Edit
from .base import Finding, Fix, RuleContext, finding, mentions_hvd
from .pipelines import _assignments, _elements, _target_path, _unwrap, chain_calls


def _tfds_split(ctx: RuleContext, expr, at, depth: int = 0, sub: tuple = ()):
    """The ``split=`` string (a literal) of the ``tfds.load(...)`` whose dataset `expr` is, following
    ``ds = ds.map(...)`` assignments, ``(train, test), info = tfds.load(split=[...])`` and
    subscripts of its result (``splits, info = tfds.load(split=[a, b])``, ``train = splits[1]``)."""
    expr = N.unparen(_unwrap(ctx, N.unparen(expr)))
    if expr is None or depth > 12 or expr.type not in ("atom_expr", "power", "name"):
        return None
    expr, sub = _subscripted(expr, sub)
    calls = chain_calls(expr) if expr.type != "name" else []
    if any(c.method in ("take", "repeat", "shard") for c in calls):
        return None     # bounded, endless or sharded by the program: a split per rank is not the division
    load = calls[-1] if calls else None     # (``tfds.load(...).map(f).batch(n)``: its head)
    if load is not None and _is_tfds_load(ctx, load):
        arg = load.keyword("split")
        return arg.value if arg is not None and N.unparen(arg.value).type != "atom" else None
    root = expr if expr.type == "name" else expr.children[0]
    if root.type != "name":
        return None
    scope = N.func_scope_of(at) or ctx.source.module
    # the last assignment of the name before `at` in its scope
    best = None
    for stmt in _assignments(ctx, scope):
        if stmt.start_pos >= at.start_pos or stmt is N.statement_of(at):
            continue
        parts = N.assign_parts(stmt)
        path = _target_path(parts[0], root.value) if parts else None
        if path is not None:
            best = (stmt, parts[1], path)
    if best is None:
        return None
    stmt, value, path = best
    if not path:
        return _tfds_split(ctx, value, stmt, depth + 1, sub)
    path += sub
    load = N.as_call(N.unparen(value))
    if load is None or not _is_tfds_load(ctx, load):
        return None
    arg = load.keyword("split")
    info = load.keyword("with_info")
    with_info = info is not None and info.value.type == "keyword" and info.value.value == "True"
    if arg is not None and with_info and path == (0,) and arg.value.type in ("string", "strings"):
        return arg.value          # ``ds, info = tfds.load(split="train", with_info=True)``
    if arg is None or N.unparen(arg.value).type not in ("atom", "testlist_comp"):
        return None
    if with_info:
        if path[0] != 0:
            return None
        path = path[1:]
    elems = _elements(N.unparen(arg.value))
    if len(path) != 1 or path[0] >= len(elems) or elems[path[0]].type == "atom":
        return None
    return elems[path[0]]


def _subscripted(expr, sub: tuple) -> tuple:
    """``splits[1]`` → (``splits``, (1,) + sub); anything else as it is."""
    kids = expr.children if expr.type in ("atom_expr", "power") else ()
    if len(kids) == 2 and kids[0].type == "name" and kids[1].type == "trailer" and kids[1].children[0] == "[" \
            and kids[1].children[1].type == "number" and kids[1].children[1].value.isdigit():
        return kids[0], (int(kids[1].children[1].value),) + sub
    return expr, sub


def _is_tfds_load(ctx: RuleContext, call: N.Call) -> bool:
    dotted = call.callee_dotted() or ""
    for stmt in ctx.source.module.children:
        if stmt.type == "simple_stmt" and stmt.children[0].type in ("import_name", "import_from"):
            for local, full in import_bindings(stmt.children[0]):
                if full == "tensorflow_datasets" and dotted == f"{local}.load":
                    return True          # (``from tensorflow_datasets import load``: no module name to reuse)
    return False


def _even_split(ctx: RuleContext, split, seen: set) -> Iterator[Finding]:
    """``split='train'`` → ``split=tfds.even_splits('train', n=hvd.size(), drop_remainder=True)[hvd.rank()]``:
    each rank loads its own equal part of the split (equal steps, as tfds documents)."""
    key = (id(split), 0)
    if key in seen or mentions_hvd(split, ctx) or ctx.blocked("HVD041", split):
        return           # (a split already divided by rank: nothing more, and no epoch division)
    seen.add(key)
    hvd = ctx.hvd
    load = split
    while load is not None and not (load.type in ("atom_expr", "power") and N.as_call(load)):
        load = load.parent
    tfds = (N.as_call(load).callee_dotted() or "tfds.load").rsplit(".", 1)[0] if load is not None else "tfds"
    start, end = ctx.source.span(split)
    text = ctx.source.text[start:end]
    yield finding(ctx, "HVD041", split, f"every rank loads the whole tfds split {text}",
                  Fix("Load an equal part of the tfds split on each rank",
                      [Edit(start, end, f"{tfds}.even_splits({text}, n={hvd}.size(), drop_remainder=True)[{hvd}.rank()]")]))
