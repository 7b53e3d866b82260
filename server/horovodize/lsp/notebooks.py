"""Notebook documents (LSP 3.17 ``notebookDocument/*``): a notebook's Python code cells,
in order, analysed as ONE program, with diagnostics, hovers and edits per cell.

pygls keeps the notebook and its cells' texts in its workspace (structure changes, cell
edits); after each notebook message `View.of` builds the program from them with
`app.notebook.from_cells` (magics masked, a dedented cell shifted back) and the server
analyses it as the document ``notebook uri`` (`HorovodizeServer.open(..., notebook=view)`):
the same worker, debouncing and cancellation as a text document. A `View` is one version
of the notebook: it maps program offsets to (cell uri, UTF-16 position in that cell) and
back, and the engine's edits to per-cell `TextEdit`s (never straddling cells, never in a
magic: such a fix is left out). Diagnostics are pushed per cell URI, also to a client that
pulls: vscode-languageclient 9 pulls only for documents it opened with textDocument/didOpen
and shows as tabs, never for a notebook's cells (a pull for a cell answers nothing).

Requires: app.notebook, lsp.convert, lsp.text, lsprotocol. Used by lsp.server (the sync
options, `View` duck-typed on documents and entries) and lsp.handlers (the hooks).
"""

from __future__ import annotations

import bisect
import logging
from dataclasses import dataclass
from urllib.parse import unquote

from lsprotocol import types

from ..app import notebook
from ..errors import UserError
from ..parse.source import Edit, ParseError, line_table
from . import convert
from .text import Text

log = logging.getLogger(__name__)

NOTEBOOK_TYPE = "jupyter-notebook"
SYNC = types.NotebookDocumentSyncOptions(
    notebook_selector=[types.NotebookDocumentFilterWithCells(
        notebook=NOTEBOOK_TYPE, cells=[types.NotebookCellLanguage(language="python")])],
    save=False)


@dataclass
class CellDoc:
    uri: str
    version: int | None
    text: Text


