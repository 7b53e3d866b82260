"""Helpers of the rank-0 rules for writes recognised by what they do (contract point 7):
which writes a ``fit``'s rank-0 callbacks make, which local callback classes run on rank 0
only, the texts a read's path reaches through assignments and how they match a written
path (globs and name templates included), writes lifted to the calls of the functions
holding them, the ``os.mkdir``/``os.makedirs`` -> ``exist_ok=True`` edit, and the rank-0
guards of display-only statements that show a file rank 0 wrote (``display_guards``),
whether an ``open`` writes (``open_for_writing``) and the checkpoint a name holds
(``checkpoint_of``).

Requires: base (the rule context), analysis.effects (what a call does), hvd_facts (callback
lists, assignments, rank tests) through the context. Used by `rank0_guards`, `read_back`.
"""

from __future__ import annotations

import ast
import re

from ..analysis.effects import DISPLAY, READ, SHOWS, only_return, path_of
from ..parse import nodes as N
from ..parse.source import Edit
from .base import RuleContext, report_note, under_rank0_guard


def norm_path(text: str) -> str:
    """A path's text for matching: a plain string literal without its quotes; an expression
    without the spaces and line breaks outside its string literals (``output_dir+\n  "/w.h5"``
    is ``output_dir + "/w.h5"``)."""
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"" and text.count(text[0]) == 2:
        return text[1:-1]
    if not any(c in text for c in " \t\n\r\\"):
        return text
    pieces = _STRING_OR_CODE.findall(text)
    return "".join(piece if piece[:1] in "'\"" or piece[1:2] in "'\"" else re.sub(r"\s+|\\\n", "", piece)
                   for piece in pieces)


# String literals (with a prefix) or runs of code between them.
_STRING_OR_CODE = re.compile(r"""[rRbBuUfF]{0,2}(?:"[^"\\\n]*(?:\\.[^"\\\n]*)*"|'[^'\\\n]*(?:\\.[^'\\\n]*)*')|[^'"]+|['"]""")


_norm = norm_path


def open_for_writing(call: N.Call) -> bool:
    """``open(path, "w")``, ``open(path, mode="ab")``, ``tf.io.gfile.GFile(path, "w")``."""
    if call.callee_dotted() not in ("open", "io.open", "tf.io.gfile.GFile", "tf.gfile.GFile", "gfile.GFile"):
        return False
    mode = call.keyword("mode") or call.positional(1)
    if mode is None or mode.value.type != "string":
        return False
    try:
        text = ast.literal_eval(mode.value.value)
    except (ValueError, SyntaxError):
        return False
    return isinstance(text, str) and any(c in text for c in "wax+")


WRITE_EFFECT = "write"
FOLDER_CALLS = ("os.mkdir", "os.makedirs")


def exist_ok(ctx: RuleContext, call: N.Call, q: str) -> list[Edit] | None:
    """``os.makedirs(p)`` -> ``os.makedirs(p, exist_ok=True)``; ``os.mkdir(p)`` ->
    ``os.makedirs(p, exist_ok=True)``; ``Path(p).mkdir()`` -> ``Path(p).mkdir(exist_ok=True)``.
    [] when nothing is needed (``exist_ok`` given, or in a ``try`` that handles the error),
    None when the call cannot take it (a bare ``mkdir``)."""
    if call.keyword("exist_ok") is not None or call.has_star() or N.enclosing(call.node, {"try_stmt"}) is not None:
        return []
    if call.keyword("dir_fd") is not None:
        return None
    edits: list[Edit] = []
    if q == "os.mkdir":
        trailer = call.callee_parts[-1] if len(call.callee_parts) > 1 else None
        leaf = trailer.children[1] if trailer is not None and trailer.type == "trailer" else None
        if leaf is None or leaf.value != "mkdir":
            return None
        start, end = ctx.source.span(leaf)
        edits.append(Edit(start, end, "makedirs"))
    return edits + ctx.add_keyword(call, "exist_ok=True")


