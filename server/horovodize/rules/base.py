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

from .. import nodes as N
from ..source import Edit, Source

if TYPE_CHECKING:
    from ..env import Env
    from ..loop import Summary

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

    def __init__(self, source: Source, env: "Env", summary: "Summary", blocked):
        self.source = source
        self.env = env
        self.summary = summary
        self._blocked = blocked          # callable(code, node, binding) -> bool
        self.hvd = env.hvd_name or "hvd"

    def blocked(self, code: str, node, binding=None) -> bool:
        return self._blocked(code, node, binding)

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
        """``if hvd.rank() == 0: <stmt>`` in place, when the statement is alone on its line."""
        if not N.alone_on_line(small):
            return None
        start = self.source.offset(small.start_pos)
        return Edit(start, start, f"if {self.hvd}.rank() == 0: ")

    def add_keyword(self, call: N.Call, text: str) -> Edit:
        """Append ``keyword=value`` to the call's arguments, following its layout."""
        src = self.source
        args = call.args
        close = src.offset(call.close_paren.start_pos)
        if not args:
            return Edit(close, close, text)
        last_end = src.offset(args[-1].node.end_pos)
        between = src.text[last_end:close]
        trailing_comma = between.lstrip().startswith(",")
        multiline = "\n" in between or "\r" in between
        if multiline:
            indent = src.indent_of(args[-1].node)
            if trailing_comma:
                comma = last_end + between.index(",") + 1
                return Edit(comma, comma, f"{self.nl}{indent}{text},")
            return Edit(last_end, last_end, f",{self.nl}{indent}{text}")
        if trailing_comma:
            comma = last_end + between.index(",") + 1
            return Edit(comma, comma, f" {text},")
        return Edit(last_end, last_end, f", {text}")

    def wrap(self, node, before: str, after: str) -> list[Edit]:
        start, end = self.source.span(node)
        return [Edit(start, start, before), Edit(end, end, after)]

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


def mentions_hvd(node, ctx: RuleContext) -> bool:
    """Already distributed: the expression refers to the Horovod module."""
    if not ctx.env.horovod():
        return False
    return any(n.type == "name" and n.value == ctx.env.hvd_name for n in N.walk(node))


def under_rank0_guard(node, ctx: RuleContext) -> bool:
    """Inside an ``if`` whose test mentions ``hvd.rank()`` (already rank-0 only)."""
    cur = node.parent
    while cur is not None:
        if cur.type == "if_stmt" and "rank()" in cur.children[1].get_code(include_prefix=False):
            return True
        if cur.type == "funcdef":
            return False
        cur = cur.parent
    return False


def finding(ctx: RuleContext, code: str, node, message: str, fix: Fix | None, **kw) -> Finding:
    start, end = ctx.source.span(node)
    return Finding(code, start, end, message, SEVERITY_RULE, fix, **kw)