class View:
    """One version of a notebook: its Python code cells and their program."""

    def __init__(self, uri: str, version: int | None, cells: list[CellDoc]):
        self.uri, self.version, self.cells = uri, version, cells
        self.nb = notebook.from_cells([c.text.text for c in cells], uri)
        self.index = {c.uri: i for i, c in enumerate(cells)}
        self._text_lines: dict[int, list[int]] = {}     # line tables of dedented cells' texts

    @classmethod
    def of(cls, workspace, uri: str) -> View | None:
        """The notebook `uri` as pygls's workspace holds it now (None when not open)."""
        doc = workspace.get_notebook_document(notebook_uri=uri)
        if doc is None:
            return None
        cells = []
        for cell in doc.cells:
            if cell.kind != types.NotebookCellKind.Code:
                continue
            text = workspace.text_documents.get(workspace_key(cell.document))
            if text is None or (text.language_id or "python") != "python":
                continue
            cells.append(CellDoc(cell.document, text.version, Text(text.source)))
        return cls(uri, doc.version, cells)

    @property
    def program(self) -> str:
        return self.nb.program

    def cell_uris(self) -> list[str]:
        return [c.uri for c in self.cells]

    # -- positions -------------------------------------------------------------------
    def _lines(self, i: int) -> list[int]:
        if i not in self._text_lines:
            self._text_lines[i] = line_table(self.cells[i].text.text)
        return self._text_lines[i]

    def cell_offset(self, offset: int, cell: int | None = None) -> tuple[int, int]:
        """Program offset -> (cell, offset in the cell's text); clamped to `cell` if given."""
        c = self.nb.cell_at(offset) if cell is None else self.nb.cells[cell]
        inner = min(max(0, offset - c.start), len(c.code))
        if not c.shift:
            return c.index, inner
        line = bisect.bisect_right(c.lines, inner) - 1
        return c.index, self._lines(c.index)[line] + inner - c.lines[line] + c.shift[line]

    def program_offset(self, i: int, offset: int) -> int:
        """Offset in cell `i`'s text -> program offset."""
        c = self.nb.cells[i]
        if not c.shift:
            return c.start + min(offset, len(c.code))
        lines = self._lines(i)
        line = bisect.bisect_right(lines, offset) - 1
        column = max(0, offset - lines[line] - c.shift[line])
        return c.start + min(c.lines[line] + column, len(c.code))

    def cell_range(self, start: int, end: int, encoding: str) -> tuple[int, types.Range]:
        """The cell a program range starts in and the range in it (cut at the cell's end)."""
        i, a = self.cell_offset(start)
        _, b = self.cell_offset(max(start, end), i)
        return i, self.cells[i].text.range(a, max(a, b), encoding)

    # -- edits -----------------------------------------------------------------------
    def cell_edits(self, edits: list[Edit], encoding: str, setup=()) -> dict[str, list[types.TextEdit]]:
        """The program's edits as TextEdits per cell uri; UserError when one would
        straddle two cells or change a magic."""
        out = {}
        try:       # every cell the edits change must still run on its own (as the CLI refuses)
            self.nb.check_cells(self.nb.converted_cells(edits, setup))
        except ParseError as e:
            raise UserError(f"{self.uri}: the edit would leave {e.message}") from None
        for i, mine in sorted(self.nb.cell_edits(self.nb.placed(edits, setup)).items()):
            out[self.cells[i].uri] = convert.text_edits(mine, self.cells[i].text, encoding)
        return out

    def workspace_edit(self, per_cell: dict[str, list[types.TextEdit]], document_changes: bool,
                       versions: dict | None = None) -> types.WorkspaceEdit:
        """One TextDocumentEdit per cell (versioned by the cell's version), in cell order."""
        if not document_changes:
            return types.WorkspaceEdit(changes=per_cell)
        versions = versions or {c.uri: c.version for c in self.cells}
        return types.WorkspaceEdit(document_changes=[
            types.TextDocumentEdit(text_document=types.OptionalVersionedTextDocumentIdentifier(
                uri=uri, version=versions.get(uri)), edits=edits) for uri, edits in per_cell.items()])

    def conversion_edit(self, analysis, encoding: str, document_changes: bool) -> types.WorkspaceEdit:
        """The whole-notebook conversion ("Make Horovod-distributed"), each edit in its cell."""
        return self.workspace_edit(self.cell_edits(analysis.conversion_edits(), encoding, _setup(analysis)),
                                   document_changes)

    # -- diagnostics -----------------------------------------------------------------
    def diagnostics(self, analysis, encoding: str, options) -> dict[str, list[types.Diagnostic]]:
        """Worker thread: the analysis' findings as diagnostics per cell uri (every cell
        has a list, maybe empty); a fix that would straddle cells is left out."""
        out: dict[str, list[types.Diagnostic]] = {c.uri: [] for c in self.cells}
        if not self.cells:
            return out
        setup = _setup(analysis)
        for f in analysis.findings:
            if options.select is not None and f.code not in options.select:
                continue
            if self.nb.masked(f.start, f.end):
                continue                         # never reported in a magic
            i, rng = self.cell_range(f.start, f.end, encoding)
            related = []
            for r in f.related:
                j, where = self.cell_range(r.start, r.end, encoding)
                related.append(types.DiagnosticRelatedInformation(
                    location=types.Location(uri=self.cells[j].uri, range=where), message=r.message))
            data = None
            fixes = [fix for fix in [f.fix, *f.alternatives] if fix is not None]
            if fixes or f.code in convert.WHOLE_FILE_CODES:
                data = {"code": f.code, "version": self.version, "notebook": self.uri, "fixes": []}
                for fix in fixes:
                    try:
                        per_cell = self.cell_edits(analysis.fix_edits(fix), encoding, setup)
                    except UserError as e:
                        log.info("%s: fix %r left out: %s", self.uri, fix.title, e)
                        continue
                    data["fixes"].append({"title": fix.title, "cells": {
                        uri: convert.edits_to_json(edits) for uri, edits in per_cell.items()}})
            out[self.cells[i].uri].append(types.Diagnostic(
                range=rng, message=f.message,
                severity=convert.SEVERITY.get(f.severity, types.DiagnosticSeverity.Warning), code=f.code,
                code_description=types.CodeDescription(href=convert.doc_href(f.code, options)),
                source=convert.SOURCE, related_information=related or None, data=data))
        if analysis.error is not None:
            e = analysis.error
            i, rng = self.cell_range(*[analysis.source.offset((e.line, e.column - 1))] * 2, encoding)
            out[self.cells[i].uri].append(types.Diagnostic(range=rng, message=f"{e.kind}: {e.message}",
                                                           severity=types.DiagnosticSeverity.Warning,
                                                           source=convert.SOURCE))
        return out

    def located(self, line: int) -> str:
        """A program line as the user sees it: ``cell N line L`` (N counts code cells)."""
        cell, inner, _ = self.nb.locate_line(line)
        return f"cell {cell} line {inner}"