def writer_block(call: N.Call):
    """The ``with`` statement whose only item is `call` (``with imageio.get_writer(p) as w:``)."""
    item = call.node.parent
    if item is not None and item.type == "with_item":
        item = item.parent
    if item is not None and item.type == "with_stmt" and \
            len([c for c in item.children if c.type == "with_item"]) <= 1:
        return item
    return None


def in_writing_callback(ctx: RuleContext, call: N.Call) -> bool:
    """In a method of the program's own writing callback that every ``fit`` using it gets on
    rank 0 only (HVD050 places it so, or the program already does): its writes need no
    guard of their own. A class built anywhere else keeps the guards inside."""
    cls = N.enclosing(call.node, {"classdef"})
    if cls is None or not ctx.facts.effects.writing_callback(cls.name.value):
        return False
    placed = ctx.__dict__.get("_rank0_callbacks")
    if placed is None:
        placed = ctx.__dict__["_rank0_callbacks"] = _rank0_callback_classes(ctx)
    return cls.name.value in placed


def _rank0_callback_classes(ctx: RuleContext) -> set:
    """Local callback classes built only as entries of fully understood ``fit`` callback lists."""
    from ..analysis.loop import FIT

    in_lists: set = set()
    for site in ctx.summary.sites:
        call = N.as_call(site.node)
        arg = call.keyword("callbacks") if site.kind == FIT and call is not None else None
        if arg is None:
            continue
        cbs = ctx.facts.callback_list(arg.value, call.node)
        for entry in cbs.entries:
            if entry.kind == "writing" and cbs.complete:
                for cb in _callback_calls(ctx, entry.node):
                    in_lists.add(id(cb.node))
    out = set()
    for name in ctx.env.all_classes:
        built = [c for c in ctx.calls(name) if c.callee_dotted() == name]
        called = any(c.callee_dotted() != name and not (c.callee_dotted() or "").startswith("super")
                     for fn in ctx.env.methods(name).values() for c in ctx.env.callers(fn))
        if built and all(id(c.node) in in_lists or _rank0_only(ctx, c.node) for c in built) and not called:
            out.add(name)
    return out


def _rank0_only(ctx: RuleContext, node) -> bool:
    """Built on rank 0 only: under a rank guard, or in ``[cb] if hvd.rank() == 0 else []``;
    or bound to a name (``cbk = Saver()``) that is only ever read there (the conversion's own
    ``*([cbk] if hvd.rank() == 0 else [])``: converting again leaves the class alone)."""
    stmt = node.parent
    if stmt is not None and stmt.type == "expr_stmt" and len(stmt.children) == 3 and stmt.children[2] is node \
            and stmt.children[0].type == "name":
        target = stmt.children[0]
        refs = [r for r in ctx.env.index.names.get(target.value, ()) if r is not target]
        if refs and all(_on_rank0(ctx, r) for r in refs):
            return True
    return _on_rank0(ctx, node)


def _on_rank0(ctx: RuleContext, node) -> bool:
    """`node` runs on rank 0 only: under a rank guard, or in ``[x] if hvd.rank() == 0 else []``."""
    if under_rank0_guard(node, ctx):
        return True
    cur = node
    while cur.parent is not None and not N.is_statement(cur):
        parent = cur.parent
        if parent.type == "test" and parent.children[0] is cur and ctx.facts.is_rank_test(parent.children[2]):
            return True
        cur = parent
    return False


def note(ctx: RuleContext, call: N.Call, text: str) -> None:
    """A contract-point-7 remark for the conversion report, at the call's line."""
    report_note(ctx, 7, call.node, text)


def note_path(ctx: RuleContext, call: N.Call, path, writes: list) -> None:
    """A rank-0 write of `path` (its text, and a name's values)."""
    for text in texts(ctx, path):
        writes.append((text, N.func_scope_of(call.node), call.node))


