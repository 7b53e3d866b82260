"""The language server's state, on a `LanguageServer` subclass: open documents, options,
and analyses cached by (uri, version). The LSP methods are in `handlers` (one small
function each); they get a document's `Entry` here and turn it into protocol objects with
`convert`.

Analyses run on one worker thread, so the event loop keeps reading changes while a large
file is analysed, and so each document's incremental parse (parso's diff parser reuses
the previous tree) is only ever touched by one thread. Requests for the same (uri,
version) share one computation; a version that is no longer current when the worker
reaches it is skipped, and one that stops being current while it is analysed stops at
the next pass boundary (`engine.Cancelled`). Pushed diagnostics are analysed at once
(no fixed debounce) and published only if the analysed version is still the document's
version when they are ready and no unread message could hold a newer change (stdin is
read by the event loop itself, `stdio`): a burst of keystrokes publishes its last version
only, and a lone keystroke does not wait. Each document's `IndexMemo` (next to its parser) keeps the
index pieces of the top-level statements the diff parser kept. Buffers over the size
limits (`options.MAX_FILE_LINES`, `MAX_FILE_BYTES`) get one information diagnostic.
A notebook (`notebookDocument/*`) is one document here, keyed by its uri, whose text is
its code cells' program (`lsp.notebooks.View`); its diagnostics are pushed per cell, also
to a client that pulls (vscode-languageclient 9 never pulls for a notebook's cells).
A file that is part of a program of several modules gets its program's diagnostics
(`lsp.programs`, on the same worker once the edits pause; `file_diagnostics`,
`deliver_programs`); its keystrokes are analysed and published as any file's.
Nothing here imports or runs the user's code.

Garbage collection: a 10k-line tree is some 10^5 long-lived objects, and CPython's full
collection walks all of them (100-300 ms) every few analyses — on the edit path. After each
analysis the worker freezes what is alive (`gc.freeze`, O(1)), so automatic collections only
walk what later analyses allocate; the frozen objects are reclaimed by reference counting
as usual, and only cyclic garbage among them (the tree nodes parso's diff parser replaces)
waits for a full collection, run once the server has been idle for a moment (or after
`FULL_COLLECT_EVERY` analyses without a pause).
"""

from __future__ import annotations

import asyncio
import gc
import itertools
import logging
import os
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol, lsp_method

from .. import __version__
from ..engine import Analysis, Cancelled, analyze
from ..parse.source import Source
from . import convert
from .notebooks import SYNC as NOTEBOOK_SYNC
from .notebooks import View, publish_cells
from .options import Options
from .parser import IncrementalParser, collector_off
from .programs import Programs, carried
from .text import UTF16, Text

log = logging.getLogger(__name__)

INPUT_WAIT_SECONDS = 0.001  # a ready analysis waits in such steps while unread messages remain ...
INPUT_WAIT_STEPS = 50       # ... at most this many (a newer change among them cancels the publish)
IDLE_COLLECT_SECONDS = 2.0  # a full garbage collection once nothing has changed for this long
FULL_COLLECT_EVERY = 200    # ... or after this many analyses without such a pause
MEMO_AT_OPEN_LINES = 20_000  # from this size on, the open's analysis fills the memo (no `_prime`)
# A server->client request (workspace/applyEdit) not answered by then is given up: an
# editor that never answers must not hold a command, or shutdown, forever.
REQUEST_TIMEOUT = float(os.environ.get("HOROVODIZE_REQUEST_TIMEOUT") or 30)


@dataclass
class Document:
    uri: str
    version: int | None
    text: Text
    notebook: View | None = None     # a notebook's cells, whose program `text` is


@dataclass
class Entry:
    """One analysed version: the snapshot it refers to, the analysis, its diagnostics."""

    uri: str
    version: int | None
    text: Text
    analysis: Analysis
    diagnostics: list[types.Diagnostic]
    result_id: str
    too_large: str | None = None     # why the buffer was not analysed (over a size limit)
    fresh: bool = False              # analysed without the memo: `_prime` it once answered
    notebook: View | None = None     # a notebook's version (`lsp.notebooks`) ...
    cells: dict | None = None        # ... and its diagnostics per cell uri
    carried: tuple | None = None     # (program result, its diagnostics carried to this version): `file_diagnostics`


