"""The checks of ``horovodize verify`` (the rehearsal) over what its runs reported, their
text table and JSON, and ``--set NAME=VALUE``.

`Run` is one launch (the single run, or the distributed run on N ranks) with the per-rank
reports the wrapper (`verify_wrapper`) wrote; `evaluate` turns the two runs into `Check`s,
each PASS, FAIL or SKIP with its reason and, where it can, the rank, the path and the
line of the user's file it points to. Lines of the script that ran (converted, or with
``--set`` applied) are mapped back to the user's file by a line diff.

Requires: the standard library only (no TensorFlow, no Horovod).
"""

from __future__ import annotations

import ast
import difflib
import json
import math
import os
import re
from dataclasses import dataclass, field

PASS, FAIL, SKIP = "PASS", "FAIL", "SKIP"
CHECKS = ("converts", "ranks finish", "same weights", "work divided", "writes", "prints", "cold cache", "own disks")

# What ranks > 0 may print: TensorFlow / absl / Horovod / Python logging and warnings.
NOISE = re.compile(
    r"^\s*(\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d[.,]\d+:? ?[IWEF]? |[IWEF]\d{4} \d\d:\d\d|\[\d{4}-\d\d-\d\d |"
    r"(WARNING|INFO|ERROR|DEBUG|CRITICAL|W|I|E)[: ]|[\w./-]+\.py:\d+: \w*Warning|\w*Warning: |"
    r"To enable the following instructions|This TensorFlow binary|Instructions for updating|"
    r"warnings\.warn|Downloading data from |\d+/\d+ \[[=>.]*\] - (ETA: \S+|\S+ \S+/step)\s*$|\s*$)")


@dataclass
class Check:
    check: str
    status: str
    reason: str
    rank: int | None = None
    path: str | None = None
    line: int | None = None

    def to_json(self) -> dict:
        d = {"check": self.check, "status": self.status, "reason": self.reason}
        for k in ("rank", "path", "line"):
            if getattr(self, k) is not None:
                d[k] = getattr(self, k)
        return d


@dataclass
class Run:
    """One launch: `np` ranks (1 for the single run), what each rank reported."""
    label: str
    np: int
    reports: dict = field(default_factory=dict)     # rank -> the wrapper's JSON
    stdout: dict = field(default_factory=dict)      # rank -> lines horovodrun captured
    stderr: dict = field(default_factory=dict)
    strace: dict = field(default_factory=dict)      # rank -> [(event, path, time)] (C code's writes)
    strace_reads: dict = field(default_factory=dict)  # rank -> [(path, time, found)] (two hosts: C code's reads)
    strace_used: bool = False
    exit: int | None = None
    timed_out: bool = False
    wall: float = 0.0
    leftover: list = field(default_factory=list)    # pids alive after the kill at timeout
    output: str = ""
    error: str | None = None                        # the launcher's own error


@dataclass
class Context:
    user_path: str            # the user's file, as given
    user_text: str            # its text
    run_text: str             # the text of the script that ran distributed
    single_text: str          # the text of the script of the single run
    np: int
    as_is: bool
    cold_cache: bool
    cache_dirs: tuple = ()
    temp_dirs: tuple = ()
    hosts: int = 1
    host_roots: tuple = ()    # two simulated hosts: each one's folder (host-K/{cwd,home,tmp})
    _maps: dict = field(default_factory=dict)

    def host_of(self, rank: int) -> int:
        return host_of(rank, self.np, self.hosts)

    def on_disk(self, path: str) -> tuple[int | None, str]:
        """(host, path on its disk): a path in a simulated host's folder, relative to it (each
        host has its own `cwd/...`), else (None, the path)."""
        for h, root in enumerate(self.host_roots):
            if path.startswith(root + os.sep):
                return h, path[len(root) + 1:]
        return None, path

    def cached(self, path: str) -> bool:
        return _under(path, self.cache_dirs)

    def temporary(self, path: str) -> bool:
        """In a temp dir: a simulated host's own TMPDIR, not the temp dir its folders live in."""
        host, rest = self.on_disk(path)
        return rest == "tmp" or rest.startswith("tmp" + os.sep) if host is not None else _under(path, self.temp_dirs)

    def line(self, run_line: int | None, single: bool = False) -> int | None:
        """The user's line for a line of the script that ran (distributed, or the single run)."""
        if run_line is None:
            return None
        if single not in self._maps:
            self._maps[single] = line_map(self.single_text if single else self.run_text, self.user_text)
        return self._maps[single].get(run_line)


