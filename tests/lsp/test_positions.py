"""Positions: negotiated encoding (UTF-16 by default, UTF-8/UTF-32 when offered), exact
with non-BMP characters, tabs, CRLF, and characters `str.splitlines` would break at."""

from __future__ import annotations

import re

import pytest
from horovodize.engine import WHOLE_FILE_TITLE
from lsp_helpers import (
    DATA,
    apply_text_edits,
    by_code,
    change_range,
    cli_convert,
    diagnostics_for,
    open_doc,
    workspace_text_edits,
)
from lsprotocol import types

LINE = 'optimizer = tf.keras.optimizers.Adam(name="🚀 adam", learning_rate=0.002)'
EMOJI_TAPE = (DATA / "tape.py").read_text().replace(
    "optimizer = tf.keras.optimizers.Adam(learning_rate=0.002)", LINE)
CP = LINE.index("0.002")                        # code-point column of the site


async def quick_fix(client, uri, diag):
    actions = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri), range=diag.range,
        context=types.CodeActionContext(diagnostics=[diag], only=[types.CodeActionKind.QuickFix])))
    return actions[0]


async def whole_file(client, uri, diags) -> str:
    loop = next(d for d in diags if d.code in ("HVD100", "HVD101"))
    actions = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri), range=loop.range,
        context=types.CodeActionContext(diagnostics=[loop], only=[types.CodeActionKind.QuickFix])))
    action = next(a for a in actions if a.title == WHOLE_FILE_TITLE)
    action = await client.code_action_resolve_async(action)
    return apply_text_edits(client.buffers[uri], workspace_text_edits(action.edit)[uri], client.encoding)


async def test_utf16_emoji_before_an_edit_site(client):
    assert client.encoding == "utf-16"
    uri = open_doc(client, "emoji.py", EMOJI_TAPE)
    lr = by_code(await diagnostics_for(client, uri), "HVD010")
    assert (lr.range.start.line, lr.range.start.character, lr.range.end.character) == (12, CP + 1, CP + 6)
    action = await quick_fix(client, uri, lr)
    site_edit = workspace_text_edits(action.edit)[uri][-1]
    assert site_edit.range.start == types.Position(line=12, character=CP + 6)
    assert site_edit.new_text == " * hvd.size()"
    fixed = apply_text_edits(client.buffers[uri], [site_edit], "utf-16")
    assert 'name="🚀 adam", learning_rate=0.002 * hvd.size())' in fixed


async def test_utf16_incremental_change_after_an_emoji(client):
    uri = open_doc(client, "emoji.py", EMOJI_TAPE)
    lr = by_code(await diagnostics_for(client, uri, version=1), "HVD010")
    change_range(client, uri, lr.range, "0.004", version=2)          # a UTF-16 range from the server
    lr = by_code(await diagnostics_for(client, uri, version=2), "HVD010")
    action = await quick_fix(client, uri, lr)
    fixed = apply_text_edits(client.buffers[uri], workspace_text_edits(action.edit)[uri], "utf-16")
    assert 'name="🚀 adam", learning_rate=0.004 * hvd.size())' in fixed


@pytest.mark.parametrize("client", [{'encodings': ["utf-8", "utf-16"]}], indirect=True)
async def test_utf8_negotiated(client):
    assert client.init_result.capabilities.position_encoding == "utf-8"
    uri = open_doc(client, "emoji.py", EMOJI_TAPE)
    lr = by_code(await diagnostics_for(client, uri), "HVD010")
    assert (lr.range.start.character, lr.range.end.character) == (CP + 3, CP + 8)
    assert await whole_file(client, uri, await _current(client, uri)) == _converted(EMOJI_TAPE)


@pytest.mark.parametrize("client", [{'encodings': ["utf-32"]}], indirect=True)
async def test_utf32_negotiated(client):
    assert client.init_result.capabilities.position_encoding == "utf-32"
    uri = open_doc(client, "emoji.py", EMOJI_TAPE)
    lr = by_code(await diagnostics_for(client, uri), "HVD010")
    assert (lr.range.start.character, lr.range.end.character) == (CP, CP + 5)


@pytest.mark.parametrize("client", [{'encodings': ["utf-7"]}], indirect=True)
async def test_unknown_encoding_falls_back_to_utf16(client):
    assert client.init_result.capabilities.position_encoding == "utf-16"


async def test_crlf_buffer(client, tmp_path):
    text = (DATA / "tape.py").read_text().replace("\n", "\r\n")
    path = tmp_path / "crlf.py"
    path.write_bytes(text.encode())
    uri = open_doc(client, str(path), text)
    diags = await diagnostics_for(client, uri)
    lr = by_code(diags, "HVD010")
    assert (lr.range.start.line, lr.range.start.character) == (12, 51)
    converted = await whole_file(client, uri, diags)
    assert converted == cli_convert(path)
    assert "\r\n" in converted and not re.search(r"[^\r]\n", converted)


async def test_tabs_and_odd_line_characters(client, tmp_path):
    """Tabs count one character; a form feed and U+2028 inside a string do not break lines."""
    text = re.sub(r"^((?:    )+)", lambda m: "\t" * (len(m.group(1)) // 4),
                  (DATA / "tape.py").read_text(), flags=re.MULTILINE)
    text = text.replace("loss_fn = ", 'note = "a\u2028b\x0bc\x0cd"\nloss_fn = ')
    path = tmp_path / "odd.py"
    path.write_bytes(text.encode())
    uri = open_doc(client, str(path), text)
    diags = await diagnostics_for(client, uri)
    tape = by_code(diags, "HVD020")
    assert (tape.range.start.line, tape.range.start.character) == (22, len("\twith "))
    lr = by_code(diags, "HVD010")
    assert (lr.range.start.line, lr.range.start.character) == (13, 51)
    assert await whole_file(client, uri, diags) == cli_convert(path)


async def _current(client, uri):
    return list(client.diagnostics[uri])


def _converted(text: str) -> str:
    from horovodize.engine import convert_text

    return convert_text(text)
