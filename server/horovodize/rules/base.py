"""What every rule shares: findings, fixes, the rule context and edit builders.

A rule is a module with ``CODE``/``NAME``/``TITLE``/``DOC`` and ``check(ctx)`` yielding
`Finding`s. Findings carry their `Fix` (edits over the original text, computed at analysis
time, like ruff's fixes in ``Diagnostic.data``). Rules never mutate the tree and never
import LSP types; they ask for the Horovod set-up with ``Fix.needs_setup`` instead of
inserting it themselves (the engine merges it once).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..parse import nodes as N
from ..parse.source import Edit, Source

if TYPE_CHECKING:
    from ..analysis.env import Env
    from ..analysis.loop import Summary

SEVERITY_RULE = "hint"
SEVERITY_LOOP = "information"
SEVERITY_RESTRICTION = "warning"


@dataclass
class Fix:
    title: str
    edits: list[Edit]
    needs_setup: bool = True


@dataclass
class Related:
    start: int
    end: int
    message: str


@dataclass
class Finding:
    """A rule site, a loop finding or a restriction violation, over offsets."""

    code: str
    start: int
    end: int
    message: str
    severity: str = SEVERITY_RULE
    fix: Fix | None = None
    alternatives: list[Fix] = field(default_factory=list)
    related: list[Related] = field(default_factory=list)
    blocks: tuple[str, ...] = ()          # restriction findings: the rule codes they stop


class RuleContext:
    """What a rule may read: the source, σ, the loop summary, the blocked sites."""

    def __init__(self, source: Source, env: "Env", summary: "Summary", blocked, facts=None,
                 keras_target: str = "tf.keras"):
        from ..analysis.hvd_facts import HvdFacts
        self.source = source
        self.keras_target = keras_target     # the Keras 2 a Keras 3 import becomes (rules/keras_target.py)
        self.env = env
        self.summary = summary
        self._blocked = blocked          # callable(code, node, binding) -> bool
        self.facts: HvdFacts = facts if facts is not None else HvdFacts(env)   # what Horovod already does
        self.hvd = self.facts.module_name or env.hvd_name or "hvd"
        self.earlier: list | None = None     # the findings of the rule modules run before (set by the engine)

    def blocked(self, code: str, node, binding=None) -> bool:
        return self._blocked(code, node, binding)

    def calls(self, name: str, within=None) -> list:
        """Calls of method (or function) `name` in source order, from the index built once
        by the environment pass; `within` keeps those inside that node."""
        found = self.env.index.by_method.get(name, [])
        if within is None or within is self.source.module:
            return found
        start, end = within.start_pos, within.end_pos
        return [c for c in found if start <= c.node.start_pos and c.node.end_pos <= end]

    def classdefs(self) -> list:
        """Every class of the file in source order, from the environment pass's index."""
        return sorted(self.env.index.classdefs, key=lambda c: c.start_pos)

    # -- edit builders -------------------------------------------------------------
    @property
    def nl(self) -> str:
        return self.source.newline

    def lines(self, text: str, indent: str) -> str:
        """Indent each line of `text` and end each with the file's newline."""
        return "".join(indent + line + self.nl for line in text.split("\n"))

    def insert_before_stmt(self, stmt, text: str) -> Edit:
        """Insert whole lines above the line holding `stmt`, at its indentation."""
        start = self.source.line_start(self.source.offset(stmt.start_pos))
        return Edit(start, start, self.lines(text, self.source.indent_of(stmt)))

    def insert_after_stmt(self, stmt, text: str, indent: str | None = None) -> Edit:
        """Insert whole lines after the (simple or compound) statement `stmt`."""
        indent = self.source.indent_of(stmt) if indent is None else indent
        end = self.stmt_end(stmt)
        prefix = ""
        if end == len(self.source.text) and not self.source.text.endswith(("\n", "\r")):
            prefix = self.nl
        return Edit(end, end, prefix + self.lines(text, indent))

    def stmt_end(self, stmt) -> int:
        """Offset after the line break ending `stmt` (block comments that belong to it included)."""
        last = stmt.get_last_leaf()
        end = self.source.line_end(self.source.offset(last.start_pos))
        if stmt.type in N.COMPOUND:
            end = self._skip_block_comments(stmt, end)
        return end

    def _skip_block_comments(self, stmt, end: int) -> int:
        """Comment lines indented deeper than `stmt` right after it still belong to its block."""
        depth = len(self.source.indent_of(stmt))
        text = self.source.text
        pos = end
        while pos < len(text):
            m = re.match(r"([ \t]*)#[^\r\n]*(\r\n|\r|\n|$)", text[pos:])
            if not m or len(m.group(1)) <= depth:
                break
            pos += m.end()
            end = pos
        return end

    def guard_rank0(self, small) -> Edit | None:
        """``if hvd.rank() == 0: <stmt>`` in place, when the statement is alone on its line.

        A call statement sharing its line (``if step % 10 == 0: print(step)``, ``a = 1; f()``)
        cannot take an ``if`` there; it becomes ``<call> if hvd.rank() == 0 else None``.
        """
        if N.alone_on_line(small):
            start = self.source.offset(small.start_pos)
            return Edit(start, start, f"if {self.hvd}.rank() == 0: ")
        if small.type in ("atom_expr", "power") and N.simple_stmt_of(small) is not None:
            end = self.source.offset(small.end_pos)
            return Edit(end, end, f" if {self.hvd}.rank() == 0 else None")
        return None

    def add_keyword(self, call: N.Call, text: str) -> list[Edit]:
        """Append ``keyword=value`` to the call's arguments, following its layout.

        One argument per line stays so, with or without a trailing comma; a comment after
        the last argument stays on that argument's line.
        """
        src = self.source
        args = call.args
        close = src.offset(call.close_paren.start_pos)
        if not args:
            return [Edit(close, close, text, argument=True)]
        last_end = src.offset(args[-1].node.end_pos)
        between = src.text[last_end:close]
        trailing_comma = between.lstrip().startswith(",")
        multiline = "\n" in between or "\r" in between
        if multiline:
            indent = self._argument_indent(call, args[-1])
            anchor = last_end + between.index(",") + 1 if trailing_comma else last_end
            eol = src.line_end(anchor)
            if src.text[anchor:eol].strip().startswith("#"):
                comma = [] if trailing_comma else [Edit(last_end, last_end, ",")]
                return comma + [Edit(eol, eol, f"{indent}{text},{self.nl}")]
            if trailing_comma:
                return [Edit(anchor, anchor, f"{self.nl}{indent}{text},")]
            return [Edit(last_end, last_end, f",{self.nl}{indent}{text}")]
        if trailing_comma:
            comma = last_end + between.index(",") + 1
            return [Edit(comma, comma, f" {text},")]
        return [Edit(last_end, last_end, f", {text}")]

    def _argument_indent(self, call: N.Call, last: N.Arg) -> str:
        """Indentation for a new argument line: the last argument's own indentation when it
        starts its line, else the column of the first argument sharing its line (visual
        alignment, ``f(a, b,`` / ``  c)``)."""
        src = self.source
        start = src.offset(last.node.start_pos)
        line = src.line_start(start)
        if not src.text[line:start].strip():
            return src.text[line:start]
        first = next(a for a in call.args if src.line_start(src.offset(a.node.start_pos)) == line)
        lead = src.indent_of(first.node)
        return lead + " " * (src.offset(first.node.start_pos) - line - len(lead))

    def wrap(self, node, before: str, after: str) -> list[Edit]:
        start, end = self.source.span(node)
        return [Edit(start, start, before), Edit(end, end, after)]

    def rank0_value(self, node) -> list[Edit]:
        """``<expr> if hvd.rank() == 0 else None`` (a directory only rank 0 writes to); a
        conditional, lambda or walrus is parenthesised, else the new ``if`` would bind
        inside it (``d if c else None if ...`` is ``d if c else (None if ...)``)."""
        if node.type in ("test", "lambdef", "namedexpr_test"):
            return self.wrap(node, "(", f") if {self.hvd}.rank() == 0 else None")
        return self.wrap(node, "", f" if {self.hvd}.rank() == 0 else None")

    def scale(self, node, op: str) -> list[Edit]:
        """``<expr> <op> hvd.size()`` with parentheses when precedence needs them."""
        needs_parens = node.type not in (
            "name", "number", "atom", "atom_expr", "power", "term", "factor", "string", "strings",
        )
        if op == "//" and node.type == "term":
            needs_parens = False
        start, end = self.source.span(node)
        suffix = f" {op} {self.hvd}.size()"
        if needs_parens:
            return [Edit(start, start, "("), Edit(end, end, ")" + suffix)]
        return [Edit(end, end, suffix)]


