"""One small function per LSP method. Each gets the document's analysis from the server
(cached per version), then builds protocol objects with `convert`.

Quick fixes carry their edits, computed with the diagnostics (``Diagnostic.data``); the
whole-file conversion ("Make Horovod-distributed" and ``source.fixAll.horovodize``) is
filled in by ``codeAction/resolve`` only when picked, unless the client cannot resolve. In
a file of a program of several modules the diagnostics, hover and whole-file action are
the program's (`programs`, `project_edit`); files on disk are watched
(``workspace/didChangeWatchedFiles``, registered at ``initialized`` when the client can).
An exception in a handler is logged and answered with an error by pygls; the server
stays up.
"""

from __future__ import annotations

import asyncio
import logging
from urllib.parse import unquote, urlparse

from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams

from ..engine import WHOLE_FILE_TITLE
from ..errors import UserError
from ..parse.source import ParseError
from . import convert, doctor, notebooks, options, project_edit
from .convert import (
    CONVERT_FILE,
    CONVERT_PROJECT,
    FILE_INFO,
    QUICK_FIX,
    SOURCE,
    SOURCE_FIX_ALL,
    WHOLE_FILE_CODES,
)
from .server import SERVER as server
from .server import HorovodizeServer

log = logging.getLogger(__name__)


@server.feature(types.INITIALIZE)
def initialize(ls: HorovodizeServer, params: types.InitializeParams):
    ls.options, problems = options.load(params.initialization_options)
    for problem in problems:
        ls.show(f"horovodize: {problem}; using the default", types.MessageType.Warning)


@server.feature(types.INITIALIZED)
async def initialized(ls: HorovodizeServer, params):
    doctor.on_initialized(ls)             # the stack doctor, for the editor's interpreter
    await _watch_files(ls)


# Files whose change can change a program: its modules, and the markers of the project root.
WATCHED = ("**/*.py", "**/{pyproject.toml,setup.cfg}")


async def _watch_files(ls: HorovodizeServer) -> None:
    """Ask the client to tell the changes of the project's files on disk
    (``workspace/didChangeWatchedFiles``), if it can take the registration."""
    ws = ls.client_capabilities.workspace
    watched = ws.did_change_watched_files if ws is not None else None
    if watched is None or not watched.dynamic_registration:
        return
    options = types.DidChangeWatchedFilesRegistrationOptions(
        watchers=[types.FileSystemWatcher(glob_pattern=g) for g in WATCHED])
    try:
        await ls.request(types.CLIENT_REGISTER_CAPABILITY, types.RegistrationParams(registrations=[types.Registration(
            id="horovodize-watched-files", method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
            register_options=options)]))
    except (TimeoutError, JsonRpcException) as e:
        log.info("the client did not register the file watcher: %s", e)


@server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
def did_change_watched_files(ls: HorovodizeServer, params: types.DidChangeWatchedFilesParams):
    ls.programs.watched(params.changes)


@server.feature(types.SHUTDOWN)
def shutdown(ls: HorovodizeServer, params):
    ls.cancel_pending()                   # a command waiting for the editor does not hold shutdown
    ls.stop_worker()


# -- text synchronisation ---------------------------------------------------------------
@server.feature(types.TEXT_DOCUMENT_DID_OPEN)
def did_open(ls: HorovodizeServer, params: types.DidOpenTextDocumentParams):
    doc = params.text_document
    ls.open(doc.uri, doc.text, doc.version)


@server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
def did_change(ls: HorovodizeServer, params: types.DidChangeTextDocumentParams):
    ls.change(params.text_document.uri, params.text_document.version, params.content_changes)


@server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
def did_close(ls: HorovodizeServer, params: types.DidCloseTextDocumentParams):
    ls.close(params.text_document.uri)


# -- notebook synchronisation (the cells as one program: `notebooks`) -----------------------
@server.feature(types.NOTEBOOK_DOCUMENT_DID_OPEN)
def notebook_did_open(ls: HorovodizeServer, params: types.DidOpenNotebookDocumentParams):
    notebooks.sync(ls, params.notebook_document.uri)


@server.feature(types.NOTEBOOK_DOCUMENT_DID_CHANGE)
def notebook_did_change(ls: HorovodizeServer, params: types.DidChangeNotebookDocumentParams):
    notebooks.sync(ls, params.notebook_document.uri)


