"""Document synchronisation: the server's copy of a buffer is the editor's copy, whatever
the buffer holds and however it is changed.

LSP lines break only at ``\\r\\n``, ``\\r`` and ``\\n``; form feeds, ``\\v``, ``\\x1c``-``\\x1e``,
``\\x85``, ``\\u2028`` and ``\\u2029`` are ordinary characters (``str.splitlines`` breaks at
them). A change's end past the end of its line is clamped to the line length. The server's
view is observed through what it computes from it: the ranges of its diagnostics and the
whole-file fix, applied to the client's own model of the buffer (`lsp_helpers`' edit
applier, which shares no code with the server).
"""

from __future__ import annotations

import random
import re

import pytest
from lsp_helpers import DATA, apply_text_edits, by_code, diagnostics_for, open_doc, workspace_text_edits
from lsprotocol import types

from horovodize.engine import convert_text

SPECIALS = ["\f", "\v", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029", "\r", "\n", "\r\n",
            "é", "😀", "x", " "]
TAPE = (DATA / "tape.py").read_text(encoding="utf-8")
OPT_LINE = "optimizer = tf.keras.optimizers.Adam(learning_rate=0.002)"
PREFIX, SUFFIX = TAPE.split(OPT_LINE)
OPEN, CLOSE = PREFIX + 'NOTE = """', '"""; ' + OPT_LINE + SUFFIX   # junk lives in NOTE, before the optimizer


# -- the client's side: positions over LSP lines, computed independently of the server --
def _units(ch: str, encoding: str) -> int:
    if encoding == "utf-8":
        return len(ch.encode("utf-8"))
    return 2 if encoding == "utf-16" and ord(ch) > 0xFFFF else 1


def position(text: str, offset: int, encoding: str) -> types.Position:
    before = text[:offset]
    breaks = list(re.finditer(r"\r\n|\r|\n", before))
    start = breaks[-1].end() if breaks else 0
    if breaks and breaks[-1].end() == offset and text[offset - 1: offset + 1] == "\r\n":
        raise AssertionError("offset inside a \\r\\n pair")
    return types.Position(line=len(breaks), character=sum(_units(c, encoding) for c in text[start:offset]))


def line_end(text: str, offset: int) -> int:
    m = re.compile(r"\r\n|\r|\n").search(text, offset)
    return m.start() if m else len(text)


def change(uri: str, version: int, changes) -> types.DidChangeTextDocumentParams:
    return types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version), content_changes=changes)


async def whole_file_fix(client, uri: str) -> list[types.TextEdit]:
    doc = types.TextDocumentIdentifier(uri=uri)
    zero = types.Range(start=types.Position(line=0, character=0), end=types.Position(line=0, character=0))
    actions = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=doc, range=zero,
        context=types.CodeActionContext(diagnostics=[], only=["source.fixAll.horovodize"])))
    assert actions, "no whole-file fix"
    action = actions[0]
    if action.edit is None:
        action = await client.code_action_resolve_async(action)
    return workspace_text_edits(action.edit)[uri]


def shape(diags):
    return sorted((d.range.start.line, d.range.start.character, d.range.end.line, d.range.end.character,
                   d.code, d.message) for d in diags)


async def assert_in_sync(client, uri: str, text: str, version: int, expected_diags) -> None:
    if version is not None:                      # (None: its diagnostics were already read)
        diags = await diagnostics_for(client, uri, version)
        if expected_diags is not None:
            assert shape(diags) == expected_diags
    edits = await whole_file_fix(client, uri)
    assert apply_text_edits(text, edits, client.encoding) == convert_text(text)


# -- the fuzz test ----------------------------------------------------------------------
def _random_change(rng: random.Random, junk: str, encoding: str):
    """One random change inside the junk: (new junk, the change event the client sends)."""
    text = OPEN + junk + CLOSE
    cuts = [i for i in range(len(junk) + 1) if not (0 < i < len(junk) and junk[i - 1] == "\r" and junk[i] == "\n")]
    a, b = sorted(rng.sample(cuts, 2) if len(cuts) > 1 and rng.random() < 0.6 else [rng.choice(cuts)] * 2)
    new = "".join(rng.choice(SPECIALS) for _ in range(rng.randint(0, 4)))
    start = position(text, len(OPEN) + a, encoding)
    end = position(text, len(OPEN) + b, encoding)
    eol = line_end(text, len(OPEN) + b)
    if eol < len(OPEN) + len(junk) and rng.random() < 0.3:       # past the end of a junk line: clamped
        end = types.Position(line=end.line, character=position(text, eol, encoding).character + rng.randint(1, 40))
        b = eol - len(OPEN)
    return junk[:a] + new + junk[b:], types.TextDocumentContentChangePartial(
        range=types.Range(start=start, end=end), text=new)


