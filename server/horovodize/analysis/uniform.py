"""Conditions that are the same on every rank: a test that reads only literals, module
constants, command-line values (``args = parser.parse_args()``, absl ``FLAGS``, Hugging
Face's ``HfArgumentParser(...).parse_args_into_dataclasses()``, the parameters of a click,
typer, Fire or Hydra entry function), ``__name__``, ``os.environ`` / ``sys.argv`` and pure
builtins over them. Every rank runs the
same command with the same environment, so such a test takes the same branch everywhere,
and training under it (T5) or an optimizer chosen by it (R7) converts branch by branch.
A test that calls anything else (``hvd.rank()``, ``np.random.rand()``, a metric, a file
check), reads a function's parameter or local, or a loop variable, is not known to be
the same and keeps its restriction.

Requires: parse (nodes, scopes); an `Env` (bindings, import aliases). Provides:
`same_on_every_rank(env, node)`, `uniform_conditions(env, node, stop)` (which also admits
the default-argument test ``if optimizer is None:``, `default_argument_test`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..parse import nodes as N
from ..parse.imports import import_bindings
from ..parse.scopes import is_main_guard

if TYPE_CHECKING:                 # (annotations only)
    from .env import Env

# Calls whose result is the same on every rank when their arguments are.
PURE_CALLS = frozenset({"len", "bool", "int", "float", "str", "isinstance", "os.getenv", "os.environ.get",
                        "os.environ.__contains__"})
# Methods that read the command line (argparse, HfArgumentParser): the same argv on every rank.
ARGV_METHODS = frozenset({"parse_args", "parse_known_args", "parse_args_into_dataclasses", "parse_dict",
                          "parse_json_file", "parse_yaml_file"})
# Statements that bind a name other than by a plain assignment.
REBINDERS = frozenset({"for_stmt", "sync_comp_for", "comp_for", "with_item", "namedexpr_test", "global_stmt",
                       "nonlocal_stmt", "import_as_name", "dotted_as_name", "import_name", "import_from"})
# Decorators that make a function a command-line entry whose parameters are the parsed command
# line (or a config the command line selects): click's, typer's ``app.command()``, Hydra's.
CLI_DECORATORS = ("click.command", "click.group", "click.option", "click.argument", "hydra.main")
# Calls that run a function as the command line's entry: its parameters are the parsed argv.
CLI_RUNNERS = frozenset({"fire.Fire", "typer.run"})
OPERATORS = frozenset({"comparison", "not_test", "and_test", "or_test", "arith_expr", "term", "factor",
                       "expr", "xor_expr", "and_expr", "shift_expr", "testlist_comp", "exprlist", "testlist",
                       "subscript", "subscriptlist", "sliceop"})


def uniform_conditions(env: Env, node, stop) -> bool:
    """Is every if/elif test between `node` and `stop` the same on every rank (a ``match``
    or an ``except`` handler never is)?"""
    cur = node.parent
    while cur is not None and cur is not stop:
        t = cur.type
        if t == "if_stmt" and not is_main_guard(cur):
            tests = [cur.children[i + 1] for i, c in enumerate(cur.children) if c in ("if", "elif")]
            if not all(same_on_every_rank(env, test) or default_argument_test(env, test) for test in tests):
                return False
        elif t in ("match_stmt", "case_block", "except_clause", "try_stmt", "while_stmt"):
            if t != "try_stmt" or _in_handler(cur, node):
                return False
        elif t in ("funcdef", "classdef", "lambdef"):
            break
        cur = cur.parent
    return True


def default_argument_test(env: Env, test) -> bool:
    """``if optimizer is None:`` (or ``not optimizer``, ``is not None``) on a parameter of the
    enclosing function whose default is None: the branch creates what the caller did not
    pass; either way the value comes from a creation the rules see."""
    if test.type == "not_test":
        test = test.children[1]
    elif test.type == "comparison" and len(test.children) == 3 and test.children[2].type == "keyword" \
            and test.children[2].value == "None" and test.children[1].get_code(include_prefix=False).strip() in ("is", "is not", "==", "!="):
        test = test.children[0]
    if test.type != "name":
        return False
    fn = N.enclosing(test, {"funcdef"})
    if fn is None:
        return False
    for p in fn.get_params():
        if p.name.value == test.value:
            return p.default is not None and p.default.type == "keyword" and p.default.value == "None"
    return False


def _imports(env: Env) -> dict:
    """Local name -> the module or member it imports, for every import of the module (the env's
    aliases keep only TensorFlow's family); memoised on the env."""
    found = env.__dict__.get("_uniform_imports")
    if found is None:
        found = env.__dict__["_uniform_imports"] = {}
        for node in env.imports:
            try:
                found.update(import_bindings(node))
            except (AttributeError, IndexError):
                continue
    return found


def _qualified(env: Env, dotted: str) -> str:
    root, dot, rest = dotted.partition(".")
    full = _imports(env).get(root)
    return (full + dot + rest) if full else dotted


def _in_handler(try_stmt, node) -> bool:
    for child in try_stmt.children:
        if child.start_pos <= node.start_pos and node.end_pos <= child.end_pos:
            prev = child.get_previous_sibling()
            while prev is not None and prev.type == "operator":
                prev = prev.get_previous_sibling()
            return prev is not None and (prev.type == "except_clause" or prev == "except")
    return False


def same_on_every_rank(env: Env, node, depth: int = 0) -> bool:
    if node is None or depth > 8:
        return False
    t = node.type
    if t in ("number", "string", "operator") or (t == "keyword" and node.value in ("True", "False", "None", "not",
                                                                                     "and", "or", "is", "in")):
        return True
    if t == "strings" or t == "fstring":
        return all(same_on_every_rank(env, c, depth + 1) for c in node.children if c.type != "fstring_string")
    if t == "name":
        return _name(env, node, depth)
    if t == "atom":
        return all(same_on_every_rank(env, c, depth + 1) for c in node.children)
    if t in OPERATORS or t == "comp_op":
        return all(same_on_every_rank(env, c, depth + 1) for c in node.children)
    if t in ("atom_expr", "power"):
        return _trailers(env, node, depth)
    return False


def _reads_argv(node) -> bool:
    """``parser.parse_args()`` (a call of an `ARGV_METHODS` method) in a trailer chain."""
    return any(N.is_call_trailer(tr) and N.Call(node, i).method in ARGV_METHODS
               for i, tr in enumerate(node.children) if i)


def _trailers(env: Env, node, depth: int) -> bool:
    kids = node.children
    if _reads_argv(node):
        return True           # ``parser.parse_args()``: the same argv on every rank
    if kids[0] == "await":
        return False
    first_call = next((i for i in range(1, len(kids)) if N.is_call_trailer(kids[i])), None)
    if first_call is None and not same_on_every_rank(env, kids[0], depth + 1):
        return False          # (a callee is judged by its name: PURE_CALLS)
    for i in range(1, len(kids)):
        tr = kids[i]
        if tr.type != "trailer":
            return same_on_every_rank(env, tr, depth + 1)     # ``x ** 2``
        if tr.children[0] == ".":
            continue
        if tr.children[0] == "[":
            if not same_on_every_rank(env, tr.children[1], depth + 1):
                return False
            continue
        call = N.Call(node, i)
        if call.method in ARGV_METHODS:
            continue
        q = env.callee_qualname(call) or call.callee_dotted() or ""
        if q not in PURE_CALLS or not all(same_on_every_rank(env, a.value, depth + 1) for a in call.args):
            return False
    return True


def _name(env: Env, leaf, depth: int) -> bool:
    name = leaf.value
    if name == "__name__":
        return True
    fn = N.func_scope_of(leaf)
    module = env.source.module
    if fn is not module:
        if name in env.param_names(fn):   # set per call, unless the command line's entry (click, typer, Fire, Hydra)
            return not env.bindings_of(name, fn) and _cli_entry(env, fn)
        if _parsed_local(env, name, fn):
            return True       # ``training_args, = parser.parse_args_into_dataclasses()`` in ``main()``
        if env.bindings_of(name, fn):
            return False      # a local: set per call, not known here
    if name in env.aliases or name in _imports(env):
        return True           # an imported module or member (``sys``, ``FLAGS``, ``os``)
    bound = env.bindings_of(name, module)
    if not bound:
        return False
    for b in bound:
        if b.stmt.type != "expr_stmt" or N.enclosing(b.stmt, {"for_stmt", "while_stmt", "funcdef"}) is not None:
            return False      # a loop variable, or changed by a function (``global``)
        if not same_on_every_rank(env, b.value, depth + 1):
            return False
    return True


def _parsed_local(env: Env, name: str, fn) -> bool:
    """A local of `fn` assigned only by plain assignments (outside loops) from the command line
    (``args = parser.parse_args()``, ``training_args, = parser.parse_args_into_dataclasses()``)."""
    stmts = []
    for leaf in env.index.names.get(name, ()):
        if N.func_scope_of(leaf) is not fn:
            continue
        if leaf.parent is not None and leaf.parent.type in REBINDERS:
            return False      # bound by a loop, a with, a walrus, an import or a global too
        stmt = leaf.parent
        while stmt is not None and stmt.type in ("testlist_star_expr", "exprlist", "atom", "testlist_comp"):
            stmt = stmt.parent
        if stmt is None or stmt.type != "expr_stmt" or not N.inside(leaf, stmt.children[0]):
            continue          # a read, not an assignment
        stmts.append(stmt)
    return bool(stmts) and all(
        len(s.children) == 3 and N.enclosing(s, {"for_stmt", "while_stmt"}) is None
        and s.children[2].type in ("atom_expr", "power") and _reads_argv(s.children[2]) for s in stmts)


def _cli_entry(env: Env, fn) -> bool:
    """Is `fn` a command-line entry: decorated by click, Hydra or a typer app's ``command()``,
    or handed to ``fire.Fire`` / ``typer.run``? (Every rank runs it with the same argv.)"""
    if fn.type != "funcdef":
        return False
    parent = fn.parent
    decorators = []
    if parent is not None and parent.type == "decorated":
        first = parent.children[0]
        decorators = list(first.children) if first.type == "decorators" else [first]
    for d in decorators:
        expr = d.children[1] if len(d.children) > 1 else None
        if expr is None:
            continue
        if expr.type in ("atom_expr", "power") and N.is_call_trailer(expr.children[-1]):
            dotted = N.dotted_parts(expr.children[:-1])     # ``@click.option("--epochs")``
        else:
            dotted = N.dotted(expr)                          # ``@click.command``
        if dotted is None:
            continue
        if _qualified(env, dotted).startswith(CLI_DECORATORS) or _typer_command(env, dotted):
            return True
    name = fn.children[1].value
    for runner in ("Fire", "run"):
        for call in env.calls_with_method(runner):
            q = _qualified(env, call.callee_dotted() or "")
            if q in CLI_RUNNERS and any(a.value.type == "name" and a.value.value == name for a in call.args):
                return True
    return False


def _typer_command(env: Env, dotted: str) -> bool:
    """``app.command`` where ``app = typer.Typer(...)`` at module level."""
    root, _, method = dotted.rpartition(".")
    if method not in ("command", "callback") or not root or "." in root:
        return False
    for b in env.bindings_of(root, env.source.module):
        value = getattr(b, "value", None)
        if value is not None and value.type in ("atom_expr", "power") and \
                _qualified(env, N.dotted_parts(value.children[:-1]) or "") == "typer.Typer":
            return True
    return False