def mentions_hvd(node, ctx: RuleContext, _seen: set | None = None) -> bool:
    """Already distributed: the expression refers to the Horovod module, directly or through
    a name assigned from it (Horovod's own examples write ``scaled_lr = 0.001 * hvd.size()``
    then ``Adam(scaled_lr)``, ``verbose = 1 if hvd.rank() == 0 else 0`` then
    ``fit(verbose=verbose)``, ``model_dir = ... if hvd.rank() == 0 else None``)."""
    if not ctx.env.horovod():
        return False
    seen = set() if _seen is None else _seen
    for n in N.walk(node):
        if n.type != "name":
            continue
        if n.value == ctx.env.hvd_name:
            return True
        name = _dotted_at(n)
        if name in seen:
            continue
        seen.add(name)
        if any(mentions_hvd(b.value, ctx, seen) for b in _visible_bindings(ctx, name, n)):
            return True
    return False


def _dotted_at(name_leaf) -> str:
    """``self.x`` for the ``self`` of ``self.x``, else the name itself."""
    nxt = name_leaf.get_next_sibling()
    if name_leaf.value == "self" and nxt is not None and nxt.type == "trailer" and nxt.children[0] == ".":
        return f"self.{nxt.children[1].value}"
    return name_leaf.value


def _visible_bindings(ctx: RuleContext, name: str, at) -> list:
    """Every assignment of `name` in the innermost scope (seen from `at`) that assigns it."""
    env = ctx.env
    if name.startswith("self."):
        cls = N.enclosing(at, {"classdef"})
        return [b for b in env.bindings if b.name == name and b.scope is cls]
    for scope in env.scopes_for(at):
        found = [b for b in env.bindings if b.name == name and b.scope is scope]
        if found:
            return found
    return []


