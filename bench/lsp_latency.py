"""Edit -> publishDiagnostics latency of ``horovodize serve`` and ``ruff server`` over stdio.

For generated TensorFlow programs of 1k, 10k and 50k lines (``bench/programs.py``), each
server gets the file with ``didOpen``, then one-character incremental edits, one at a
time (100; a fifth of that above 10k lines); the latency of an edit is the time from
sending ``didChange`` to receiving the ``publishDiagnostics`` for that version. Printed:
open time, the first edit (sent as soon as the open's diagnostics arrive, while the
server still fills its memo) and p50/p95 of the other edits per server and size, their ratios to ``ruff server``
(the speed users compare with), each server's resident memory after the edits (VmRSS,
and its peak VmHWM, from ``/proc/<pid>/status``), and, for reference, in-process
timings of the server's own steps: the full parse and first analysis of the file, per
one-character edit the incremental parse and the analysis with the buffer's memo, and
p50/p95 of parse + analysis per keystroke while a new function is typed into the middle
of the file (``--no-reference`` skips them).

    .venv/bin/python bench/lsp_latency.py [--sizes 1000 10000 50000] [--edits 100] [--no-ruff]
                                          [--baseline GIT-REV] [--converted] [--opens N]
                                          [--project [--pace SECONDS]]

``--converted`` edits each program after the whole-file conversion: a program that uses
Horovod, as it is edited after `horovodize convert`, where the HVD2xx checks run too.

``--project`` edits a module of a program of several modules instead (``bench/programs.py``'s
`project`: an entry script of 40 lines, open, and a module of N lines it imports, where the
edits go). Per server: the keystroke latency (didChange -> the first publishDiagnostics of
that version) while typing (each edit sent when the previous one's diagnostics arrive) and
while typing at a steady pace (``--pace``, default 0.2 s between edits: the server's pause
before it analyses the program again is 0.15 s, so each program analysis starts and is
interrupted by the next keystroke), and the program's latency: didChange -> the publish of
the program's findings for that version (the second publish; the server waits for a pause
first, so it is measured with one edit at a time). After the edits the module's
diagnostics are checked against the program's analysis (``horovodize check``'s).

``--opens N`` times only the open instead: N rounds per size, each server once per round
in a new process (so a slow minute falls on all of them alike), and prints each one's
median, min and max and its ratio to ruff per round.

``--baseline REV`` also runs the server of an earlier commit (``git archive REV server``)
in the same run, so a before/after comparison sees the same machine load. ``--pure`` also
runs this server with its compiled modules off (``HOROVODIZE_PURE=1``, `horovodize.native`);
the first lines say which modules each server runs compiled.

The targets (issue 36), printed after the table with the figures that meet them or not,
for the pure-Python server (``pure`` with ``--pure``, as the ``.vsix`` ships, else
``horovodize``): keystroke p95 <= 1.5x ruff's at 10k and at 50k lines; open <= 5x ruff's
at 10k; the first edit after a 50k-line open <= 300 ms; RSS after the edits at 10k <= 120
MiB. `make bench` runs all sizes with ``--pure``.

A script that prints figures, not a test.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from lsprotocol import types
from pygls.lsp.client import LanguageClient

sys.path.insert(0, str(Path(__file__).parent))
from horovodize.engine import analyze, convert_text
from programs import program, project


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    k = (len(ordered) - 1) * p / 100
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def edit_sites(text: str, count: int) -> list[tuple[int, int]]:
    """(line, column) after ``return `` in function bodies spread over the file."""
    lines = text.split("\n")
    sites = [(i, line.index("return ") + len("return ")) for i, line in enumerate(lines)
             if line.startswith("    return ") and len(line) > len("    return ")]
    step = max(1, len(sites) // count)
    picked = sites[::step][:count]
    while len(picked) < count:
        picked += picked[: count - len(picked)]
    return picked


# -- an LSP session ---------------------------------------------------------------------
class Session:
    def __init__(self, command: list[str], root: Path, env: dict | None = None):
        self.last: types.PublishDiagnosticsParams | None = None
        self.command = command
        self.env = env
        self.root = root
        self.client = LanguageClient("horovodize-bench", "1")
        self.published: asyncio.Queue = asyncio.Queue()

        @self.client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def on_publish(params: types.PublishDiagnosticsParams):
            self.published.put_nowait((time.perf_counter(), params))

        @self.client.feature(types.WINDOW_LOG_MESSAGE)
        def on_log(params):
            pass

        @self.client.feature(types.WORKSPACE_CONFIGURATION)
        def on_configuration(params):
            return [None for _ in params.items]

    async def start(self):
        await self.client.start_io(*self.command, **({"env": self.env} if self.env else {}))
        caps = types.ClientCapabilities(
            text_document=types.TextDocumentClientCapabilities(
                synchronization=types.TextDocumentSyncClientCapabilities(),
                publish_diagnostics=types.PublishDiagnosticsClientCapabilities(version_support=True)),
            workspace=types.WorkspaceClientCapabilities(configuration=True))
        params = types.InitializeParams(
            capabilities=caps, root_uri=self.root.as_uri(), process_id=None,
            workspace_folders=[types.WorkspaceFolder(uri=self.root.as_uri(), name="bench")])
        # The result is not structured: pygls' client cannot read ruff's notebook filters.
        protocol = self.client.protocol
        future = protocol.send_request(types.INITIALIZE, params, msg_id="initialize")
        protocol._result_types.pop("initialize", None)
        await asyncio.wrap_future(future)
        self.client.initialized(types.InitializedParams())

    def memory(self) -> tuple[float, float]:
        """(VmRSS, VmHWM) of the server process in MiB (0 where /proc is missing)."""
        proc = getattr(self.client, "_server", None)
        found = {"VmRSS": 0.0, "VmHWM": 0.0}
        try:
            with open(f"/proc/{proc.pid}/status") as f:
                for line in f:
                    key, _, value = line.partition(":")
                    if key in found:
                        found[key] = int(value.split()[0]) / 1024
        except (OSError, AttributeError, ValueError):
            pass
        return found["VmRSS"], found["VmHWM"]

    async def stop(self):
        try:
            await asyncio.wait_for(self.client.shutdown_async(None), 10)
            self.client.exit(None)
        except (TimeoutError, OSError, RuntimeError) as e:
            print(f"{self.command[0]}: shutdown: {e!r}", file=sys.stderr)
        await self.client.stop()

    async def wait(self, uri: str, version: int, timeout: float) -> float:
        """Time of the publishDiagnostics for `version` (or the next one without a version)."""
        deadline = time.perf_counter() + timeout
        while True:
            left = deadline - time.perf_counter()
            if left <= 0:
                raise TimeoutError(f"no diagnostics for version {version}")
            when, params = await asyncio.wait_for(self.published.get(), left)
            if params.uri == uri and (params.version is None or params.version >= version):
                self.last = params
                return when

    async def open_only(self, path: Path, timeout: float) -> float:
        """didOpen -> publishDiagnostics of `path`, in seconds."""
        item = types.TextDocumentItem(uri=path.as_uri(), language_id="python", version=1, text=path.read_text())
        t0 = time.perf_counter()
        self.client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=item))
        return await self.wait(path.as_uri(), 1, timeout) - t0

    async def measure(self, path: Path, edits: int, timeout: float) -> tuple[float, list[float], str]:
        """(open latency, edit latencies, the final text)."""
        text = path.read_text()
        uri = path.as_uri()
        opened = await self.open_only(path, timeout)
        latencies = []
        lines = text.split("\n")
        for version, (line, col) in enumerate(edit_sites(text, edits), start=2):
            lines[line] = lines[line][:col] + "x" + lines[line][col:]
            pos = types.Position(line=line, character=col)
            t0 = time.perf_counter()
            self.client.text_document_did_change(types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
                content_changes=[types.TextDocumentContentChangePartial(
                    range=types.Range(start=pos, end=pos), text="x")]))
            latencies.append(await self.wait(uri, version, timeout) - t0)
        return opened, latencies, "\n".join(lines)


    async def measure_project(self, entry: Path, module: Path, edits: int, pace: float, timeout: float,
                              program_wait: float) -> tuple[float, list[float], list[float], list[float], str]:
        """(open latency of `module`, keystrokes typed, keystrokes paced, the program's
        latencies, the module's final text) with `entry` open too."""
        await self.open_only(entry, timeout)
        uri = module.as_uri()
        opened = await self.open_only(module, timeout)
        try:          # the program's first findings (a server that has them: none before 99b3782)
            await self.wait(uri, 1, program_wait)
        except TimeoutError:
            program_wait = 0
        text = module.read_text()
        lines = text.split("\n")
        typed, paced, programs = [], [], []
        for version, (line, col) in enumerate(edit_sites(text, 3 * edits), start=2):
            lines[line] = lines[line][:col] + "x" + lines[line][col:]
            pos = types.Position(line=line, character=col)
            t0 = time.perf_counter()
            self.client.text_document_did_change(types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
                content_changes=[types.TextDocumentContentChangePartial(
                    range=types.Range(start=pos, end=pos), text="x")]))
            first = await self.wait(uri, version, timeout) - t0
            phase = (version - 2) // edits
            if phase == 0:
                typed.append(first)
            elif phase == 1:
                paced.append(first)
                await asyncio.sleep(max(0.0, pace - first))
            elif program_wait:
                try:
                    programs.append(await self.wait(uri, version, program_wait) - t0)
                except TimeoutError:
                    program_wait = 0
        if program_wait:       # (the last edit's program findings, for the check)
            await asyncio.sleep(0.5)
            while not self.published.empty():
                _when, params = self.published.get_nowait()
                if params.uri == uri:
                    self.last = params
        return opened, typed, paced, programs, "\n".join(lines)


