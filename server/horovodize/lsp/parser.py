"""The successive trees of one text (a buffer, or a program's linked text), each made from
the previous one: `IncrementalParser` (`parse_in_steps`: a text changed in many places);
and `collector_off`, the garbage collector paused while a tree is made and analysed.

Requires: parse (splice_parse, diff_parse, fast_parse), incremental (IndexMemo).
"""

from __future__ import annotations

import difflib
import gc
import logging
from contextlib import contextmanager

from parso.utils import split_lines

from ..incremental.index_memo import IndexMemo
from ..parse import fast_parse, splice_parse
from ..parse.diff_parse import LineDiffParser
from ..parse.source import GRAMMAR, line_table
from ..parse.splice_parse import changed_span

log = logging.getLogger(__name__)

STEP_LINES = 200       # a change over more lines than this, made in several places, is parsed a place at a time ...
MAX_STEPS = 64         # ... when they are at most this many


class IncrementalParser:
    """The successive trees of one buffer, each made from the previous one.

    `splice_parse.splice` re-parses only the top-level statements the change touched and
    keeps every other statement object; where it cannot show that this equals a full parse
    (an error in or next to the touched statements), parso's diff parser (`diff_parse`)
    re-parses from the changed lines. Both mutate the previous tree in place; the analyses
    of earlier versions only keep offsets, so they stay valid. Any failure falls back to a
    full parse.
    """

    def __init__(self):
        self.module = None
        self.text: str | None = None
        self.starts: list[int] | None = None
        self.memo = IndexMemo()      # the analysis' work on the statements the parsers kept
        self.leaves: dict = {}       # each kept statement's leaves, for `splice`'s line shifts
        self._indexed = -1           # the memo's version when `_spliced` was last reset
        self._spliced = False        # every parse since then left the kept statements untouched
        self.fresh = False           # the last tree was parsed whole: the memo can reuse none of it

    def _note_parse(self, spliced: bool) -> None:
        """Tell the memo whether its kept statements are untouched since it last indexed
        (then it skips their shape checks; a diff parse may have changed them)."""
        if self.memo.version != self._indexed:
            self._indexed, self._spliced = self.memo.version, True
        self._spliced = self._spliced and spliced
        self.memo.untouched = self._spliced

    def parse(self, text: str, line_starts: list[int] | None = None):
        starts = line_starts if line_starts is not None else line_table(text)
        module = None
        if self.module is not None:
            if text == self.text:
                self.fresh = False
                return self.module
            try:
                module = splice_parse.splice(GRAMMAR, self.module, self.text, text, self.starts, starts,
                                             self.leaves)
                self._note_parse(spliced=module is not None)
                if module is None:
                    self.leaves.clear()          # the diff parser may change kept statements
                    diff = LineDiffParser(GRAMMAR._pgen_grammar, GRAMMAR._tokenizer, self.module)
                    module = diff.update(old_lines=split_lines(self.text, keepends=True),
                                         new_lines=split_lines(text, keepends=True))
            except Exception:
                log.exception("incremental parse failed; parsing the whole buffer")
                module = None
        self.fresh = module is None
        if module is None:
            self.leaves.clear()
            self._note_parse(spliced=False)
            module = fast_parse.parse(GRAMMAR, text)
        self.module, self.text, self.starts = module, text, starts
        return module


@contextmanager
def collector_off():
    """No automatic collection while parsing and analysing: the new tree is ~10^5 objects
    that all stay alive, and each full collection triggered by their allocation walks all
    of them again (5-20% of the open time of a 10k-line file). After: freeze first, then
    enable; enabled with the whole analysis in the youngest generation, the next
    allocation would start a collection that walks all of it."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.freeze()
            gc.enable()


def parse_in_steps(parser: IncrementalParser, text: str, line_starts: list[int] | None = None, between=None,
                   step_lines: int = STEP_LINES):
    """`parser.parse(text)`, a place at a time when `text` differs from the parser's last
    text in several places far apart (a program's text after edits all over a module, made
    while it was not analysed): each place is one small splice, where the run from the
    first change to the last would go to the diff parser whole (2 s at 10,000 lines).
    `between()` is called after each place (it may raise to stop; the parser then holds an
    intermediate text, from which the next call goes on)."""
    old = parser.text
    if old is not None and old != text:
        start, old_end, _new_end = changed_span(old, text)
        if old.count("\n", start, old_end) > step_lines:
            a, b = old.splitlines(keepends=True), text.splitlines(keepends=True)
            places = [op for op in difflib.SequenceMatcher(None, a, b).get_opcodes() if op[0] != "equal"]
            if 1 < len(places) <= MAX_STEPS:
                for _tag, _i1, i2, _j1, j2 in places[:-1]:
                    parser.parse("".join(b[:j2] + a[i2:]))
                    if between is not None:
                        between()
    return parser.parse(text, line_starts)
