"""The pieces of the keystroke path, each against its from-scratch counterpart.

tests/test_incremental.py compares whole analyses; these compare the three structures an
edit updates instead of rebuilding, on random edit sequences (several edits between two
updates too, which is what the server sees when keystrokes queue up):

* `lsp.text.Text.apply` splices the buffer's line table: equal to the table of the new text;
* `diff_parse.LineDiffParser` (changed lines by common prefix and suffix): the tree equals
  a fresh parse, node by node;
* `splice_parse.splice` (the touched top-level statements parsed alone, through the
  server's `IncrementalParser`, which falls back to the diff parser): the tree equals a
  fresh parse after every edit and every keystroke of a retyped line, and a keystroke
  keeps every other statement object;
* `index_memo.IndexMemo` (lists concatenated, changed keys merged on read): every list and
  every key equals `env.build_index` of the same tree.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lsprotocol import types
from parso.python.diff import _assert_nodes_are_equal, _assert_valid_graph
from parso.utils import split_lines

from horovodize.parse.diff_parse import LineDiffParser, line_opcodes
from horovodize.parse.index import build_index
from horovodize.incremental.index_memo import _DICTS, _LISTS, _UNIQUE, IndexMemo
from horovodize.lsp.server import IncrementalParser
from horovodize.lsp.text import Text
from horovodize.parse.source import GRAMMAR, line_table
from horovodize.parse import splice_parse
from horovodize.parse.splice_parse import changed_span

ROOT = Path(__file__).parent
PROGRAMS = [p.read_text(encoding="utf-8") for p in sorted((ROOT / "horovod" / "programs").glob("*.py"))]
assert len(PROGRAMS) > 5, "the Horovod-tier programs are missing"

SNIPPETS = ["x", "\n", "    ", "(", ")", ":", "#", "'", '"""', "\\\n", "\r\n", "\r", "\t", "\f",
            "def f():\n    return 1\n", "if x:\n", "    pass\n", "class A:\n", "import os\n",
            "opt = tf.keras.optimizers.Adam()\n", "é😀", "@dec\n", "else:\n", "except E:\n", "# c\n",
            "    # c\n", "f'{", "]", "\n\n"]

edit = st.tuples(st.floats(0, 1), st.integers(0, 40), st.sampled_from(SNIPPETS))
edits = st.lists(st.lists(edit, min_size=1, max_size=3), min_size=1, max_size=6)


def _apply(text: str, group) -> str:
    for where, removed, inserted in group:
        pos = int(where * len(text))
        text = text[:pos] + inserted + text[pos + removed:]
    return text


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(["a", "\n", "\r", "\r\n", "é", "😀", " "]), max_size=40).map("".join),
       st.lists(st.tuples(st.integers(0, 12), st.integers(0, 5), st.integers(0, 12), st.integers(0, 5),
                          st.lists(st.sampled_from(["b", "\n", "\r", "\r\n", "😀"]), max_size=4).map("".join)),
                min_size=1, max_size=6))
def test_spliced_line_table_equals_a_fresh_one(start, changes):
    text = Text(start)
    for l1, c1, dl, c2, inserted in changes:
        text.line_starts                               # (the splice starts from a computed table)
        rng = types.Range(start=types.Position(line=l1, character=c1), end=types.Position(line=l1 + dl, character=c2))
        text = text.apply(types.TextDocumentContentChangePartial(range=rng, text=inserted))
        assert text.line_starts == Text(text.text).line_starts


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(range(len(PROGRAMS))), edits)
def test_line_diff_parser_gives_the_tree_of_a_fresh_parse(which, groups):
    text = PROGRAMS[which]
    module = GRAMMAR.parse(text, diff_cache=False)
    for group in groups:
        new = _apply(text, group)
        module = LineDiffParser(GRAMMAR._pgen_grammar, GRAMMAR._tokenizer, module).update(
            split_lines(text, keepends=True), split_lines(new, keepends=True))
        _same_as_fresh(module, new)
        text = new