async def run_project(name: str, command: list[str], files: dict[str, Path], edits: int, pace: float,
                      timeout: float, env=None):
    session = Session(command, files["train.py"].parent, env)
    await session.start()
    try:
        result = await session.measure_project(files["train.py"], files["helpers.py"], edits, pace, timeout,
                                               program_wait=min(timeout, 30.0) if name != "ruff" else 0)
        memory = session.memory()
    finally:
        await session.stop()
    opened, typed, paced, programs, final = result
    if programs:        # the module's diagnostics equal the program's analysis of the final text
        from horovodize.project.program import analyze_program

        module = files["helpers.py"].resolve()
        texts = {module: final}
        _layout, lk, analysis = analyze_program(files["train.py"], lambda p: texts.get(Path(p).resolve()) or Path(p).read_text(),
                                                files["train.py"].parent, strict=False)
        want = []
        for f in analysis.findings:
            path, off = lk.locate(f.start)
            if path == module:
                want.append((f.code, *lk.modules[path].source.position(off)))
        got = [(d.code, d.range.start.line, d.range.start.character) for d in session.last.diagnostics]
        if sorted(got) != sorted(want):
            print(f"MISMATCH (project) after {3 * edits} edits: only from the server {sorted(set(got) - set(want))[:5]},"
                  f" only from the program's analysis {sorted(set(want) - set(got))[:5]}", file=sys.stderr)
    return opened, typed, paced, programs, memory