def host_of(rank: int, np: int, hosts: int) -> int:
    """The simulated host of a rank: horovodrun fills the hosts in order, `np // hosts` each."""
    return rank // max(1, np // hosts)


def line_map(new: str, old: str) -> dict[int, int]:
    """1-based lines of `new` -> lines of `old` (changed lines -> the start of the old block)."""
    a, b = new.splitlines(), old.splitlines()
    out: dict[int, int] = {}
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "replace":
            # each line to the old line it was made from (the most alike, in order); a line the
            # conversion inserted (like none of them) to the old line of the next one that is
            pending, last = [], j1
            for k in range(i1, i2):
                j, ratio = max(((j, difflib.SequenceMatcher(None, a[k], b[j]).ratio()) for j in range(last, j2)),
                               key=lambda x: x[1], default=(last, 0.0))
                if ratio < 0.5:
                    pending.append(k)
                    continue
                for p in pending + [k]:
                    out[p + 1] = j + 1
                pending, last = [], j
            for p in pending:
                out[p + 1] = min(last, max(len(b) - 1, 0)) + 1
            continue
        for k in range(i1, i2):
            # an equal block maps line by line; an inserted line to the next old line
            out[k + 1] = min(j1 + min(k - i1, max(j2 - j1 - 1, 0)), max(len(b) - 1, 0)) + 1
    return out


# -- --set NAME=VALUE -----------------------------------------------------------------------------
class SetError(ValueError):
    pass


def parse_sets(items) -> list[tuple[str, str]]:
    out = []
    for item in items or ():
        name, eq, value = item.partition("=")
        name = name.strip()
        if not eq or not name.isidentifier():
            raise SetError(f"--set {item!r}: expected NAME=VALUE (e.g. --set EPOCHS=1)")
        try:
            ast.literal_eval(value.strip())
        except (ValueError, SyntaxError):
            raise SetError(f"--set {item}: the value must be a Python literal (quote a string: {name}='{value}')")
        out.append((name, value.strip()))
    return out


def _constant(node) -> bool:
    try:
        ast.literal_eval(node)
        return True
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False


def apply_sets(text: str, sets: list[tuple[str, str]]) -> str:
    """`text` with each module-level constant NAME = <literal> given the new VALUE; a `SetError`
    when NAME is not assigned a constant exactly once at module level."""
    if not sets:
        return text
    tree = ast.parse(text)
    lines = text.splitlines(keepends=True)
    starts = [0]
    for ln in lines:
        starts.append(starts[-1] + len(ln))

    def offset(lineno, col):  # ast columns are UTF-8 byte offsets
        return starts[lineno - 1] + len(lines[lineno - 1].encode("utf-8")[:col].decode("utf-8", "replace"))

    spans = []
    for name, value in sets:
        sites = []
        for node in tree.body:
            if (isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets)
                    or isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)
                    and node.target.id == name and node.value is not None):
                sites.append(node)
        if not sites:
            raise SetError(f"--set {name}: no module-level assignment `{name} = ...` in the file")
        if len(sites) > 1:
            raise SetError(f"--set {name}: assigned {len(sites)} times at module level (lines "
                           f"{', '.join(str(s.lineno) for s in sites)}); edit the file instead")
        node = sites[0]
        if isinstance(node, ast.Assign) and len(node.targets) > 1 or not _constant(node.value):
            raise SetError(f"--set {name}: line {node.lineno} does not assign a constant "
                           f"(`{ast.get_source_segment(text, node) or name}`)")
        v = node.value
        spans.append((offset(v.lineno, v.col_offset), offset(v.end_lineno, v.end_col_offset), value))
    for start, end, value in sorted(spans, reverse=True):
        text = text[:start] + value + text[end:]
    return text