@pytest.mark.parametrize("client", [{"encodings": ["utf-8"]}, {"encodings": ["utf-16"]}, {"encodings": ["utf-32"]}],
                         indirect=True)
async def test_random_edits_keep_the_server_in_sync(client):
    rng = random.Random(f"sync-{client.encoding}")
    base = OPEN + CLOSE
    base_uri = open_doc(client, "sync_base.py", base)
    expected = shape(await diagnostics_for(client, base_uri, 1))
    uri = open_doc(client, "sync.py", base)
    version = 1
    for _ in range(8):
        junk = ""
        for _ in range(24):
            version += 1
            events = []
            for _ in range(rng.choice([1, 1, 1, 2, 3])):     # several changes in one notification
                junk, event = _random_change(rng, junk, client.encoding)
                events.append(event)
            if rng.random() < 0.05:                          # now and then a whole-document change
                events.append(types.TextDocumentContentChangeWholeDocument(text=OPEN + junk + CLOSE))
            client.text_document_did_change(change(uri, version, events))
        text = OPEN + junk + CLOSE
        await assert_in_sync(client, uri, text, version, None)
        # delete the junk the client sees: the server's copy must be the base program again
        version += 1
        rng_ = types.Range(start=position(text, len(OPEN), client.encoding),
                           end=position(text, len(OPEN) + len(junk), client.encoding))
        client.text_document_did_change(change(uri, version, [types.TextDocumentContentChangePartial(range=rng_, text="")]))
        await assert_in_sync(client, uri, base, version, expected)


# -- the hand-made cases of the issue ----------------------------------------------------
async def test_quick_fix_below_a_form_feed_and_a_line_separator(client):
    text = TAPE.replace("import os\n", "import os  # \f page\n", 1).replace("\nmodel = ", "\nNOTE = 'a\u2028b\x85c'\nmodel = ", 1)
    uri = open_doc(client, "formfeed.py", text)
    await diagnostics_for(client, uri, 1)
    # an incremental edit below both characters, on the optimizer's line
    row = text[: text.index(OPT_LINE)].count("\n")
    col = OPT_LINE.index("0.002")
    rng = types.Range(start=types.Position(line=row, character=col), end=types.Position(line=row, character=col + 5))
    text = text.replace("0.002", "0.004", 1)
    client.text_document_did_change(change(uri, 2, [types.TextDocumentContentChangePartial(range=rng, text="0.004")]))
    diags = await diagnostics_for(client, uri, 2)
    hvd010 = by_code(diags, "HVD010")
    assert hvd010.range.start.line == row
    fix = hvd010.data["fixes"][0]["edits"]
    edits = [types.TextEdit(range=types.Range(start=types.Position(**e["range"]["start"]),
                                              end=types.Position(**e["range"]["end"])), new_text=e["newText"])
             for e in fix]
    fixed = apply_text_edits(text, edits, client.encoding)
    assert "Adam(learning_rate=0.004 * hvd.size())" in fixed
    convert_text(fixed)                                       # still parses
    await assert_in_sync(client, uri, text, None, None)


async def test_change_past_the_end_of_the_last_line(client):
    text = TAPE.rstrip("\n")                                  # no final line break
    last = text.rsplit("\n", 1)[1]
    assert last.endswith("float(loss))")
    uri = open_doc(client, "lastline.py", text)
    await diagnostics_for(client, uri, 1)
    row, col = text.count("\n"), last.index("float(")
    rng = types.Range(start=types.Position(line=row, character=col), end=types.Position(line=row, character=999))
    params = change(uri, 2, [types.TextDocumentContentChangePartial(range=rng, text="float(loss) * 2)")])
    client.text_document_did_change(params)   # (past the line's end: clamped to its length, per LSP)
    text = text[: len(text) - len(last) + col] + "float(loss) * 2)"
    await assert_in_sync(client, uri, text, 2, None)