def _setup(analysis) -> list[Edit]:
    return list(analysis.setup.fix.edits) if analysis.setup is not None and analysis.setup.fix else []


def workspace_key(uri: str) -> str:
    return unquote(uri)          # (pygls's workspace keys its documents so)


# -- what the server and the handlers call ---------------------------------------------
def notebook_uri(ls, uri: str) -> str | None:
    """The notebook the cell `uri` belongs to, when the server analyses it (else None)."""
    doc = ls.workspace.get_notebook_document(cell_uri=uri)
    return doc.uri if doc is not None and doc.uri in ls.documents else None


def per_cell(entry, uri: str) -> list[types.Diagnostic]:
    """The diagnostics of cell `uri` in a notebook's analysed version."""
    if entry.cells is None:                       # not analysed (too large): on the first cell
        first = entry.notebook.cells[:1]
        return list(entry.diagnostics) if first and first[0].uri == uri else []
    return list(entry.cells.get(uri, []))


def publish_cells(ls, entry, previous) -> None:
    """Push a notebook's diagnostics to each of its cells, and clear the cells that had
    some in the previous publication and are gone."""
    view = entry.notebook
    for cell in view.cells:
        ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
            uri=cell.uri, version=cell.version, diagnostics=per_cell(entry, cell.uri)))
    if previous is not None and previous.notebook is not None:
        clear(ls, set(previous.notebook.cell_uris()) - set(view.cell_uris()))


def clear(ls, uris) -> None:
    for uri in sorted(uris):
        ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))


def sync(ls, uri: str) -> None:
    """After a notebook message: analyse its current cells as one program."""
    view = View.of(ls.workspace, uri)
    if view is None:
        log.warning("notebook not open: %s", uri)
        return
    ls.open(uri, view.program, view.version, notebook=view)


def fix_edit(ls, fix: dict, view) -> types.WorkspaceEdit | None:
    """A quick fix's edit from its diagnostic's ``data`` (per cell), versioned by the cells
    of the view the fix was made for."""
    cells = fix.get("cells")
    if not isinstance(cells, dict):
        return None
    per_cell = {}
    for uri, raw in cells.items():
        edits = convert.edits_from_json(raw)
        if edits is None or uri not in view.index:
            return None
        per_cell[uri] = edits
    return view.workspace_edit(per_cell, ls.document_changes)


def hover_offset(entry, uri: str, position: types.Position, encoding: str) -> int | None:
    """A position in cell `uri` as an offset in the notebook's program (None: not a cell of it)."""
    view = entry.notebook
    i = view.index.get(uri)
    if i is None:
        return None
    return view.program_offset(i, view.cells[i].text.offset(position, encoding))