async def projects(servers: list, sizes: list[int], edits: int, pace: float, timeout: float) -> int:
    """`--project`: keystrokes in a module of a program of several modules (see the docstring)."""
    rows = []
    with tempfile.TemporaryDirectory(prefix="horovodize-bench-project-") as tmp:
        for size in sizes:
            folder = Path(tmp) / f"project_{size}"
            folder.mkdir()
            (folder / "pyproject.toml").write_text("[project]\nname = 'bench'\n")
            files = {}
            for name, text in project(size).items():
                files[name] = folder / name
                files[name].write_text(text)
            lines = files["helpers.py"].read_text().count("\n")
            for name, command, env in servers:
                print(f"{name}: project, a module of {lines} lines, 3 x {edits} edits ...", file=sys.stderr, flush=True)
                rows.append((lines, name, *await run_project(name, command, files, edits, pace, timeout, env)))
    print(f"\n{'lines':>6} {'server':<11} {'open ms':>8} {'typed p50':>9} {'typed p95':>9} {'paced p50':>9}"
          f" {'paced p95':>9} {'prog. p50':>9} {'prog. p95':>9} {'RSS MiB':>8} {'peak MiB':>8}")
    for lines, name, opened, typed, paced, programs, (rss, hwm) in rows:
        prog = (f"{ms(percentile(programs, 50)):>9} {ms(percentile(programs, 95)):>9}" if programs
                else f"{'-':>9} {'-':>9}")
        print(f"{lines:>6} {name:<11} {ms(opened)} {ms(percentile(typed[1:], 50)):>9} {ms(percentile(typed[1:], 95)):>9}"
              f" {ms(percentile(paced, 50)):>9} {ms(percentile(paced, 95)):>9} {prog} {rss:8.0f} {hwm:8.0f}")
    print(f"\n(a module of a program of two modules, the entry open beside it; open: didOpen -> the first"
          f" publishDiagnostics of the module; typed: each edit sent when the previous one's diagnostics"
          f" arrive (the first left out); paced: one edit every {pace:.2f} s; prog.: didChange -> the"
          f" publish of the program's findings for that version, one edit at a time (the server waits for a"
          f" pause in the edits first); ms)")
    return 0


