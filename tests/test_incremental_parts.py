"""The pieces of the keystroke path, each against its from-scratch counterpart.

tests/test_incremental.py compares whole analyses; these compare the three structures an
edit updates instead of rebuilding, on random edit sequences (several edits between two
updates too, which is what the server sees when keystrokes queue up):

* `lsp.text.Text.apply` splices the buffer's line table: equal to the table of the new text;
* `diff_parse.LineDiffParser` (changed lines by common prefix and suffix): the tree equals
  a fresh parse, node by node;
* `index_memo.IndexMemo` (lists concatenated, changed keys merged on read): every list and
  every key equals `env.build_index` of the same tree.
"""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lsprotocol import types
from parso.python.diff import _assert_nodes_are_equal, _assert_valid_graph
from parso.utils import split_lines

from horovodize.diff_parse import LineDiffParser, line_opcodes
from horovodize.env import build_index
from horovodize.index_memo import _DICTS, _LISTS, _UNIQUE, IndexMemo
from horovodize.lsp.text import Text
from horovodize.source import GRAMMAR

ROOT = Path(__file__).parent
PROGRAMS = [p.read_text(encoding="utf-8") for p in sorted((ROOT / "horovod" / "programs").glob("*.py"))]
assert len(PROGRAMS) > 5, "the Horovod-tier programs are missing"

SNIPPETS = ["x", "\n", "    ", "(", ")", ":", "#", "'", '"""', "\\\n", "\r\n", "\r", "\t", "\f",
            "def f():\n    return 1\n", "if x:\n", "    pass\n", "class A:\n", "import os\n",
            "opt = tf.keras.optimizers.Adam()\n", "é😀"]

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
        assert module.get_code() == new
        _assert_valid_graph(module)
        _assert_nodes_are_equal(module, GRAMMAR.parse(new, diff_cache=False))
        text = new


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