def lift_writes(ctx: RuleContext, writes: list, levels: int = 2) -> None:
    """A write inside a function is also a write at each call of it (a read after
    ``train(dataset, EPOCHS)`` or ``save_images(epoch)`` waits for what they wrote); and a
    write of a name is also a write of the values assigned to it (``checkpoint_prefix =
    os.path.join(checkpoint_dir, "ckpt")``: a later ``latest_checkpoint(checkpoint_dir)``)."""
    for text, scope, node in list(writes):
        name = text if text.isidentifier() else None
        if name:
            for _s, value, op in ctx.facts.assignments(name, node):
                if value is not None and not op:
                    writes.append((_norm(ctx.source.code(value)), scope, node))
    frontier = list(writes)
    for _ in range(levels):
        lifted = []
        for text, scope, node in frontier:
            if scope is None or scope.type != "funcdef":
                continue
            for caller in ctx.env.callers(scope):
                lifted.append((text, N.func_scope_of(caller.node), caller.node))
        writes += lifted
        frontier = lifted


def fit_writes(ctx: RuleContext, writes: list) -> None:
    """Files written during ``fit`` by a callback that runs on rank 0 only (a ModelCheckpoint
    or CSVLogger, or the program's own callback that writes): a read after the fit waits."""
    from ..analysis.loop import FIT

    facts, fx = ctx.facts, ctx.facts.effects
    for site in ctx.summary.sites:
        call = N.as_call(site.node)
        if site.kind != FIT or call is None:
            continue
        arg = call.keyword("callbacks")
        if arg is None:
            continue
        for entry in facts.callback_list(arg.value, call.node).entries:
            if entry.kind != "writing" or entry.rank_specific:
                continue
            for cb in _callback_calls(ctx, entry.node):
                if fx.writing_callback(cb.callee_dotted()):
                    for fn in fx.env.methods(cb.callee_dotted()).values():
                        for inner in N.calls_in(fn):
                            p = path_of(inner) if fx.kind(inner) == WRITE_EFFECT else None
                            if p is not None:
                                writes.append((_norm(ctx.source.code(p)), N.func_scope_of(call.node), call.node))
                    continue
                made = facts.returned_callback(cb)
                if made is not None:
                    # a helper's callback (``create_model_checkpoint(model_name)`` returning
                    # ``ModelCheckpoint(os.path.join(save_path, model_name))``): the path it
                    # writes, its parameters filled in from this call
                    p = path_of(made)
                    text = helper_path(ctx, cb, p) if p is not None else None
                    if text is not None:
                        writes.append((text, N.func_scope_of(call.node), call.node))
                    continue
                p = path_of(cb)
                if p is None:
                    continue
                helper = _helper_call(ctx, arg.value, cb, call)
                if helper is not None:
                    # a callback made in a helper that returns a list of them (``get_callbacks(name)``):
                    # its path with the helper's parameters filled in from the call
                    text = helper_path(ctx, helper, p)
                    if text is not None:
                        writes.append((text, N.func_scope_of(call.node), call.node))
                    continue
                for text in texts(ctx, p):
                    writes.append((text, N.func_scope_of(call.node), call.node))


def _helper_call(ctx: RuleContext, value, cb: N.Call, fit: N.Call) -> N.Call | None:
    """The call, in a fit's ``callbacks=`` (or in the assignment of the name given there), of
    the program's function in which `cb` is made; None when `cb` is made where the fit is."""
    fn = N.func_scope_of(cb.node)
    if fn is None or fn.type != "funcdef" or fn is N.func_scope_of(fit.node):
        return None
    values = [value]
    if N.unparen(value).type == "name":
        values += [v for _s, v, op in ctx.facts.assignments(N.unparen(value).value, fit.node) if not op and v is not None]
    for v in values:
        for c in N.calls_in(v):
            if ctx.env.call_target(c) is fn:
                return c
    return None