# -- helpers --------------------------------------------------------------------------------------
def _under(path: str, dirs) -> bool:
    return any(d and (path == d or path.startswith(d.rstrip(os.sep) + os.sep)) for d in dirs)


def _short(path: str, ctx: Context) -> str:
    home = os.path.expanduser("~")
    return "~" + path[len(home):] if home != "/" and path.startswith(home + os.sep) else path


def _finished(run: Run) -> list[int]:
    return [r for r in range(run.np) if run.reports.get(r, {}).get("exit") == 0]


def _all_finished(run: Run | None) -> bool:
    return run is not None and len(_finished(run)) == run.np


def _first_error(run: Run, rank: int) -> str:
    rep = run.reports.get(rank)
    if rep is None:
        if run.timed_out:
            return "killed at the timeout (no report)"
        return "no report (crashed or killed)" + (f": {first_error(run.stderr.get(rank, []))}"
                                                  if first_error(run.stderr.get(rank, [])) else "")
    return f"exit {rep['exit']}" + (f": {rep['error']}" if rep.get("error") else "")


# Errors a rank gets because another rank died in a collective (Horovod, Gloo).
FOLLOWER = re.compile(r"Horovod|[Gg]loo|Connection (?:closed|reset|refused)|peer|shut ?down|ranks? (?:\d+ )?(?:exited|failed)")
ERROR_LINE = re.compile(r"^\s*([A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt|Failure)\b.*)$")


def first_error(lines) -> str | None:
    for line in lines:
        m = ERROR_LINE.match(line)
        if m and not line.lstrip().startswith(("File ", "Traceback")):
            return m.group(1).strip()[:300]
    return None


# -- the checks -----------------------------------------------------------------------------------
def check_finish(ctx: Context, single: Run | None, dist: Run, timeout: float) -> Check:
    failed = []     # (run, rank, reason) of each run that did not finish
    for run in ([single] if single else []) + [dist]:
        label = "single run" if run is single else f"{run.np} ranks"
        if run.error:
            failed.append((run, None, f"{label}: {run.error}"))
            continue
        bad = [r for r in range(run.np) if run.reports.get(r, {}).get("exit") != 0]
        # the cause first: a rank that failed on its own, before those a collective failed with it
        bad.sort(key=lambda r: bool(FOLLOWER.search(_first_error(run, r))))
        if bad:
            why = "; ".join(f"rank {b}: {_first_error(run, b)}" for b in bad)
            if run.timed_out:
                why = f"timed out after {timeout:.0f}s, every rank's process group killed" + (
                    f" (left alive: pids {run.leftover})" if run.leftover else "") + f"; {why}"
            failed.append((run, bad[0], f"{label}: {why}"))
    if failed:
        run, r, _ = failed[0]
        error_line = (run.reports.get(r) or {}).get("error_line") if r is not None else None
        return Check("ranks finish", FAIL, " | ".join(why for _, _, why in failed), rank=r, path=ctx.user_path,
                     line=ctx.line(error_line, single=run is single))
    walls = f"single run {single.wall:.0f}s, " if single else ""
    return Check("ranks finish", PASS, f"{walls}{dist.np} ranks {dist.wall:.0f}s, every rank exit 0")