@server.feature(types.NOTEBOOK_DOCUMENT_DID_CLOSE)
def notebook_did_close(ls: HorovodizeServer, params: types.DidCloseNotebookDocumentParams):
    ls.close(params.notebook_document.uri)


# -- diagnostics (pull) -----------------------------------------------------------------
@server.feature(types.TEXT_DOCUMENT_DIAGNOSTIC,
                types.DiagnosticOptions(identifier=SOURCE, inter_file_dependencies=True, workspace_diagnostics=False))
async def diagnostic(ls: HorovodizeServer, params: types.DocumentDiagnosticParams):
    uri = params.text_document.uri
    if notebooks.notebook_uri(ls, uri) is not None:     # a notebook's cell: its diagnostics are pushed
        return types.RelatedFullDocumentDiagnosticReport(items=[])
    entry = await current_analysis(ls, uri)
    if entry is None:
        return types.RelatedFullDocumentDiagnosticReport(items=[])
    asyncio.get_running_loop().call_soon(ls.prime_later, entry)     # (after this answer is sent)
    rehearsal = ls.rehearsal.get(params.text_document.uri, [])
    items, result_id = ls.file_diagnostics(entry)               # (a file of a program: the program's)
    result_id += f"r{id(rehearsal)}" if rehearsal else ""       # (a rehearsal's are new)
    if params.previous_result_id == result_id:
        return types.RelatedUnchangedDocumentDiagnosticReport(result_id=result_id)
    return types.RelatedFullDocumentDiagnosticReport(items=items + rehearsal, result_id=result_id)


async def current_analysis(ls: HorovodizeServer, uri: str):
    """The analysis of the version that is current when it is ready (not a stale one)."""
    for _ in range(10):
        entry = await ls.analysis(uri)
        doc = ls.documents.get(uri)
        if entry is None or doc is None or doc.text is entry.text:
            return entry
    return entry


# -- code actions -----------------------------------------------------------------------
def _wants(only, kind: str) -> bool:
    return not only or any(kind == o or kind.startswith(o + ".") for o in only)


@server.feature(types.TEXT_DOCUMENT_CODE_ACTION,
                types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix, SOURCE_FIX_ALL],
                                        resolve_provider=True))
async def code_action(ls: HorovodizeServer, params: types.CodeActionParams):
    uri = params.text_document.uri
    target = notebooks.notebook_uri(ls, uri) or uri        # a notebook's cell: the notebook's analysis
    doc = ls.documents.get(target)
    if doc is None:
        return None
    only = params.context.only
    actions: list[types.CodeAction] = []
    whole_file_for: list[types.Diagnostic] = []
    program = ls.programs.results.get(target)      # a file of a program of several modules: its share
    if _wants(only, QUICK_FIX):
        for d in params.context.diagnostics:
            data = d.data if d.source == SOURCE and isinstance(d.data, dict) else None
            if data is None or data.get("version") != doc.version:
                continue                                  # not ours, or made for another version
            for i, fix in enumerate(data.get("fixes") or []):
                if doc.notebook is not None:
                    edit = notebooks.fix_edit(ls, fix, doc.notebook) if isinstance(fix, dict) else None
                    if edit is None:
                        continue
                    actions.append(convert.code_action(str(fix.get("title")), QUICK_FIX, diagnostics=[d],
                                                       edit=edit, preferred=i == 0))
                    continue
                edits = convert.edits_from_json(fix.get("edits")) if isinstance(fix, dict) else None
                if edits is None:
                    continue
                edit = convert.workspace_edit(uri, doc.version, edits, ls.document_changes)
                actions.append(convert.code_action(str(fix.get("title")), QUICK_FIX, diagnostics=[d],
                                                   edit=edit, preferred=i == 0))
            if data.get("code") in WHOLE_FILE_CODES or (program is not None and not data.get("fixes")):
                whole_file_for.append(d)       # (a program's fix that edits other files too: the program's conversion)
    if not (whole_file_for or _wants(only, SOURCE_FIX_ALL)):
        return actions
    if program is not None:            # the program's conversion, not this file's alone
        return actions + await project_edit.actions(ls, program, whole_file_for, _wants(only, SOURCE_FIX_ALL))
    entry = await ls.analysis(target)
    if entry is not None and entry.text is doc.text and entry.analysis.refused and whole_file_for:
        # All or nothing: the whole-file action shows, disabled, with the restriction that blocks it.
        where = entry.notebook.located if entry.notebook is not None else "line {}".format
        reasons = "; ".join(f"{c} ({where(line)}): {m}" for c, line, m in entry.analysis.refusal_reasons())
        actions.append(types.CodeAction(title=WHOLE_FILE_TITLE, kind=QUICK_FIX, diagnostics=whole_file_for,
                                        disabled=types.CodeActionDisabled(reason=f"a restriction blocks the training loop: {reasons}")))
        return actions
    if entry is None or entry.text is not doc.text or not entry.analysis.rule_sites:
        return actions
    if whole_file_for:
        actions.append(_whole_file(ls, entry, WHOLE_FILE_TITLE, QUICK_FIX, whole_file_for))
    if _wants(only, SOURCE_FIX_ALL):
        actions.append(_whole_file(ls, entry, f"horovodize: {WHOLE_FILE_TITLE}", SOURCE_FIX_ALL, None))
    return actions