def over_limit(buffer: Text, options: Options) -> str | None:
    """Why `buffer` is too large to analyse on every edit (None when it is not)."""
    text, lines = buffer.text, len(buffer.line_starts)      # lines as LSP counts them
    if options.max_file_lines and lines > options.max_file_lines:
        return (f"horovodize: not analysed: {lines} lines is over the maxFileLines limit ({options.max_file_lines});"
                " raise it in the server's initializationOptions (0 = no limit)")
    limit = options.max_file_bytes
    if limit and len(text) * (1 if text.isascii() else 4) > limit:
        size = len(text.encode("utf-8", "surrogatepass"))
        if size > limit:
            return (f"horovodize: not analysed: {size} bytes is over the maxFileBytes limit ({limit});"
                    " raise it in the server's initializationOptions (0 = no limit)")
    return None


class Protocol(LanguageServerProtocol):
    """Answers a request whose params do not deserialize with InvalidParams (pygls logs
    such a message and never replies, which leaves the client waiting), and keeps no
    copy of the open buffers in pygls's workspace: the server keeps each buffer itself
    (`Document`, whose `lsp.text.Text` splices its line table per change), while pygls
    rebuilt its own, never read, line by line on every change (44 ms a keystroke at
    50,000 lines). The handlers registered for didOpen/didChange/didClose still run.
    """

    def _user(self, method: str, params):
        handler = self.fm.features.get(method)
        if handler is not None:
            yield handler, (params,), None

    @lsp_method(types.TEXT_DOCUMENT_DID_OPEN)
    def lsp_text_document__did_open(self, params: types.DidOpenTextDocumentParams):
        yield from self._user(types.TEXT_DOCUMENT_DID_OPEN, params)

    @lsp_method(types.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(self, params: types.DidChangeTextDocumentParams):
        yield from self._user(types.TEXT_DOCUMENT_DID_CHANGE, params)

    @lsp_method(types.TEXT_DOCUMENT_DID_CLOSE)
    def lsp_text_document__did_close(self, params: types.DidCloseTextDocumentParams):
        yield from self._user(types.TEXT_DOCUMENT_DID_CLOSE, params)

    def structure_message(self, data):
        try:
            return super().structure_message(data)
        except JsonRpcException:
            if isinstance(data, dict) and "id" in data and "method" in data:
                log.warning("invalid params for %s (request %s)", data.get("method"), data.get("id"))
                error = JsonRpcInvalidParams(f"invalid params for {data.get('method')}")
                self._send_response(data["id"], error=error.to_response_error())
                return _ANSWERED
            raise

    def handle_message(self, message):
        if message is _ANSWERED:
            return None
        return super().handle_message(message)


_ANSWERED = object()


class HorovodizeServer(LanguageServer):
    def __init__(self):
        super().__init__("horovodize", __version__, protocol_cls=Protocol,
                         text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
                         notebook_document_sync=NOTEBOOK_SYNC)
        self.options = Options()
        self.documents: dict[str, Document] = {}
        self.analyses: dict[str, Entry] = {}                          # latest per uri
        self._pending: dict[str, tuple[Text, asyncio.Future]] = {}    # uri -> (snapshot, its analysis)
        self._scheduled: dict[str, asyncio.Task] = {}
        self._published: dict[str, Entry] = {}
        self._parsers: dict[str, IncrementalParser] = {}
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="horovodize-analysis")
        self._result_ids = itertools.count(1)
        self._since_collect = 0                                       # analyses since a full collection
        self._idle_collect: asyncio.TimerHandle | None = None
        self.rehearsal: dict[str, list] = {}                          # uri -> diagnostics of its last rehearsal
        self.programs = Programs(self)                                # the programs of several modules

    # -- client capabilities -----------------------------------------------------------
    @property
    def encoding(self) -> str:
        enc = self.workspace.position_encoding
        return getattr(enc, "value", enc) or UTF16

    def _text_caps(self):
        return self.client_capabilities.text_document

    @property
    def pull_diagnostics(self) -> bool:
        """The client pulls (``textDocument/diagnostic``); pushing as well would duplicate them."""
        caps = self._text_caps()
        return caps is not None and caps.diagnostic is not None

    @property
    def resolve_edits(self) -> bool:
        caps = self._text_caps()
        ca = caps.code_action if caps else None
        return bool(ca and ca.resolve_support and "edit" in ca.resolve_support.properties)

    @property
    def document_changes(self) -> bool:
        ws = self.client_capabilities.workspace
        return bool(ws and ws.workspace_edit and ws.workspace_edit.document_changes)

    @property
    def apply_edit(self) -> bool:
        ws = self.client_capabilities.workspace
        return bool(ws and ws.apply_edit)

    @property
    def markdown(self) -> bool:
        caps = self._text_caps()
        formats = caps.hover.content_format if caps and caps.hover else None
        return not formats or types.MarkupKind.Markdown in formats

    # -- documents ---------------------------------------------------------------------
    def open(self, uri: str, text: str, version: int | None, notebook: View | None = None) -> None:
        self.documents[uri] = Document(uri, version, Text(text), notebook)
        self.schedule(uri)
        self.programs.touched(uri, opened_or_closed=True)

    def change(self, uri: str, version: int | None, changes) -> None:
        doc = self.documents.get(uri)
        if doc is None:
            log.warning("change to a document that is not open: %s", uri)
            return
        text = doc.text
        for change in changes:
            text = text.apply(change, self.encoding)
        doc.text, doc.version = text, version
        if self._idle_collect is not None:       # not idle: the collection waits for the next pause
            self._idle_collect.cancel()
            self._idle_collect = None
        self.schedule(uri)
        self.programs.touched(uri)

    def close(self, uri: str) -> None:
        doc = self.documents.pop(uri, None)
        last = self._published.get(uri)
        task = self._scheduled.pop(uri, None)
        if task is not None:
            task.cancel()
        self.analyses.pop(uri, None)
        self._pending.pop(uri, None)
        self._published.pop(uri, None)
        self.rehearsal.pop(uri, None)
        self.programs.touched(uri, opened_or_closed=True)
        try:
            self._worker.submit(self._parsers.pop, uri, None)   # after any analysis in flight
        except RuntimeError:                                 # the worker is shut down
            self._parsers.pop(uri, None)
        if doc is not None and doc.notebook is not None:         # clear each cell's (pushed)
            cells = doc.notebook.cell_uris() + (last.notebook.cell_uris() if last and last.notebook else [])
            for cell in dict.fromkeys(cells):
                self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=cell, diagnostics=[]))
        elif not self.pull_diagnostics:
            self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))

    # -- analyses ----------------------------------------------------------------------
    # An entry belongs to one snapshot: `entry.text is doc.text` (a change or a re-open
    # makes a new `Text`, so a reused version number cannot return a stale analysis).
    async def analysis(self, uri: str) -> Entry | None:
        """The analysis of the document's version when it is ready (None when not open)."""
        while True:
            doc = self.documents.get(uri)
            if doc is None:
                return None
            entry = self.analyses.get(uri)
            if entry is not None and entry.text is doc.text:
                return entry
            pending = self._pending.get(uri)
            if pending is not None and pending[0] is doc.text:
                fut = pending[1]
            else:
                loop = asyncio.get_running_loop()
                fut = loop.run_in_executor(self._worker, self._compute, uri, doc.version, doc.text, self.options,
                                           self.encoding)
                self._pending[uri] = (doc.text, fut)
                fut.add_done_callback(lambda f, text=doc.text: self._store(uri, text, f))
            entry = await asyncio.shield(fut)
            if entry is not None:
                return entry
            # skipped: the document changed before the worker got to it; analyse the new text

    def _compute(self, uri: str, version, text: Text, options: Options, encoding: str) -> Entry | None:
        """Worker thread: incremental parse, analysis, diagnostics (with their fixes).

        Returns None without analysing when the snapshot is no longer the document's text,
        so keystrokes queued behind a long analysis cost nothing.
        """
        doc = self.documents.get(uri)
        if doc is None or doc.text is not text:
            return None
        too_large = over_limit(text, options)
        if too_large is not None:
            self._parsers.pop(uri, None)         # its tree would only hold memory
            log.info("not analysed %s version %s: %s", uri, version, too_large)
            return Entry(uri, version, text, Analysis(Source("")), [types.Diagnostic(
                range=types.Range(start=types.Position(line=0, character=0), end=types.Position(line=0, character=0)),
                message=too_large, severity=types.DiagnosticSeverity.Information, source=convert.SOURCE)],
                str(next(self._result_ids)), too_large, notebook=doc.notebook)
        started = time.perf_counter()
        log.info("analysing %s version %s", uri, version)
        with collector_off():
            parser = self._parsers.setdefault(uri, IncrementalParser())
            module = parser.parse(text.text, text.line_starts)
            parsed = time.perf_counter()
            # A tree parsed whole shares no statement with the memo: analysed without it
            # (the same result, ~30% sooner), and the memo is filled after publishing (`_prime`),
            # except in a large buffer, where the edit that follows the open would wait for
            # that second analysis (1.4 s at 50,000 lines): there the open fills it.
            fresh = parser.fresh and len(text.line_starts) < MEMO_AT_OPEN_LINES
            try:       # a newer edit stops this analysis between two passes
                analysis = analyze(text.text, module=module, memo=None if fresh else parser.memo,
                                   stop=lambda: self._stale(uri, text), line_starts=text.line_starts,
                                   keras_target=options.keras_target, scale_lr=options.scale_lr,
                                   require_local_fs=options.require_local_fs)
                if parser.fresh and not fresh:
                    parser.memo.count_keys()
            except Cancelled:
                log.info("cancelled %s version %s after %.0f ms", uri, version, (time.perf_counter() - started) * 1000)
                return None
            if doc.notebook is None:
                diagnostics, cells = convert.diagnostics(analysis, text, encoding, uri, version, options), None
            else:
                diagnostics, cells = [], doc.notebook.diagnostics(analysis, encoding, options)
        entry = Entry(uri, version, text, analysis, diagnostics, str(next(self._result_ids)), fresh=fresh,
                      notebook=doc.notebook, cells=cells)
        # (the responsiveness tests count these lines: N keystrokes must not mean N analyses)
        log.info("analysed %s version %s in %.0f ms (parse %.0f ms; %s)", uri, version,
                 (time.perf_counter() - started) * 1000, (parsed - started) * 1000,
                 "parsed whole, memo later" if fresh else f"{parser.memo.walked} statements indexed again")
        self._since_collect += 1          # (the tree and this analysis were frozen above)
        if self._since_collect >= FULL_COLLECT_EVERY:
            self._full_collect()
        return entry

    def prime_later(self, entry: Entry) -> None:
        """Event loop, once `entry`'s diagnostics are sent (pushed, or answered): `_prime`
        on the worker. Not before: the two threads would share the interpreter lock while
        the diagnostics are serialized."""
        if entry.fresh:
            entry.fresh = False
            try:
                fut = asyncio.get_running_loop().run_in_executor(self._worker, self._prime, entry.uri,
                                                                 entry.version, entry.text)
            except RuntimeError:                 # the worker is shut down
                return
            fut.add_done_callback(lambda f: self._primed(entry, f))

    @staticmethod
    def _primed(entry: Entry, fut) -> None:
        """Event loop: the analysis made with the memo replaces the open's in its entry (the
        same findings, fixes and conversion), so the open's is freed now, not at the first
        edit (~50 MiB at 50,000 lines)."""
        if not fut.cancelled() and fut.exception() is None and fut.result() is not None:
            entry.analysis = fut.result()

    def _prime(self, uri: str, version, text: Text) -> Analysis | None:
        """Worker thread, after the diagnostics of a tree parsed whole: the analysis again
        with the document's memo, so that the next keystroke reuses the work on every
        statement it leaves alone. Skipped when a newer change came first (its own analysis
        fills the memo then); not stopped by one that comes during it, which then waits
        for the rest of this instead of filling the whole memo itself."""
        parser = self._parsers.get(uri)
        if parser is None or self._stale(uri, text) or parser.text is not text.text:
            return None
        started = time.perf_counter()
        try:
            with collector_off():
                analysis = analyze(text.text, module=parser.module, memo=parser.memo,
                                   stop=lambda: uri not in self.documents, line_starts=text.line_starts,
                                   keras_target=self.options.keras_target, scale_lr=self.options.scale_lr,
                                   require_local_fs=self.options.require_local_fs)
                parser.memo.count_keys()
        except Cancelled:
            return None
        log.info("memo of %s version %s filled in %.0f ms", uri, version, (time.perf_counter() - started) * 1000)
        return analysis

    def _stale(self, uri: str, text: Text) -> bool:
        """Worker thread: has the buffer changed (or closed) since `text`?"""
        doc = self.documents.get(uri)
        return doc is None or doc.text is not text

    def _full_collect(self) -> None:
        """Worker thread: collect everything, including the cyclic garbage frozen so far."""
        self._since_collect = 0
        if gc.isenabled():
            gc.unfreeze()
            gc.collect()
            gc.freeze()

    def _schedule_collect(self) -> None:
        """Event loop: a full collection on the worker once no change came for a while."""
        if self._idle_collect is not None:
            self._idle_collect.cancel()
        self._idle_collect = asyncio.get_running_loop().call_later(IDLE_COLLECT_SECONDS, self._collect_when_idle)

    def _collect_when_idle(self) -> None:
        self._idle_collect = None
        if self._since_collect and not self._pending:
            try:
                self._worker.submit(self._full_collect)
            except RuntimeError:         # the worker is shut down
                pass

    def _store(self, uri: str, text: Text, fut: asyncio.Future) -> None:
        if self._pending.get(uri, (None,))[0] is text:
            del self._pending[uri]
        if fut.cancelled() or fut.exception() is not None:
            if not fut.cancelled():
                log.error("analysis of %s failed", uri, exc_info=fut.exception())
            return
        doc = self.documents.get(uri)
        if fut.result() is not None and doc is not None and doc.text is text:   # not closed, not stale
            self.analyses[uri] = fut.result()
        self._schedule_collect()

    # -- pushed diagnostics ------------------------------------------------------------
    def input_pending(self) -> bool:
        """Unread client messages are waiting (set by `stdio.start_io` when stdin is a pipe)."""
        return False

    def schedule(self, uri: str) -> None:
        doc = self.documents.get(uri)
        if self.pull_diagnostics and (doc is None or doc.notebook is None):    # (a notebook's: pushed)
            return
        task = self._scheduled.pop(uri, None)
        if task is not None:
            task.cancel()
        self._scheduled[uri] = asyncio.get_running_loop().create_task(self._publish_later(uri))

    async def _publish_later(self, uri: str) -> None:
        try:
            entry = await self.analysis(uri)
            for _ in range(INPUT_WAIT_STEPS):        # a newer change may be among them: its
                if not self.input_pending():         # handler cancels this task
                    break
                await asyncio.sleep(INPUT_WAIT_SECONDS)
        except asyncio.CancelledError:
            return
        except Exception:
            log.exception("diagnostics for %s failed", uri)
            return
        doc = self.documents.get(uri)
        if entry is None or doc is None or doc.text is not entry.text:
            return                                          # never publish a stale version
        previous = self._published.get(uri)
        if previous is entry:
            return
        self._published[uri] = entry
        if entry.notebook is not None:
            publish_cells(self, entry, previous)
        else:
            self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
                uri=uri, version=entry.version, diagnostics=self.file_diagnostics(entry)[0] + self.rehearsal.get(uri, [])))
        self.prime_later(entry)

    # -- a file of a program of several modules (`programs`) ----------------------------------
    def file_diagnostics(self, entry: Entry) -> tuple[list[types.Diagnostic], str]:
        """(diagnostics, result id) of `entry`'s file: its program's share when it is part of
        a program of several modules (carried past the edits made since it was analysed),
        else its own analysis'."""
        result = self.programs.results.get(entry.uri) if entry.notebook is None else None
        if result is None or entry.too_large:
            return entry.diagnostics, entry.result_id
        if result.text is entry.text:
            return result.diagnostics, result.result_id
        if entry.carried is None or entry.carried[0] is not result:
            entry.carried = (result, carried(result, entry.text, entry.uri, entry.version))
        return entry.carried[1], f"{entry.result_id}-{result.result_id}"

    def deliver_programs(self, uris: list[str]) -> None:
        """Event loop: the program diagnostics of `uris` changed. A pulling client is asked to
        pull again (``workspace/diagnostic/refresh``); a pushed-to one gets them, if they are
        for the buffer's current text (else that text's own publish follows)."""
        if self.pull_diagnostics:
            ws = self.client_capabilities.workspace
            if ws is not None and ws.diagnostics is not None and ws.diagnostics.refresh_support:
                self.workspace_diagnostic_refresh(None)
            return
        for uri in uris:
            doc = self.documents.get(uri)
            if doc is None or doc.notebook is not None:
                continue
            result = self.programs.results.get(uri)
            if result is not None and result.text is not doc.text:
                continue
            entry = self.analyses.get(uri)
            if result is None and (entry is None or entry.text is not doc.text):
                self.schedule(uri)                   # (its own analysis, then published)
                continue
            diagnostics = result.diagnostics if result is not None else entry.diagnostics
            self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
                uri=uri, version=doc.version, diagnostics=diagnostics + self.rehearsal.get(uri, [])))

    async def in_worker(self, fn, *args):
        """Run `fn` on the analysis thread (after the analyses already queued)."""
        return await asyncio.get_running_loop().run_in_executor(self._worker, fn, *args)

    def stop_worker(self) -> None:
        self._worker.shutdown(wait=False, cancel_futures=True)

    # -- requests to the client ----------------------------------------------------------
    async def request(self, method: str, params, timeout: float | None = None):
        """A server->client request that raises `TimeoutError` after `timeout` seconds
        (`REQUEST_TIMEOUT` by default); a late answer is then logged and dropped."""
        msg_id = str(uuid.uuid4())
        fut = self.protocol.send_request(method, params, msg_id=msg_id)
        try:
            return await asyncio.wait_for(asyncio.wrap_future(fut), REQUEST_TIMEOUT if timeout is None else timeout)
        finally:
            self.protocol._request_futures.pop(msg_id, None)
            fut.cancel()

    def cancel_pending(self) -> None:
        """At shutdown: cancel the requests still in flight, both ways (a command waiting
        for the editor included). pygls does the same after this handler, but while
        iterating over the dict that a cancellation's callback pops from, which answers
        ``shutdown`` with -32603; cancelled here, they are already done then."""
        current = self.protocol.msg_id
        for msg_id, fut in list(self.protocol._request_futures.items()):
            if msg_id != current and not fut.done():
                fut.cancel()

    # -- start-up ----------------------------------------------------------------------
    def warm_up(self) -> None:
        """Before the first message: run once what the first opened file would run for the
        first time (parso's tokenizer expressions, the parser's tables, lsprotocol's
        converters for the messages read and sent: ~10 ms, paid now rather than on open)."""
        try:
            text = Text(_WARM_UP)
            uri = "file:///horovodize-warm-up.py"
            parser = IncrementalParser()
            module = parser.parse(text.text, text.line_starts)
            analysis = analyze(text.text, module=module, memo=parser.memo, line_starts=text.line_starts)
            diagnostics = convert.diagnostics(analysis, text, UTF16, uri, 1, self.options)
            self.protocol._serialize_message(types.PublishDiagnosticsNotification(
                params=types.PublishDiagnosticsParams(uri=uri, version=1, diagnostics=diagnostics)))
            item = {"uri": uri, "languageId": "python", "version": 1, "text": _WARM_UP}
            change = {"range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}}, "text": ""}
            for method, params in ((types.TEXT_DOCUMENT_DID_OPEN, {"textDocument": item}),
                                   (types.TEXT_DOCUMENT_DID_CHANGE, {"textDocument": {"uri": uri, "version": 2},
                                                                     "contentChanges": [change]})):
                self.protocol.structure_message({"jsonrpc": "2.0", "method": method, "params": params})
        except Exception:                     # only a warm-up: the real messages will tell
            log.exception("warm-up failed")

    # -- messages ----------------------------------------------------------------------
    def show(self, message: str, kind: types.MessageType = types.MessageType.Info) -> None:
        self.window_show_message(types.ShowMessageParams(type=kind, message=message))

    def report_server_error(self, error: Exception, source) -> None:
        log.error("server error (%s): %s", getattr(source, "__name__", source), error)
        super().report_server_error(error, source)


SERVER = HorovodizeServer()

# A small training loop for `warm_up`: it gets diagnostics (a single-GPU optimizer and loop).
_WARM_UP = '''import tensorflow as tf

model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
opt = tf.keras.optimizers.Adam(0.001)
for x, y in tf.data.Dataset.from_tensor_slices(([[1.0]], [[2.0]])).batch(1):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean((model(x) - y) ** 2)
    grads = tape.gradient(loss, model.trainable_variables)
    opt.apply_gradients(zip(grads, model.trainable_variables))
model.save_weights("w.h5")
'''
