"""A file's diagnostics from the program that trains it: `Programs`, on the server.

A file that is part of a program of several modules (an entry script that imports modules
of its project, or a module such an entry imports) gets the findings the program's analysis
places in it, as ``horovodize check FILE`` gives them: the facts only the program shows (a
model made in this module and never broadcast where the entry trains it; the rate scaled
where the optimizer is made), and none that only the file alone shows (a library module
gets no "set-up missing": its entry does).

Which program a file belongs to is `project.plan.program_for`, decided again only when an
import of a file may have changed (`signature` of an open buffer, a file event, an open or
a close), else read from a cache. Each program keeps its modules (a module is parsed again
only when its text changed; an open buffer's tree is its own parser's) and one
`IncrementalParser` with its memo for its linked text (`project.link`), so an edit in one
module re-parses that module's statements of the linked text only and re-analyses what
they changed. Each open file's share (`FileResult`) has its ranges in the file's own text.

All of it runs on the server's analysis worker after a pause in the edits (`DELAY`), never
before a keystroke's own analysis, and stops at the next pass when any buffer changes. A
single-file program costs the keystroke nothing: after the pause, its file's import
signature is compared with the cached one. Until a program's result for the file's current
text is there, its last one is carried past the edit (`carried`).

Requires: project (plan, layout, link), engine, lsp.parser, lsp.convert, lsp.options,
lsp.text. Provides: `Programs`, `FileResult`, `signature`.
"""

from __future__ import annotations

import asyncio
import bisect
import dataclasses
import itertools
import logging
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlparse

import attrs
from lsprotocol import types

from ..engine import Analysis, Cancelled, analyze
from ..errors import UserError
from ..parse.source import Source
from ..project import plan
from ..project.layout import Layout, Module, main_block, runs_code
from ..project.link import Link, link
from ..rules.base import Finding, Related
from . import convert
from .options import Options
from .parser import IncrementalParser, collector_off, parse_in_steps
from .text import Text

log = logging.getLogger(__name__)

# Seconds without an edit before the programs the edits touched are analysed again: above
# the time between two keystrokes of someone typing (0.2-0.3 s), so a program is analysed
# when the typing pauses, not between each two keystrokes (a keystroke that comes during it
# waits for its current step: tens of ms in a 10,000-line module).
DELAY = 0.4
# The lines that import (a parenthesised name list whole): what decides, with the two facts
# below, which program a file starts or belongs to.
IMPORTS = re.compile(r"^[ \t]*(?:from[ \t]+[\w.]+[ \t]+import[ \t]*\([^)]*\)|from[ \t].*|import[ \t].*)", re.MULTILINE)


def signature(text: str, module) -> tuple:
    """What of a file decides its program: its import lines, whether it has a ``__main__``
    block, whether it runs code at top level (an entry) or only defines (a library)."""
    return tuple(IMPORTS.findall(text)), main_block(module) is not None, runs_code(module)


def path_of(uri: str) -> Path | None:
    parsed = urlparse(uri)
    if parsed.scheme != "file" or not parsed.path.endswith(".py"):
        return None
    return Path(unquote(parsed.path))


@dataclass
class FileResult:
    """One open file's share of its program's analysis."""

    uri: str
    text: Text                   # the buffer's snapshot the program was analysed with
    version: int | None
    findings: list[Finding]      # at offsets of this file
    diagnostics: list[types.Diagnostic]
    result_id: str
    entry: Path
    link: Link
    analysis: Analysis


class Program:
    """One program of several modules: its entry and root, its modules as last read, the
    parser and memo of its linked text, and its last analysis."""

    def __init__(self, entry: Path, root: Path):
        self.entry, self.root = entry, root
        self.parser = IncrementalParser()
        self.modules: dict[Path, Module] = {}
        self.texts: dict[Path, str] = {}          # each module's text at the last analysis
        self.buffered: set[Path] = set()          # ... those that were open buffers (their trees, their parsers')
        self.generation = -1                      # `Programs.generation` when its modules were read
        self.link: Link | None = None
        self.analysis: Analysis | None = None
        self.options: Options | None = None