def helper_path(ctx: RuleContext, call: N.Call, expr) -> str | None:
    """The path text `expr`, a path in the body of the function `call` runs, names at that
    call: string literals kept, its parameters replaced by the arguments given (or their
    defaults) when those are literals, ``os.path.join`` and ``+`` followed, anything else a
    ``{}`` field (``os.path.join(save_path, model_name)`` with ``save_path="model_experiments"``
    and ``model_name=model_1.name``: ``"model_experiments/{}"``, which `path_matches` fills in).
    None when nothing of it is literal."""
    fn = ctx.env.call_target(call)
    if fn is None or fn.type != "funcdef":
        return None
    text = _path_template(ctx, fn, call, expr, 0)
    if not text or not text.replace("{}", "").strip("/"):
        return None
    return text if "{}" not in text else '"' + text + '"'


def _path_template(ctx: RuleContext, fn, call: N.Call, node, depth: int) -> str:
    node = N.unparen(node)
    if depth > 4:
        return "{}"
    if node.type == "string":
        try:
            value = ast.literal_eval(node.value)
        except (ValueError, SyntaxError):
            return "{}"
        return re.sub(r"\{[^{}]*\}", "{}", value) if isinstance(value, str) else "{}"   # (a format field: any text)
    if node.type == "arith_expr" and all(c == "+" for c in node.children[1::2]):
        return "".join(_path_template(ctx, fn, call, c, depth + 1) for c in node.children[::2])
    inner = N.as_call(node)
    if inner is not None and inner.node is node and inner.callee_dotted() in ("os.path.join", "path.join") \
            and inner.args and all(a.keyword is None for a in inner.args) and not inner.has_star():
        return "/".join(_path_template(ctx, fn, call, a.value, depth + 1).rstrip("/") for a in inner.args)
    if node.type == "name" and N.func_scope_of(node) is fn:
        names = ctx.env.param_names(fn)
        if node.value in names:
            arg = call.keyword(node.value)
            if arg is None and not call.has_star():
                arg = call.positional(names.index(node.value) - (1 if ctx.env.is_method(fn) else 0))
            if arg is not None:
                value = arg.value
            else:
                try:
                    value = next(p.default for p in fn.get_params() if p.name.value == node.value)
                except Exception:  # noqa: BLE001 - an error-recovered signature
                    value = None
            # an argument is a literal of the caller's, a model's literal name, or nothing known
            value = _model_name(ctx, value, call.node) if value is not None else None
            return _path_template(ctx, None, call, value, depth + 1) if value is not None and \
                value.type == "string" else "{}"
        values = [v for _s, v, op in ctx.facts.assignments(node.value, node) if not op and v is not None]
        if len(values) == 1:
            return _path_template(ctx, fn, call, values[0], depth + 1)
    return "{}"


def _model_name(ctx: RuleContext, value, at):
    """``model.name`` of a model made with ``name="m1"``: that literal; else `value` itself."""
    if value.type != "atom_expr" or value.get_code(include_prefix=False).count(".") != 1 or \
            not value.get_code(include_prefix=False).endswith(".name"):
        return value
    binding = ctx.env.lookup(value.children[0].value, at, "model") if value.children[0].type == "name" else None
    made = N.as_call(binding.value) if binding is not None and binding.value is not None else None
    named = made.keyword("name") if made is not None else None
    return named.value if named is not None and named.value.type == "string" else value


def epoch_files_read(ctx: RuleContext, fit: N.Call) -> list:
    """(read call, path expression, epoch) of each read after `fit` of a file that a writing
    callback of the fit names by epoch, for an epoch after the first
    (``ModelCheckpoint("weights.{epoch:02d}.hdf5")``, then ``load_weights("weights.10.hdf5")``):
    with the fit's epochs divided by the number of ranks, no rank may reach that epoch."""
    arg = fit.keyword("callbacks") or (fit.positional(5) if fit.method == "fit" else None)
    templates: set = set()
    for entry in ctx.facts.callback_list(arg.value, fit.node).entries if arg is not None else ():
        for cb in _callback_calls(ctx, entry.node) if entry.kind == "writing" else ():
            path = path_of(cb)
            templates |= {t for t in texts(ctx, path) if _EPOCH.search(t)} if path is not None else set()
    out = []
    for read in ctx.facts.effects.calls_of(READ) if templates else ():
        path = path_of(read)
        if path is not None and read.node.start_pos > fit.node.end_pos:
            epoch = max((epoch_filled(text, t) or 0 for text in texts(ctx, path) for t in templates), default=0)
            if epoch >= 2:
                out.append((read, path, epoch))
    return out


