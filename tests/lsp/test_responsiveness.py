"""Never stale, never blocked: the server over real stdio while analyses are slow.

A keystroke on a large file arrives while the previous version is still being analysed.
The server must then publish diagnostics only for the version the editor has (never for
one it already replaced), must not analyse every version of a burst of keystrokes,
must answer ``shutdown``/``exit`` at once (not after the analysis nobody will read), and
must refuse, with one information diagnostic, a buffer over its size limit instead of
keeping the analysis thread busy for minutes. Ordering and counts are asserted, never
times: the server logs one ``analysed <uri> version <v>`` line per analysis it runs.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path

import pytest
import pytest_lsp
from lsp_helpers import DATA, diagnostics_for, open_doc, replace_all
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from horovodize.engine import analyze

sys.path.insert(0, str(Path(__file__).parents[2] / "bench"))
from programs import program  # noqa: E402  (the benchmark's generated training programs)

LOG = Path(tempfile.mkdtemp(prefix="horovodize-responsiveness-")) / "server.log"
SERVE = [sys.executable, "-m", "horovodize", "serve", "--log-file", str(LOG)]


def analysed(uri: str) -> list[str]:
    """The versions of `uri` the server analysed (its log; one line per analysis)."""
    if not LOG.exists():
        return []
    return [line.rsplit(" version ", 1)[1].split()[0] for line in LOG.read_text().splitlines()
            if f" analysed {uri} version " in line and " not analysed " not in line]


def capabilities(pull: bool = False) -> types.ClientCapabilities:
    return types.ClientCapabilities(text_document=types.TextDocumentClientCapabilities(
        synchronization=types.TextDocumentSyncClientCapabilities(),
        publish_diagnostics=types.PublishDiagnosticsClientCapabilities(version_support=True),
        diagnostic=types.DiagnosticClientCapabilities() if pull else None))


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVE))
async def client(lsp_client: LanguageClient, request):
    lsp_client.buffers = {}
    lsp_client.encoding = "utf-16"
    await lsp_client.initialize_session(types.InitializeParams(
        capabilities=capabilities(), initialization_options=getattr(request, "param", None)))
    yield
    await lsp_client.shutdown_session()


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVE))
async def pull_client(lsp_client: LanguageClient):
    await lsp_client.initialize_session(types.InitializeParams(capabilities=capabilities(pull=True)))
    yield
    await lsp_client.shutdown_session()


def keystroke(client: LanguageClient, uri: str, version: int, line: int, character: int) -> None:
    pos = types.Position(line=line, character=character)
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
        content_changes=[types.TextDocumentContentChangePartial(range=types.Range(start=pos, end=pos), text="x")]))


async def test_a_burst_of_keystrokes_publishes_only_the_last_version_and_is_not_analysed_per_keystroke(client):
    text = program(4000)
    uri = "file:///tmp/horovodize-tests/burst.py"
    client.buffers[uri] = text
    published: list[int | None] = []
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text)))
    lines = text.split("\n")
    row = next(i for i, line in enumerate(lines) if line.startswith("    return "))
    col = len("    return ")
    last = 31
    for version in range(2, last + 1):     # typed while version 1 is being analysed
        keystroke(client, uri, version, row, col)
        lines[row] = lines[row][:col] + "x" + lines[row][col:]
    final = "\n".join(lines)

    async def until_last():
        while True:
            params = await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
            if params.uri == uri:
                published.append(params.version)
                if params.version == last:
                    return params.diagnostics

    diagnostics = await asyncio.wait_for(until_last(), 300)
    # nothing for a version the editor had already replaced (version 1 only if it was
    # done before the first keystroke arrived)
    assert set(published) <= {1, last}, published
    versions = analysed(uri)
    assert versions[-1] == str(last)
    assert len(versions) <= 3, f"{len(versions)} analyses for {last} versions: {versions}"
    fresh = analyze(final)
    assert [(d.code, d.range.start.line, d.range.start.character) for d in diagnostics] == \
        [(f.code, *fresh.source.position(f.start)) for f in fresh.findings]


async def test_a_keystroke_stops_the_analysis_of_the_version_it_replaces(client):
    text = program(30000)          # seconds of parsing and analysis
    uri = "file:///tmp/horovodize-tests/superseded.py"
    published = []
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text)))
    async def started():           # version 1 is being parsed (seconds) or analysed
        while f"analysing {uri} version 1" not in (LOG.read_text() if LOG.exists() else ""):
            await asyncio.sleep(0.05)

    await asyncio.wait_for(started(), 120)
    row = next(i for i, line in enumerate(text.split("\n")) if line.startswith("    return "))
    keystroke(client, uri, 2, row, len("    return "))

    async def until(version):
        while True:
            params = await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
            if params.uri == uri:
                published.append(params.version)
                if params.version == version:
                    return

    await asyncio.wait_for(until(2), 300)
    assert published == [2]
    assert analysed(uri) == ["2"]                 # version 1 never ran to the end ...
    assert f"cancelled {uri} version 1 " in LOG.read_text()   # ... it stopped between two passes


async def test_an_opened_file_is_published_first_and_its_memo_filled_after(client):
    """Opening analyses the whole-parsed tree without the memo (its diagnostics sooner); the
    memo is filled once they are sent, so the first keystroke re-indexes one statement."""
    text = program(4000)
    uri = "file:///tmp/horovodize-tests/primed.py"
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text)))
    await diagnostics_for(client, uri, 1, timeout=120)

    async def filled():
        while f"memo of {uri} version 1 filled" not in LOG.read_text():
            await asyncio.sleep(0.05)

    await asyncio.wait_for(filled(), 120)
    fresh = analyze(text)                 # (the entry's analysis is now the memo's: the same findings)
    line, character = fresh.source.position(fresh.findings[0].start)
    hover = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line=line, character=character)))
    assert hover is not None and fresh.findings[0].code in str(hover.contents)
    lines = text.split("\n")
    row = next(i for i, line in enumerate(lines) if line.startswith("    return "))
    keystroke(client, uri, 2, row, len("    return "))
    diagnostics = await diagnostics_for(client, uri, 2, timeout=120)
    log = [line for line in LOG.read_text().splitlines() if f" analysed {uri} version " in line]
    assert "parsed whole, memo later" in log[0]
    assert "warm-up failed" not in LOG.read_text()      # (`HorovodizeServer.warm_up`, at start)
    assert log[1].endswith("1 statements indexed again)"), log[1]
    lines[row] = lines[row][:len("    return ")] + "x" + lines[row][len("    return "):]
    fresh = analyze("\n".join(lines))
    assert [(d.code, d.range.start.line, d.range.start.character) for d in diagnostics] == \
        [(f.code, *fresh.source.position(f.start)) for f in fresh.findings]


async def test_a_pulled_file_gets_its_memo_filled_after_the_answer(pull_client):
    uri = "file:///tmp/horovodize-tests/pulled.py"
    text = program(2000)
    pull_client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text)))
    report = await pull_client.text_document_diagnostic_async(types.DocumentDiagnosticParams(
        text_document=types.TextDocumentIdentifier(uri=uri)))
    assert [d.code for d in report.items] == [f.code for f in analyze(text).findings]

    async def filled():
        while f"memo of {uri} version 1 filled" not in LOG.read_text():
            await asyncio.sleep(0.05)

    await asyncio.wait_for(filled(), 120)


async def test_shutdown_and_exit_do_not_wait_for_a_running_analysis():
    client = LanguageClient()
    await client.start_io(*SERVE)
    uri = "file:///tmp/horovodize-tests/huge.py"
    published = []

    @client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def on_publish(params):
        published.append(params.uri)

    await client.initialize_session(types.InitializeParams(capabilities=capabilities()))
    # 60k lines: tens of seconds of parsing and analysis, far longer than this test takes
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id="python", version=1, text=program(60000))))
    await asyncio.sleep(0.5)                 # the analysis has started
    await asyncio.wait_for(client.shutdown_async(None), 120)
    client.exit(None)
    code = await asyncio.wait_for(client._server.wait(), 120)
    assert code == 0
    assert published == []                   # answered before the analysis could finish ...
    assert analysed(uri) == []               # ... and the process did not wait for it either
    await client.stop()


@pytest.mark.parametrize("client", [{"maxFileLines": 100}], indirect=True)
async def test_a_buffer_over_the_size_limit_gets_one_information_diagnostic(client):
    uri = open_doc(client, "big.py", program(300))
    diags = await diagnostics_for(client, uri, 1, timeout=60)
    assert len(diags) == 1
    assert diags[0].severity == types.DiagnosticSeverity.Information
    assert "maxFileLines" in diags[0].message and "100" in diags[0].message
    assert analysed(uri) == []
    small = (DATA / "tape.py").read_text(encoding="utf-8")
    assert small.count("\n") < 100
    replace_all(client, uri, small, 2)        # back under the limit: analysed as usual
    diags = await diagnostics_for(client, uri, 2, timeout=60)
    assert [d.code for d in diags] == [f.code for f in analyze(small).findings]
    assert diags and all("maxFileLines" not in d.message for d in diags)


@pytest.mark.parametrize("client", [{"maxFileLines": -3}], indirect=True)
async def test_an_invalid_size_limit_is_reported_and_the_default_used(client):
    uri = open_doc(client, "limits.py", program(300))
    diags = await diagnostics_for(client, uri, 1, timeout=60)
    assert diags and all("maxFileLines" not in d.message for d in diags)
    assert any("maxFileLines" in m.message for m in client.messages)