def check_weights(ctx: Context, dist: Run) -> Check:
    if not _all_finished(dist):
        return Check("same weights", SKIP, "a rank did not finish")
    w0 = dist.reports[0].get("weights") or {}
    if not w0:
        return Check("same weights", SKIP, "no Keras model among the globals and no variable updated by an optimizer")
    # a model that exists on one rank only (loaded or built under a rank-0 guard, for an
    # evaluation or a display) is no disagreement: it is named, not compared
    alone = _models_in(w0).difference(*(_models_in(dist.reports[r].get("weights") or {}) for r in range(1, dist.np)))
    for r in range(1, dist.np):
        wr = dist.reports[r].get("weights") or {}
        differ = [k for k in list(w0) + [k for k in wr if k not in w0]
                  if w0.get(k) != wr.get(k) and _model_of(k) not in alone]
        if differ:
            k = differ[0]
            return Check("same weights", FAIL, f"rank {r} differs from rank 0 in {k} ({len(differ)} of "
                         f"{len(w0)} differ)", rank=r, path=ctx.user_path, line=_model_line(ctx, k))
    models = len(_models_in(w0) - alone)
    variables = sum(1 for k in w0 if k.startswith("variable "))
    only = f"; on rank 0 only, not compared: {', '.join(sorted(alone))}" if alone else ""
    return Check("same weights", PASS, f"{models} Keras model(s) and {variables} optimizer-updated variable(s) "
                 f"identical on {dist.np} ranks{only}")


def _model_of(key: str) -> str:
    """'model NAME' of a weight's key ('model NAME: layer/var')."""
    return key.split(":")[0]


def _models_in(weights: dict) -> set:
    """The models ('model NAME') whose weights a rank reported."""
    return {_model_of(k) for k in weights if k.startswith("model ")}


def _model_line(ctx: Context, key: str) -> int | None:
    m = re.match(r"(?:model|global) ([A-Za-z_]\w*)", key)
    if not m:
        return None
    for i, line in enumerate(ctx.user_text.splitlines(), 1):
        if re.match(rf"{m.group(1)}\s*(:[^=]*)?=[^=]", line):
            return i
    return None


def check_steps(ctx: Context, single: Run | None, dist: Run) -> Check:
    if single is None or not _all_finished(single):
        return Check("work divided", SKIP, "the single run did not finish")
    if not _all_finished(dist):
        return Check("work divided", SKIP, "a rank did not finish")
    base = single.reports[0].get("steps")
    if not base:
        return Check("work divided", SKIP, "no optimizer step counted in the single run (no Keras / tf.compat.v1 "
                     "optimizer seen, or a TF1 graph)")
    n = dist.np
    lo, hi = math.floor(base / n) - 1, math.ceil(base / n) + 1
    steps = {r: dist.reports[r].get("steps") for r in range(n)}
    # fit's epochs divided as Horovod's keras examples divide them, ceil(E / N) whole epochs
    # per rank: up to one epoch's steps more than an exact share (not when E < N: then
    # ceil(E / N) = E and nothing is divided)
    epochs = single.reports[0].get("epochs")
    whole = ""
    if epochs and math.ceil(epochs / n) < epochs and all(
            dist.reports[r].get("epochs") == math.ceil(epochs / n) for r in range(n)):
        hi = max(hi, math.ceil(math.ceil(epochs / n) * base / epochs) + 1)
        whole = f"; {math.ceil(epochs / n)} of {epochs} epochs each"
    for r, s in steps.items():
        if s is None or not lo <= s <= hi:
            return Check("work divided", FAIL, f"rank {r} made {s} optimizer steps, the single run {base}: each of "
                         f"{n} ranks should make about {base / n:g}", rank=r)
    return Check("work divided", PASS, f"single run {base} steps; ranks {', '.join(str(steps[r]) for r in range(n))}"
                 f" (about {base / n:g} each{whole})")