async def run_server(name: str, command: list[str], path: Path, edits: int, timeout: float, env=None):
    session = Session(command, path.parent, env)
    await session.start()
    try:
        opened, latencies, final = await session.measure(path, edits, timeout)
        memory = session.memory()
    finally:
        await session.stop()
    if name == "horovodize":   # the incremental (diff-parsed) result equals a fresh analysis
        fresh = analyze(final)
        got = [(d.code, d.range.start.line, d.range.start.character) for d in session.last.diagnostics]
        want = [(f.code, *fresh.source.position(f.start)) for f in fresh.findings]
        if got != want:
            print(f"MISMATCH after {edits} edits: only from the server {sorted(set(got) - set(want))[:5]},"
                  f" only from a fresh analysis {sorted(set(want) - set(got))[:5]}", file=sys.stderr)
    return opened, latencies, memory


# -- in-process references --------------------------------------------------------------
def reference(text: str) -> dict[str, float]:
    """The server's own steps in this process (gc off, as its worker runs them): a full
    parse, the first analysis (without the memo, as the server opens a file), the memo
    filled after it (`HorovodizeServer._prime`), and per one-character edit the
    incremental parse (the buffer's `IncrementalParser`) and the analysis with the
    buffer's memo."""
    import gc

    from horovodize.lsp.server import IncrementalParser
    from horovodize.lsp.text import Text

    collecting = gc.isenabled()
    gc.disable()
    try:
        buffer = Text(text)
        parser = IncrementalParser()
        t = time.perf_counter()
        module = parser.parse(buffer.text, buffer.line_starts)
        parsed = time.perf_counter() - t
        t = time.perf_counter()        # (as the server opens it: no memo, then the memo filled)
        analyze(buffer.text, module=module, line_starts=buffer.line_starts)
        first = time.perf_counter() - t
        t = time.perf_counter()
        analyze(buffer.text, module=module, memo=parser.memo, line_starts=buffer.line_starts)
        parser.memo.count_keys()
        fill = time.perf_counter() - t
        diffs, analyses = [], []
        for line, col in edit_sites(text, 10):
            at = types.Position(line=line, character=col)
            buffer = buffer.apply(types.TextDocumentContentChangePartial(range=types.Range(start=at, end=at), text="x"))
            t = time.perf_counter()
            module = parser.parse(buffer.text, buffer.line_starts)
            diffs.append(time.perf_counter() - t)
            t = time.perf_counter()
            analyze(buffer.text, module=module, memo=parser.memo, line_starts=buffer.line_starts)
            analyses.append(time.perf_counter() - t)
        # a new function typed on the blank line between two functions (as people type),
        # then the same typed at the start of a ``def`` line (each character lands before
        # the ``def`` until the first newline: a worse case, the run does not settle and
        # parso's diff parser takes the edit)
        typing = _type(parser, buffer, buffer.text.index("\n\ndef ", len(buffer.text) // 2) + 1, TYPED)
        buffer = Text(buffer.text)
        parser = IncrementalParser()
        analyze(buffer.text, module=parser.parse(buffer.text, buffer.line_starts), memo=parser.memo,
                line_starts=buffer.line_starts)
        before_def = _type(parser, buffer, buffer.text.index("\ndef ", len(buffer.text) // 2) + 1, TYPED)
    finally:
        buffer = parser = module = None
        if collecting:
            gc.enable()
        gc.collect()     # the trees' cycles now, not while the servers are timed (a ~0.5 s pause)
    return {"parse": parsed, "first": first, "fill": fill, "diff": statistics.median(diffs), "analyze": statistics.median(analyses),
            "typing50": percentile(typing, 50), "typing95": percentile(typing, 95),
            "before_def95": percentile(before_def, 95)}


def _type(parser, buffer, at: int, typed: str) -> list[float]:
    """Parse + analysis per keystroke while `typed` is typed at offset `at`."""
    out = []
    for char in typed:
        start = buffer.position(at)
        buffer = buffer.apply(types.TextDocumentContentChangePartial(
            range=types.Range(start=start, end=start), text=char))
        at += 1
        t = time.perf_counter()
        module = parser.parse(buffer.text, buffer.line_starts)
        analyze(buffer.text, module=module, memo=parser.memo, line_starts=buffer.line_starts)
        out.append(time.perf_counter() - t)
    return out


# Typed one character at a time by the in-process reference: a function name, parameters,
# a local that reads like a member alias until its call's `(` (``z = tf.cast``), a return.
TYPED = "def scale_batch(images, factor):\n    scaled = tf.cast(images, tf.float32)\n    return scaled * factor\n\n"


async def interleaved_opens(servers: list, sizes: list[int], rounds: int, converted: bool, timeout: float) -> int:
    """`rounds` rounds per size of didOpen -> publishDiagnostics, each server once per round
    in a new process, so a slow minute of the machine falls on all of them alike; prints
    each server's median, min and max, and per round the ratio to ruff."""
    print(f"\n{'lines':>6} {'server':<11} {'opens':>5} {'median':>8} {'min':>8} {'max':>8} {'median/ruff':>11}"
          f" {'per round /ruff':>16}")
    with tempfile.TemporaryDirectory(prefix="horovodize-bench-") as tmp:
        for size in sizes:
            text = convert_text(program(size)) if converted else program(size)
            path = Path(tmp) / f"train_{size}.py"
            path.write_text(text)
            times: dict[str, list[float]] = {name: [] for name, _c, _e in servers}
            for k in range(rounds):
                print(f"opens: {size} lines, round {k + 1} of {rounds} ...", file=sys.stderr, flush=True)
                for name, command, env in servers:
                    session = Session(command, path.parent, env)
                    await session.start()
                    try:
                        times[name].append(await session.open_only(path, timeout))
                    finally:
                        await session.stop()
            ruff = times.get("ruff")
            for name, found in times.items():
                med = statistics.median(found)
                per = (f"{min(a / b for a, b in zip(found, ruff)):.1f}–{max(a / b for a, b in zip(found, ruff)):.1f}x"
                       if ruff and name != "ruff" else "-")
                print(f"{text.count(chr(10)):>6} {name:<11} {len(found):>5} {ms(med)} {ms(min(found))} {ms(max(found))}"
                      f" {ratio(med, ruff and name != 'ruff' and statistics.median(ruff)):>11} {per:>16}")
    return 0


TARGETS = (   # (lines, what, the server's figure from a row, ruff's, limit, as a ratio to ruff?)
    (10000, "keystroke p95", lambda r: percentile(r[4][1:], 95), 1.5, True),
    (50000, "keystroke p95", lambda r: percentile(r[4][1:], 95), 1.5, True),
    (10000, "open", lambda r: r[3], 5.0, True),
    (50000, "first edit after the open", lambda r: r[4][0], 0.300, False),
    (10000, "RSS after the edits (MiB)", lambda r: r[5], 120, False),
)


def targets(rows: list, server: str) -> None:
    """Each target of issue 36 the run measured: the figure, the limit, met or not."""
    found = {(lines // 1000 * 1000, name): row for row in rows for lines, name in [row[:2]]}
    printed = False
    for size, what, figure, limit, relative in TARGETS:
        row, ruff = found.get((size, server)), found.get((size, "ruff"))
        if row is None or (relative and ruff is None):
            continue
        if not printed:
            print(f"\ntargets ({server}):")
            printed = True
        value = figure(row)
        if relative:
            got, shown = value / figure(ruff), f"{value * 1000:.1f} ms vs ruff {figure(ruff) * 1000:.1f} ms"
            text = f"{got:.1f}x ruff (<= {limit}x)"
        else:
            got = value
            shown = f"{value * 1000:.0f} ms" if limit < 1 else f"{value:.0f}"
            text = f"<= {limit * 1000:.0f} ms" if limit < 1 else f"<= {limit}"
        print(f"  {size // 1000:>3}k {what:<27} {shown:<34} {text:<22} {'met' if got <= limit else 'NOT MET'}")


def ms(seconds: float) -> str:
    return f"{seconds * 1000:8.1f}"


def edits_for(size: int, edits: int) -> int:
    """Fewer edits on the largest files, so one run stays within minutes."""
    return edits if size <= 10000 else max(10, edits // 5)


def ratio(value: float, base: float | None) -> str:
    return f"{value / base:6.1f}x" if base else f"{'-':>7}"


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 50000])
    parser.add_argument("--edits", type=int, default=100)
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds to wait for one publish")
    parser.add_argument("--no-ruff", action="store_true")
    parser.add_argument("--no-reference", action="store_true", help="skip the in-process timings")
    parser.add_argument("--baseline", metavar="GIT-REV", help="also run the server of this commit")
    parser.add_argument("--pure", action="store_true",
                        help="also run this server with its compiled modules off (HOROVODIZE_PURE=1)")
    parser.add_argument("--converted", action="store_true",
                        help="edit each program after `horovodize convert` (a Horovod program: the HVD2xx checks run)")
    parser.add_argument("--opens", type=int, default=0, metavar="N",
                        help="instead: N rounds of opens per size, each server in turn (a new process each), "
                             "and their medians (one run's open moves by 10-30%% on a noisy machine)")
    parser.add_argument("--project", action="store_true",
                        help="instead: edits of a module of a program of several modules (an entry and the module "
                             "it imports; --sizes is the module's)")
    parser.add_argument("--pace", type=float, default=0.2, metavar="SECONDS",
                        help="--project: seconds between the paced edits (default 0.2)")
    parser.add_argument("--profile", metavar="FILE",
                        help="run this server under py-spy (pip install 'horovodize[bench]') and write its "
                             "samples of every thread, as collapsed stacks, to FILE (one per size: FILE.<lines>)")
    args = parser.parse_args()
    if args.opens < 0:
        parser.error("--opens must be 0 or more")

    ruff = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    servers = [("horovodize", [sys.executable, "-m", "horovodize", "serve"], None)]
    if args.profile:
        spy = shutil.which("py-spy", path=str(Path(sys.executable).parent)) or shutil.which("py-spy")
        if spy is None:
            parser.error("--profile needs py-spy: pip install 'horovodize[bench]'")
        servers = [("horovodize", [spy, "record", "--threads", "--nonblocking", "-r", "500", "-f", "raw",
                                   "-o", args.profile, "--", *servers[0][1]], None)]
    baseline_dir = tempfile.TemporaryDirectory(prefix="horovodize-baseline-")
    if args.baseline:
        root = Path(__file__).resolve().parent.parent
        archive = subprocess.run(["git", "-C", str(root), "archive", args.baseline, "server"],
                                 capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", baseline_dir.name], input=archive, check=True)
        env = dict(os.environ, PYTHONPATH=str(Path(baseline_dir.name) / "server"))
        servers.append((f"@{args.baseline}"[:11], [sys.executable, "-m", "horovodize", "serve"], env))
    if args.pure:
        servers.append(("pure", [sys.executable, "-m", "horovodize", "serve"], dict(os.environ, HOROVODIZE_PURE="1")))
    for name, command, env in servers:            # (compiled or pure: horovodize.native)
        if command[0] == sys.executable:
            status = subprocess.run([sys.executable, "-c", "from horovodize import native; print(native.status())"],
                                    env=env, capture_output=True, text=True).stdout.strip()
            print(f"{name}: {status or 'pure Python (no horovodize.native in that commit)'}", file=sys.stderr)
    if ruff and not args.no_ruff:
        servers.append(("ruff", [ruff, "server"], None))
    elif not args.no_ruff:
        print("ruff not found: skipped (pip install 'horovodize[bench]')", file=sys.stderr)

    if args.opens:
        return await interleaved_opens(servers, args.sizes, args.opens, args.converted, args.timeout)
    if args.project:
        return await projects(servers, args.sizes, edits_for(max(args.sizes), args.edits), args.pace, args.timeout)

    rows = []
    with tempfile.TemporaryDirectory(prefix="horovodize-bench-") as tmp:
        for size in args.sizes:
            text = convert_text(program(size)) if args.converted else program(size)
            path = Path(tmp) / f"train_{size}.py"
            path.write_text(text)
            ref = None if args.no_reference else reference(text)
            edits = edits_for(size, args.edits)
            results = {}
            for name, command, env in servers:
                print(f"{name}: {size} lines, {edits} edits ...", file=sys.stderr, flush=True)
                results[name] = await run_server(name, command, path, edits, args.timeout, env)
            base = results.get("ruff")
            for name, (opened, lat, (rss, hwm)) in results.items():
                rows.append((text.count("\n"), name, edits, opened, lat, rss, hwm, ref,
                             None if base is None or name == "ruff" else base))

    print(f"\n{'lines':>6} {'server':<11} {'edits':>5} {'open ms':>8} {'1st edit':>8} {'p50 ms':>8} {'p95 ms':>8}"
          f" {'max ms':>8} {'open/ruff':>9} {'p95/ruff':>8} {'RSS MiB':>8} {'peak MiB':>8}"
          f" | {'parse':>8} {'1st anal.':>9} {'memo fill':>9} {'edit parse':>10} {'edit anal.':>10} {'typing p50':>10}"
          f" {'typing p95':>10} {'@def p95':>9}")
    for lines, name, edits, opened, lat, rss, hwm, ref, base in rows:
        rest = lat[1:]
        p95 = percentile(rest, 95)
        refs = (f" | {ms(ref['parse'])} {ms(ref['first']):>9} {ms(ref['fill']):>9} {ms(ref['diff']):>10}"
                f" {ms(ref['analyze']):>10} {ms(ref['typing50']):>10} {ms(ref['typing95']):>10}"
                f" {ms(ref['before_def95']):>9}" if ref and name == "horovodize" else "")
        print(f"{lines:>6} {name:<11} {edits:>5} {ms(opened)} {ms(lat[0])} {ms(percentile(rest, 50))} {ms(p95)}"
              f" {ms(max(rest))}  {ratio(opened, base and base[0])}  {ratio(p95, base and percentile(base[1][1:], 95))}"
              f" {rss:8.0f} {hwm:8.0f}{refs}")
    targets(rows, "pure" if args.pure else "horovodize")
    print("\n(open: didOpen -> publishDiagnostics; 1st edit: the first didChange -> publishDiagnostics, sent"
          " as soon as the open's diagnostics arrive (it waits for the memo to be filled); p50/p95/max: the"
          " other edits, over stdio; RSS after the edits, peak = VmHWM; the last eight columns are the"
          " server's steps in this process: full parse, first analysis (no memo), the memo filled after"
          " it, per edit (median) the incremental parse and analysis, and parse + analysis per keystroke"
          " while a new three-line function is typed on a blank line in the middle of the file, and typed"
          " at the start of a `def` line there (@def), ms)")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
