"""Where a statement sits, read from the tree alone: under the main guard, a condition, a
loop or an exception handler; the header of its compound statement; whether a name leaf is
a use; the outermost function around a node; a class's bases.

Requires: parse.nodes. Provides: `conditional_ancestor`, `is_main_guard`, `loop_ancestor`,
`header`, `Span`, `is_name_use`, `mentions`, `outermost_function`, `class_bases`,
`is_module_import_call`, `TERNARY`.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import nodes as N


# -- classes ---------------------------------------------------------------------------
def class_bases(cls) -> list:
    """The base-class expressions of a classdef (keyword arguments' values included)."""
    bases = []
    for child in cls.children:
        if child.type == "arglist":
            bases = [c for c in child.children if c.type != "operator"]
        elif child.type in ("name", "atom_expr", "power", "argument") and child is not cls.name:
            bases.append(child)
    out = []
    for base in bases:
        if base.type == "argument" and len(base.children) == 3:
            out.append(base.children[2])
        elif base.type != "argument":
            out.append(base)
    return out


TERNARY = ("test", "ternary")     # parso calls ``a if c else b`` a "test"


def choices(value) -> list:
    """The values ``a if c else b`` or ``{"adam": a, "sgd": b}[key]`` may take ([] for another
    expression)."""
    if value.type in TERNARY and len(value.children) == 5:
        return [value.children[0], value.children[-1]]
    kids = value.children if value.type in ("atom_expr", "power") else ()
    if len(kids) != 2 or kids[0].type != "atom" or kids[0].children[0] != "{" or kids[1].type != "trailer" \
            or kids[1].children[0] != "[" or len(kids[0].children) != 3 or kids[0].children[1].type != "dictorsetmaker":
        return []
    items = kids[0].children[1].children
    return [items[i + 2] for i in range(0, len(items) - 2, 4) if items[i + 1] == ":"]


# -- conditions ----------------------------------------------------------------------------
def is_main_guard(if_stmt) -> bool:
    """``if __name__ == "__main__":`` (either operand order) — not a condition for R7/T5."""
    test = if_stmt.children[1] if len(if_stmt.children) > 1 else None
    if test is None or test.type != "comparison" or len(test.children) != 3:
        return False
    a, op, b = test.children
    texts = {a.get_code(include_prefix=False), b.get_code(include_prefix=False).strip("'\"")}
    return op.get_code(include_prefix=False).strip() == "==" and "__name__" in texts and \
        any(t.strip("'\"") == "__main__" for t in texts)


def conditional_ancestor(node, stop):
    """The if/match/except (not the main guard) between `node` and `stop`, if any.

    ``try`` bodies are not conditions (the seeds summarise them like straight-line code);
    an ``except`` handler runs only on an error, so it is one.
    """
    cur, child = node.parent, node
    while cur is not None and cur is not stop:
        t = cur.type
        if t == "if_stmt" and not is_main_guard(cur):
            return cur
        if t in ("match_stmt", "case_block"):
            return cur
        if t == "try_stmt" and _in_handler(cur, child):
            return child          # the handler's body (the try body and the other handlers are not under it)
        if t in ("funcdef", "classdef", "lambdef"):
            return None
        child, cur = cur, cur.parent
    return None


def _in_handler(try_stmt, child) -> bool:
    """Is `child` (a direct child of `try_stmt`) the body of an ``except`` clause?"""
    kids = try_stmt.children
    try:
        i = kids.index(child)
    except ValueError:
        return False
    for j in range(i - 1, -1, -1):
        k = kids[j]
        if k.type == "except_clause" or (k.type == "keyword" and k.value == "except"):
            return True
        if k.type == "keyword" and k.value in ("try", "else", "finally"):
            return False
    return False


def loop_ancestor(node, stop):
    cur = node.parent
    while cur is not None and cur is not stop:
        if cur.type in ("for_stmt", "while_stmt"):
            return cur
        if cur.type in ("funcdef", "classdef", "lambdef"):
            return None
        cur = cur.parent
    return None


def mentions(node, name: str) -> bool:
    """Does expression `node` read the variable `name` (``ds.batch(32)``, ``wrap(opt)``)?"""
    root = name.split(".")[0]
    for leaf in _leaves(node):
        if leaf.type == "name" and leaf.value == root and is_name_use(leaf):
            if "." not in name:
                return True
            nxt = leaf.get_next_sibling()
            if nxt is not None and nxt.type == "trailer" and nxt.children[0] == "." and \
                    nxt.children[1].value == name.split(".", 1)[1]:
                return True
    return False


def _leaves(node):
    stack = [node]
    while stack:
        cur = stack.pop()
        children = getattr(cur, "children", None)
        if children is None:
            yield cur
        else:
            stack.extend(children)


def header(stmt):
    """The header of a compound statement (``if x:``, ``for a in b:``, ``except E:`` for a
    handler's body) for related info."""
    if stmt.type in ("suite", "simple_stmt") and stmt.parent is not None and stmt.parent.type == "try_stmt":
        kids = stmt.parent.children
        i = kids.index(stmt)
        j = i - 1
        while j > 0 and not (kids[j].type == "except_clause" or kids[j] == "except"):
            j -= 1
        return Span(kids[j].start_pos, kids[i - 1].end_pos)
    for child in getattr(stmt, "children", ()):
        if child.type == "operator" and child.value == ":":
            return Span(stmt.start_pos, child.end_pos)
    return stmt


@dataclass
class Span:
    """A position range standing in for a node (``source.span`` reads only these)."""

    start_pos: tuple
    end_pos: tuple


def is_name_use(leaf) -> bool:
    """A name leaf that reads a variable: not an attribute (``x.opt``), a keyword argument's
    name, a parameter, an import name or the name a def/class introduces."""
    parent = leaf.parent
    if parent is None:
        return False
    t = parent.type
    if (t == "trailer" and parent.children[0] == ".") or t in ("param", "import_as_name", "dotted_as_name", "dotted_name",
                                "import_from", "import_name", "global_stmt", "nonlocal_stmt"):
        return False
    if t in ("funcdef", "classdef") and parent.children[1] is leaf:
        return False
    if t == "argument" and parent.children[0] is leaf and len(parent.children) > 1 and parent.children[1] == "=":
        return False
    return True


def outermost_function(fn):
    cur = fn
    while True:
        up = N.enclosing(cur, {"funcdef"})
        if up is None:
            return cur
        cur = up


def is_module_import_call(value) -> bool:
    children = getattr(value, "children", None)
    if not children or len(children) < 2:
        return False
    before = children[-2]                 # (the callee's last name, before making the `Call`)
    if before.type == "trailer":
        before = before.children[-1]
    if before.type != "name" or before.value not in ("import_module", "__import__"):
        return False
    call = N.as_call(value)
    if call is None or call.callee_dotted() is None:     # (its last name is the one above)
        return False
    arg = call.positional(0)
    text = arg.value.get_code(include_prefix=False).strip("'\"") if arg is not None else ""
    return text in ("tensorflow", "tensorflow.compat.v1")
