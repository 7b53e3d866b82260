"""The conversion of a program of several modules as one ``WorkspaceEdit``: versioned
``documentChanges`` across its files, the open buffers read as the editor holds them, the
others from disk (`project.program.convert_program`).

Used by the commands (``horovodize.convertProject``; ``horovodize.convertFile`` on a file of
such a program), applied through ``workspace/applyEdit`` (`apply`), and by the code action
"Make project Horovod-distributed" that a file of a program gets instead of the file's own
conversion (`actions`; its edit filled in by ``codeAction/resolve``, `resolve`).

Requires: project (plan, program), errors, lsp.convert, lsp.text, lsp.server.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlparse

from lsprotocol import types
from pygls.exceptions import JsonRpcException

from ..engine import WHOLE_FILE_TITLE
from ..errors import UserError
from ..project import plan
from ..project.program import convert_program
from .convert import PROJECT_TITLE, QUICK_FIX, SOURCE_FIX_ALL, project_edit, text_edits
from .server import HorovodizeServer
from .text import Text

log = logging.getLogger(__name__)

ACTION = "convertProject"          # ``CodeAction.data["action"]`` of the program's conversion


@dataclass
class Change:
    """The program's conversion as one edit, or why there is none (`message`)."""

    edit: types.WorkspaceEdit | None
    message: str
    kind: types.MessageType = types.MessageType.Info


def _path(uri: str) -> Path:
    return Path(unquote(urlparse(uri).path))


async def change(ls: HorovodizeServer, uri: str) -> Change | None:
    """The conversion of the program `uri` belongs to; None when `uri` is a program alone."""
    if urlparse(uri).scheme != "file" or not uri.endswith(".py"):
        return None
    path = _path(uri)
    buffers = {_path(u).resolve(): d for u, d in ls.documents.items() if u.startswith("file:")}

    def read(p: Path) -> str:
        doc = buffers.get(Path(p).resolve())
        if doc is not None:
            return doc.text.text
        data = Path(p).read_bytes()
        return data.decode("utf-8") if data.strip() else ""

    try:
        found = await ls.in_worker(plan.program_for, path, read, ls.programs.folder_of(path))
        if found is None:
            return None
        entry, root = found
        conv = await ls.in_worker(convert_program, entry, read, root, ls.options.keras_target,
                                  ls.options.scale_lr, ls.options.require_local_fs)
    except (UserError, OSError, UnicodeDecodeError) as e:
        return Change(None, f"horovodize: {path.name}: not converted: {e}", types.MessageType.Error)
    if conv.refused:
        why = "; ".join(f"{m}" for _c, _l, m in conv.analysis.refusal_reasons()[:2])
        return Change(None, f"horovodize: {conv.name(entry)}: not converted: {why}", types.MessageType.Warning)
    changes = []
    for f in conv.files:
        if f.changed:
            doc = buffers.get(f.path)
            changes.append((f.path.as_uri(), doc.version if doc is not None else None,
                            text_edits(f.edits, Text(f.before), ls.encoding)))
    if not changes:
        return Change(None, f"{conv.name(entry)}: nothing to change")
    return Change(project_edit(changes, ls.document_changes),
                  f"horovodize: {conv.name(entry)} converted as one program of {len(conv.files)} files "
                  f"({', '.join(conv.name(f.path) for f in conv.files if f.changed)} changed)")


async def apply(ls: HorovodizeServer, uri: str, alone_ok: bool) -> bool:
    """Apply the conversion of the program `uri` belongs to (``workspace/applyEdit``); False
    when it is a program alone (`alone_ok`: the caller converts it as a file, else that is said)."""
    found = await change(ls, uri)
    if found is None:
        if not alone_ok:
            ls.show(f"{_path(uri).name}: not a program of several modules (it imports no module of its project); "
                    f"use \"{WHOLE_FILE_TITLE}\"", types.MessageType.Info)
        return not alone_ok
    if found.edit is None:
        ls.show(found.message, found.kind)
        return True
    if not ls.apply_edit:
        ls.show(f"{_path(uri).name}: this editor cannot apply edits from the server (workspace/applyEdit); "
                "run `horovodize convert ENTRY --write`", types.MessageType.Error)
        return True
    try:
        result = await ls.request(types.WORKSPACE_APPLY_EDIT, types.ApplyWorkspaceEditParams(
            edit=found.edit, label=f"{WHOLE_FILE_TITLE} (project)"))
    except (TimeoutError, JsonRpcException) as e:
        ls.show(f"horovodize: the editor did not apply the project's conversion: {e}", types.MessageType.Warning)
        return True
    if result is None or not result.applied:
        ls.show("horovodize: the editor did not apply the project's conversion", types.MessageType.Warning)
        return True
    ls.show(found.message, types.MessageType.Info)
    return True


async def actions(ls: HorovodizeServer, result, whole_file_for: list, fix_all: bool) -> list[types.CodeAction]:
    """The code actions of the program a file's diagnostics come from (`result`, its
    `programs.FileResult`): "Make project Horovod-distributed", or, disabled, the
    restriction that blocks it."""
    analysis, lk = result.analysis, result.link
    if analysis.refused:
        if not whole_file_for:
            return []

        def where(line: int) -> str:
            path, file_line = lk.locate_line(line)
            return f"{(path or lk.entry).name} line {file_line}"

        reasons = "; ".join(f"{c} ({where(line)}): {m}" for c, line, m in analysis.refusal_reasons())
        return [types.CodeAction(title=PROJECT_TITLE, kind=QUICK_FIX, diagnostics=whole_file_for,
                                 disabled=types.CodeActionDisabled(reason=f"a restriction blocks the training loop: {reasons}"))]
    if not analysis.rule_sites:
        return []
    doc = ls.documents.get(result.uri)
    data = {"uri": result.uri, "version": doc.version if doc is not None else None, "action": ACTION}
    out = []
    if whole_file_for:
        out.append(types.CodeAction(title=PROJECT_TITLE, kind=QUICK_FIX, diagnostics=whole_file_for, data=data))
    if fix_all:
        out.append(types.CodeAction(title=f"horovodize: {PROJECT_TITLE}", kind=SOURCE_FIX_ALL, data=dict(data)))
    if out and not ls.resolve_edits:
        found = await change(ls, result.uri)
        for action in out:
            action.edit = found.edit if found is not None else None
    return out


async def resolve(ls: HorovodizeServer, action: types.CodeAction, uri: str) -> types.CodeAction:
    """``codeAction/resolve`` of "Make project Horovod-distributed": its edit, made now."""
    doc = ls.documents.get(uri)
    if doc is None or doc.version != action.data.get("version"):
        log.info("project code action for a closed or changed document: %s", uri)
        return action
    found = await change(ls, uri)
    if found is not None and found.edit is None:
        ls.show(found.message, found.kind)
    action.edit = found.edit if found is not None else None
    return action


__all__ = ["ACTION", "Change", "actions", "apply", "change", "resolve"]
