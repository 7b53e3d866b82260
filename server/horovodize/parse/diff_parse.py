"""parso's diff parser, with the changed lines found by a common prefix and suffix.

`parso.python.diff.DiffParser.update` aligns the old and the new lines with
`difflib.SequenceMatcher`, which hashes every line and searches for the longest matches:
on a 50,000-line buffer that is most of a keystroke's parse (40-60 ms of ~70). A
keystroke, a paste or a deletion changes one contiguous run of lines, and the lines
before and after it are equal; comparing slices from both ends finds that run in well
under a millisecond, and the opcodes it gives ("equal", one "replace"/"insert"/"delete",
"equal") are a valid alignment for any pair of texts, so the diff parser builds the same
tree (it reparses the run, and copies the rest). Several edits between two analyses give
one run from the first to the last change: more reparsing, the same result. The
incremental-equivalence property test (tests/test_incremental.py) checks the trees.

`update` is parso 0.8.7's own, with the opcodes swapped (parso is pinned).
"""

from __future__ import annotations

from parso.python.diff import DiffParser

from .splice_parse import changed_span


def line_opcodes(old: list[str], new: list[str]) -> list[tuple[str, int, int, int, int]]:
    """`difflib.SequenceMatcher.get_opcodes` for one changed run of lines."""
    p, i2, j2 = changed_span(old, new)          # (lists of lines compare as strings do)
    n, m = len(old), len(new)
    out = []
    if p:
        out.append(("equal", 0, p, 0, p))
    if p < i2 and p < j2:
        out.append(("replace", p, i2, p, j2))
    elif p < j2:
        out.append(("insert", p, i2, p, j2))
    elif p < i2:
        out.append(("delete", p, i2, p, j2))
    if i2 < n:
        out.append(("equal", i2, n, j2, m))
    return out


class LineDiffParser(DiffParser):
    def update(self, old_lines, new_lines):
        self._module._used_names = None
        self._parser_lines_new = new_lines
        self._reset()
        line_length = len(new_lines)
        for operation, i1, i2, j1, j2 in line_opcodes(old_lines, new_lines):
            if j2 == line_length and new_lines[-1] == '':
                # The empty part after the last newline is not relevant.
                j2 -= 1
            if operation == 'equal':
                line_offset = j1 - i1
                self._copy_from_old_parser(line_offset, i1 + 1, i2, j2)
            elif operation in ('replace', 'insert'):
                self._parse(until_line=j2)
        self._nodes_tree.close()
        last_pos = self._module.end_pos[0]
        if last_pos != line_length:
            raise ValueError(f"diff parser: the tree ends on line {last_pos}, the text on {line_length}")
        return self._module
