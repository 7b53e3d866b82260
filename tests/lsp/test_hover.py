"""Hover: on a finding's range, the finding's message followed by its code's page."""

from __future__ import annotations

from horovodize import codes
from lsp_helpers import by_code, diagnostics_for, open_doc
from lsprotocol import types


async def hover(client, uri, line, character):
    return await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line=line, character=character)))


async def test_hover_on_a_rule_site(client):
    uri = open_doc(client, "tape.py")
    lr = by_code(await diagnostics_for(client, uri), "HVD010")
    result = await hover(client, uri, lr.range.start.line, lr.range.start.character + 2)
    assert result.contents.kind == types.MarkupKind.Markdown
    assert result.contents.value == f"**HVD010**: {lr.message}\n\n" + codes.doc("HVD010").strip()
    assert result.range == lr.range


async def test_hover_on_shared_range_shows_each_finding(client):
    uri = open_doc(client, "tape.py")
    tape = by_code(await diagnostics_for(client, uri), "HVD100")
    result = await hover(client, uri, tape.range.start.line, tape.range.start.character)
    sections = result.contents.value.split("\n\n---\n\n")
    assert [s.split(":")[0] for s in sections] == ["**HVD020**", "**HVD100**"]
    assert codes.doc("HVD100").strip() in sections[1]


async def test_hover_on_a_restriction(client):
    uri = open_doc(client, "restricted.py")
    r7 = by_code(await diagnostics_for(client, uri), "HVD-R7")
    result = await hover(client, uri, r7.range.start.line, r7.range.start.character)
    assert result.contents.value.startswith(f"**HVD-R7**: {r7.message}")
    assert codes.doc("HVD-R7").strip() in result.contents.value
    # the short message leaves the rules it stops to the hover
    assert "(blocks" not in r7.message and "\n\nBlocks: HVD010, HVD011" in result.contents.value


async def test_no_hover_elsewhere(client):
    uri = open_doc(client, "tape.py")
    await diagnostics_for(client, uri)
    assert await hover(client, uri, 0, 3) is None           # the docstring
    assert await hover(client, uri, 12, 57) is None         # just after `0.002`
