"""Findings and edits <-> lsprotocol: Diagnostic (with its fixes in ``data``), TextEdit,
WorkspaceEdit, CodeAction, Hover.

Offsets are the core's (code points into the analysed text); every range is made from the
`Text` snapshot that was analysed, in the negotiated position encoding. A rule site's
fixes are computed once, with its diagnostic, and travel in ``Diagnostic.data`` as
``{"code", "version", "fixes": [{"title", "edits": [TextEdit JSON]}]}`` (ruff's
``AssociatedDiagnosticData``); the code-action handler only reads them back.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from lsprotocol import types

from .. import codes
from ..analysis.loop import LOOP_CODES
from ..engine import Analysis
from ..parse.source import Edit
from ..rules.base import Finding, Fix
from .options import Options
from .text import Text

SOURCE = "horovodize"
QUICK_FIX = types.CodeActionKind.QuickFix.value
SOURCE_FIX_ALL = "source.fixAll.horovodize"
CONVERT_FILE = "horovodize.convertFile"
FILE_INFO = "horovodize/fileInfo"
CONVERT_PROJECT = "horovodize.convertProject"
PROJECT_TITLE = "Make project Horovod-distributed"      # (a file of a program of several modules)
WHOLE_FILE_CODES = frozenset(LOOP_CODES.values())

SEVERITY = {
    "error": types.DiagnosticSeverity.Error,
    "warning": types.DiagnosticSeverity.Warning,
    "information": types.DiagnosticSeverity.Information,
    "hint": types.DiagnosticSeverity.Hint,
}


def doc_href(code: str, options: Options) -> str:
    if options.docs_base_url:
        return options.docs_base_url + code
    return _doc_uri(code)


@lru_cache(maxsize=None)
def _doc_uri(code: str) -> str:
    """The file URI of a code's page (resolved once: a path lookup per diagnostic was half
    the time of turning an edit's findings into diagnostics)."""
    return Path(str(codes.doc_path(code))).resolve().as_uri()


# -- edits -----------------------------------------------------------------------------
def text_edits(edits: list[Edit], text: Text, encoding: str) -> list[types.TextEdit]:
    return [types.TextEdit(range=text.range(e.start, e.end, encoding), new_text=e.new_text) for e in edits]


def edits_to_json(edits: list[types.TextEdit]) -> list[dict]:
    return [{"range": _range_json(e.range), "newText": e.new_text} for e in edits]


def edits_from_json(raw) -> list[types.TextEdit] | None:
    """TextEdits back from ``data`` as the client returns it; None when malformed."""
    try:
        return [types.TextEdit(range=_range_from(e["range"]), new_text=str(e["newText"])) for e in raw]
    except (KeyError, TypeError, ValueError):
        return None


def _range_json(r: types.Range) -> dict:
    return {"start": {"line": r.start.line, "character": r.start.character},
            "end": {"line": r.end.line, "character": r.end.character}}


def _range_from(raw: dict) -> types.Range:
    def pos(p):
        return types.Position(line=int(p["line"]), character=int(p["character"]))

    return types.Range(start=pos(raw["start"]), end=pos(raw["end"]))


def workspace_edit(uri: str, version: int | None, edits: list[types.TextEdit],
                   document_changes: bool) -> types.WorkspaceEdit:
    """Versioned ``documentChanges`` when the client supports them (the client then refuses
    an edit made for another version), else ``changes``."""
    if document_changes:
        doc = types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=version)
        return types.WorkspaceEdit(document_changes=[types.TextDocumentEdit(text_document=doc, edits=edits)])
    return types.WorkspaceEdit(changes={uri: edits})


def project_edit(changes: list[tuple[str, int | None, list[types.TextEdit]]],
                 document_changes: bool) -> types.WorkspaceEdit:
    """One edit of several files: (uri, version of the open buffer or None, edits) each."""
    if document_changes:
        return types.WorkspaceEdit(document_changes=[
            types.TextDocumentEdit(text_document=types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=version),
                                   edits=edits) for uri, version, edits in changes])
    return types.WorkspaceEdit(changes={uri: edits for uri, _version, edits in changes})


# -- diagnostics -----------------------------------------------------------------------
def fix_json(analysis: Analysis, fix: Fix, text: Text, encoding: str) -> dict:
    return {"title": fix.title, "edits": edits_to_json(text_edits(analysis.fix_edits(fix), text, encoding))}


def diagnostic(f: Finding, analysis: Analysis, text: Text, encoding: str, uri: str,
               version: int | None, options: Options) -> types.Diagnostic:
    related = [(uri, text.range(r.start, r.end, encoding), r.message) for r in f.related]
    fixes = [fix_json(analysis, fix, text, encoding) for fix in [f.fix, *f.alternatives] if fix is not None]
    return located_diagnostic(f, text.range(f.start, f.end, encoding), related, fixes, version, options)


def located_diagnostic(f: Finding, rng: types.Range, related: list[tuple[str, types.Range, str]],
                       fixes: list[dict], version: int | None, options: Options) -> types.Diagnostic:
    """The diagnostic of `f` at `rng`, its related places ((uri, range, message): a program's
    may be in other files) and its fixes (`fix_json`'s) given."""
    data = None
    if fixes or f.fix is not None or f.code in WHOLE_FILE_CODES:
        data = {"code": f.code, "version": version, "fixes": fixes}
    return types.Diagnostic(
        range=rng,
        message=f.message,
        severity=SEVERITY.get(f.severity, types.DiagnosticSeverity.Warning),
        code=f.code,
        code_description=types.CodeDescription(href=doc_href(f.code, options)),
        source=SOURCE,
        related_information=[types.DiagnosticRelatedInformation(location=types.Location(uri=u, range=r), message=m)
                             for u, r, m in related] or None,
        data=data,
    )


def diagnostics(analysis: Analysis, text: Text, encoding: str, uri: str, version: int | None,
                options: Options) -> list[types.Diagnostic]:
    out = [diagnostic(f, analysis, text, encoding, uri, version, options)
           for f in analysis.findings if options.select is None or f.code in options.select]
    if analysis.error is not None:          # not analysed (too deeply nested): say so where
        out.append(_not_analysed(analysis, text, encoding))
    return out


def _not_analysed(analysis: Analysis, text: Text, encoding: str) -> types.Diagnostic:
    e = analysis.error
    start = analysis.source.offset((e.line, e.column - 1))
    return types.Diagnostic(range=text.range(start, start, encoding), message=f"{e.kind}: {e.message}",
                            severity=types.DiagnosticSeverity.Warning, source=SOURCE)


# -- code actions ----------------------------------------------------------------------
def code_action(title: str, kind: str, *, diagnostics: list[types.Diagnostic] | None = None,
                edit: types.WorkspaceEdit | None = None, data=None, preferred: bool | None = None) -> types.CodeAction:
    return types.CodeAction(title=title, kind=kind, diagnostics=diagnostics or None, edit=edit,
                            data=data, is_preferred=preferred)


# -- hover -----------------------------------------------------------------------------
def hover(found: list[Finding], text: Text, encoding: str, markdown: bool) -> types.Hover:
    parts = []
    for f in found:
        stops = f"\n\nBlocks: {', '.join(f.blocks)}" if f.blocks else ""
        parts.append(f"**{f.code}**: {f.message}{stops}\n\n{codes.doc(f.code).strip()}")
    value = "\n\n---\n\n".join(parts)
    kind = types.MarkupKind.Markdown if markdown else types.MarkupKind.PlainText
    first = found[0]
    return types.Hover(contents=types.MarkupContent(kind=kind, value=value),
                       range=text.range(first.start, first.end, encoding))
