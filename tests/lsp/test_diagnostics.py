"""Diagnostics: pushed on open/change (at once, never a version the server has already replaced; a burst that arrives together publishes its last version only), cleared on close;
pulled with result ids (``textDocument/diagnostic``)."""

from __future__ import annotations

import asyncio

import pytest
from horovodize.engine import analyze
from lsp_helpers import by_code, change_range, diagnostics_for, one_write, open_doc, replace_all
from lsprotocol import types

SEVERITY = {"hint": types.DiagnosticSeverity.Hint, "information": types.DiagnosticSeverity.Information,
            "warning": types.DiagnosticSeverity.Warning, "error": types.DiagnosticSeverity.Error}


def expected(text: str) -> list[tuple]:
    """(code, severity, message, start line, start column) of the core's findings: the oracle."""
    analysis = analyze(text)
    return [(f.code, SEVERITY[f.severity], f.message, *analysis.source.position(f.start)) for f in analysis.findings]


async def test_diagnostics_on_open(client):
    uri = open_doc(client, "tape.py")
    diags = await diagnostics_for(client, uri, version=1)
    assert [(d.code, d.severity, d.message, d.range.start.line, d.range.start.character) for d in diags] == (
        expected(client.buffers[uri]))
    assert {"HVD001", "HVD010", "HVD020", "HVD100", "HVD021", "HVD030"} <= {d.code for d in diags}
    assert {d.source for d in diags} == {"horovodize"}
    lr = by_code(diags, "HVD010")
    assert lr.severity == types.DiagnosticSeverity.Hint
    assert lr.range == types.Range(start=types.Position(line=12, character=51),
                                   end=types.Position(line=12, character=56))  # `0.002`
    href = lr.code_description.href
    assert href.startswith("file:///") and href.endswith("/horovodize/docs/HVD010.md")
    loop = by_code(diags, "HVD100")
    assert loop.severity == types.DiagnosticSeverity.Information
    related = [(r.location.uri, r.location.range.start.line, r.location.range.start.character, r.message)
               for r in loop.related_information]
    analysis = analyze(client.buffers[uri])
    finding = next(f for f in analysis.findings if f.code == "HVD100")
    assert related == [(uri, *analysis.source.position(r.start), r.message) for r in finding.related]
    assert (uri, 28, 0) in [r[:3] for r in related]    # the `for` that drives the step
    assert (uri, 24, 4) in [r[:3] for r in related]    # `optimizer.apply_gradients`


async def test_restriction_is_a_warning_without_fix(client):
    uri = open_doc(client, "restricted.py")
    diags = await diagnostics_for(client, uri)
    r7 = by_code(diags, "HVD-R7")
    assert r7.severity == types.DiagnosticSeverity.Warning
    assert r7.message == next(e[2] for e in expected(client.buffers[uri]) if e[0] == "HVD-R7")
    assert "HVD010" not in r7.message                  # short: the rules it blocks are in the hover
    assert r7.data is None
    assert r7.code_description.href.endswith("/docs/HVD-R7.md")


async def test_cleared_on_close(client):
    uri = open_doc(client, "tape.py")
    assert await diagnostics_for(client, uri, version=1)
    client.text_document_did_close(types.DidCloseTextDocumentParams(
        text_document=types.TextDocumentIdentifier(uri=uri)))
    assert await diagnostics_for(client, uri) == []


async def test_change_republishes_for_the_new_version(client):
    uri = open_doc(client, "tape.py")
    await diagnostics_for(client, uri, version=1)
    # learning_rate=0.002 -> learning_rate=0.002 * hvd.size() is not enough without the import,
    # but removing the print removes HVD030.
    text = client.buffers[uri].replace('        print("step", step, "loss", float(loss))\n', "        pass\n")
    replace_all(client, uri, text, version=2)
    diags = await diagnostics_for(client, uri, version=2)
    assert "HVD030" not in [d.code for d in diags]