class Reader:
    """A file's text as the editor holds it (an open buffer), else from disk (kept while its
    size and time stamp are the same); ``source`` gives an open buffer's tree from its own
    parser (project.layout's reader protocol)."""

    def __init__(self, programs: Programs, buffers: dict[Path, tuple[str, Text, int | None]]):
        self.programs, self.buffers = programs, buffers

    def __call__(self, path: Path) -> str:
        key = Path(path).resolve()
        buffer = self.buffers.get(key)
        if buffer is not None:
            return buffer[1].text
        st = os.stat(key)
        stamp = (st.st_mtime_ns, st.st_size)
        cached = self.programs.disk.get(key)
        if cached is not None and cached[0] == stamp:
            return cached[1]
        data = key.read_bytes()
        text = data.decode("utf-8") if data.strip() else ""
        self.programs.disk[key] = (stamp, text)
        return text

    def source(self, path: Path, text: str) -> Source:
        key = Path(path).resolve()
        buffer = self.buffers.get(key)
        if buffer is not None and buffer[1].text is text:
            parser = self.parser(key)
            if parser is not None:         # (this worker owns it: brought to this text, incrementally)
                return Source(text, parser.parse(text, buffer[1].line_starts), buffer[1].line_starts)
        for program in self.programs.programs.values():     # a file on disk a program has parsed
            m = program.modules.get(key)
            if m is not None and key not in program.buffered and m.text == text:
                return m.source
        return Source(text)

    def parser(self, path: Path) -> IncrementalParser | None:
        buffer = self.buffers.get(path)
        return self.programs.ls._parsers.get(buffer[0]) if buffer is not None else None

    def known(self, program: Program, generation: int) -> dict[Path, Module]:
        """The modules `program` read that a new layout of it may take as they are: none after
        a file event (an import may resolve elsewhere now); a buffer's only while its parser
        has not parsed another text since (its tree is that parser's, changed in place)."""
        if program.generation != generation:
            return {}
        out = {}
        for path, m in program.modules.items():
            if path in program.buffered:
                parser = self.parser(path)
                if parser is None or parser.text is not m.text:
                    continue
            out[path] = m
        return out