def _callback_calls(ctx: RuleContext, node) -> list:
    """The constructor calls a callback expression (or the name holding it) comes from."""
    call = N.as_call(node)
    if call is not None:
        return [call]
    name = N.dotted(node)
    if not name:
        return []
    out = []
    for _s, value, op in ctx.facts.assignments(name, node):
        c = N.as_call(value) if value is not None and not op else None
        if c is not None:
            out.append(c)
    return out


def texts(ctx: RuleContext, expr) -> set:
    """The texts a path expression may be matched by: its own, and a name's assigned values."""
    out = {_norm(ctx.source.code(expr))}
    name = N.dotted(expr)
    if name and "." not in name:
        for _s, value, op in ctx.facts.assignments(name, expr):
            if value is not None and not op:
                out.add(_norm(ctx.source.code(value)))
    return out


def reached(ctx: RuleContext, expr, depth: int = 3) -> set:
    """The names a read's path is computed from and their values' texts, a few assignments
    deep: ``load_weights(latest)`` with ``latest = newest(checkpoint_dir)`` and
    ``checkpoint_dir = os.path.dirname(checkpoint_path)`` reaches ``checkpoint_path``, the
    path a ModelCheckpoint writes. (Matched by equality: a name is not a substring match.)"""
    out: set = set()
    todo = [(expr, 0)]
    while todo:
        node, d = todo.pop()
        for leaf in N.walk(node):
            if leaf.type != "name" or leaf.value in out:
                continue
            prev = leaf.get_previous_leaf()
            if prev is not None and prev.type == "operator" and prev.value == ".":
                continue          # an attribute, not a name
            out.add(leaf.value)
            if d >= depth:
                continue
            for _s, value, op in ctx.facts.assignments(leaf.value, leaf):
                if value is not None and not op:
                    out.add(_norm(ctx.source.code(value)))
                    todo.append((value, d + 1))
    return out


def _head(text: str) -> str:
    """The literal start of a path text: ``f"img_{e}.png"`` -> ``img_``, ``a*.png`` -> ``a``
    (a plain literal's text comes without its quotes), a name -> ``""``."""
    m = re.match(r"""^[rRbBuUfF]{0,2}["']""", text)
    if m:
        text = text[m.end():]
    elif not re.match(r"^[\w./-]*[*?\[]", text):
        return ""
    return re.match(r"""^[^"'{*?\[]*""", text).group(0)


# A string literal, and a format field in one (``{epoch:02d}``, ``%03d``).
_LITERAL = re.compile(r"""(["'])(.*?)(?<!\\)\1""")
_FIELD = re.compile(r"\{[^{}]*\}|%[-#0 +]*\d*(?:\.\d+)?[diouxXeEfFgGcrs]")