def _same_as_fresh(module, text: str) -> None:
    assert module.get_code() == text
    _assert_valid_graph(module)
    _assert_nodes_are_equal(module, GRAMMAR.parse(text, diff_cache=False))


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(range(len(PROGRAMS))), edits)
def test_spliced_tree_equals_a_fresh_parse(which, groups):
    text = PROGRAMS[which]
    parser = IncrementalParser()
    parser.parse(text)
    for group in groups:
        text = _apply(text, group)
        _same_as_fresh(parser.parse(text), text)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(range(len(PROGRAMS))), st.floats(0, 1), st.sampled_from([1, 1, 2, 4]))
def test_retyping_lines_gives_the_tree_of_a_fresh_parse_at_every_keystroke(which, where, count):
    """Unfinished statements (open brackets, a header without its body) at every step."""
    full = PROGRAMS[which]
    lines = full.splitlines(keepends=True)
    first = int(where * (len(lines) - 1))
    start = sum(map(len, lines[:first]))
    typed = "".join(lines[first:first + count])
    before, after = full[:start], full[start + len(typed):]
    parser = IncrementalParser()
    parser.parse(before + after)
    for k in range(1, len(typed) + 1):
        text = before + typed[:k] + after
        _same_as_fresh(parser.parse(text), text)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(range(len(PROGRAMS))), edits)
def test_parsed_a_place_at_a_time_equals_a_fresh_parse(which, groups):
    """A program's text after edits in many places since it was last parsed (`lsp.programs`)
    is parsed one place at a time: each step, and the end, is the tree of a fresh parse."""
    from horovodize.lsp.parser import parse_in_steps

    text = PROGRAMS[which]
    parser = IncrementalParser()
    parser.parse(text)
    new = text
    for group in groups:
        new = _apply(new, group)
    steps = []

    def between():                   # each place parsed: the tree of a fresh parse of that text
        _same_as_fresh(parser.module, parser.text)
        steps.append(parser.text)

    _same_as_fresh(parse_in_steps(parser, new, between=between, step_lines=0), new)   # (short programs)


