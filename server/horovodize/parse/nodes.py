"""Small helpers over parso nodes: calls, arguments, dotted names, statements.

parso keeps every token (error tolerant, with prefixes), so these helpers read shapes
rather than types: a call is an ``atom_expr``/``power`` whose trailer is ``( ... )``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Iterator

COMPOUND = {
    "if_stmt", "for_stmt", "while_stmt", "try_stmt", "with_stmt", "funcdef", "classdef",
    "decorated", "async_stmt", "async_funcdef", "match_stmt",
}
SCOPES = {"funcdef", "classdef", "lambdef"}


@dataclass
class Arg:
    """One argument of a call: ``keyword`` is None for positionals, ``star`` '', '*' or '**'."""

    node: object          # the whole argument (keyword included)
    value: object         # the value expression
    keyword: str | None = None
    star: str = ""


@dataclass
class Call:
    """A call ``<callee>(<args>)``; `node` is the atom_expr, `index` the '(' trailer."""

    node: object
    index: int

    @property
    def trailer(self):
        return self.node.children[self.index]

    @property
    def callee_parts(self) -> list:
        return self.node.children[: self.index]

    # `method`, `receiver_dotted` and `callee_dotted` are read by many passes over the same
    # calls; the tree does not change during an analysis, so each is computed once.
    @cached_property
    def method(self) -> str | None:
        """`name` of ``receiver.name(...)``, else None."""
        if self.index >= 1:
            last = self.node.children[self.index - 1]
            if last.type == "trailer":
                first = last.children[0]
                if first.type == "operator" and first.value == ".":
                    return last.children[1].value
        return None

    @property
    def receiver_parts(self) -> list:
        return self.node.children[: self.index - 1]

    def receiver_dotted(self) -> str | None:
        d = self.__dict__
        if "_receiver" not in d:
            d["_receiver"] = dotted_parts(self.receiver_parts)
        return d["_receiver"]

    def callee_dotted(self) -> str | None:
        d = self.__dict__
        if "_callee" not in d:
            d["_callee"] = dotted_parts(self.callee_parts)
        return d["_callee"]

    @property
    def args(self) -> list[Arg]:
        return call_args(self.trailer)

    @property
    def open_paren(self):
        return self.trailer.children[0]

    @property
    def close_paren(self):
        return self.trailer.children[-1]

    def is_whole(self) -> bool:
        """True when this call is the last trailer of its atom_expr (not `f().x`)."""
        return self.index == len(self.node.children) - 1

    def keyword(self, name: str) -> Arg | None:
        for arg in self.args:
            if arg.keyword == name:
                return arg
        return None

    def positional(self, i: int) -> Arg | None:
        pos = [a for a in self.args if a.keyword is None and not a.star]
        return pos[i] if 0 <= i < len(pos) else None      # (-1: a method's `self`, never passed)

    def has_star(self) -> bool:
        return any(a.star for a in self.args)


def is_call_trailer(node) -> bool:
    if node.type != "trailer":
        return False
    first = node.children[0]
    return first.type == "operator" and first.value == "("


def calls_in(node) -> Iterator[Call]:
    """Every call in `node`, outermost trailer chains included (``a(x).b(y)`` gives two)."""
    if node.type in ("atom_expr", "power"):
        for i, child in enumerate(node.children):
            if i and is_call_trailer(child):
                yield Call(node, i)
    for child in getattr(node, "children", ()):
        yield from calls_in(child)


def unparen(node):
    """``(expr)`` → ``expr`` (a pipeline written over several lines inside parentheses)."""
    while node is not None and node.type == "atom" and len(node.children) == 3 \
            and node.children[0] == "(" and node.children[1].type in ("atom_expr", "power", "atom", "name"):
        node = node.children[1]
    return node


def as_call(node) -> Call | None:
    """The call when `node` itself is ``callee(...)`` (the last trailer is the call)."""
    if node is not None and node.type in ("atom_expr", "power") and len(node.children) > 1:
        last = len(node.children) - 1
        if node.children[0] == "await":
            return None
        if is_call_trailer(node.children[last]):
            return Call(node, last)
    return None


def call_args(trailer) -> list[Arg]:
    if len(trailer.children) < 3:
        return []
    inner = trailer.children[1]
    items = inner.children if inner.type == "arglist" else [inner]
    args = []
    for item in items:
        if item.type == "operator" and item.value == ",":
            continue
        if item.type == "argument":
            first = item.children[0]
            if first.type == "operator" and first.value in ("*", "**"):
                args.append(Arg(item, item.children[1], None, first.value))
            elif len(item.children) >= 3 and item.children[1] == "=" and first.type == "name":
                args.append(Arg(item, item.children[2], first.value))
            else:  # generator argument or walrus
                args.append(Arg(item, item))
        elif item.type == "star_expr":
            args.append(Arg(item, item.children[1], None, "*"))
        else:
            args.append(Arg(item, item))
    return args


def dotted(node) -> str | None:
    """``a.b.c`` for a Name or an attribute chain, else None."""
    if node is None:
        return None
    if node.type == "name":
        return node.value
    if node.type in ("atom_expr", "power"):
        return dotted_parts(node.children)
    return None


def dotted_parts(parts) -> str | None:
    if not parts:
        return None
    first = parts[0]
    if first.type != "name":
        return None
    if len(parts) == 1:
        return first.value
    names = [first.value]
    for i in range(1, len(parts)):
        trailer = parts[i]
        if trailer.type != "trailer":
            return None
        ch = trailer.children
        op = ch[0]
        if op.type != "operator" or op.value != ".":
            return None
        names.append(ch[1].value)
    return ".".join(names)


def statement_of(node):
    """The simple statement (``simple_stmt`` child) or compound statement holding `node`."""
    cur = node
    while cur.parent is not None:
        if cur.parent.type == "simple_stmt" or is_bare_statement(cur):
            return cur
        if cur.type in COMPOUND:
            return cur
        cur = cur.parent
    return cur


def simple_stmt_of(small):
    """The ``simple_stmt`` line holding a small statement (or None for a bare node)."""
    parent = small.parent
    return parent if parent is not None and parent.type == "simple_stmt" else None


def is_bare_statement(node) -> bool:
    """A small statement directly in a block, without its ``simple_stmt``.

    parso leaves out the ``simple_stmt`` (and its newline) of a single statement on the
    last line of a file that does not end with a line break: ``print(x)<EOF>`` is an
    ``atom_expr`` child of ``file_input`` (or of the last ``suite``).
    """
    parent = node.parent
    return (parent is not None and parent.type in ("file_input", "suite")
            and node.type not in COMPOUND and node.type not in ("simple_stmt", "newline", "endmarker", "error_node"))


def is_statement(node) -> bool:
    """`node` is a whole small statement (alone or ``;``-separated), wrapped or bare."""
    parent = node.parent
    return parent is not None and (parent.type == "simple_stmt" or is_bare_statement(node))


def trailer_call(node) -> Call | None:
    """The call whose ``(...)`` trailer `node` is (None for any other node)."""
    if not is_call_trailer(node) or node.parent is None:
        return None
    return Call(node.parent, node.parent.children.index(node))


def call_with_argument(node) -> Call | None:
    """The call that `node` is an argument of (``f(node)``, ``f(x, k=node)``), if any."""
    cur = node.parent
    if cur is not None and cur.type == "argument":
        cur = cur.parent
    if cur is not None and cur.type == "arglist":
        cur = cur.parent
    return trailer_call(cur) if cur is not None else None


def inside(node, ancestor) -> bool:
    """Is `node` `ancestor` or below it?"""
    cur = node
    while cur is not None:
        if cur is ancestor:
            return True
        cur = cur.parent
    return False


def loop_around(node):
    """The innermost for/while statement holding `node` inside its own function."""
    cur = node.parent
    while cur is not None:
        if cur.type in ("for_stmt", "while_stmt"):
            return cur
        if cur.type in ("funcdef", "classdef", "lambdef", "file_input"):
            return None
        cur = cur.parent
    return None


def enclosing(node, types: set[str]):
    cur = node.parent
    while cur is not None:
        if cur.type in types:
            return cur
        cur = cur.parent
    return None


def scope_of(node):
    """Innermost funcdef/classdef (or the module) holding `node`."""
    cur = node.parent
    while cur is not None:
        if cur.type in ("funcdef", "classdef", "file_input"):
            return cur
        cur = cur.parent
    return None


def func_scope_of(node):
    """Innermost funcdef or the module (classes do not make a name scope for bodies)."""
    cur = node.parent
    while cur is not None:
        if cur.type in ("funcdef", "file_input"):
            return cur
        cur = cur.parent
    return None


def conditional_ancestor(node, stop):
    """The first if/try/while/for/match (or ternary) between `node` and `stop`, if any."""
    cur = node.parent
    while cur is not None and cur is not stop:
        if cur.type in ("if_stmt", "try_stmt", "while_stmt", "for_stmt", "match_stmt", "test"):
            return cur
        cur = cur.parent
    return None


def walk(node) -> Iterator:
    yield node
    for child in getattr(node, "children", ()):
        yield from walk(child)


def assign_parts(expr_stmt):
    """(targets, value) of ``a = b = value`` / ``a: T = value``; None when not an assignment."""
    ch = expr_stmt.children
    if expr_stmt.type != "expr_stmt":
        return None
    if len(ch) >= 3 and ch[1].type == "operator" and ch[1].value == "=":
        targets = [ch[i] for i in range(0, len(ch) - 1, 2)]
        return targets, ch[-1]
    if len(ch) == 2 and ch[1].type == "annassign":
        ann = ch[1].children
        if len(ann) >= 4 and ann[2].type == "operator" and ann[2].value == "=":
            return [ch[0]], ann[3]
    return None


def name_assignment(stmt) -> tuple | None:
    """(name leaf, value) of ``name = value``: one plain name, no annotation, no chain."""
    parts = assign_parts(stmt)
    if parts is None or len(stmt.children) != 3 or parts[0][0].type != "name":
        return None
    return parts[0][0], parts[1]


def alone_on_line(small) -> bool:
    """A small statement that is the only one on its line and starts it (in a block)."""
    if is_bare_statement(small):
        return True
    line = simple_stmt_of(small)
    if line is None or line.parent is None or line.parent.type not in ("suite", "file_input"):
        return False
    smalls = [c for c in line.children if c.type != "newline" and not (c.type == "operator" and c.value == ";")]
    return len(smalls) == 1
