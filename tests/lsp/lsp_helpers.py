"""Editor-side helpers for the end-to-end tests: open and change buffers, wait for
diagnostics, and an independent applier of LSP text edits (the oracle for the server's
ranges). Imported as ``lsp_helpers`` (not ``conftest``, which other test directories
also have)."""

from __future__ import annotations

import asyncio
import itertools
import re
import subprocess
import sys
from pathlib import Path

from lsprotocol import types
from pytest_lsp import LanguageClient

DATA = Path(__file__).parent / "data"
HOROVODIZE = Path(sys.executable).parent / "horovodize"


# -- editor side -------------------------------------------------------------------------
def open_doc(client: LanguageClient, name: str, text: str | None = None, version: int = 1) -> str:
    """didOpen a buffer (a file of tests/lsp/data by default); returns its uri."""
    path = DATA / name
    if text is None:
        text = path.read_text(encoding="utf-8")
    uri = path.as_uri() if path.exists() else f"file:///tmp/horovodize-tests/{name}"
    client.buffers[uri] = text
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id="python", version=version, text=text)))
    return uri


def replace_all(client: LanguageClient, uri: str, text: str, version: int) -> None:
    client.buffers[uri] = text
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
        content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)]))


class one_write:
    """Messages sent inside the block reach the server in one write, as a burst that
    arrives together (sent one by one, a loaded machine can deliver them spread out)."""

    def __init__(self, client: LanguageClient):
        self.protocol, self.chunks = client.protocol, []

    def __enter__(self):
        self.writer, self.protocol.writer = self.protocol.writer, self
        return self

    def write(self, data: bytes) -> None:
        self.chunks.append(data)

    def __exit__(self, *exc):
        self.protocol.writer = self.writer
        self.writer.write(b"".join(self.chunks))


def change_range(client: LanguageClient, uri: str, rng: types.Range, text: str, version: int) -> None:
    client.buffers[uri] = apply_text_edits(client.buffers[uri], [types.TextEdit(range=rng, new_text=text)],
                                           client.encoding)
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
        content_changes=[types.TextDocumentContentChangePartial(range=rng, text=text)]))


async def diagnostics_for(client: LanguageClient, uri: str, version: int | None = None,
                          timeout: float = 30) -> list[types.Diagnostic]:
    """Wait for a publishDiagnostics for `uri` (at `version` when given)."""
    async def wait():
        while True:
            params = await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
            if params.uri == uri and (version is None or params.version == version):
                return list(params.diagnostics)

    return await asyncio.wait_for(wait(), timeout)


def by_code(diags: list[types.Diagnostic], code: str) -> types.Diagnostic:
    found = [d for d in diags if d.code == code]
    assert found, f"no {code} in {[d.code for d in diags]}"
    return found[0]


# -- an independent edit applier (the oracle for the server's ranges) --------------------
def _units(ch: str, encoding: str) -> int:
    if encoding == "utf-8":
        return len(ch.encode("utf-8"))
    if encoding == "utf-16":
        return 2 if ord(ch) > 0xFFFF else 1
    return 1


def to_offset(text: str, pos: types.Position, encoding: str) -> int:
    lines = re.split(r"(?<=\r\n)|(?<=\r)(?!\n)|(?<=\n)", text)
    assert pos.line <= len(lines), (pos, len(lines))
    offset = sum(len(line) for line in lines[: pos.line])
    line = lines[pos.line] if pos.line < len(lines) else ""
    seen = 0
    for ch in line:
        if seen >= pos.character or ch in "\r\n":
            break
        seen += _units(ch, encoding)
        offset += 1
    assert seen == pos.character, f"position {pos} is not on a character boundary"
    return offset


def apply_text_edits(text: str, edits: list[types.TextEdit], encoding: str) -> str:
    """LSP semantics: ranges refer to the original text; insertions at one point keep their order."""
    spans = sorted((to_offset(text, e.range.start, encoding), to_offset(text, e.range.end, encoding), i, e.new_text)
                   for i, e in enumerate(edits))
    for before, after in itertools.pairwise(spans):
        assert before[1] <= after[0], "overlapping edits"
    out = text
    for start, end, _, new in reversed(spans):
        out = out[:start] + new + out[end:]
    return out


def workspace_text_edits(edit: types.WorkspaceEdit) -> dict[str, list[types.TextEdit]]:
    out: dict[str, list[types.TextEdit]] = {}
    for change in edit.document_changes or []:
        out.setdefault(change.text_document.uri, []).extend(change.edits)
    for uri, edits in (edit.changes or {}).items():
        out.setdefault(uri, []).extend(edits)
    return out


def cli_convert(path: Path) -> str:
    """``horovodize convert PATH`` through the installed console script."""
    proc = subprocess.run([str(HOROVODIZE), "convert", str(path)], check=False, capture_output=True, timeout=120)
    assert proc.returncode == 0, proc.stderr.decode()
    return proc.stdout.decode("utf-8")
