"""tf.data pipelines as the rules see them: from where training uses a dataset back to its
source, through the assignments of its root name, a local function's return (to the argument
its caller passed), chains of Dataset methods, and ``train, val = utility(subset="both")``
unpacking. Used by `work_division` (HVD041 at the source) and `use_site` (at the use).

Requires: env (bindings, qualified names, functions and their returns).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..analysis.roles import KERAS_DATASETS
from ..parse import nodes as N
from ..parse.scopes import is_main_guard
from .base import RuleContext

WRAPPERS = ("enumerate", "tqdm", "tqdm.tqdm", "iter")


@dataclass
class Pipeline:
    """A tf.data pipeline feeding training: its chained calls from the use back to the source."""

    calls: list = field(default_factory=list)     # N.Call, outermost (last applied) first
    source: N.Call | None = None                  # the tf.data.Dataset.*(...) call
    known: bool = True                            # every link resolved to a dataset
    through: list = field(default_factory=list)   # (funcdef, call node) of each local function whose return it came by

    def method(self, name: str) -> list:
        return [c for c in self.calls if c.method == name]

    @property
    def infinite(self) -> bool:
        return any(not c.args for c in self.method("repeat"))


def _unwrap(ctx: RuleContext, expr):
    """``enumerate(ds)`` / ``tqdm(ds)`` → ``ds``."""
    while True:
        call = N.as_call(expr)
        if call is None or call.callee_dotted() not in WRAPPERS or not call.args:
            return expr
        expr = call.args[0].value


def chain_calls(node) -> list:
    """The calls of ``a.b(...).c(...)``, outermost (last applied) first."""
    return [N.Call(node, i) for i in range(len(node.children) - 1, 0, -1) if N.is_call_trailer(node.children[i])]


def pipeline(ctx: RuleContext, expr, at=None, depth: int = 0, args: dict | None = None) -> Pipeline | None:
    """Walk ``a.b(...).c(...)`` and the assignments of its root name back to a tf.data source;
    through a local function's return to the argument its caller passed (`args`: parameter
    name -> (argument, call node))."""
    env = ctx.env
    expr = N.unparen(_unwrap(ctx, N.unparen(expr)))
    out = Pipeline()
    if expr.type not in ("atom_expr", "power", "name") or depth > 12:
        return None
    node = expr
    calls = []
    if node.type != "name":
        calls = chain_calls(node)
    for call in calls:
        q = env.callee_qualname(call)
        if q and (q.startswith("tensorflow.data.") or q in KERAS_DATASETS):
            out.source = call
            return out
        out.calls.append(call)
    root = node if node.type == "name" else node.children[0]
    if root.type != "name":
        return None
    if args and root.value in args and (node.type == "name" or calls) and not _reassigned(ctx, root.value, at or node):
        arg, call_node = args[root.value]        # a parameter: what the caller passed
        inner = pipeline(ctx, arg, call_node, depth + 1)
        if inner is not None:
            inner.calls = out.calls + inner.calls
        return inner
    if calls and calls[-1].index == 1:          # ``make_pipeline(...)...``: follow a local function's return
        fn = env.function_named(root.value, node)
        if fn is not None:
            passed = _passed(env, fn, calls[-1])
            for ret in env.index.returns.get(id(fn), ()):
                if len(ret.children) > 1:
                    inner = pipeline(ctx, ret.children[1], ret, depth + 1, passed)
                    if inner is not None:
                        inner.calls = out.calls[:-1] + inner.calls
                        inner.through.insert(0, (fn, calls[-1].node))
                        return inner
            return None
    b = _binding_before(ctx, root.value, at or node)
    if b is None:
        pair = _pair_source(ctx, root.value, at or node)
        if pair is not None:           # ``train, val = image_dataset_from_directory(..., subset="both")``
            out.source = pair
            return out
        inner = _unpacked_return(ctx, root.value, at or node, depth) or _parameter(ctx, root.value, at or node, depth)
        if inner is not None:          # ``train, n = make_datasets()``: that element of its return
            inner.calls = out.calls + inner.calls
            return inner
        return None        # not a dataset this program builds (arrays, tensors, a loader's result)
    inner = pipeline(ctx, b.value, b.stmt, depth + 1, args)
    if inner is None:
        if _returns_arrays(ctx, b.value) or _made_by_numpy(ctx, b):
            return None    # ``x = preprocess(x)`` returning ``x.astype(...)[..., None] / 255.0``: arrays
        return Pipeline(out.calls, None, False)
    inner.calls = out.calls + inner.calls
    return inner


def over_range(ctx: RuleContext, expr) -> bool:
    """``for step in range(n)``: a step loop, divided by rules/step_loops.py."""
    call = N.as_call(N.unparen(_unwrap(ctx, N.unparen(expr))))
    return call is not None and call.callee_dotted() == "range"


def generator_loop(ctx: RuleContext, expr, at):
    """The program's own generator function a loop iterates: ``for b in batches(...)`` or ``for
    b in gen`` with ``gen = batches(...)`` (rules/step_loops.py divides its steps), else None."""
    expr = N.unparen(expr)
    if expr.type == "name":
        found = [b for scope in ctx.env.scopes_for(at) for b in ctx.env.bindings_of(expr.value, scope)
                 if b.stmt.start_pos < at.start_pos and b.value is not None]
        if not found or found[-1].role not in (None, "other"):
            return None
        expr = N.unparen(found[-1].value)
    made = N.as_call(expr)
    name = made.callee_dotted() if made is not None and made.index == 1 else None
    fn = ctx.env.function_named(name, at) if name and "." not in name else None
    if fn is None or not any(n.type == "yield_expr" or (n.type == "keyword" and n.value == "yield")
                             for n in N.walk(fn.children[-1]) if N.func_scope_of(n) is fn):
        return None
    return fn


def _returns_arrays(ctx: RuleContext, value) -> bool:
    """`value` calls a local function whose every return is arithmetic or a subscript (``imgs /
    255.0``, ``x[..., None]``), which no tf.data dataset can be: arrays, not a pipeline."""
    call = N.as_call(N.unparen(value)) if value is not None else None
    root = value.children[0] if call is not None and value.type in ("atom_expr", "power") else None
    fn = ctx.env.function_named(root.value, value) if root is not None and root.type == "name" else None
    rets = [r.children[1] for r in ctx.env.index.returns.get(id(fn), ()) if len(r.children) > 1] if fn else []
    return bool(rets) and all(_array_like(ctx, fn, r) for r in rets)


def _made_by_numpy(ctx: RuleContext, b) -> bool:
    """Binding `b` is arrays: ``x = np.concatenate(...)`` (a k-fold split), ``x.astype(...)``,
    arithmetic. (Not a subscript: ``ds = splits["train"]`` may be a dataset.)"""
    value = N.unparen(b.value)
    last = value.children[-1] if value.type in ("atom_expr", "power") else None
    if last is not None and last.type == "trailer" and last.children[0] == "[":
        return False
    return _array_like(ctx, b.scope, value)


def _array_like(ctx: RuleContext, fn, expr, depth: int = 0) -> bool:
    """`expr`, returned by `fn`, is arrays: arithmetic, a subscript, a numpy/astype/reshape call,
    or a name last bound to one. (A function of its own, not a closure: a closure calling
    itself is a reference cycle that would keep the analysis alive past its edit.)"""
    expr = N.unparen(expr)
    if expr.type in ("term", "arith_expr", "factor", "shift_expr"):
        return True
    if expr.type == "name" and depth < 4:      # ``imgs = np.expand_dims(imgs, -1); return imgs``
        found = [b for b in ctx.env.bindings_of(expr.value, fn) if b.stmt.start_pos < expr.start_pos]
        return bool(found) and found[-1].value is not None and _array_like(ctx, fn, found[-1].value, depth + 1)
    last = expr.children[-1] if expr.type in ("atom_expr", "power") else None
    if last is not None and last.type == "trailer" and last.children[0] == "[":
        return True
    call = N.as_call(expr)
    return call is not None and ((call.callee_dotted() or "").split(".")[0] in ("np", "numpy")
                                 or call.method in ("astype", "reshape"))


def _reassigned(ctx: RuleContext, name: str, at) -> bool:
    """The parameter `name` is assigned again in its function before `at` (``ds = ds.map(...)``
    in ``prepare(ds)``): the walk follows those assignments first."""
    fn = N.func_scope_of(at)
    return fn is not None and any(b.stmt.start_pos < at.start_pos and b.stmt is not N.statement_of(at)
                                  for b in ctx.env.bindings_of(name, fn))


def _parameter(ctx: RuleContext, name: str, at, depth: int) -> Pipeline | None:
    """A parameter of the function around `at` (``def get_models(train_data=train_dataset)``):
    the pipeline that its default and every call of the function give it, when they all give
    the same one (the mrdbourke ensemble's fit of a sharded dataset took it for arrays and
    divided the epochs as well)."""
    fn = N.func_scope_of(at)
    if fn is None or fn.type != "funcdef" or name not in ctx.env.param_names(fn) or _reassigned(ctx, name, at):
        return None
    try:
        param = next(p for p in fn.get_params() if p.name.value == name)
    except (StopIteration, Exception):  # noqa: BLE001 - an error-recovered signature
        return None
    values = []
    for call in ctx.env.callers(fn) or [None]:
        passed = _passed(ctx.env, fn, call) if call is not None else {}
        if call is not None and call.has_star():
            return None
        if name in passed:
            values.append(passed[name])
        elif param.default is not None and not param.star_count:
            values.append((param.default, fn))        # (the default's names, as bound where the function is made)
        else:
            return None
    pipes = [pipeline(ctx, value, where, depth + 1) for value, where in values]
    if not pipes or any(p is None or p.source is None for p in pipes) or len({id(p.source.node) for p in pipes}) > 1:
        return None
    return pipes[0]


def _passed(env, fn, call: N.Call) -> dict:
    """Parameter name -> (argument expression, call node) for a call of a local function."""
    out = {}
    if call.has_star():
        return out
    for i, name in enumerate(env.param_names(fn)):
        arg = call.keyword(name) or call.positional(i)
        if arg is not None:
            out[name] = (arg.value, call.node)
    return out


def _local_call(env, b) -> bool:
    """The binding's value is a call of a function of this file (``make_spec_ds(train_ds)``):
    the walk follows its return."""
    call = N.as_call(N.unparen(b.value)) if getattr(b, "value", None) is not None else None
    return call is not None and call.index == 1 and env.function_named(call.callee_dotted() or "", call.node) is not None


# tf.data.Dataset methods that return a dataset: a chain of them is a pipeline whatever its root
DATASET_METHODS = {"map", "batch", "shuffle", "cache", "prefetch", "filter", "repeat", "take", "skip", "shard",
                   "apply", "unbatch", "padded_batch", "interleave", "flat_map", "with_options", "rebatch",
                   "ragged_batch", "enumerate", "concatenate"}


def _dataset_chain(b) -> bool:
    """``x = ds.cache().shuffle(n).prefetch(k)``: only Dataset methods after a name."""
    value = N.unparen(b.value) if getattr(b, "value", None) is not None else None
    if value is None or value.type not in ("atom_expr", "power") or value.children[0].type != "name":
        return False
    calls = chain_calls(value)
    return bool(calls) and all(c.method in DATASET_METHODS and c.index > 1 for c in calls)


def _binding_before(ctx: RuleContext, name: str, at):
    """The dataset binding of `name` last assigned before `at` in its scope (parameters followed)."""
    env = ctx.env
    for scope in env.scopes_for(at):
        cands = [b for b in env.bindings_of(name, scope) if b.stmt.start_pos < at.start_pos and b.stmt is not N.statement_of(at)]
        if cands:
            last = cands[-1]
            return last if last.role == "dataset" or _local_call(env, last) or _dataset_chain(last) else None
        if scope.type == "funcdef" and name in env.param_names(scope):
            return env.lookup(name, at, "dataset")
    return None


def _pair_source(ctx: RuleContext, name: str, at) -> N.Call | None:
    """The Keras utility call a ``train, val = utility(..., subset="both")`` unpacks into
    `name` (last before `at`, in `at`'s scope), or None."""
    scope = N.func_scope_of(at) or ctx.source.module
    found = None
    for stmt in _assignments(ctx, scope):
        if stmt.start_pos >= at.start_pos or len(stmt.children) != 3:
            continue
        call = N.as_call(N.unparen(stmt.children[2]))
        if call is None or (ctx.env.callee_qualname(call) or "") not in KERAS_DATASETS:
            continue
        if _target_path([stmt.children[0]], name) not in (None, ()):
            found = call
    return found


def _unpacked_return(ctx: RuleContext, name: str, at, depth: int) -> Pipeline | None:
    """The pipeline of `name` unpacked from a local function's return (``ds, count =
    get_dataset(dir)``, the function returning ``dataset, image_count``): the element at
    `name`'s place in each ``return`` tuple, followed into that function."""
    env = ctx.env
    scope = N.func_scope_of(at) or ctx.source.module
    found = None
    for stmt, call in _unpacking_calls(ctx, scope):
        if stmt.start_pos >= at.start_pos:
            break
        path = _target_path([stmt.children[0]], name)
        if not path:
            continue
        fn = env.function_named(call.node.children[0].value, stmt)
        if fn is not None:
            found = (fn, call, path)
    if found is None:
        return None
    fn, call, path = found
    passed = _passed(env, fn, call)
    for ret in env.index.returns.get(id(fn), ()):
        value = ret.children[1] if len(ret.children) > 1 else None
        for i in path:
            items = _elements(value) if value is not None else []
            value = items[i] if i < len(items) else None
        if value is not None:
            inner = pipeline(ctx, value, ret, depth + 1, passed)
            if inner is not None:
                inner.through.insert(0, (fn, call.node))
                return inner
    return None


def _unpacking_calls(ctx: RuleContext, scope) -> list:
    """(statement, call) of `scope`'s ``a, b = f(...)`` assignments (a plain function's call
    unpacked into a tuple of targets), in source order; computed once per scope and context
    (each dataset name asks: a scan per name made a module of many programs quadratic)."""
    cache = ctx.__dict__.setdefault("_unpacking_calls", {})
    found = cache.get(id(scope))
    if found is None:
        found = cache[id(scope)] = sorted(
            ((stmt, call) for stmt in _nested_assignments(scope)
             if len(stmt.children) == 3 and stmt.children[0].type != "name"
             for call in (N.as_call(N.unparen(stmt.children[2])),)
             if call is not None and call.index == 1 and call.node.children[0].type == "name"),
            key=lambda sc: sc[0].start_pos)
    return found


def _nested_assignments(scope):
    """The assignments of `scope`'s code, inside its blocks too (``if __name__ == ...:``),
    not inside the functions and classes it defines."""
    stack = [scope.children[-1] if scope.type == "funcdef" else scope]
    while stack:
        node = stack.pop()
        for child in getattr(node, "children", ()):
            if child.type == "expr_stmt":
                yield child
            elif child.type not in ("funcdef", "classdef", "lambdef", "decorated") and hasattr(child, "children"):
                stack.append(child)


def _assignments(ctx: RuleContext, scope):
    """The assignment statements of a function's body, or of a module's top level and its
    ``if __name__ == "__main__":`` block (a script's program often lives there)."""
    body = scope.children[-1] if scope.type == "funcdef" else scope
    for node in body.children:
        if node.type == "if_stmt" and scope.type == "file_input" and is_main_guard(node):
            yield from _assignments(ctx, node.children[3])
            continue
        stmt = node.children[0] if node.type == "simple_stmt" else None
        if stmt is not None and stmt.type == "expr_stmt":
            yield stmt


def _target_path(targets, name: str):
    """Index path of `name` in ``a``, ``(a, b), c`` targets: () for a plain name."""
    for t in targets:
        if t.type == "name":
            if t.value == name:
                return ()
            continue
        if t.type not in SEQUENCES and t.type != "atom":
            continue        # (``x.y = ...``, ``d[k] = ...``)
        for i, e in enumerate(_elements(t)):
            sub = _target_path([e], name)
            if sub is not None:
                return (i,) + sub
    return None


SEQUENCES = ("testlist_star_expr", "testlist_comp", "exprlist", "testlist")


def _elements(node) -> list:
    """The items of ``(a, b)``, ``[a, b]``, ``a, b``; [] for anything else."""
    if node.type == "atom":
        if len(node.children) != 3 or node.children[0] not in ("(", "["):
            return []
        node = node.children[1]
        if node.type not in SEQUENCES:
            return [node]
    if node.type in SEQUENCES:
        return [c for c in node.children if c.type != "operator"]
    return []


SHARD_SEED = 1337      # the seed keras-io's examples give the directory utilities


def shuffled_per_rank(ctx: RuleContext, pipe) -> bool:
    """A shuffle in the pipeline (a ``shuffle`` link, or a source that shuffles by default)
    without a seed: each rank orders the examples its own way."""
    if pipe is None:
        return False
    if any(c.keyword("seed") is None and len(c.args) < 2 for c in pipe.method("shuffle")):
        return True
    q = ctx.env.callee_qualname(pipe.source) or "" if pipe.source is not None else ""
    return bool(q) and (q.endswith(SHUFFLING) or q in KERAS_DATASETS) and not seeded_or_unshuffled(pipe.source)


SHUFFLING = ("list_files", "make_csv_dataset", "make_batched_features_dataset")   # (shuffle=True by default)
SHUFFLE_SEED = ("make_csv_dataset", "make_batched_features_dataset")               # (their seed is shuffle_seed=)


def seeded_or_unshuffled(call) -> bool:
    if call.keyword("seed") is not None or call.keyword("shuffle_seed") is not None:
        return True
    arg = call.keyword("shuffle")
    return arg is not None and arg.value.type == "keyword" and arg.value.value in ("False", "None")


def shuffle_seeds(ctx: RuleContext, pipe, seed: int = SHARD_SEED) -> list | None:
    """The edits giving each shuffle of the pipeline that has no seed the same one on every
    rank (``seed=1337``, as HVD041 seeds the Keras utilities): every rank then orders the
    examples alike, and the shards taken after it are disjoint. None when one cannot be
    given one (``**kwargs``, a seed passed by position is already there)."""
    if pipe is None or not shuffled_per_rank(ctx, pipe):
        return []
    edits: list = []
    for c in pipe.method("shuffle"):
        if c.keyword("seed") is None and len(c.args) < 2:
            if c.has_star():
                return None
            edits += ctx.add_keyword(c, f"seed={seed}")
    src = pipe.source
    q = ctx.env.callee_qualname(src) or "" if src is not None else ""
    if q and (q.endswith(SHUFFLING) or q in KERAS_DATASETS) and not seeded_or_unshuffled(src):
        if src.has_star():
            return None
        edits += ctx.add_keyword(src, f"shuffle_seed={seed}" if q.endswith(SHUFFLE_SEED) else f"seed={seed}")
    return edits


def _zipped(ctx: RuleContext, call: N.Call) -> list:
    """The pipelines ``tf.data.Dataset.zip((a, b))`` combines (those the walk reaches)."""
    arg = call.positional(0)
    parts = []
    for e in _elements(arg.value) if arg is not None else ():
        part = pipeline(ctx, e, call.node)
        if (part is None or not part.calls) and e.type == "name":
            # ``a = d["trainA"].cache().shuffle(n)``: Dataset methods on a source out of reach
            b = _binding_before(ctx, e.value, call.node)
            value = N.unparen(b.value) if b is not None and b.value is not None else None
            if value is not None and value.type in ("atom_expr", "power"):
                part = Pipeline(chain_calls(value), None, False)
        if part is not None:
            parts.append(part)
    return parts


# Readers of a list of files: ``TFRecordDataset(files)`` with ``files`` a list_files dataset.
FILE_READERS = ("TFRecordDataset", "TextLineDataset", "FixedLengthRecordDataset")


def _listed_files(ctx: RuleContext, pipe: Pipeline) -> N.Call | None:
    """The ``tf.data.Dataset.list_files(...)`` call the pipeline's records come from: its own
    source, or the file names a reader at its source reads (``TFRecordDataset(files)``)."""
    q = ctx.env.callee_qualname(pipe.source) or ""
    if q.endswith("Dataset.list_files"):
        return pipe.source
    if not q.endswith(FILE_READERS):
        return None
    arg = pipe.source.keyword("filenames") or pipe.source.positional(0)
    inner = pipeline(ctx, arg.value, pipe.source.node, 1) if arg is not None else None
    if inner is None or inner.source is None or inner.calls:
        return None      # (a list_files dataset already transformed: left to the user)
    iq = ctx.env.callee_qualname(inner.source) or ""
    return inner.source if iq.endswith("Dataset.list_files") else None


GLOBS = ("tensorflow.io.gfile.glob", "glob.glob")


def _file_list(ctx: RuleContext, pipe: Pipeline):
    """The file-name argument of a reader at the pipeline's source when it is a Python list
    of files: ``TFRecordDataset(tf.io.gfile.glob(p))``, a name bound once to such a glob, or
    a list literal of several names."""
    q = ctx.env.callee_qualname(pipe.source) or ""
    if not q.endswith(FILE_READERS):
        return None
    arg = pipe.source.keyword("filenames") or pipe.source.positional(0)
    if arg is None:
        return None
    value = N.unparen(arg.value)
    if value.type == "name":
        found = [b for b in ctx.env.bindings if b.name == value.value]
        if len(found) != 1 or found[0].value is None:
            return None
        value = N.unparen(found[0].value)
    if value.type == "atom" and value.children[0] == "[" and value.children[1].type == "testlist_comp":
        return arg
    call = N.as_call(value)
    return arg if call is not None and (ctx.env.callee_qualname(call) or "") in GLOBS else None


def other_datasets(ctx: RuleContext, expr, at, followed: Pipeline | None) -> list:
    """What the other calls of the function whose loop trains on its parameter `expr` (at
    `at`) hand it: (call, argument, its pipeline or None) for each call whose argument is not
    the dataset `followed` came from (``fit_and_evaluate(model, train_ds)``, then
    ``fit_and_evaluate(model2, other_ds)``); empty when `expr` is no such parameter."""
    env = ctx.env
    expr = N.unparen(_unwrap(ctx, N.unparen(expr)))
    fn = N.func_scope_of(at)
    if expr.type != "name" or fn is None or fn.type != "funcdef" or env.is_method(fn) \
            or expr.value not in env.param_names(fn) or _reassigned(ctx, expr.value, at):
        return []
    index = env.param_names(fn).index(expr.value)
    source = followed.source if followed is not None else None
    out = []
    for call in env.callers(fn):
        arg = call.keyword(expr.value) or (call.positional(index) if not call.has_star() else None)
        if arg is None:
            continue
        pipe = pipeline(ctx, arg.value, call.node)
        if pipe is not None and pipe.source is not None and source is not None \
                and pipe.source.node is source.node and pipe.source.index == source.index:
            continue
        out.append((call, arg.value, pipe))
    return out


def same_data(ctx: RuleContext, pipe) -> bool:
    """Every rank reads the pipeline's examples in the same order: a tf.data source of this file
    that does not shuffle (``list_files`` and the Keras directory utilities do by default, with
    a seed of each rank's own, unless given ``shuffle=False`` or a ``seed``), and no later
    ``shuffle`` without a ``seed`` (a seed is the same on every rank)."""
    if pipe is None or pipe.source is None or not pipe.known:
        return False
    q = ctx.env.callee_qualname(pipe.source) or ""
    if not (q.startswith("tensorflow.data.") or q in KERAS_DATASETS):
        return False
    if q.endswith(SHUFFLING) or q in KERAS_DATASETS:
        if not seeded_or_unshuffled(pipe.source):
            return False
    return all(c.keyword("seed") is not None or len(c.args) >= 2 and c.args[1].keyword is None
               for c in pipe.method("shuffle"))
