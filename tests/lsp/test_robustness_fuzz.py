"""Requests on mutated buffers: every request the editor can send is answered, none with an
internal error (-32603), and every edit the server offers applies to the editor's buffer.
The real server over stdio; the mutations are seeded, so a failure replays."""

from __future__ import annotations

import random

import pytest
from lsp_helpers import DATA, apply_text_edits, open_doc, workspace_text_edits
from lsprotocol import types

TAPE = (DATA / "tape.py").read_text(encoding="utf-8")
KERAS = (DATA / "keras_fit.py").read_text(encoding="utf-8")
PIECES = ["\f", "\v", "\x85", "\u2028", "\r", "\n", "\r\n", "😀", "é", "(", ")", "[", "]", ":", "'", '"', '"""',
          "\\", "#", "@", "=", ",", "    ", "\t", "if ", "with ", "lambda: ", "tf.", "hvd.", "print(", "f(" * 60]


def mutate(rng: random.Random, text: str) -> str:
    for _ in range(rng.randint(1, 6)):
        a = rng.randrange(len(text) + 1)
        b = min(len(text), a + rng.choice([0, 0, 1, 3, 20]))
        text = text[:a] + "".join(rng.choice(PIECES) for _ in range(rng.randint(0, 3))) + text[b:]
    return text


def random_position(rng: random.Random, text: str) -> types.Position:
    lines = text.count("\n") + 2
    return types.Position(line=rng.randrange(lines + 2), character=rng.choice([0, 1, 4, 17, 60, 500]))


@pytest.mark.timeout(240)
@pytest.mark.parametrize("client", [{"pull": True, "resolve": True, "encodings": ["utf-16"]}], indirect=True)
async def test_every_request_is_answered_on_mutated_buffers(client):
    rng = random.Random(14)
    applied = hovered = 0
    for i in range(80):
        text = mutate(rng, rng.choice([TAPE, KERAS]))
        uri = open_doc(client, f"fuzz_{i}.py", text)
        doc = types.TextDocumentIdentifier(uri=uri)
        report = await client.text_document_diagnostic_async(types.DocumentDiagnosticParams(text_document=doc))
        diags = list(report.items)
        for _ in range(3):
            hovered += await client.text_document_hover_async(
                types.HoverParams(text_document=doc, position=random_position(rng, text))) is not None
        start, end = sorted([random_position(rng, text), random_position(rng, text)],
                            key=lambda p: (p.line, p.character))
        actions = await client.text_document_code_action_async(types.CodeActionParams(
            text_document=doc, range=types.Range(start=start, end=end),
            context=types.CodeActionContext(diagnostics=diags))) or []
        for action in actions:
            if action.edit is None:
                action = await client.code_action_resolve_async(action)
            if action.edit is not None:            # every edit offered applies to the editor's buffer
                apply_text_edits(text, workspace_text_edits(action.edit)[uri], client.encoding)
                applied += 1
        await client.protocol.send_request_async("horovodize/fileInfo", {"uri": uri})
        if i % 8 == 0:
            await client.workspace_execute_command_async(
                types.ExecuteCommandParams(command="horovodize.convertFile", arguments=[uri]))
        client.text_document_did_close(types.DidCloseTextDocumentParams(text_document=doc))
    assert applied > 20 and hovered > 5, (applied, hovered)       # the fuzz reached the fixes and hovers