def path_matches(read: str, write: str) -> bool:
    """A read's path text names what a write's path text wrote: the same text, one inside the
    other (``checkpoint_dir`` in ``os.path.join(checkpoint_dir, "cp.ckpt")``), or a glob
    pattern whose literal start the written name starts with."""
    if not read or not write:
        return False
    if read == write or read in write:
        return True
    quoted = write if write[:1] in "'\"rRbBuUfF" else f'"{write}"'
    if any(c in read for c in "*?["):
        head = _head(read)
        return len(head) >= 2 and _head(quoted).startswith(head)
    if ("{" in write or "%" in write) and not any(c in read for c in "{*?['\""):
        # a plain name read after a name template wrote it (`"img_{i}_{epoch}.png".format(...)`
        # or `"img_%03d_%d.png" % (epoch, i)` written by a callback, `Image("img_0_29.png")`
        # shown after the fit)
        m = re.match(r"""^[rRbBuUfF]{0,2}(["'])(.*?)\1""", quoted)
        parts = _FIELD.split(m.group(2)) if m else []
        if len(parts) > 1 and sum(map(len, parts)) >= 5:
            return re.fullmatch(".+".join(map(re.escape, parts)), read) is not None
    if ("{" in write or "%" in write) and not any(c in read for c in "{*?["):
        # a path built around a name template, read back filled in (``output_dir +
        # "/weights.{epoch:02d}.hdf5"`` written by a ModelCheckpoint, ``output_dir +
        # "/weights.02.hdf5"`` or ``os.path.join(output_dir, "weights.02.hdf5")`` loaded after)
        pattern = _filled(write)
        if pattern is not None and re.fullmatch(pattern, read) is not None:
            return True
    if "{" in read and "{" in write:
        # one name template filled in two places (`'image_at_epoch_{:04d}.png'.format(epoch)`
        # written in the loop, `.format(epoch_no)` read after it)
        head = _head(read)
        return len(head) >= 5 and head == _head(quoted)
    return False


_EPOCH = re.compile(r"\{epoch(?:[:!][^{}]*)?\}")


def epoch_filled(read: str, write: str) -> int | None:
    """The epoch a read's path text names in a write's epoch template: ``"weights.10.hdf5"``
    (or ``output_dir + "/weights.10.hdf5"``) read back from a ModelCheckpoint's
    ``"weights.{epoch:02d}.hdf5"`` is epoch 10. None when `write` has no ``{epoch}`` field or
    `read` does not fill it with a number."""
    if not _EPOCH.search(write) or any(c in read for c in "{*?["):
        return None
    plain = write[:1] not in "'\"" and not _LITERAL.search(write)
    spans = [(0, len(write), write, "")] if plain else \
        [(m.start(), m.end(), m.group(2), m.group(1)) for m in _LITERAL.finditer(write)]
    out, at = [], 0
    for start, end, text, quote in spans:
        out.append(re.escape(write[at:start]) + re.escape(quote))
        pos = 0
        for f in _FIELD.finditer(text):
            out.append(re.escape(text[pos:f.start()]))
            out.append("(?P<epoch>[0-9]+)" if _EPOCH.fullmatch(f.group()) and "(?P<epoch>" not in "".join(out)
                       else ".+")
            pos = f.end()
        out.append(re.escape(text[pos:]) + re.escape(quote))
        at = end
    out.append(re.escape(write[at:]))
    m = re.fullmatch("".join(out), read)
    return int(m.group("epoch")) if m is not None and m.group("epoch") is not None else None


def _filled(write: str) -> str | None:
    """A regex of the path expression `write` with each format field of its string literals
    standing for any text; None when no literal holds a field or the fixed text is too short."""
    out, at, fields, fixed = [], 0, 0, 0
    for m in _LITERAL.finditer(write):
        out.append(re.escape(write[at:m.start()]))
        pieces = _FIELD.split(m.group(2))
        fields += len(pieces) - 1
        fixed += sum(map(len, pieces))
        out.append(re.escape(m.group(1)) + ".+".join(map(re.escape, pieces)) + re.escape(m.group(1)))
        at = m.end()
    out.append(re.escape(write[at:]))
    return "".join(out) if fields and fixed >= 5 else None


def called_reads(ctx: RuleContext) -> list:
    """(call, path expressions) of calls of the program's own functions that read a path
    (``display_image(epoch)`` whose body opens the image a loop saved): the functions that
    hold a read are found from the reads, and their calls from the call graph."""
    fx = ctx.facts.effects
    readers: dict[int, tuple] = {}
    for read in fx.calls_of(READ):
        path = path_of(read)
        node = read.node.parent if path is not None else None
        while node is not None:
            if node.type == "funcdef":
                readers.setdefault(id(node), (node, []))[1].append(path)
            node = node.parent
    out = [(call, paths) for fn, paths in readers.values() for call in ctx.env.callers(fn) if fx.kind(call) is None]
    return sorted(out, key=lambda r: r[0].node.start_pos)


