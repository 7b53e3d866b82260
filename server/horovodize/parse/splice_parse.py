"""Re-parse only the top-level statements an edit touched, and splice them into the tree.

A keystroke changes one run of characters inside one or two top-level statements.
parso's diff parser re-tokenizes from the edit and then walks and copies the module's
other statements (8-20 ms at 10,000 lines, most of a keystroke's parse, and it re-creates
the statement after the edited one and the module's last statement on every edit, so the
analysis sees three changed statements instead of one). Here the statements whose lines
the change touches are parsed on their own, from the first line after the previous
statement to the end of the last touched one, and replace the old ones in
`module.children`; the other statements stay the same objects, untouched, shifted by
whole lines when the edit added or removed some.

The spliced tree is the tree a full parse gives when the parser is in the same clean state
(top level, no open bracket or string, column 0) at both ends of the run, and both ends
are line starts of the old and the new text (a ``\n`` typed after a lone ``\r`` makes one
line break of them, the previous statement's). At the start:
the statement before the run is a whole clean statement at column 0 (else the run starts
earlier: the edit may be completing it), and the run's first line is not indented and is
not an `else:`/`except:` that would join it (else the run takes that statement in too). At
the end: the statement after the run starts at column 0, is no top-level error and no
`else:`; and either the old and the new run both parse cleanly, or the run is grown over
the following statements until its last one comes out clean (an unfinished statement,
`f(` or `if x:` being typed, is parsed with what follows it, exactly as in the file). A
run that ends in comments (they belong to the next statement's prefix) is grown too.
What cannot be settled within a few statements or `MAX_LINES` lines returns None, and the
caller uses parso's diff parser. tests/test_incremental_parts.py compares the spliced tree
with a fresh parse, node by node, after random edits and at every keystroke of retyped
lines; on the benchmark's program a one-character edit parses in about 1 ms at 10,000
lines (the diff parser: 8-19 ms), and a new line in about 7 ms (the diff parser: ~100 ms,
most of it moving the positions of the statements after it).
"""

from __future__ import annotations

import bisect

from parso.tree import BaseNode
from parso.utils import split_lines

from .fast_parse import FastParser
from .fast_tokens import tokenize_lines

MAX_LINES = 400          # a longer run (a big class) costs more to parse alone than to diff
_ERRORS = frozenset({"error_node", "error_leaf"})
_CONTINUES = frozenset({"else", "elif", "except", "finally"})   # would join the statement before
_BACK = 12             # how many unfinished statements before the edit may join the run
_TRIES = 4             # runs tried for one change before handing it to the diff parser


def changed_span(old, new) -> tuple[int, int, int]:
    """(start, old end, new end) of the one run where `old` and `new` (strings, or lists of
    lines for `diff_parse`) differ.

    Equal slices are compared in chunks that double while they match (a keystroke in a
    50,000-line buffer costs a few dozen comparisons, in C).
    """
    limit = min(len(old), len(new))
    p = _matching(lambda a, b: old[a:b] == new[a:b], limit)
    n, m = len(old), len(new)
    s = _matching(lambda a, b: old[n - b:n - a] == new[m - b:m - a], limit - p)
    return p, n - s, m - s


def _matching(equal, limit: int) -> int:
    """How many leading positions (below `limit`) `equal(a, b)` finds equal."""
    p, size = 0, 256
    while p < limit:
        size = min(size, limit - p)
        if equal(p, p + size):
            p, size = p + size, size * 2
        elif size > 8:
            size //= 8
        else:
            while p < limit and equal(p, p + 1):
                p += 1
            break
    return p


def _clean(nodes) -> bool:
    stack = list(nodes)
    while stack:
        node = stack.pop()
        if node.type in _ERRORS:
            return False
        children = getattr(node, "children", None)
        if children is not None:
            stack.extend(children)
    return True


def _leaves(node) -> list:
    """Every leaf under `node` (an iterative walk: trees can be deep)."""
    out = []
    stack = [iter((node,))]
    while stack:
        for child in stack[-1]:
            if isinstance(child, BaseNode):
                stack.append(iter(child.children))
                break
            out.append(child)
        else:
            stack.pop()
    return out


def _shift(nodes, lines: int, leaves: dict) -> None:
    """Move every leaf of `nodes` down by `lines` lines.

    Each statement's leaves are listed once and kept in `leaves` (by id, with the node):
    an edit that adds a line shifts everything after it, and a flat loop over kept lists
    is several times faster than walking the trees again.
    """
    for node in nodes:
        known = leaves.get(id(node))
        if known is None:
            known = leaves[id(node)] = (node, _leaves(node))
        for leaf in known[1]:
            leaf.line += lines


def _settled(node) -> bool:
    """A whole clean statement at column 0: the parser is at a clean boundary after it."""
    return node.end_pos[1] == 0 and node.start_pos[1] == 0 and _clean((node,))


def _position(starts: list[int], offset: int) -> tuple[int, int]:
    line = bisect.bisect_right(starts, offset)
    return line, offset - starts[line - 1]


def splice(grammar, module, old: str, new: str, old_starts: list[int], new_starts: list[int], leaves: dict):
    """`module` (the tree of `old`) turned into the tree of `new`, or None (see the module).

    `leaves` is the caller's cache of each statement's leaves (see `_shift`); it must be
    emptied when anything else changes the tree.
    """
    start, old_end, new_end = changed_span(old, new)
    children = module.children
    if not children:
        return None
    ends = _Ends(children)
    i = bisect.bisect_right(ends, _position(old_starts, start))   # first statement ending after the change starts
    last = len(children) - 1                                      # the endmarker
    if i > last:
        return None
    j = min(last, max(i, bisect.bisect_left(ends, _position(old_starts, old_end))))
    i = _settled_start(children, i)
    run = _Run(grammar, module, old, new, old_starts, new_starts, new_end - old_end, leaves)
    tail = False
    for _ in range(_TRIES):
        if i is None:
            return None
        result = run.attempt(i, j, tail)
        if result is _LATER and j < last:
            j, tail = _settled_end(children, j + 1, last), True
        elif result is _EARLIER and i > 0:
            i = _settled_start(children, i - 1)
        else:
            break
    else:
        return None
    return result if result is module else None