def _writes(run: Run, rank: int, timed: bool = False) -> list[tuple]:
    """(event, path, line) of a rank's writes: the audit hook's, then what only strace saw;
    (event, path, line, time) when `timed`."""
    rep = run.reports.get(rank) or {}
    seen = [(w[0], w[1], w[2], w[3] if len(w) > 3 else None) for w in rep.get("writes", []) if w[0] != "os.mkdir"]
    paths = {w[1] for w in seen}
    seen += [(e, p, None, t) for e, p, *rest in run.strace.get(rank, []) if p not in paths
             for t in [rest[0] if rest else None]]
    return seen if timed else [w[:3] for w in seen]


def check_writes(ctx: Context, dist: Run) -> list[Check]:
    """`writes` (no file written by two ranks; ranks > 0 only in caches and temp) and, with
    --cold-cache, `cold cache` (no cache file written by two ranks)."""
    done = [r for r in range(dist.np) if r in dist.reports]
    seen_by: dict[str, dict[int, int | None]] = {}
    for r in done:
        for _, p, ln in _writes(dist, r):
            seen_by.setdefault(p, {}).setdefault(r, ln)
    # ranks of different hosts never share a disk: a path outside the hosts' folders (here on one
    # machine) is written by two ranks only when they are on one host
    shared = {p: rk for p, rk in seen_by.items() if len(rk) > 1 and (
        ctx.hosts == 1 or len({ctx.host_of(r) for r in rk}) < len(rk))}
    per_host = _per_host_writes(ctx, dist, done) if ctx.hosts > 1 else set()
    out = []
    blind = "" if dist.strace_used else " (Python's writes only: strace is not installed, C code's writes unseen)"
    if len(done) < dist.np:
        out.append(Check("writes", SKIP, "a rank did not finish (no report)"))
    else:
        in_cache = {p for p in shared if ctx.cached(p)} if ctx.cold_cache else set()
        clash = [p for p in shared if p not in in_cache]
        outside = [(r, e, p, ln) for r in done if r > 0 for e, p, ln in _writes(dist, r)
                   if not ctx.cached(p) and not ctx.temporary(p) and ctx.on_disk(p)[1] not in per_host]
        if clash:
            p = clash[0]
            ranks = shared[p]
            line = next((ln for ln in ranks.values() if ln), None)
            out.append(Check("writes", FAIL, f"{_short(p, ctx)} written by ranks {', '.join(map(str, sorted(ranks)))}"
                             + (f" (and {len(clash) - 1} more path(s))" if len(clash) > 1 else ""),
                             rank=sorted(ranks)[1], path=ctx.user_path, line=ctx.line(line)))
        elif outside:
            r, e, p, ln = outside[0]
            out.append(Check("writes", FAIL, f"rank {r} wrote {_short(p, ctx)} ({e}), outside caches and temp",
                             rank=r, path=ctx.user_path, line=ctx.line(ln)))
        else:
            total = sum(len(_writes(dist, r)) for r in done)
            hosts = (f"; {len(per_host)} file(s) prepared once on each host (by its local rank 0)"
                     if per_host else "")
            out.append(Check("writes", PASS, f"{total} write(s), none by two ranks, none by ranks > 0 outside "
                             f"caches and temp{hosts}{blind}"))
    if not ctx.cold_cache:
        out.append(Check("cold cache", SKIP, "not asked (--cold-cache runs with empty Keras/TFDS/XDG caches)"))
    elif len(done) < dist.np:
        out.append(Check("cold cache", SKIP, "a rank did not finish (no report)"))
    else:
        race = [p for p in shared if ctx.cached(p)]
        if race:
            p = race[0]
            line = next((ln for ln in shared[p].values() if ln), None)
            out.append(Check("cold cache", FAIL, f"{os.path.basename(p)} in the empty cache written by ranks "
                             f"{', '.join(map(str, sorted(shared[p])))}: a download race on a first run",
                             rank=sorted(shared[p])[1], path=ctx.user_path, line=ctx.line(line)))
        else:
            n = sum(1 for p in seen_by if ctx.cached(p))
            each = ""
            if ctx.hosts > 1:
                per = [sum(1 for p in seen_by if ctx.cached(p) and ctx.on_disk(p)[0] == h) for h in range(ctx.hosts)]
                each = f" (hosts {', '.join(map(str, range(ctx.hosts)))}: {', '.join(map(str, per))})"
            out.append(Check("cold cache", PASS, f"caches started empty; {n} cache file(s) written{each}, none by "
                             "two ranks"))
    return out


