"""Source text, its parso tree, and text edits over it.

Everything downstream speaks in *character offsets* into the original text (Python ``str``
indices, i.e. code points). parso speaks in (1-based line, code-point column); the LSP
adapter converts offsets to UTF-16/UTF-8/UTF-32 positions itself. An `Edit` replaces
``text[start:end]`` and is never a reprint of the file.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field
from functools import cached_property

import parso
from parso.python import tree as pt

from . import fast_parse

GRAMMAR = parso.load_grammar(version="3.13")
LINE_BREAK = re.compile(r"\r\n|\r|\n")     # parso's line breaks, and LSP's


def line_table(text: str) -> list[int]:
    """Offsets of the first character of each line."""
    return [0] + [m.end() for m in LINE_BREAK.finditer(text)]


# Deepest parso tree analysed (each bracket, call, lambda or block adds one or two levels;
# a 10,000-line training program is about 15 deep). parso and the analysis walk trees
# recursively, up to four frames a level: this explicit bound keeps them far from Python's
# recursion limit, so pathological input gets a clean `TooDeep` instead of a RecursionError.
MAX_DEPTH = 150


class ParseError(Exception):
    """The text is not valid Python; carries the first error's 1-based line/column."""

    kind = "syntax error"

    def __init__(self, message: str, line: int, column: int):
        super().__init__(message)
        self.message = message
        self.line = line
        self.column = column

    def __str__(self) -> str:
        return f"{self.line}:{self.column}: {self.kind}: {self.message}"


class TooDeep(ParseError):
    """The tree is deeper than `MAX_DEPTH`: not analysed (nor converted)."""

    kind = "too deeply nested"

    @classmethod
    def at(cls, node) -> TooDeep:
        line, column = node.start_pos
        return cls(f"more than {MAX_DEPTH} levels of brackets, calls or blocks; not analysed", line, column + 1)


def nesting_error(module, limit: int = MAX_DEPTH) -> TooDeep | None:
    """`TooDeep` at the first node deeper than `limit` (an explicit stack: no recursion)."""
    stack = [(module, 0)]
    pop, push = stack.pop, stack.append
    while stack:
        node, depth = pop()
        if depth > limit:
            return TooDeep.at(node)
        for child in node.children:
            if hasattr(child, "children"):
                push((child, depth + 1))
    return None


@dataclass(frozen=True, order=True)
class Edit:
    """Replace ``text[start:end]`` by ``new_text`` (an insertion when start == end)."""

    start: int
    end: int
    new_text: str
    # an argument put into an empty argument list: another one there follows it after ", "
    argument: bool = field(default=False, compare=False)


@dataclass(frozen=True)
class SyntaxIssue:
    start: int
    end: int
    message: str


class Source:
    """One buffer: text, line table, parso module, newline and indentation style."""

    def __init__(self, text: str, module: pt.Module | None = None, line_starts: list[int] | None = None):
        self.text = text
        self.module = module if module is not None else fast_parse.parse(GRAMMAR, text)
        # Offsets of the first character of each line; parso counts \r\n, \r and \n (so
        # does LSP: the language server passes its buffer's table, kept across edits).
        self._line_starts = line_starts if line_starts is not None else line_table(text)

    # -- positions -----------------------------------------------------------------
    def offset(self, pos: tuple[int, int]) -> int:
        """parso (1-based line, column) -> offset."""
        line, col = pos
        if line - 1 >= len(self._line_starts):
            return len(self.text)
        return min(self._line_starts[line - 1] + col, len(self.text))

    def position(self, offset: int) -> tuple[int, int]:
        """offset -> (0-based line, code-point column)."""
        line = bisect.bisect_right(self._line_starts, offset) - 1
        return line, offset - self._line_starts[line]

    def line_start(self, offset: int) -> int:
        return self._line_starts[bisect.bisect_right(self._line_starts, offset) - 1]

    def line_end(self, offset: int) -> int:
        """Offset just after the line break of the line holding `offset` (or EOF)."""
        idx = bisect.bisect_right(self._line_starts, offset)
        return self._line_starts[idx] if idx < len(self._line_starts) else len(self.text)

    def span(self, node) -> tuple[int, int]:
        """Offsets of a node without its prefix (comments/whitespace before it)."""
        return self.offset(node.start_pos), self.offset(node.end_pos)

    def code(self, node) -> str:
        start, end = self.span(node)
        return self.text[start:end]

    # -- style ---------------------------------------------------------------------
    @cached_property
    def newline(self) -> str:
        m = re.search(r"\r\n|\r|\n", self.text)
        return m.group(0) if m else "\n"

    @cached_property
    def indent_unit(self) -> str:
        """The file's own indentation step (first indented block), default 4 spaces."""
        for node in self.module.iter_funcdefs():
            unit = self._suite_indent(node)
            if unit:
                return unit
        m = re.search(r"^[^\s#][^\n]*:[ \t]*(?:#[^\n]*)?\r?\n(?:[ \t]*\r?\n)*([ \t]+)\S", self.text, re.M)
        return m.group(1) if m else "    "

    def _suite_indent(self, node) -> str:
        suite = node.children[-1]
        if suite.type == "suite":
            first = suite.children[1] if len(suite.children) > 1 else None
            if first is not None:
                return self.indent_of(first)[len(self.indent_of(node)):]
        return ""

    def indent_of(self, node) -> str:
        """Leading whitespace of the line on which `node` starts."""
        start = self.line_start(self.offset(node.start_pos))
        m = re.match(r"[ \t]*", self.text[start:])
        return m.group(0)

    # -- errors --------------------------------------------------------------------
    @cached_property
    def syntax_issues(self) -> list[SyntaxIssue]:
        issues = []
        for err in GRAMMAR.iter_errors(self.module):
            issues.append(
                SyntaxIssue(self.offset(err.start_pos), self.offset(err.end_pos), err.message)
            )
        return issues

    def check_parses(self) -> None:
        """Raise `ParseError` for the first syntax error, if any (`TooDeep` first: parso's
        error finder recurses)."""
        deep = nesting_error(self.module)
        if deep is not None:
            raise deep
        if self.syntax_issues:
            first = min(self.syntax_issues, key=lambda i: i.start)
            line, col = self.position(first.start)
            msg = first.message.removeprefix("SyntaxError: ")
            from .py2 import (
                find as python2_construct,  # TF1-era scripts: say which Python 2 construct
            )
            old = python2_construct(self.text)
            if old is not None:
                raise ParseError(old.message, old.line, old.column)
            raise ParseError(msg, line + 1, col + 1)


def apply_edits(text: str, edits: list[Edit]) -> str:
    """Apply non-overlapping edits (insertions at one point keep their given order)."""
    out, last = [], 0
    for edit in sorted(edits, key=lambda e: (e.start, e.end)):
        if edit.start < last:
            raise ValueError(f"overlapping edits at offset {edit.start}")
        out.append(text[last : edit.start])
        out.append(edit.new_text)
        last = edit.end
    out.append(text[last:])
    return "".join(out)