async def test_rapid_changes_only_last_version_is_published(client):
    uri = open_doc(client, "tape.py")
    await diagnostics_for(client, uri, version=1)
    published = record_publishes(client)
    pos = types.Position(line=12, character=0)   # optimizer = tf.keras.optimizers.Adam(...)
    with one_write(client):                       # ten keystrokes that arrive together
        for version in range(2, 12):
            change_range(client, uri, types.Range(start=pos, end=pos), "x", version)
    last = await diagnostics_for(client, uri, version=11)
    await asyncio.sleep(0.5)                      # nothing may follow for the stale versions
    assert [p.version for p in published if p.uri == uri] == [11]
    # the one analysis is version 11's: `xxxxxxxxxxoptimizer` is another variable (the fresh
    # analysis of that text, at its positions)
    assert "xxxxxxxxxxoptimizer" in client.buffers[uri]
    fresh = analyze(client.buffers[uri])
    assert [(d.code, d.range.start.line, d.range.start.character) for d in last] == [
        (f.code, *fresh.source.position(f.start)) for f in fresh.findings]


def record_publishes(client) -> list[types.PublishDiagnosticsParams]:
    """Every publishDiagnostics from now on (wait_for_notification can miss bursts)."""
    seen: list[types.PublishDiagnosticsParams] = []
    features = client.protocol.fm.features
    original = features[types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS]

    def recording(params):
        seen.append(params)
        return original(params)

    features[types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS] = recording
    return seen


async def test_incremental_edits_match_a_fresh_analysis(client):
    """Many small edits (parsed by parso's diff parser) end with the diagnostics of a fresh open."""
    uri = open_doc(client, "tape.py")
    await diagnostics_for(client, uri, version=1)
    version = 1
    for line, col, text in [(12, 38, "  "), (20, 0, "\n"), (24, 4, "# "), (3, 0, "import numpy as np\n"),
                            (30, 0, "    pass\n"), (13, 0, "\n\ndef helper(a):\n    return a + 1\n")]:
        version += 1
        pos = types.Position(line=line, character=col)
        change_range(client, uri, types.Range(start=pos, end=pos), text, version)
        diags = await diagnostics_for(client, uri, version=version)
    fresh = analyze(client.buffers[uri])
    assert [(d.code, d.range.start.line, d.range.start.character) for d in diags] == [
        (f.code, *fresh.source.position(f.start)) for f in fresh.findings]


@pytest.mark.parametrize("client", [{"options": {"select": ["hvd010", "R7"]}}], indirect=True)
async def test_select_option(client):
    uri = open_doc(client, "restricted.py")
    diags = await diagnostics_for(client, uri)
    assert "HVD-R7" in {d.code for d in diags}
    assert [d.code for d in diags] == [e[0] for e in expected(client.buffers[uri]) if e[0] in ("HVD-R7", "HVD010")]


@pytest.mark.parametrize("client", [{"options": {"docsBaseUrl": "https://example.org/codes/"}}], indirect=True)
async def test_docs_base_url_option(client):
    uri = open_doc(client, "tape.py")
    diags = await diagnostics_for(client, uri)
    assert by_code(diags, "HVD020").code_description.href == "https://example.org/codes/HVD020"


# -- pull ----------------------------------------------------------------------------------
@pytest.mark.parametrize("client", [{"pull": True}], indirect=True)
async def test_pull_diagnostics_and_unchanged_result_id(client):
    assert client.init_result.capabilities.diagnostic_provider is not None
    uri = open_doc(client, "tape.py")
    doc = types.TextDocumentIdentifier(uri=uri)
    report = await client.text_document_diagnostic_async(types.DocumentDiagnosticParams(text_document=doc))
    assert report.kind == "full" and report.result_id
    assert "HVD100" in [d.code for d in report.items]
    again = await client.text_document_diagnostic_async(
        types.DocumentDiagnosticParams(text_document=doc, previous_result_id=report.result_id))
    assert again.kind == "unchanged" and again.result_id == report.result_id

    text = client.buffers[uri].replace("print(", "log(")
    replace_all(client, uri, text, version=2)
    changed = await client.text_document_diagnostic_async(
        types.DocumentDiagnosticParams(text_document=doc, previous_result_id=report.result_id))
    assert changed.kind == "full" and changed.result_id != report.result_id
    assert "HVD030" not in [d.code for d in changed.items]
    assert client.diagnostics == {}   # a pulling client is not pushed to (no duplicates)


async def test_reopen_with_the_same_version_is_analysed_again(client):
    uri = open_doc(client, "tape.py")
    assert "HVD030" in [d.code for d in await diagnostics_for(client, uri, version=1)]
    text = client.buffers[uri].replace('        print("step", step, "loss", float(loss))\n', "        pass\n")
    open_doc(client, "tape.py", text, version=1)      # didOpen again, no didClose, same version
    assert "HVD030" not in [d.code for d in await diagnostics_for(client, uri, version=1)]