def effect_reads(ctx: RuleContext):
    """Reads `_reads` does not know by name: glob patterns, image readers (``PIL.Image.open``,
    ``imageio.imread``/``mimread``, ``plt.imread``), ``os.listdir``."""
    fx = ctx.facts.effects
    for name in ("glob", "iglob", "imread", "mimread", "listdir", "load_img", "get_reader", "open"):
        for call in ctx.calls(name):
            if fx.kind(call) == "read":
                yield call


def matching_writes(ctx: RuleContext, call: N.Call, paths: list, writes: list) -> list:
    """The rank-0 writes (earlier, in the same function) of a path a call reads or shows."""
    found = [(_norm(ctx.source.code(p)), reached(ctx, p)) for p in paths if p is not None]
    scope = N.func_scope_of(call.node)
    return [w for w in writes if w[1] is scope and w[2].start_pos < call.node.start_pos and
            any(path_matches(text, w[0]) or w[0] in names for text, names in found)]


def _returning_only(piece) -> list:
    """A piece's functions whose body is one ``return`` statement (`Index.kept`)."""
    return [fn for fn in piece.funcdefs if only_return(fn) is not None]


def display_guards(ctx: RuleContext, writes: list, statement) -> list:
    """Display-only statements (``display(Image(p))``, ``embed.embed_file(p)``) of a file rank 0
    wrote: they only show something, so they run on rank 0 only, which wrote the file before
    (in program order, or during the ``fit`` that returned): no barrier is needed. Returns
    (line, call, code, message, guard edits) for `rank0_guards` to group per block."""
    fx = ctx.facts.effects
    out = []
    if not writes:
        return out                  # (nothing rank 0 wrote: nothing to show on rank 0 only)
    shows = {id(c): c for c in (*fx.calls_of(DISPLAY), *fx.calls_of(SHOWS))}
    for fn in ctx.env.index.kept("returns_only", _returning_only):   # ``display_image(EPOCHS)``
        name = fn.name.value
        fns = ctx.env.functions.get(name, ())
        if len(fns) == 1 and fns[0] is fn and N.func_scope_of(fn) is ctx.source.module:
            shows.update((id(c), c) for c in ctx.calls(name) if c.callee_dotted() == name)
    for call in sorted(shows.values(), key=lambda c: (c.node.start_pos, c.index)):
        if statement(call) is not call.node:
            continue
        paths = fx.shown_paths(call)
        if not paths or not matching_writes(ctx, call, paths, writes):
            continue
        if under_rank0_guard(call.node, ctx) or ctx.blocked("HVD033", call.node):
            continue
        edit = ctx.guard_rank0(call.node)
        if edit is None:
            note(ctx, call, "shows a file only rank 0 writes, on every rank (guard it by hand)")
            continue
        line = N.simple_stmt_of(call.node) or call.node
        out.append((line, call, "HVD033", "shows a file only rank 0 writes, on every rank", [edit],
                    "Show the file rank 0 wrote on rank 0 only"))
    return out


def checkpoint_of(env, name: str | None, at):
    """The checkpoint (or CheckpointManager) binding `name` holds at `at`, also through a
    second name given to it once (``mgr = self.manager; mgr.save()``: the manager saves all the
    same, so it is rank 0's too)."""
    found = env.lookup(name, at, "checkpoint")
    if found is not None or not name:
        return found
    b = env.lookup(name, at)
    if b is None or b.role != "other" or len(env.bindings_of(b.name, b.scope)) != 1:
        return None
    src = b.value_dotted()
    return env.lookup(src, b.stmt, "checkpoint", params=False) if src not in (None, name) else None
