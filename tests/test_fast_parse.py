"""`fast_tokens` makes the tokens parso's tokenizer makes, and `fast_parse` builds the tree parso's own parser builds: same node classes, types, leaves
(value, prefix, position) and parents, on every Python file the project has (the rule
fixtures, the Horovod-tier programs, the examples, the server's own code) and on those
files after random edits that break them (error recovery runs parso's own code over the
stack the fast loop writes out)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from horovodize.parse import fast_tokens
from horovodize.parse.fast_parse import parse
from horovodize.parse.source import GRAMMAR
from parso.utils import split_lines

ROOT = Path(__file__).parent.parent
FILES = sorted(p for folder in ("tests", "examples", "server") for p in (ROOT / folder).rglob("*.py"))
TEXTS = [p.read_text(encoding="utf-8", errors="replace") for p in FILES]
SMALL = [t for t in TEXTS if len(t) < 20_000]

# Tokens that open or close constructs, start statements, or cannot start anything.
SNIPPETS = ["x", "\n", "    ", "(", ")", "[", "]", "{", ":", ",", "#", "'", '"""', "\\\n", "\r\n", "\r",
            "\t", "def f():\n    return 1\n", "if x:\n", "    pass\n", "class A:\n", "import os\n",
            "é😀", "@dec\n", "else:\n", "except E:\n", "f'{", "f'{x!r:>{w}}'", "lambda", "*", "**",
            "async ", "await ", "match x:\n", "    case [1, *r]:\n", ":=", "yield", "print ", "`", "$",
            "->", "...", "0x", "1e", "not in", "is not", "global x\n", "with a as b, c:\n", "\x00"]


def same_tree(a, b) -> None:
    todo = [(a, b, None, None)]
    while todo:
        x, y, x_parent, y_parent = todo.pop()
        assert type(x) is type(y) and x.type == y.type, (x, y)
        assert x_parent is None or (x.parent is x_parent and y.parent is y_parent), (x, y)
        if hasattr(x, "children"):
            assert len(x.children) == len(y.children), (x, y, x.children, y.children)
            todo.extend((c, d, x, y) for c, d in zip(x.children, y.children))
        else:
            assert (x.value, x.prefix, x.start_pos) == (y.value, y.prefix, y.start_pos), (x, y)


def same_tokens(text: str) -> None:
    lines = split_lines(text, keepends=True)
    ours = list(fast_tokens.tokenizer(GRAMMAR)(lines))
    assert ours == [tuple(token) for token in GRAMMAR._tokenizer(lines)]


def test_every_file_of_the_project_parses_to_parsos_tree():
    assert len(TEXTS) > 300
    for text in TEXTS:
        same_tokens(text)
        same_tree(parse(GRAMMAR, text), GRAMMAR.parse(text))


@pytest.mark.parametrize("text", ["", "\n", "x", "(", "def", "    x\n", "if x:\n", "f'{", "else:\n  1\n",
                                  "class A:\n def f(self):\n  return (\n", "\ufeffx = 1\r\n", "\\"])
def test_tiny_and_unfinished_buffers(text):
    same_tokens(text)
    same_tree(parse(GRAMMAR, text), GRAMMAR.parse(text))


edit = st.tuples(st.floats(0, 1), st.integers(0, 30), st.sampled_from(SNIPPETS))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(range(len(SMALL))), st.lists(edit, min_size=1, max_size=5))
def test_broken_buffers_parse_to_parsos_tree(which, edits):
    text = SMALL[which]
    for where, cut, snippet in edits:
        at = int(where * len(text))
        text = text[:at] + snippet + text[at + cut:]
    same_tokens(text)
    same_tree(parse(GRAMMAR, text), GRAMMAR.parse(text))


# Lines of names, numbers and operators (`fast_tokens.simple`): tokenized by one `findall`
# each, unless a name on which parso's tokenizer resets the bracket level is reached
# inside brackets (then parso's loop takes the line).
SIMPLE_LINES = [
    "x = [\n    halfway-1return alfway + 1,\n    y]\n",        # a number, then a name that breaks
    "f(a,\n  return b)\nx\n", "f(a, b.import_x,\n  c)\n", "def f(x): return (x,\n  def)\n",
    "x = (1 +  # return to the start\n     2)\n", "y = 0x1f + 1e-5 + .5j + 1_000 ... 3\n",
    "a = b ! c\n", "if x:\n    y = 1\n  z = 2\nw\n", "a = (\n\n  b)\r\nc\r\n", "x = 1  # é\n",
    "class A: pass; y = [1,\n  2]\n", "l = [a for a in b if a]\n", "  x\ny\n    z\n",
]


@pytest.mark.parametrize("text", SIMPLE_LINES)
def test_simple_lines_make_parsos_tokens(text):
    assert any(fast_tokens.simple(line) for line in split_lines(text, keepends=True))
    same_tokens(text)
    same_tree(parse(GRAMMAR, text), GRAMMAR.parse(text))


# Lines whose numbers, names and operators meet in every way the simple lines' expression
# must split as parso's does: ``1if`` and ``1return`` (a number, then a name), ``0x_1``,
# ``1__0`` and ``09`` (invalid numbers: parso's pieces), ``1..real``, ``a:=b``, ``_1``.
NUMBER_LINES = ["x = 1if y else 2\n", "x = 0x_1 + 0b1_0 + 0o7 + 0_0 + 1__0 + 09 + 00\n",
                "y = 1..real + 1.e5 + 1.5e-3j + 1E+5 + .5 + 5. + 1_0.0_1j\n", "a:=b ->c ** = **= //= >>= <<=\n",
                "_1 = __ + _ + a1b2 + 1a + 1_a + 1e + 1ej + 1j2\n", "f(*a, **k)[::2] @ m @= n != o ~p\n",
                "return1 = 1return + 1 if 2else 3\n", "x = ...;y=...\r\n", "  \f x = 1 # c\n"]


def test_the_simple_lines_expression_is_parsos_less_what_needs_quotes():
    """Built from parso's own pieces (else `_simple_tokens` falls back to parso's expression),
    and it splits every simple line of the project's files as parso's does."""
    pseudo = fast_tokens._get_token_collection(GRAMMAR.version_info)[0]
    simple_tokens = fast_tokens._simple_tokens(GRAMMAR.version_info, pseudo)
    assert simple_tokens is not pseudo
    lines = [line for text in TEXTS + NUMBER_LINES for line in split_lines(text, keepends=True)
             if fast_tokens.simple(line)]
    assert len(lines) > 20_000
    assert [simple_tokens.findall(line) for line in lines] == [pseudo.findall(line) for line in lines]


@pytest.mark.parametrize("text", NUMBER_LINES)
def test_numbers_names_and_operators_make_parsos_tokens(text):
    same_tokens(text)
    same_tree(parse(GRAMMAR, text), GRAMMAR.parse(text))
