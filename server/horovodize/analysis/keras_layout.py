"""A Keras 3 archive layout read on Keras 2 (HVD094, contract point 11): the pinned stack's
``get_file`` (Keras 2.15, keras/src/utils/data_utils.py) extracts an archive into
``cache_dir/cache_subdir`` itself and returns ``cache_dir/cache_subdir/fname`` (``untar=True``,
``.tar.gz`` stripped from fname) or the archive's own path (``extract=True``). Keras 3
extracts into a folder named after fname (``fname`` or ``fname + "_extracted"``) and returns
it. A program written for Keras 3 —

    dataset = get_file("aclImdb_v1", url, untar=True, cache_dir=".", cache_subdir="")
    dataset_dir = os.path.join(os.path.dirname(dataset), "aclImdb_v1")

— reads a folder Keras 2 never makes (the archive holds ``aclImdb/``), so it stops with
FileNotFoundError before it trains. The shapes read: ``os.path.join(os.path.dirname(r), S)``
with S the fname (untar), or fname + ``"_extracted"`` (untar or extract); and, with
``extract=True``, ``os.path.join(r, ...)`` (a path inside the archive file). The fact
blocks every rule (as HVD093 does), and its message gives the Keras 2 path.

Requires: env (qualified names, the call index). Provides: `keras_layout_messages(env)`,
`keras_layout_problems(env)`.
"""

from __future__ import annotations

from ..parse import nodes as N
from .roles import SETUP, Problem


def keras_layout_messages(env) -> list[tuple[object, str, list]]:
    """(node, message, related) of each Keras 3 layout read after a Keras 2 get_file."""
    out = []
    for call in env.index.by_method.get("get_file", []):
        q = env.callee_qualname(call) or ""
        if "keras" not in q or call.has_star():
            continue
        untar, extract = _flag(call, "untar"), _flag(call, "extract")
        name = _bound_name(call)
        if extract and not untar and name is not None:
            found = _pathlib_read(env, call, name)
            if found is not None:
                out.append((found[0], _pathlib_message(call, found[0], name, found[1]), []))
                continue
        fname_arg = call.keyword("fname") or call.positional(0)
        if not (untar or extract) or fname_arg is None or fname_arg.value.type != "string":
            continue
        fname = _literal(fname_arg.value)
        if fname is None:
            continue
        stem = fname[:-len(".tar.gz")] if untar and fname.endswith(".tar.gz") else fname
        name = _bound_name(call)
        if name is None:
            continue
        for join in _joins(env, call):
            args = [a.value for a in join.args]
            if not args or _layout_checked(join.node):
                continue
            head, rest = args[0], args[1:]
            if _is_dirname_of(head, name) and rest:
                s = _literal(rest[0]) if rest[0].type == "string" else None
                wanted = {stem + "_extracted", fname + "_extracted"} | ({stem} if untar else set())
                if s in wanted:
                    out.append((join.node, _message(env, call, join, name, stem, s, untar), []))
                    break
            elif extract and not untar and head.type == "name" and head.value == name and rest:
                out.append((join.node, _message(env, call, join, name, stem, None, untar), []))
                break
    return out


def _pathlib_read(env, call, name: str):
    """(node, what) of the first pathlib path after ``name = get_file(..., extract=True)`` that
    only Keras 3 makes: ``Path(name) / "x"`` (inside the archive file: Keras 2 returns the
    archive's path) or ``Path(name).parent / <text naming a "*_extracted" folder>``."""
    scope = N.func_scope_of(call.node) or env.source.module
    heads = {name, f"pathlib.Path({name})", f"Path({name})"}
    texts = {b.name: b.value.get_code(include_prefix=False) for b in env.bindings
             if b.value is not None and b.value.type in ("string", "fstring", "strings")}
    for node in N.walk(scope):
        if node.type != "term" or node.start_pos <= call.node.start_pos or len(node.children) < 3 \
                or node.children[1] != "/":
            continue
        left = node.children[0].get_code(include_prefix=False).strip()
        right = node.children[2]
        text = right.get_code(include_prefix=False) if right.type != "name" else texts.get(right.value, "")
        if _layout_checked(node):
            continue      # the program tells the two layouts apart itself
        if left in heads:
            return node, "inside"
        if left in {h + ".parent" for h in heads} and "_extracted" in text:
            return node, "extracted"
    return None


def _layout_checked(node) -> bool:
    """`node` is in a branch of an ``if`` that tests for Keras 3's layout (``if "_extracted" in
    filepath:``): a program written for both Keras versions, whose other branch is Keras 2's."""
    cur = node.parent
    while cur is not None and cur.type not in ("funcdef", "classdef", "file_input"):
        if cur.type == "if_stmt" and any("_extracted" in c.get_code() for c in cur.children[1::4]
                                         if c.type not in ("operator", "keyword")):
            return True
        cur = cur.parent
    return False