def _whole_file(ls: HorovodizeServer, entry, title: str, kind: str, diagnostics):
    action = convert.code_action(title, kind, diagnostics=diagnostics,
                                 data={"uri": entry.uri, "version": entry.version, "action": "convert"})
    if not ls.resolve_edits:
        action.edit = _conversion_edit(ls, entry)
    return action


def _conversion_edit(ls: HorovodizeServer, entry) -> types.WorkspaceEdit | None:
    if entry.notebook is not None:        # each edit in its cell; none that leaves a cell broken
        try:
            return entry.notebook.conversion_edit(entry.analysis, ls.encoding, ls.document_changes)
        except UserError as e:
            ls.show(f"horovodize: not converted: {e}", types.MessageType.Warning)
            return None
    edits = convert.text_edits(entry.analysis.conversion_edits(), entry.text, ls.encoding)
    return convert.workspace_edit(entry.uri, entry.version, edits, ls.document_changes)


@server.feature(types.CODE_ACTION_RESOLVE)
async def code_action_resolve(ls: HorovodizeServer, action: types.CodeAction):
    data = action.data if isinstance(action.data, dict) else {}
    uri = data.get("uri")
    if data.get("action") == project_edit.ACTION and isinstance(uri, str) and action.edit is None:
        return await project_edit.resolve(ls, action, uri)
    if data.get("action") != "convert" or not isinstance(uri, str) or action.edit is not None:
        return action
    doc = ls.documents.get(uri)
    if doc is None or doc.version != data.get("version"):
        log.info("code action for a closed or changed document: %s", uri)
        return action
    entry = await ls.analysis(uri)
    if entry is not None and entry.text is doc.text:
        action.edit = _conversion_edit(ls, entry)
    return action


# -- hover ------------------------------------------------------------------------------
@server.feature(types.TEXT_DOCUMENT_HOVER)
async def hover(ls: HorovodizeServer, params: types.HoverParams):
    uri = params.text_document.uri
    entry = await ls.analysis(notebooks.notebook_uri(ls, uri) or uri)
    if entry is None:
        return None
    if entry.notebook is not None:
        offset = notebooks.hover_offset(entry, uri, params.position, ls.encoding)
        if offset is None:
            return None
    else:
        offset = entry.text.offset(params.position, ls.encoding)
    select = ls.options.select
    found = [f for f in ls.programs.findings(entry)          # (a file of a program: the program's)
             if (select is None or f.code in select)
             and (f.start <= offset < f.end or f.start == offset == f.end)]
    if not found:
        return None
    answer = convert.hover(found, entry.text, ls.encoding, ls.markdown)
    if entry.notebook is not None:        # the range in the cell the finding starts in
        answer.range = entry.notebook.cell_range(found[0].start, found[0].end, ls.encoding)[1]
    return answer