def _settled_start(children, i: int) -> int | None:
    """`i`, or an earlier index, whose previous statement is settled (None if none is near)."""
    for _ in range(_BACK):
        if i == 0 or _settled(children[i - 1]):
            return i
        i -= 1                                        # an unfinished statement: the edit may complete it
    return None


def _settled_end(children, j: int, last: int) -> int:
    """`j`, or the first later statement that is settled: the pieces between (the lines
    of a body whose header an edit broke come out as top-level errors, one per line)
    cannot end a run anyway, and one try per piece would hand the edit to the diff parser."""
    while j < last and not _settled(children[j]):
        j += 1
    return j


_LATER = object()      # the run may end inside what follows: try again with the next statement
_EARLIER = object()    # the run may join the statement before: try again with it


class _Run:
    """One change: parses a run of top-level statements on its own and splices it in.

    Without `tail`, the run is the touched statements, and both the old and the new run
    must parse cleanly: then the parser leaves either at a clean statement boundary and
    the next statement (at column 0, not an `else:` that could join the new run) parses
    as before. With `tail`, the run also holds the statement(s) after the change, and the
    new run may contain errors as long as its last statement comes out clean at column 0:
    the state after it is clean again, and what follows is the old tree's (which was
    parsed after that same clean statement).
    """

    def __init__(self, grammar, module, old, new, old_starts, new_starts, delta, leaves):
        self.grammar, self.module, self.leaves = grammar, module, leaves
        self.old, self.new = old, new
        self.old_starts, self.new_starts, self.delta = old_starts, new_starts, delta

    def attempt(self, i: int, j: int, tail: bool):
        children = self.module.children
        first = children[i - 1].end_pos[0] if i else 1
        old_from = self.old_starts[first - 1]
        k = bisect.bisect_left(self.new_starts, old_from)
        if k == len(self.new_starts) or self.new_starts[k] != old_from:
            return _EARLIER                           # ``\r`` + a typed ``\n``: one line break now
        at_end = j == len(children) - 1
        if at_end:
            new_stop = len(self.new)
        else:
            line, col = children[j].end_pos
            if col:
                return _LATER                         # the statement's line goes on
            new_stop = self.old_starts[line - 1] + self.delta
            k = bisect.bisect_left(self.new_starts, new_stop)
            if k == len(self.new_starts) or self.new_starts[k] != new_stop:
                return _LATER                         # the run would end inside a line
        if _position(self.new_starts, new_stop)[0] - first > MAX_LINES:
            return None
        text = self.new[old_from:new_stop]
        tokens = tokenize_lines(split_lines(text, keepends=True), version_info=self.grammar.version_info,
                                start_pos=(first, 0), is_first_token=first == 1)
        made = FastParser(self.grammar._pgen_grammar, error_recovery=True).parse(tokens=tokens).children
        if not at_end and made.pop().prefix:
            return _LATER                             # trailing comments belong to the next statement
        fits = self._fits(made, children, i, j, at_end, tail)
        if fits is not True:
            return fits
        lines = len(self.new_starts) - len(self.old_starts)
        i, j, made = _same_ends(children, i, j, made, lines)
        if lines:
            _shift(children[j + 1:], lines, self.leaves)
        for node in children[i:j + 1]:
            self.leaves.pop(id(node), None)
        for node in made:
            node.parent = self.module
        children[i:j + 1] = made
        self.module._used_names = None
        return self.module

    def _fits(self, made, children, i, j, at_end, tail):
        """True, or which way to grow the run (`_EARLIER`, `_LATER`, None: give up)."""
        if made:
            lead = made[0].get_first_leaf()
            if lead.column or lead.value in _CONTINUES:
                return _EARLIER                       # would join the statement before
        if at_end:
            return True                               # nothing follows: errors cannot spread
        after = children[j + 1]
        if after.type != "endmarker" and (
                after.type in _ERRORS or after.start_pos[1] or after.get_first_leaf().value in _CONTINUES):
            return _LATER                             # the next statement could join the run
        if not tail:
            return True if _clean(made) and _clean(children[i:j + 1]) else _LATER
        if made and made[-1].start_pos[1] == 0 and _clean(made[-1:]) and _settled(children[j]):
            return True
        return _LATER


def _same_ends(children, i: int, j: int, made: list, lines: int) -> tuple[int, int, list]:
    """The run without the statements it parsed again unchanged: a statement that comes out
    with the same code at the same place (its own text, parsed from the same clean state)
    is the old one, which keeps its object (and the analysis kept for it). A run grown over
    the statements after an unfinished one re-parses them; the class after a function being
    edited would otherwise count as changed, and with it every name it defines."""
    while made and j >= i and _same(children[j], made[-1], lines):
        made, j = made[:-1], j - 1
    while made and i <= j and _same(children[i], made[0], 0):
        made, i = made[1:], i + 1
    return i, j, made


def _same(old, new, lines: int) -> bool:
    start = old.start_pos
    return (new.type == old.type and new.start_pos == (start[0] + lines, start[1])
            and new.get_code() == old.get_code())


class _Ends:
    """The end positions of a module's children, read lazily for `bisect`."""

    __slots__ = ("children",)

    def __init__(self, children):
        self.children = children

    def __len__(self):
        return len(self.children)

    def __getitem__(self, k):
        return self.children[k].end_pos