def _pathlib_message(call, node, name: str, what: str) -> str:
    written = node.get_code(include_prefix=False)
    read = ("reads a path inside the archive file (Keras 3 returns the extracted folder)" if what == "inside"
            else "reads a folder named `*_extracted` (Keras 3's layout), which Keras 2 never makes")
    return (f"on TensorFlow 2.15 (Keras 2) `get_file(..., extract=True)` extracts the archive into "
            f"cache_dir/cache_subdir itself and returns `{name}` = the archive file's own path; `{written}` {read}: "
            "the program fails before it trains on the pinned stack. Use the Keras 2 path: the archive's own top "
            f"folder next to it, `pathlib.Path({name}).parent / <that folder>`, then convert")


def keras_layout_problems(env) -> list[Problem]:
    """One restriction fact per HVD094 finding: it blocks everything (`everywhere`)."""
    return [Problem("HVD094", node, message, SETUP, everywhere=True, related=related)
            for node, message, related in keras_layout_messages(env)]


def _message(env, call, join, name: str, stem: str, folder: str | None, untar: bool) -> str:
    written = join.node.get_code(include_prefix=False)
    if untar:
        made = (f"extracts the archive into cache_dir/cache_subdir itself and returns `{name}` = "
                f"<that folder>/{stem}, a folder only an archive whose top folder is `{stem}` creates")
    else:
        made = (f"extracts the archive into cache_dir/cache_subdir itself and returns `{name}` = the "
                "archive file's own path")
    if folder is not None:
        what = f"`{written}` is the Keras 3 layout (the archive extracted into a folder named `{folder}`)"
    else:
        what = f"`{written}` reads a path inside the archive file (Keras 3 returns the extracted folder)"
    how = _how(env, join, name, folder is not None)
    return (f"on TensorFlow 2.15 (Keras 2) `get_file(..., {'untar' if untar else 'extract'}=True)` {made}; "
            f"{what}{', which Keras 2 never makes' if folder and folder.endswith('_extracted') else ''}: the program fails before it trains on the pinned stack. "
            f"Use the Keras 2 path: {how}, then convert")


def _how(env, join, name: str, dirname: bool) -> str:
    """What to write instead: the folder Keras 2 extracted into, and the first later join
    below the Keras 3 folder as it then reads."""
    head = join.node.get_code(include_prefix=False)
    if not dirname:
        args = ", ".join(a.value.get_code(include_prefix=False) for a in join.args[1:])
        return f"`os.path.join(os.path.dirname({name}), {args})` instead of `{head}`"
    how = f"`os.path.dirname({name})` instead of `{head}` (Keras 2 puts the archive's own folders next to `{name}`)"
    target = _bound_name_of_stmt(join.node)
    if target is not None:
        for call in env.index.by_method.get("join", []):
            args = [a.value for a in call.args]
            if call.node.start_pos > join.node.start_pos and len(args) > 1 and args[0].type == "name" \
                    and args[0].value == target:
                how += f", so that `{call.node.get_code(include_prefix=False)}` is the archive's folder"
                break
    return how


def _joins(env, call) -> list:
    """``os.path.join(...)`` calls after the get_file, in its function (or the module)."""
    scope = N.func_scope_of(call.node)
    out = []
    for j in env.index.by_method.get("join", []):
        if not (j.callee_dotted() or "").endswith("path.join") or j.node.start_pos <= call.node.start_pos:
            continue
        if N.func_scope_of(j.node) is scope:
            out.append(j)
    return out


def _is_dirname_of(node, name: str) -> bool:
    c = N.as_call(node)
    if c is None or not (c.callee_dotted() or "").endswith("path.dirname") or len(c.args) != 1:
        return False
    arg = c.args[0].value
    return arg.type == "name" and arg.value == name


def _flag(call, key: str) -> bool:
    arg = call.keyword(key)
    return arg is not None and arg.value.get_code(include_prefix=False) == "True"


def _literal(node) -> str | None:
    code = node.get_code(include_prefix=False)
    if code[:1] in "\"'" and code[-1:] == code[:1] and code.count(code[0]) == 2:
        return code[1:-1]
    return None


def _bound_name(call) -> str | None:
    """``name = <call>``: the name, else None."""
    return _bound_name_of_stmt(call.node)


def _bound_name_of_stmt(node) -> str | None:
    stmt = node.parent
    if stmt is None or stmt.type != "expr_stmt" or len(stmt.children) != 3 or stmt.children[2] is not node:
        return None
    target = stmt.children[0]
    return target.value if target.type == "name" else None