# -- commands and custom requests -------------------------------------------------------
def _uri_arg(value) -> str | None:
    """``"file:///a.py"``, ``{"uri": ...}`` or an object with ``.uri`` (pygls passes the
    params of a custom request as a namedtuple); None otherwise."""
    if isinstance(value, (list, tuple)) and not hasattr(value, "_fields"):
        value = value[0] if len(value) == 1 else None
    if isinstance(value, dict):
        value = value.get("uri")
    elif value is not None and not isinstance(value, str):
        value = getattr(value, "uri", None)
    return value if isinstance(value, str) and value else None


def _display(uri: str) -> str:
    parsed = urlparse(uri)
    return unquote(parsed.path) if parsed.scheme == "file" else uri


@server.command(CONVERT_FILE)
async def convert_file(ls: HorovodizeServer, *args):
    """Apply the whole-file conversion through ``workspace/applyEdit``; refuse a buffer
    that does not parse, as ``horovodize convert`` does."""
    uri = _uri_arg(list(args))
    if uri is None:
        raise JsonRpcInvalidParams(f"{CONVERT_FILE} expects [uri] or [{{\"uri\": uri}}]")
    uri = notebooks.notebook_uri(ls, uri) or uri           # a notebook's cell: the whole notebook
    name = _display(uri)
    if await project_edit.apply(ls, uri, alone_ok=True):     # a file of a program of several modules: all of it
        return
    entry = await current_analysis(ls, uri)
    if entry is None:
        ls.show(f"{name}: not open in the editor", types.MessageType.Error)
        return
    if entry.too_large:
        ls.show(f"{name}: {entry.too_large}", types.MessageType.Warning)
        return
    try:
        await ls.in_worker(entry.analysis.source.check_parses)   # the tree the analysis parsed
    except ParseError as e:
        where = f"{e.line}:{e.column}" if entry.notebook is None else entry.notebook.located(e.line)
        ls.show(f"{name}:{where}: {e.kind}: {e.message}", types.MessageType.Error)
        return
    if not entry.analysis.conversion_edits():
        what = "already Horovod-distributed" if entry.analysis.distributed else "no TensorFlow training code to convert"
        ls.show(f"{name}: {what}; nothing to change", types.MessageType.Info)
        return
    if not ls.apply_edit:
        ls.show(f"{name}: this editor cannot apply edits from the server (workspace/applyEdit); "
                f"use the \"{WHOLE_FILE_TITLE}\" code action", types.MessageType.Error)
        return
    edit = _conversion_edit(ls, entry)
    if edit is None:                  # (a notebook cell it would leave broken: said why)
        return
    try:
        result = await ls.request(types.WORKSPACE_APPLY_EDIT, types.ApplyWorkspaceEditParams(
            edit=edit, label=WHOLE_FILE_TITLE))
    except TimeoutError:
        ls.show(f"{name}: the editor did not answer the conversion's edit (workspace/applyEdit)",
                types.MessageType.Warning)
        return
    except JsonRpcException as e:
        ls.show(f"{name}: the editor refused the conversion's edit: {e}", types.MessageType.Warning)
        return
    if result is None or not result.applied:
        reason = f" ({result.failure_reason})" if result is not None and result.failure_reason else ""
        ls.show(f"{name}: the editor did not apply the conversion{reason}", types.MessageType.Warning)
    return


@server.command(CONVERT_PROJECT)
async def convert_project(ls: HorovodizeServer, *args):
    """Convert the program a file belongs to (its entry script and the project modules that
    entry imports) as one ``workspace/applyEdit``: versioned ``documentChanges`` across the
    files, the open buffers read as they are in the editor, the others from disk."""
    uri = _uri_arg(list(args))
    if uri is None or urlparse(uri).scheme != "file":
        raise JsonRpcInvalidParams(f"{CONVERT_PROJECT} expects [uri] of a file")
    await project_edit.apply(ls, uri, alone_ok=False)


@server.feature(FILE_INFO)
async def file_info(ls: HorovodizeServer, params):
    """``{"uri"}`` -> ``{"loopKind", "distributed"}`` (null for a document that is not open)."""
    uri = _uri_arg(params)
    if uri is None:
        raise JsonRpcInvalidParams(f"{FILE_INFO} expects {{\"uri\": string}}")
    entry = await current_analysis(ls, notebooks.notebook_uri(ls, uri) or uri)
    if entry is None:
        return None
    return {"loopKind": entry.analysis.loop_kind, "distributed": entry.analysis.distributed}