class Programs:
    """The programs of the open files, their analyses and each open file's share of them.

    The event loop calls `touched` (a buffer opened, changed or closed), `watched` (files on
    disk) and reads `results`; the worker runs `_phase` and owns everything else."""

    def __init__(self, ls):
        self.ls = ls
        self.results: dict[str, FileResult] = {}           # event loop: uri -> its program's share
        self.members: dict[Path, tuple] = {}               # worker: path -> (key, (entry, root) or None)
        self.programs: dict[tuple[Path, Path], Program] = {}
        self.disk: dict[Path, tuple[tuple, str]] = {}      # worker: files read from disk
        self.generation = 0        # event loop: bumped when files on disk or the open buffers change
        self.imports = 0           # worker: bumped when an open buffer's `signature` changed
        self.changes = 0           # event loop: every edit, open, close, file event (a running phase stops)
        self._dirty: set[str] = set()
        self._timer = None
        self._running = False
        self._ids = itertools.count(1)

    # -- event loop ----------------------------------------------------------------------
    def touched(self, uri: str, opened_or_closed: bool = False) -> None:
        """A buffer was opened, changed or closed (any buffer: a running phase stops)."""
        self.changes += 1
        if path_of(uri) is None:
            return
        if opened_or_closed and uri not in self.ls.documents:
            self.generation += 1          # closed: the file is read again, its imports as saved
            self.results.pop(uri, None)
            self._dirty.update(self._open_uris())
        self._dirty.add(uri)
        self._schedule()

    def watched(self, changes: list[types.FileEvent]) -> None:
        """``workspace/didChangeWatchedFiles``: a project file created, changed or deleted."""
        uris = [c.uri for c in changes if path_of(c.uri) is not None or c.uri.endswith(
            ("pyproject.toml", "setup.py", "setup.cfg"))]
        if not uris:
            return
        self.changes += 1
        self.generation += 1
        self._dirty.update(u for u in uris if path_of(u) is not None)
        self._dirty.update(self._open_uris())
        self._schedule()

    def _open_uris(self) -> list[str]:
        return [u for u, d in self.ls.documents.items() if d.notebook is None and path_of(u) is not None]

    def _schedule(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer = asyncio.get_running_loop().call_later(DELAY, self._run)

    def _run(self) -> None:
        self._timer = None
        if self._running or not self._dirty:
            return                        # (a running phase schedules the next when it ends)
        uris, self._dirty = self._dirty, set()
        buffers = {u: (d.text, d.version) for u, d in self.ls.documents.items()
                   if d.notebook is None and path_of(u) is not None}
        self._running = True
        try:
            fut = asyncio.get_running_loop().run_in_executor(
                self.ls._worker, self._phase, uris, buffers, self.changes, self.generation, self.ls.options,
                self.ls.encoding)
        except RuntimeError:              # the worker is shut down
            self._running = False
            return
        fut.add_done_callback(lambda f: self._done(uris, f))

    def _done(self, uris: set[str], fut) -> None:
        self._running = False
        updates = None
        if not fut.cancelled() and fut.exception() is not None:
            log.error("program analysis failed", exc_info=fut.exception())
            updates = {}
        elif not fut.cancelled():
            updates = fut.result()
        if updates is None:               # stopped by a newer change: again after the next pause
            self._dirty |= uris
        else:
            changed = []
            for uri, result in updates.items():
                if result is None:
                    if self.results.pop(uri, None) is not None:    # (no longer part of a program)
                        changed.append(uri)
                elif uri in self.ls.documents:
                    self.results[uri] = result
                    changed.append(uri)
            if changed:
                self.ls.deliver_programs(changed)
        if self._dirty:
            self._schedule()

    def findings(self, entry) -> list[Finding]:
        """The findings of the file of `entry` (a single-file analysis): its program's when
        it is part of one, carried past the edits since when they are older."""
        result = self.results.get(entry.uri)
        if result is None or entry.too_large:
            return entry.analysis.findings
        if result.text is entry.text:
            return result.findings
        shift = _Shift(result.text, entry.text)
        out = []
        for f in result.findings:
            start, end = shift.offset(f.start), shift.offset(f.end)
            if start is not None and end is not None:
                out.append(dataclasses.replace(f, start=start, end=end, related=[]))
        return out

    # -- worker --------------------------------------------------------------------------
    def _phase(self, uris: set[str], buffers: dict, changes: int, generation: int, options: Options,
               encoding: str) -> dict[str, FileResult | None] | None:
        """The programs `uris` belong to or are part of, analysed again where a module changed;
        {uri: its new share, or None when it is no longer part of a program}. None when a
        newer change stopped it (asked between the steps, and between the analysis' passes)."""
        started = time.perf_counter()
        with collector_off():         # (as the worker's own analyses: no full collection on the way)
            try:
                return self._run_phase(uris, buffers, changes, generation, options, encoding)
            except Cancelled:
                log.info("programs of %s: stopped by an edit after %.0f ms", ", ".join(sorted(uris)),
                         (time.perf_counter() - started) * 1000)
                return None

    def _run_phase(self, uris: set[str], buffers: dict, changes: int, generation: int, options: Options,
                   encoding: str) -> dict[str, FileResult | None] | None:
        started = time.perf_counter()
        by_path = {}
        for uri, (text, version) in buffers.items():
            path = path_of(uri)
            try:
                by_path[path.resolve()] = (uri, text, version)
            except OSError:
                continue
        reader = Reader(self, by_path)

        def stop() -> bool:
            return self.changes != changes

        def check() -> None:
            if stop():
                raise Cancelled()

        belongs: dict[str, tuple | None] = {}
        todo: dict[tuple, Program] = {}
        queue, imports = sorted(uris), self.imports
        while queue:
            uri = queue.pop()
            path = path_of(uri)
            key = path.resolve() if path is not None else None
            for k, program in self.programs.items():    # (a sibling's program holds it too)
                if key in program.texts:
                    todo[k] = program
            if uri not in buffers or uri in belongs or _over_limit(buffers[uri][0].text, options):
                continue
            belongs[uri] = found = self._member(key, reader, generation)
            if found is not None:
                if found not in self.programs:
                    self.programs[found] = Program(*found)
                todo[found] = self.programs[found]
            if self.imports != imports:     # its imports changed: any open file may belong elsewhere now
                imports = self.imports
                queue = sorted((set(queue) | set(buffers)) - {uri})
                belongs = {uri: found}
            check()
        for uri in buffers:
            key = path_of(uri).resolve()
            if uri not in belongs and key in self.members:   # (not touched: as last decided)
                belongs[uri] = self.members[key][1]
        updates: dict[str, FileResult | None] = {u: None for u, found in belongs.items() if found is None}
        for k, program in todo.items():
            try:
                self._analyse(program, reader, options, generation, stop, check)
            except (UserError, OSError, UnicodeDecodeError) as e:
                log.info("program of %s not analysed: %s", program.entry, e)
                updates.update({u: None for u, found in belongs.items() if found == k})
                continue
            for uri, (text, version) in buffers.items():
                key = path_of(uri).resolve()
                if belongs.get(uri) != k or program.texts.get(key) != text.text:
                    continue
                last = self.results.get(uri)
                if last is None or last.text is not text or last.analysis is not program.analysis:
                    updates[uri] = self._share(program, key, uri, text, version, options, encoding)
        live = {found for found in belongs.values() if found is not None} | {
            self.members[p][1] for p in by_path if p in self.members and self.members[p][1] is not None}
        for k in [k for k in self.programs if k not in live]:
            del self.programs[k]                            # no open file belongs to it any more
        log.info("programs of %s analysed in %.0f ms", ", ".join(sorted(uris)), (time.perf_counter() - started) * 1000)
        if todo:
            self.ls._since_collect += 1     # (its garbage, frozen with the rest, counts toward a full collection)
        return updates

    def _member(self, path: Path, reader: Reader, generation: int) -> tuple[Path, Path] | None:
        """(entry, root) of the program `path` (an open buffer) belongs to, or None (a
        program alone): cached while its signature and the files around it stay the same."""
        try:
            text = reader(path)
            sig = signature(text, reader.source(path, text).module)
        except (OSError, UnicodeDecodeError):
            return None
        cached = self.members.get(path)
        if cached is not None and cached[0] == (generation, self.imports, sig):
            return cached[1]
        if cached is not None and cached[0][:2] == (generation, self.imports) and cached[0][2] != sig:
            self.imports += 1             # its imports changed: others may belong elsewhere now
        try:
            found = plan.program_for(path, reader, bound=self.folder_of(path))
        except (OSError, UnicodeDecodeError, UserError) as e:
            log.info("program of %s not found: %s", path, e)
            found = None
        if found is not None:
            found = (found[0].resolve(), found[1].resolve())
        self.members[path] = ((generation, self.imports, sig), found)
        return found

    def folder_of(self, path: Path) -> Path | None:
        """The deepest workspace folder holding `path` (the root search stops there)."""
        path = Path(path).resolve()
        best = None
        folders = [f.uri for f in getattr(self.ls.workspace, "folders", {}).values()]
        root = getattr(self.ls.workspace, "root_uri", None)
        for uri in folders or ([root] if root else []):
            if urlparse(uri).scheme != "file":
                continue
            base = Path(unquote(urlparse(uri).path)).resolve()
            if (base == path.parent or base in path.parents) and (best is None or len(base.parts) > len(best.parts)):
                best = base
        return best

    def _analyse(self, program: Program, reader: Reader, options: Options, generation: int, stop, check) -> None:
        """Link and analyse `program` again if one of its modules changed; raises `Cancelled`
        (a newer change), UserError (the linked text is over the size limits or too deep)."""
        layout = Layout(program.root, program.entry, reader, known=reader.known(program, generation))
        paths = layout.program()
        check()
        texts = {p: layout.modules[p].text for p in paths}
        same = program.analysis is not None and program.options == options and texts.keys() == program.texts.keys() \
            and all(texts[p] is program.texts[p] or texts[p] == program.texts[p] for p in texts)
        if same:
            program.modules = dict(layout.modules)          # (read again: after a file event, say)
            program.buffered, program.generation = {p for p in texts if p in reader.buffers}, generation
            return
        started = time.perf_counter()
        lk = link(layout)
        too_large = _over_limit(lk.text, options)
        if too_large:
            raise UserError(f"{len(lk.line_starts)} lines linked: {too_large}")
        check()
        module = parse_in_steps(program.parser, lk.text, lk.line_starts, between=check)
        check()
        analysis = analyze(lk.text, module=module, memo=program.parser.memo, stop=stop,
                           line_starts=lk.line_starts, keras_target=options.keras_target,
                           library_spans=lk.library_spans(), scale_lr=options.scale_lr,
                           require_local_fs=options.require_local_fs)
        if analysis.error is not None:
            raise UserError(f"{program.entry}: {analysis.error.message}")
        program.modules, program.texts = dict(layout.modules), texts
        program.buffered, program.generation = {p for p in texts if p in reader.buffers}, generation
        program.link, program.analysis, program.options = lk, analysis, options
        log.info("program %s (%d modules, %d lines) analysed in %.0f ms", program.entry, len(paths),
                 len(lk.line_starts), (time.perf_counter() - started) * 1000)

    def _share(self, program: Program, path: Path, uri: str, text: Text, version: int | None,
               options: Options, encoding: str) -> FileResult:
        """The findings `program`'s analysis places in `path` (an open buffer at `text`), as
        diagnostics in that buffer; a fix only when all its edits fall in this file."""
        lk, analysis = program.link, program.analysis
        texts: dict[Path, Text] = {path: text}
        uris: dict[Path, str] = {path: uri}

        def place(offset: int) -> tuple[Path, int]:
            p, off = lk.locate(offset)
            return (p or lk.entry), off

        def located(p: Path, start: int, end: int) -> tuple[str, types.Range]:
            if p not in texts:
                texts[p], uris[p] = Text(lk.modules[p].text), p.as_uri()
            return uris[p], texts[p].range(start, end, encoding)

        findings, diagnostics = [], []
        for f in analysis.findings:
            if options.select is not None and f.code not in options.select:
                continue
            p, start = place(f.start)
            if p != path:
                continue
            p2, end = place(f.end)
            end = end if p2 == p and end >= start else start
            related, same = [], []
            for r in f.related:
                rp, rs = place(r.start)
                rp2, re_ = place(r.end)
                re_ = re_ if rp2 == rp and re_ >= rs else rs
                related.append((*located(rp, rs, re_), r.message))
                if rp == path:
                    same.append(Related(rs, re_, r.message))
            fixes = []
            for fix in [f.fix, *f.alternatives]:
                if fix is None:
                    continue
                try:
                    mapped = lk.file_edits(analysis.fix_edits(fix))
                except UserError:
                    continue
                if set(mapped) == {path}:
                    fixes.append({"title": fix.title, "edits": convert.edits_to_json(
                        convert.text_edits(mapped[path], text, encoding))})
            findings.append(dataclasses.replace(f, start=start, end=end, related=same))
            diagnostics.append(convert.located_diagnostic(f, text.range(start, end, encoding), related, fixes,
                                                          version, options))
        return FileResult(uri, text, version, findings, diagnostics, f"p{next(self._ids)}", program.entry, lk,
                          analysis)


def _over_limit(text: str, options: Options) -> str | None:
    lines = text.count("\n") + 1
    if options.max_file_lines and lines > options.max_file_lines:
        return f"over the maxFileLines limit ({options.max_file_lines})"
    if options.max_file_bytes and len(text) > options.max_file_bytes:
        return f"over the maxFileBytes limit ({options.max_file_bytes})"
    return None


# -- carried past an edit ----------------------------------------------------------------
class _Shift:
    """Offsets and lines of an older text of a buffer in a newer one: unchanged before the
    first changed character and after the last; None inside the change."""

    def __init__(self, old: Text, new: Text):
        a, b = old.text, new.text
        self.old, self.new = old, new
        self.prefix = _common_prefix(a, b)
        self.suffix = _common_prefix(a[self.prefix:][::-1], b[self.prefix:][::-1]) if a != b else 0
        self.delta = len(b) - len(a)
        self.old_end = len(a) - self.suffix                 # the change is old[prefix:old_end]
        starts = old.line_starts
        self.first_line = bisect.bisect_right(starts, self.prefix) - 1
        self.last_line = bisect.bisect_right(starts, self.old_end) - 1
        self.lines = len(new.line_starts) - len(starts)

    def offset(self, offset: int) -> int | None:
        if offset < self.prefix:
            return offset
        if offset >= self.old_end:
            return offset + self.delta
        return None

    def range(self, rng: types.Range) -> types.Range | None:
        """A range on lines before the changed lines stays; one on lines after them moves by
        the lines the edit added or removed; one on a changed line is dropped."""
        if rng.end.line < self.first_line:
            return rng
        if rng.start.line > self.last_line:
            return types.Range(start=types.Position(line=rng.start.line + self.lines, character=rng.start.character),
                               end=types.Position(line=rng.end.line + self.lines, character=rng.end.character))
        return None


def _common_prefix(a: str, b: str) -> int:
    """Length of the common prefix (slices compared in halves: C speed, no per-character loop)."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[lo:mid] == b[lo:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def carried(result: FileResult, text: Text, uri: str, version: int | None) -> list[types.Diagnostic]:
    """`result`'s diagnostics (made for an older text of the buffer) in `text`: those on the
    lines the edits changed dropped, the others moved by the lines added or removed, their
    fixes left out (they were made for the older text; the next result has them)."""
    shift = _Shift(result.text, text)
    out = []
    for d in result.diagnostics:
        rng = shift.range(d.range)
        if rng is None:
            continue
        related = None
        if d.related_information:
            related = []
            for r in d.related_information:
                if r.location.uri != uri:
                    related.append(r)
                    continue
                moved = shift.range(r.location.range)
                if moved is not None:
                    related.append(types.DiagnosticRelatedInformation(
                        location=types.Location(uri=uri, range=moved), message=r.message))
        data = dict(d.data, version=version, fixes=[]) if isinstance(d.data, dict) else d.data
        out.append(attrs.evolve(d, range=rng, related_information=related or None, data=data))
    return out
