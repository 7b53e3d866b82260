"""A large buffer's tokens come from a forked child (`forked_tokens`): the same tokens as
parso's tokenizer in process, so the same tree, broken buffers included; a child that dies
or is no longer wanted leaves no process behind, and the parse then tokenizes in process."""

from __future__ import annotations

import os
import random
import sys

import pytest

from horovodize.parse import fast_parse, fast_tokens, forked_tokens
from horovodize.parse.source import GRAMMAR
from parso.utils import split_lines

from test_fast_parse import SNIPPETS, TEXTS, same_tree

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the fork is used on Linux only")


def fast_tokenizer():
    return fast_tokens.tokenizer(GRAMMAR)


def large(seed: int) -> str:
    """Project files joined until the text is well over `MIN_LINES` (and several batches)."""
    rng = random.Random(seed)
    parts, lines = [], 0
    while lines < 2 * forked_tokens.MIN_LINES:
        text = rng.choice(TEXTS)
        parts.append(text if text.endswith("\n") else text + "\n")
        lines += text.count("\n") + 1
    return "".join(parts)


@pytest.fixture(autouse=True)
def children(monkeypatch):
    """The children forked in the test; each must be gone (reaped) when the test ends."""
    forked = []
    fork = os.fork

    def recording_fork():
        pid = fork()
        if pid:
            forked.append(pid)
        return pid

    monkeypatch.setattr(os, "fork", recording_fork)
    yield forked
    for pid in forked:
        with pytest.raises(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)


def test_the_child_sends_the_tokens_parso_makes_here(children):
    lines = split_lines(large(1), keepends=True)
    stream = forked_tokens.tokens(GRAMMAR._tokenizer, lines)
    assert stream is not None
    assert list(stream) == [tuple(token) for token in GRAMMAR._tokenizer(lines)]
    assert len(children) == 1


@pytest.mark.parametrize("seed", range(6))
def test_large_buffers_parse_to_parsos_tree_broken_or_not(seed):
    text = large(seed)
    rng = random.Random(seed)
    for _ in range(seed):                  # seed 0: the whole files; then 1..5 breaking edits
        at = rng.randrange(len(text))
        text = text[:at] + rng.choice(SNIPPETS) + text[at + rng.randrange(30):]
    assert len(split_lines(text)) >= forked_tokens.MIN_LINES
    same_tree(fast_parse.parse(GRAMMAR, text), GRAMMAR.parse(text))


def test_a_child_that_fails_is_reported_and_reaped():
    def failing(lines):
        for i, token in enumerate(GRAMMAR._tokenizer(lines)):
            if i == 3 * forked_tokens.BATCH:
                raise RuntimeError("the child breaks")
            yield token

    stream = forked_tokens.tokens(failing, split_lines(large(2), keepends=True))
    with pytest.raises(forked_tokens.TokensLost):
        for _ in stream:
            pass


def test_the_parse_tokenizes_in_process_when_the_stream_breaks(monkeypatch):
    text = large(3)

    def broken(tokenizer, lines):
        def stream():
            yield from list(tokenizer(lines))[:1000]
            raise forked_tokens.TokensLost("the child died")
        return stream()

    monkeypatch.setattr(forked_tokens, "tokens", broken)
    same_tree(fast_parse.parse(GRAMMAR, text), GRAMMAR.parse(text))


def test_a_stream_left_early_stops_the_child():
    stream = forked_tokens.tokens(GRAMMAR._tokenizer, split_lines(large(4), keepends=True))
    next(stream)
    stream.close()


def test_small_buffers_are_tokenized_here():
    assert forked_tokens.tokens(GRAMMAR._tokenizer, ["x = 1\n"] * 10) is None


def test_the_child_holds_only_its_pipe(children):
    """Not the server's stdio: the editor must see the server's end when the server exits."""
    stream = forked_tokens.tokens(fast_tokenizer(), split_lines(large(5) * 3, keepends=True))
    next(stream)                    # the child now waits on a full pipe
    try:
        held = os.listdir(f"/proc/{children[0]}/fd")
        assert len(held) == 1, held
    finally:
        stream.close()
