"""LSP text: a buffer snapshot with the protocol's line table, exact offset <-> position
conversion in the negotiated encoding, and incremental changes.

The core speaks code-point offsets; LSP speaks (line, character) where lines break only at
``\\r\\n``, ``\\r`` and ``\\n`` (not at form feeds or ``\\u2028`` as ``str.splitlines`` does)
and characters count UTF-16 code units unless the client negotiated UTF-8 or UTF-32. A
`Text` is immutable: a change returns a new one, so an analysis keeps the exact snapshot
its offsets refer to.
"""

from __future__ import annotations

import bisect

from lsprotocol import types

from ..parse.source import LINE_BREAK, line_table

UTF8 = types.PositionEncodingKind.Utf8.value
UTF16 = types.PositionEncodingKind.Utf16.value
UTF32 = types.PositionEncodingKind.Utf32.value


def units(s: str, encoding: str) -> int:
    """Length of `s` in the encoding's code units."""
    if encoding == UTF32 or s.isascii():
        return len(s)
    if encoding == UTF8:
        return len(s.encode("utf-8", "surrogatepass"))
    return len(s) + sum(1 for c in s if ord(c) > 0xFFFF)


def _code_points(line: str, count: int, encoding: str) -> int:
    """Code points of `line` covered by `count` code units (a split character counts whole)."""
    if count <= 0:
        return 0
    if encoding == UTF32 or line.isascii():
        return min(count, len(line))
    seen = 0
    for i, c in enumerate(line):
        if seen >= count:
            return i
        seen += units(c, encoding)
    return len(line)


class Text:
    """One version of a buffer and its line table."""

    __slots__ = ("_starts", "text")

    def __init__(self, text: str):
        self.text = text
        self._starts: list[int] | None = None

    @property
    def line_starts(self) -> list[int]:
        if self._starts is None:
            self._starts = line_table(self.text)
        return self._starts

    def _line_bounds(self, line: int) -> tuple[int, int]:
        """(start, end without the line break) of a 0-based line that exists."""
        starts = self.line_starts
        start = starts[line]
        end = starts[line + 1] if line + 1 < len(starts) else len(self.text)
        while end > start and self.text[end - 1] in "\r\n":
            end -= 1
        return start, end

    # -- conversions -----------------------------------------------------------------
    def position(self, offset: int, encoding: str = UTF16) -> types.Position:
        offset = max(0, min(offset, len(self.text)))
        line = bisect.bisect_right(self.line_starts, offset) - 1
        start = self.line_starts[line]
        return types.Position(line=line, character=units(self.text[start:offset], encoding))

    def range(self, start: int, end: int, encoding: str = UTF16) -> types.Range:
        return types.Range(start=self.position(start, encoding), end=self.position(end, encoding))

    def offset(self, position: types.Position, encoding: str = UTF16) -> int:
        """Offset of a client position; out-of-range lines and characters are clamped."""
        line = position.line
        if line < 0:
            return 0
        if line >= len(self.line_starts):
            return len(self.text)
        start, end = self._line_bounds(line)
        return start + _code_points(self.text[start:end], position.character, encoding)

    def offsets(self, rng: types.Range, encoding: str = UTF16) -> tuple[int, int]:
        start, end = self.offset(rng.start, encoding), self.offset(rng.end, encoding)
        return (start, end) if start <= end else (end, start)

    # -- changes ---------------------------------------------------------------------
    def apply(self, change, encoding: str = UTF16) -> Text:
        """The text after one ``TextDocumentContentChangeEvent`` (ranged or whole)."""
        rng = getattr(change, "range", None)
        if rng is None:
            return Text(change.text)
        start, end = self.offsets(rng, encoding)
        new = Text(self.text[:start] + change.text + self.text[end:])
        new._starts = self._spliced_starts(new.text, start, end, len(change.text))
        return new

    def _spliced_starts(self, text: str, start: int, end: int, inserted: int) -> list[int]:
        """The line table of `text` (this text with [start, end) replaced by `inserted`
        characters): this table's lines before and after the edit (shifted), and the
        line breaks found again from the line before the edit to the line after it (a
        ``\r\n`` split or joined at either end included)."""
        starts = self.line_starts             # (computed once by `offsets` above)
        delta = inserted - (end - start)
        a = bisect.bisect_right(starts, max(0, start - 1)) - 1
        b = bisect.bisect_right(starts, end + 1)
        window_end = (starts[b] + delta) if b < len(starts) else len(text)
        middle = [m.end() for m in LINE_BREAK.finditer(text, starts[a], window_end)]
        return starts[:a + 1] + middle + [s + delta for s in starts[b + 1:]]