def under_rank0_guard(node, ctx: RuleContext) -> bool:
    """Inside an ``if`` whose test mentions ``hvd.rank()`` (already rank-0 only), or code that
    must not get a rank guard: it can run before ``hvd.init()`` (a ``horovod.run`` launcher's
    branch), where ``hvd.rank()`` raises."""
    facts = ctx.facts
    if facts.under_rank_guard(node) or facts.before_init(node):
        return True
    cur = node.parent
    while cur is not None:
        if cur.type == "if_stmt" and "rank()" in cur.children[1].get_code(include_prefix=False):
            return True
        if cur.type == "funcdef":
            return False
        cur = cur.parent
    return False


def called_on_rank0_only(ctx: RuleContext, fn) -> bool:
    """A function some of whose calls run under a rank guard: not every rank reaches it, so a
    collective in it (a barrier, a broadcast) would wait forever."""
    if fn is None or fn.type != "funcdef":
        return False
    return any(under_rank0_guard(c.node, ctx) for c in ctx.env.callers(fn))


def reach_points(ctx: RuleContext, node, depth: int = 4) -> list:
    """`node` and the calls that run it: its function's calls, theirs, and so on (`depth` levels)."""
    out, seen, frontier = [node], set(), [node]
    for _ in range(depth):
        nxt = []
        for at in frontier:
            fn = N.func_scope_of(at)
            if fn is None or fn.type != "funcdef" or id(fn) in seen:
                continue
            seen.add(id(fn))
            nxt += [c.node for c in ctx.env.callers(fn)]
        out += nxt
        frontier = nxt
    return out


def may_run_before(ctx: RuleContext, first, then, again: bool = True) -> bool:
    """`first` can run before `then` runs (once more): in a scope both reach (`reach_points`),
    a point of `first` comes before one of `then`, or (`again`) one loop of that scope holds
    both (its next round). ``def resume(): ckpt.restore(...); <train>; manager.save()`` called
    twice: the second call's restore follows the first call's save."""
    thens = reach_points(ctx, then)
    for a in reach_points(ctx, first):
        scope = N.func_scope_of(a)
        for b in thens:
            if N.func_scope_of(b) is not scope:
                continue
            if a is not b and a.start_pos < b.start_pos or again and _loop_holding(a, b, scope):
                return True
    return False


def _loop_holding(a, b, scope) -> bool:
    """A for/while of `scope` holds both `a` and `b`."""
    loop = N.loop_around(a)
    while loop is not None and N.func_scope_of(loop) is scope:
        if N.inside(b, loop):
            return True
        loop = N.loop_around(loop)
    return False


def guard_lines(ctx: RuleContext, stmt, last, condition: str) -> list[Edit]:
    """``if <condition>:`` above a statement (through the sibling `last`), which moves one
    step right.

    Lines inside a multi-line string keep their text (their indentation is data)."""
    src = ctx.source
    unit = src.indent_unit
    start = src.line_start(src.offset(stmt.start_pos))
    end = ctx.stmt_end(last if last is not None else stmt)
    indent = src.indent_of(stmt)
    # A block indented with tabs (a notebook cell's own style, whatever the file's) gets a
    # tab after its indentation: spaces before a tab are a TabError.
    tabbed = "\t" in indent
    if tabbed:
        unit = "\t"
    inside_strings = []
    siblings = [stmt]
    while last is not None and siblings[-1] is not last and siblings[-1].get_next_sibling() is not None:
        siblings.append(siblings[-1].get_next_sibling())
    for leaf in (n for sib in siblings for n in N.walk(sib)):
        if leaf.type in ("string", "fstring") and leaf.start_pos[0] != leaf.end_pos[0]:
            inside_strings.append((src.offset(leaf.start_pos), src.offset(leaf.end_pos)))
    edits = [Edit(start, start, f"{indent}if {condition}:{ctx.nl}")]
    pos = start
    while pos < end:
        eol = src.line_end(pos)
        line = src.text[pos:eol]
        if line.strip() and not any(a < pos < b for a, b in inside_strings):
            at = pos + len(indent) if tabbed and line.startswith(indent) else pos
            edits.append(Edit(at, at, unit))
        if eol <= pos:
            break
        pos = eol
    return edits


def finding(ctx: RuleContext, code: str, node, message: str, fix: Fix | None, **kw) -> Finding:
    start, end = ctx.source.span(node)
    return Finding(code, start, end, message, SEVERITY_RULE, fix, **kw)


def report_note(ctx: RuleContext, point: int, node, text: str) -> None:
    """A remark for the conversion report under contract point `point`, at `node`'s line
    (once per line and text): what a rule left undone, or did with a caveat."""
    notes = ctx.__dict__.setdefault("notes", [])
    if (point, node.start_pos[0], text) not in notes:
        notes.append((point, node.start_pos[0], text))