def _per_host_writes(ctx: Context, dist: Run, done) -> set:
    """Paths on a host's own disk (`cwd/...`) that the first rank of every host wrote: data a
    host prepares for itself (a download extracted into the project, once per host)."""
    firsts = [r for r in done if r == 0 or ctx.host_of(r) != ctx.host_of(r - 1)]
    if len(firsts) < ctx.hosts:
        return set()
    sets = [{rest for _, p, _ in _writes(dist, r) for h, rest in [ctx.on_disk(p)]
             if h is not None and rest.startswith("cwd" + os.sep)} for r in firsts]
    return set.intersection(*sets)


# How a missing file reads in an error: TensorFlow, the OS, Keras's load_model.
MISSING_FILE = ("NotFound", "No such file", "No file or directory found")


def check_own_disks(ctx: Context, dist: Run) -> Check:
    """Two simulated hosts: no rank reads a file that only a rank of another host wrote (on
    hosts without a shared filesystem it is not there, or is a stale copy)."""
    if ctx.hosts < 2:
        return Check("own disks", SKIP, "one host (--hosts 2 rehearses two hosts without a shared filesystem)")
    written: dict[str, list] = {}        # path on a disk -> [(host, rank, line, time)]
    for r in dist.reports:
        for _, p, ln, t in _writes(dist, r, timed=True):
            host, key = ctx.on_disk(p)
            written.setdefault(key, []).append((ctx.host_of(r) if host is None else host, r, ln, t))
    # (a rank without a report was killed: what it wrote is unknown, so its reads are not judged)
    for r in sorted(dist.reports):
        host = ctx.host_of(r)
        reads = [(p, ln, t) for p, ln, t in (dist.reports.get(r) or {}).get("reads", [])]
        reads += [(p, None, t) for p, t, _ in dist.strace_reads.get(r, [])]
        for p, ln, t in sorted(reads, key=lambda x: (x[2] is None, x[2] or 0)):
            _, key = ctx.on_disk(p)
            # a folder listed (a trailing separator) reads what another host wrote in it, when
            # this host wrote nothing there itself (else it lists its own: a checkpoint folder
            # each host fills, with temp files named per host)
            keys = [key]
            if key.endswith(os.sep):
                inside = [k for k in written if k.startswith(key)]
                keys = [] if any(w[0] == host for k in inside for w in written[k]) else inside
            for key in keys:
                # (a host that writes the file itself, before or after (a cache it found empty
                # and filled: matplotlib's font list), does not depend on another host's copy)
                mine = [w for w in written[key] if w[0] == host] if key in written else []
                theirs = [w for w in written.get(key, ()) if w[0] != host and (w[3] is None or t is None or w[3] <= t + 1)]
                if theirs and not mine:    # (C code's read: no line; a rank that died of it has one)
                    ln = ln or (dist.reports.get(r) or {}).get("error_line")
                    return _foreign_read(ctx, r, host, key, ln, theirs[0], named=ln is None)
    for r in range(dist.np):      # a read of a missing file that neither the hook nor strace saw (C code)
        host, error = ctx.host_of(r), _first_error(dist, r)
        if not any(m in error for m in MISSING_FILE):
            continue
        for key, ws in written.items():
            theirs = [w for w in ws if w[0] != host]
            if theirs and not any(w[0] == host for w in ws) and os.path.basename(key.rstrip(os.sep)) in error:
                line = (dist.reports.get(r) or {}).get("error_line")
                return _foreign_read(ctx, r, host, key, line, theirs[0])
    if len(_finished(dist)) < dist.np:
        return Check("own disks", SKIP, "a rank did not finish")
    return Check("own disks", PASS, f"{ctx.hosts} hosts, each with its own working directory, HOME, caches and TMPDIR: "
                 "no rank read a file another host wrote")