def test_edits_in_three_places_are_parsed_in_three_splices():
    """Three functions far apart edited since the last parse: three steps, each a splice of
    its function; every other statement stays the same object (the memo reuses its work)."""
    from horovodize.lsp.parser import parse_in_steps

    text = "import tensorflow as tf\n\n\n" + "".join(
        f"def f{i}(x):\n    y = tf.cast(x, tf.float32) + {i}\n    return y\n\n\n" for i in range(30))
    parser = IncrementalParser()
    kept = list(parser.parse(text).children)
    defs = [k for k, c in enumerate(kept) if c.type == "funcdef"]
    picked = [defs[0], defs[len(defs) // 2], defs[-1]]
    new = text
    for k in reversed(picked):               # a comment at the end of each picked function's first line
        line = kept[k].start_pos[0]
        at = Text(new).line_starts[line] - 1
        new = new[:at] + "  # edited" + new[at:]
    steps = []
    module = parse_in_steps(parser, new, between=lambda: steps.append(parser.text), step_lines=0)
    _same_as_fresh(module, new)
    assert len(steps) == 2
    assert [k for k, c in enumerate(module.children) if c is not kept[k]] == picked


@pytest.mark.parametrize("old, new", [
    # indented lines after a one-line def are top-level errors; a newline makes them its body
    ("def main(argv):    del argv\n    x = 1\n    y = 2\n\nz = 3\n",
     "def main(argv):\n    del argv\n    x = 1\n    y = 2\n\nz = 3\n"),
    # a line typed after a body joins it: indented, or an `else:`
    ("def f():\n    a = 1\nx = 2\n", "def f():\n    a = 1\n    b\nx = 2\n"),
    ("if a:\n    b = 1\nc = 2\n", "if a:\n    b = 1\nelse:\n    c = 2\n"),
    # an orphan `else:` joins the `if` the edit completes
    ("if a:\n    b = 1\nc = 2\nelse:\n    d = 3\n", "if a:\n    b = 1\nelse:\n    d = 3\n"),
    ("x = 1\nelse:\n    d = 3\n", "if x:\n    pass\nelse:\n    d = 3\n"),
    # an orphan decorator takes the function the edit writes after it
    ("@dec\n\nx = 1\n", "@dec\n\ndef x():\n    pass\n"),
    # an unclosed bracket swallows the statements after it, and closing it frees them
    ("a = f(1\nb = 2\nc = 3\n", "a = f(1)\nb = 2\nc = 3\n"),
    ("a = f(1)\nb = 2\nc = 3\n", "a = f(1\nb = 2\nc = 3\n"),
    # a `\n` typed after a lone `\r` joins it into one line break, the previous statement's
    ("x = 1\r\r\ny = 2\r\n", "x = 1\r\n\r\ny = 2\r\n"),
    # an unclosed triple-quoted string
    ("a = 1\nb = 2\n", 'a = """1\nb = 2\n'),
])
def test_edits_that_change_the_statements_around_them(old, new):
    parser = IncrementalParser()
    parser.parse(old)
    _same_as_fresh(parser.parse(new), new)


def test_a_keystroke_reparses_only_its_statement():
    text = PROGRAMS[0]
    parser = IncrementalParser()
    module = parser.parse(text)
    kept = list(module.children)
    body = next(c for c in kept if c.type in ("funcdef", "classdef"))
    line, col = body.children[-1].children[1].start_pos      # the body's first statement
    offset = Text(text).line_starts[line] - 1                 # ... the end of its line
    for inserted in ("  # note", "\n", "\n" + " " * col + "pass"):
        new = text[:offset] + inserted + text[offset:]
        changed = [k for k, c in enumerate(parser.parse(new).children) if c is not kept[k]]
        assert changed == [kept.index(body)], inserted
        _same_as_fresh(parser.module, new)
        parser.parse(text)
        kept = list(parser.module.children)
        body = kept[changed[0]]


def test_an_unfinished_statement_keeps_the_statements_after_it():
    """`return x" a` is parsed with the class after it (an error could reach it); the
    class comes out the same and stays the same object."""
    text = "import os\n\ndef f(a):\n    return a\n\nclass C:\n    def g(self):\n        return 1\n\nx = f(1)\n"
    parser = IncrementalParser()
    kept = list(parser.parse(text).children)
    at = text.index("return a") + len("return ")
    for inserted in ('x" ', "x0.5 ", "1 +"):
        new = text[:at] + inserted + text[at:]
        module = parser.parse(new)
        _same_as_fresh(module, new)
        assert [c.type for c in module.children if all(c is not k for k in kept)] == ["funcdef"], inserted
        parser.parse(text)
        kept = list(parser.module.children)


def test_typing_before_a_def_on_its_line_is_spliced():
    """Each character typed at the start of a ``def`` line breaks that header, and parso
    makes each line of its body a top-level error of its own: the run reaches over them
    to the next settled statement in one try, instead of one try per line and then the
    diff parser. Every keystroke is spliced and gives the tree of a fresh parse."""
    text = PROGRAMS[0]
    at = text.index("\ndef ", len(text) // 3) + 1
    typed = "def scale_batch(images, factor):\n"
    parser = IncrementalParser()
    parser.parse(text)
    for k in range(1, len(typed) + 1):
        new = text[:at] + typed[:k] + text[at:]
        module = splice_parse.splice(GRAMMAR, parser.module, parser.text, new, parser.starts, line_table(new),
                                     parser.leaves)
        assert module is not None, repr(typed[:k])
        _same_as_fresh(module, new)
        parser.module, parser.text, parser.starts = module, new, line_table(new)


@settings(max_examples=300, deadline=None)
@given(st.text("ab\n", max_size=60), st.integers(0, 60), st.integers(0, 60), st.text("ab\n", max_size=5))
def test_changed_span_is_the_one_run_that_differs(old, i, j, inserted):
    i, j = sorted((min(i, len(old)), min(j, len(old))))
    new = old[:i] + inserted + old[j:]
    start, old_end, new_end = changed_span(old, new)
    assert old[:start] == new[:start] and old[old_end:] == new[new_end:]
    assert start <= old_end and start <= new_end
    shortest = min(len(old), len(new))
    assert start == shortest or old[start] != new[start]                        # the longest prefix
    assert start in (old_end, new_end) or old[old_end - 1] != new[new_end - 1]  # the longest suffix after it


def test_line_opcodes_cover_both_texts():
    old, new = list("abcdef"), list("abXYef")
    assert line_opcodes(old, new) == [("equal", 0, 2, 0, 2), ("replace", 2, 4, 2, 4), ("equal", 4, 6, 4, 6)]
    assert line_opcodes(list("abc"), list("abxc")) == [("equal", 0, 2, 0, 2), ("insert", 2, 2, 2, 3), ("equal", 2, 3, 3, 4)]
    assert line_opcodes(list("aaa"), list("aa")) == [("equal", 0, 2, 0, 2), ("delete", 2, 3, 2, 2)]
    assert line_opcodes(list("ab"), list("ab")) == [("equal", 0, 2, 0, 2)]


def _calls(values):
    return [(v.node, v.index) if hasattr(v, "node") else v for v in values]


def _same_index(memo_index, fresh) -> None:
    for name in _LISTS:
        a, b = getattr(memo_index, name), getattr(fresh, name)
        assert [(_calls([x[0]])[0], x[1]) if isinstance(x, tuple) else x for x in a] == \
               [(_calls([x[0]])[0], x[1]) if isinstance(x, tuple) else x for x in b], name
    for name in _DICTS:
        a, b = getattr(memo_index, name), getattr(fresh, name)
        for key in list(b)[:40]:              # single reads first (the lazily merged path)
            assert key in a and _calls(a.get(key)) == _calls(b[key]), (name, key)
        assert len(a) == len(b), name
        assert {k: _calls(v) for k, v in a.items()} == {k: _calls(v) for k, v in b.items()}, name
    for name in _UNIQUE:
        assert getattr(memo_index, name).keys() == getattr(fresh, name).keys(), name


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(range(len(PROGRAMS))), edits)
def test_memo_index_equals_a_fresh_index(which, groups):
    text = PROGRAMS[which]
    module = GRAMMAR.parse(text, diff_cache=False)
    memo = IndexMemo()
    memo.index(module)
    for group in groups:
        new = _apply(text, group)
        module = LineDiffParser(GRAMMAR._pgen_grammar, GRAMMAR._tokenizer, module).update(
            split_lines(text, keepends=True), split_lines(new, keepends=True))
        _same_index(memo.index(module), build_index(module))
        text = new


ASSIGNING = '''import time
import tensorflow as tf
stamp = time.time()
path = f"/tmp/run-{stamp}"


def helper(x):
    path = x + 1
    return path


def later():
    global stamp
    stamp = 0
'''


@pytest.mark.parametrize("old, new", [
    ("stamp = time.time()\n", "stamp = time.time()\nstamp += 1\n"),          # a piece that assigns it added
    ('path = f"/tmp/run-{stamp}"\n', ""),                                        # one removed
    ("    path = x + 1\n", "    path, stamp = x + 1, 2\n"),                      # a local one changed
    ("    return path\n", "    return path + 1\n"),                              # no assignment touched
])
def test_kept_assignments_by_name_equal_a_fresh_analysis(old, new):
    """`IndexMemo.by_name` keeps each name's assignments over keystrokes (HvdFacts reads them):
    after an edit they equal a fresh analysis' for every name and scope."""
    from horovodize.engine import analyze

    parser = IncrementalParser()
    text = ASSIGNING
    analyze(text, module=parser.parse(text), memo=parser.memo)
    for name in ("stamp", "path"):                  # asked once, so the table holds them
        analyze(text, module=parser.parse(text), memo=parser.memo).facts.assignments(name, parser.module.children[0])
    edited = text.replace(old, new, 1)
    kept = analyze(edited, module=parser.parse(edited), memo=parser.memo)
    fresh = analyze(edited)
    asked = 0
    for name in ("stamp", "path"):
        for scope in (kept.source.module, *kept.env.index.funcdefs):
            got = [(s.start_pos, v.start_pos if v is not None else None, op)
                   for s, v, op in kept.facts.assignments(name, scope.children[-1] if scope.type == "funcdef" else scope.children[0])]
            at = next(n for n in (fresh.source.module, *fresh.env.index.funcdefs) if n.start_pos == scope.start_pos)
            want = [(s.start_pos, v.start_pos if v is not None else None, op)
                    for s, v, op in fresh.facts.assignments(name, at.children[-1] if at.type == "funcdef" else at.children[0])]
            assert got == want, (name, scope.type, old, new)
            asked += bool(want)
    assert asked >= 2          # (the module's and a function's: the test reads real lists)