def _foreign_read(ctx: Context, rank: int, host: int, key: str, line, write, named: bool = False) -> Check:
    """The failure; `named`: the read's line is unknown (C code read it), so the last line of the
    user's file that names the file is given."""
    w_host, w_rank, w_line, _ = write
    shown = key[4:] if key.startswith("cwd" + os.sep) else "~" + key[4:] if key.startswith("home" + os.sep) \
        else _short(key, ctx)
    where = f" at line {ctx.line(w_line)}" if ctx.line(w_line) else ""
    user_line = ctx.line(line)
    if user_line is None and named:
        base = os.path.basename(key.rstrip(os.sep))
        user_line = next((i for i, text in reversed(list(enumerate(ctx.user_text.splitlines(), 1))) if base in text),
                         None)
    return Check("own disks", FAIL, f"host {host} (rank {rank}) read {shown}, which only host {w_host} wrote "
                 f"(rank {w_rank}{where}): without a shared filesystem it is not there, or is an old copy; read it "
                 "on rank 0 and broadcast the value, or copy it to each host", rank=rank, path=ctx.user_path,
                 line=user_line or ctx.line(w_line))


def check_prints(ctx: Context, dist: Run) -> Check:
    for r in range(1, dist.np):
        rep = dist.reports.get(r)
        recorded = [(ln, t) for ln, t in (rep or {}).get("prints", []) if not _noise(t)]
        if recorded:
            ln, t = recorded[0]
            return Check("prints", FAIL, f"rank {r} printed {t[:60]!r}" + (
                f" ({len(recorded)} prints)" if len(recorded) > 1 else ""), rank=r, path=ctx.user_path,
                line=ctx.line(ln))
        captured = [t for t in dist.stdout.get(r, []) if not _noise(t)]
        if captured and rep is not None:
            return Check("prints", FAIL, f"rank {r} printed {captured[0].strip()[:60]!r} (not from Python's "
                         "sys.stdout: no line)", rank=r)
    if dist.np < 2:
        return Check("prints", SKIP, "one rank")
    return Check("prints", PASS, "ranks > 0 printed nothing but tool noise")


def _noise(text: str) -> bool:
    """Log lines, warnings and Keras's download progress bar (\\b and \\r redraws included);
    a fit progress bar (with its metrics) is not noise."""
    return all(NOISE.match(line) for line in re.split(r"[\r\n\b]+", text))


def evaluate(ctx: Context, conversion: Check, single: Run | None, dist: Run, timeout: float) -> list[Check]:
    return [conversion, check_finish(ctx, single, dist, timeout), check_weights(ctx, dist),
            check_steps(ctx, single, dist), *check_writes(ctx, dist), check_prints(ctx, dist),
            check_own_disks(ctx, dist)]


# -- output -------------------------------------------------------------------------------------------
def table(checks: list[Check], title: str = "") -> str:
    width = max(len(c.check) for c in checks)
    lines = [title] if title else []
    for c in checks:
        where = f" [{os.path.basename(c.path)}:{c.line}]" if c.path and c.line else ""
        lines.append(f"{c.status:4}  {c.check:<{width}}  {c.reason}{where}")
    failed = sum(c.status == FAIL for c in checks)
    lines.append(f"{'FAILED' if failed else 'OK'}: {sum(c.status == PASS for c in checks)} passed, {failed} failed, "
                 f"{sum(c.status == SKIP for c in checks)} skipped")
    return "\n".join(lines)


def to_json(checks: list[Check]) -> str:
    return json.dumps([c.to_json() for c in checks], indent=1)
