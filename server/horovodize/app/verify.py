"""``horovodize verify``: the rehearsal. Runs the original program alone and the converted
program on ``--np N`` CPU ranks (``horovodrun --gloo``, one intra-op thread per rank), then
checks what a Horovod engineer checks before a long job: it converts, every rank finishes,
every model and optimizer-updated variable ends the same on every rank, each rank made
about 1/N of the single run's optimizer steps, no file is written by two ranks and ranks > 0
write only caches and temp, ranks > 0 print nothing, and (``--cold-cache``) empty caches
show no download race. ``--as-is`` runs the file unconverted (its single run: one rank).

Both runs go through the wrapper in `verify_wrapper` (one JSON report per rank); the checks,
their table / JSON and ``--set`` are in `verify_checks`. Each launch starts in its own
session and carries a token in its environment: at the timeout the launcher's group and
every process with the token (Horovod starts ranks in their own sessions) are killed.

This module never imports TensorFlow or Horovod: they run only in the subprocesses, with
the interpreter given by ``--python``, ``$HOROVODIZE_HVD_PYTHON`` or ``python3``.
Requires: engine (the conversion), app.doctor, app.verify_checks, app.verify_wrapper.
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from . import verify_checks as C
from .verify_wrapper import WRAPPER

DEFAULT_TIMEOUT = 600.0
PREFIX = re.compile(r"\[(\d+)\]<(stdout|stderr)>:")
STRACE_CALL = re.compile(r'^(?:\d+\s+)?(?:(\d+\.\d+)\s+)?(openat|open|creat|rename|renameat2?|unlink|unlinkat|mkdir|mkdirat)'
                         r'\((.*)\)\s+=\s+(-?\d+)')
QUOTED = re.compile(r'"((?:[^"\\]|\\.)*)"')

# Runs inside the Horovod interpreter: is horovod there, with its TensorFlow ops? (No import of
# horovod itself, so no TensorFlow import: this stays fast.)
_PROBE = r"""
import glob, importlib.util, os, sys
spec = importlib.util.find_spec("horovod")
if spec is None or not spec.origin:
    print("horovod is not installed"); sys.exit(3)
root = os.path.dirname(spec.origin)
if not glob.glob(os.path.join(root, "tensorflow", "mpi_lib*")):
    print("horovod is installed without its TensorFlow ops (rebuild with HOROVOD_WITH_TENSORFLOW=1)"); sys.exit(4)
if importlib.util.find_spec("tensorflow") is None:
    print("tensorflow is not installed"); sys.exit(5)
print(root)
"""

class VerifyError(Exception):
    """A one-line usage/environment error (exit 2)."""


# -- the interpreter ----------------------------------------------------------------------------
def resolve_python(python: str | None = None) -> str:
    cand = python or os.environ.get("HOROVODIZE_HVD_PYTHON") or "python3"
    found = shutil.which(cand) if os.sep not in cand else (cand if os.path.exists(cand) else None)
    if not found:
        raise VerifyError(f"interpreter {cand!r} not found; pass --python PATH (e.g. .cache/hvd-venv/bin/python after `make hvd-env`)")
    return found


def check_horovod(python: str) -> None:
    try:
        proc = subprocess.run([python, "-c", _PROBE], check=False, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise VerifyError(f"cannot run {python}: {e}")
    if proc.returncode != 0:
        why = (proc.stdout.strip() or proc.stderr.strip().splitlines()[-1:] or ["unknown error"])
        why = why if isinstance(why, str) else why[0]
        raise VerifyError(f"horovod is not importable by {python} ({why}); run `make hvd-env` and pass "
                          "--python .cache/hvd-venv/bin/python (or set HOROVODIZE_HVD_PYTHON)")


def check_stack(python: str) -> None:
    """The doctor's verdict from the interpreter's package metadata (no TensorFlow import):
    a stack it calls not ready (e.g. Horovod 0.28 next to TensorFlow 2.16's Keras 3) is an error."""
    from . import doctor
    report = doctor.inspect(python, check_build=False)
    if not report.ready:
        raise VerifyError(f"the stack of {python} cannot run the converted program: {report.summary()} "
                          f"(`horovodize doctor --python {python}` says how to fix it)")


def launcher(python: str) -> list[str]:
    run = Path(python).parent / "horovodrun"
    return [str(run)] if run.exists() else [python, "-m", "horovod.runner.launch"]




# -- conversion -----------------------------------------------------------------------------------
def read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise VerifyError(f"{path}: no such file")
    except (OSError, UnicodeDecodeError) as e:
        raise VerifyError(f"{path}: cannot read: {e}")


def convert(text: str, path: Path) -> tuple[str | None, C.Check]:
    """(the converted text or None, the `converts` check)."""
    from ..engine import conversion
    from ..parse.source import ParseError
    try:
        analysis = conversion(text)
    except ParseError as e:
        raise VerifyError(f"{path}:{getattr(e, 'line', '?')}:{getattr(e, 'column', '?')}: syntax error: "
                          f"{getattr(e, 'message', e)}")
    if analysis.refused:
        code, line, msg = analysis.refusal_reasons()[0]
        return None, C.Check("converts", C.FAIL, f"refused: {code} {msg}", path=str(path), line=line)
    after = analysis.converted()
    edits = sum(max(i2 - i1, j2 - j1) for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(
        None, text.splitlines(), after.splitlines(), autojunk=False).get_opcodes() if tag != "equal")
    if after == text:
        return after, C.Check("converts", C.PASS, "nothing to change (already distributed?)")
    return after, C.Check("converts", C.PASS, f"converted ({edits} line(s) changed)")


def _program(path: Path, text: str):
    """The conversion of the program `path` starts when it imports modules of its project
    (`text`: the entry as rehearsed, --set applied), else None."""
    from ..errors import UserError
    from ..project import plan
    from ..project.program import convert_program

    def read(p: Path) -> str:
        if Path(p).resolve() == path.resolve():
            return text
        data = read_text(Path(p))
        return data if data.strip() else ""

    try:
        found = plan.program_for(path, read)
        if found is None or Path(found[0]).resolve() != path.resolve():
            return None
        return convert_program(path, read, found[1])
    except UserError as e:
        raise VerifyError(str(e))


def convert_program_check(program, path: Path) -> tuple[str | None, C.Check]:
    """(the converted entry or None, the `converts` check) of a program of several files."""
    if program.refused:
        code, line, msg = program.analysis.refusal_reasons()[0]
        return None, C.Check("converts", C.FAIL, f"refused: {code} {msg}", path=str(path), line=line)
    changed = [program.name(f.path) for f in program.files if f.changed]
    detail = f"converted as one program: {', '.join(changed)}" if changed else "nothing to change (already distributed?)"
    return program.files[0].after, C.Check("converts", C.PASS, detail)


# -- one launch -------------------------------------------------------------------------------------
@dataclass
class Launch:
    """What one launch needs: the interpreter, the work dir, the run's environment."""
    python: str
    workdir: Path
    env: dict
    timeout: float
    strace: str | None
    cwd: str = "."
    token: str = field(default_factory=lambda: uuid.uuid4().hex)
    host_root: Path | None = None   # the simulated hosts' folders: host-K/{cwd,home,tmp} (`host_dirs`)


def split_ranks(output: str) -> tuple[dict, dict]:
    """Per-rank stdout and stderr lines from horovodrun's ``[rank]<stream>:`` prefixed output."""
    out: dict[int, list[str]] = {}
    err: dict[int, list[str]] = {}
    for line in output.splitlines():
        matches = list(PREFIX.finditer(line))
        for i, m in enumerate(matches):
            end = matches[i + 1].start() if i + 1 < len(matches) else len(line)
            (out if m.group(2) == "stdout" else err).setdefault(int(m.group(1)), []).append(line[m.end():end])
    return out, err


def _strace_calls(text: str):
    """(time or None, call, args, paths, result) of each traced call in one strace log."""
    for line in text.splitlines():
        m = STRACE_CALL.match(line)
        if m:
            paths = QUOTED.findall(m.group(3))
            if paths:
                yield (float(m.group(1)) if m.group(1) else None), m.group(2), m.group(3), paths, int(m.group(4))


WRITE_FLAGS = re.compile(r"O_WRONLY|O_RDWR|O_CREAT|O_TRUNC|O_APPEND")


def _writes_flags(args: str) -> bool:
    return bool(WRITE_FLAGS.search(args)) and "O_TMPFILE" not in args


def parse_strace(text: str) -> list[tuple]:
    """(call, path, time) of the writes in one strace log: opens for writing, creat, renames
    (the destination), unlinks, mkdirs, that succeeded (`time` None without strace's -ttt)."""
    out = []
    for t, call, args, paths, result in _strace_calls(text):
        if result < 0:
            continue
        if call in ("openat", "open"):
            if _writes_flags(args):
                out.append(("open (C)", paths[0], t))
        elif call.startswith("rename"):
            out.append((call, paths[-1], t))
        elif call.startswith("mkdir"):
            out.append(("os.mkdir", paths[0], t))
        else:
            out.append((call, paths[0], t))
    return out


def parse_strace_reads(text: str) -> list[tuple]:
    """(path, time, found) of the opens for reading in one strace log (failed ones included:
    a file another host wrote is missing here)."""
    return [(paths[0], t, result >= 0) for t, call, args, paths, result in _strace_calls(text)
            if call in ("openat", "open") and not WRITE_FLAGS.search(args)
            and "O_DIRECTORY" not in args and "O_TMPFILE" not in args]


def _token_pids(token: str) -> list[int]:
    pids = []
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) == os.getpid():
            continue
        try:
            with open(f"/proc/{d}/environ", "rb") as fh:
                if f"HOROVODIZE_REHEARSAL={token}".encode() in fh.read().split(b"\0"):
                    pids.append(int(d))
        except OSError:
            continue
    return pids


def kill_all(proc: subprocess.Popen, token: str) -> list[int]:
    """Kill the launcher's process group and every process carrying the run's token; the
    pids still alive a moment later (none, normally)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    for _ in range(3):
        for pid in _token_pids(token):
            try:
                os.killpg(os.getpgid(pid), signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        time.sleep(0.5)
    alive = []
    for pid in _token_pids(token):
        try:
            with open(f"/proc/{pid}/stat") as fh:
                if fh.read().split(") ")[-1][:1] != "Z":
                    alive.append(pid)
        except OSError:
            pass
    return alive


def launch(L: Launch, label: str, script: Path, np: int, hvd: bool, script_args, model_var: str | None,
           hosts: int = 1, cwd: str | None = None) -> C.Run:
    """Run `script` through the wrapper: under horovodrun on `np` ranks when `hvd`, else alone;
    on `hosts` simulated hosts (`L.host_root`), each rank in its host's copy of the working
    directory; else from `cwd` (default `L.cwd`)."""
    cwd = cwd or L.cwd

    def rank_cwd(rank: int) -> str:
        return str(L.host_root / f"host-{C.host_of(rank, np, hosts)}" / "cwd") if hosts > 1 else cwd

    report_dir = L.workdir / "reports"
    report_dir.mkdir(exist_ok=True)
    wrapper = L.workdir / "_horovodize_verify_wrapper.py"
    wrapper.write_text(WRAPPER, encoding="utf-8")
    rank_cmd = [L.python, str(wrapper), str(script), str(report_dir), model_var or "", label, *script_args]
    if L.strace:
        trace = L.workdir / f"strace-{label}"
        script_ = (f'exec "$0" -f -qq {"-ttt " if hosts > 1 else ""}--seccomp-bpf -e trace=open,openat,creat,rename,'
                   f'renameat,renameat2,unlink,unlinkat,mkdir,mkdirat -o "{trace}-${{HOROVOD_RANK:-0}}.txt" "$@"')
        rank_cmd = ["sh", "-c", script_, L.strace, *rank_cmd]
    if hosts > 1:       # each host in its own folders (Horovod tells a rank its host: HOROVOD_CROSS_RANK)
        rank_cmd = ["sh", "-c", HOST_SHELL, str(L.host_root), *rank_cmd]
    cmd = (launcher(L.python) + ["-np", str(np), "-H", host_list(np, hosts), "--gloo", *rank_cmd]) if hvd else rank_cmd
    env = dict(L.env, HOROVODIZE_REHEARSAL=L.token)
    run = C.Run(label=label, np=np, strace_used=bool(L.strace))
    start = time.monotonic()
    try:
        proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                errors="replace", start_new_session=True, stdin=subprocess.DEVNULL)
    except OSError as e:
        raise VerifyError(f"cannot start {cmd[0]}: {e}")
    try:
        output, _ = proc.communicate(timeout=L.timeout)
    except subprocess.TimeoutExpired:
        run.timed_out = True
        run.leftover = kill_all(proc, L.token)
        output, _ = proc.communicate()
    except BaseException:       # Ctrl-C: the ranks are in sessions of their own, no signal reaches them
        kill_all(proc, L.token)
        raise
    else:
        kill_all(proc, L.token) if _token_pids(L.token) else None   # ranks a crashed launcher left
    run.wall = time.monotonic() - start
    run.exit, run.output = proc.returncode, output
    if hvd:
        run.stdout, run.stderr = split_ranks(output)
    else:
        run.stderr = {0: output.splitlines()}
    import json
    ours = _harness_paths(L)
    for rank in range(np):
        rep = report_dir / f"{label}-rank-{rank}.json"
        if rep.exists():
            try:
                run.reports[rank] = json.loads(rep.read_text())
            except ValueError:
                pass
        st = L.workdir / f"strace-{label}-{rank}.txt"
        if st.exists():
            log, where = st.read_text(errors="replace"), rank_cwd(rank)
            run.strace[rank] = [(e, path, t) for e, p, t in parse_strace(log)
                                for path in [os.path.normpath(os.path.join(where, p))] if not ours(path)]
            if hosts > 1:
                run.strace_reads[rank] = [(path, t, found) for p, t, found in parse_strace_reads(log)
                                          for path in [os.path.normpath(os.path.join(where, p))]
                                          if not ours(path) and not path.startswith(SYSTEM_DIRS)]
    if not run.reports and proc.returncode not in (0, None) and not run.timed_out:
        tail = [ln for ln in output.splitlines() if not PREFIX.match(ln)]
        run.error = C.first_error(tail[::-1]) or (tail[-1][:300] if tail else f"exit {proc.returncode}")
    return run


def _harness_paths(L: Launch):
    """Paths of the rehearsal itself (its reports, wrapper, traces; not the hosts' folders)."""
    work, hosts = str(L.workdir) + os.sep, (str(L.host_root) + os.sep) if L.host_root else None

    def ours(path: str) -> bool:
        return (path.startswith(("/dev/", "/proc/")) or "__pycache__" in path
                or (path + os.sep).startswith(work) and not (hosts and path.startswith(hosts)))
    return ours


def cache_env(home: Path) -> dict:
    """A HOME's caches and tools' config (matplotlib makes ~/.config/matplotlib in an empty HOME)."""
    return {"HOME": str(home), "KERAS_HOME": str(home / ".keras"), "TFDS_DATA_DIR": str(home / "tensorflow_datasets"),
            "XDG_CACHE_HOME": str(home / ".cache"), "XDG_CONFIG_HOME": str(home / ".config")}


CACHE_KEYS = ("KERAS_HOME", "TFDS_DATA_DIR", "XDG_CACHE_HOME", "XDG_CONFIG_HOME")


# -- two hosts on one machine ---------------------------------------------------------------------
# horovodrun starts the ranks of a host named `localhost` and of one named `127.0.0.1` locally
# (both resolve to an address of this machine) but counts them as two hosts: each gets local
# rank 0 and HOROVOD_CROSS_SIZE 2, as on two machines. A third host would need a third local
# address that resolves to an interface of this machine.
MAX_HOSTS = 2
HOST_NAMES = ("localhost", "127.0.0.1")
# Run in a rank: its host's copy of the working directory, HOME, caches and TMPDIR ($0: their root).
HOST_SHELL = ('R="$0/host-${HOROVOD_CROSS_RANK:-0}"; cd "$R/cwd" || exit 97; export TMPDIR="$R/tmp" '
              + " ".join(f'{k}="{v}"' for k, v in cache_env(Path("$R/home")).items()) + '; exec "$@"')
SYSTEM_DIRS = ("/usr/", "/lib/", "/lib64/", "/etc/", "/sys/", "/proc/", "/dev/", "/run/", "/bin/", "/sbin/",
               os.path.realpath(sys.base_prefix) + os.sep)
# Not copied to each host: version control, environments, caches.
COPY_SKIP = (".git", ".hg", ".svn", ".venv", "venv", ".tox", ".nox", "node_modules", "__pycache__", ".cache",
             ".mypy_cache", ".pytest_cache", ".ipynb_checkpoints")
COPY_LIMIT = 1 << 30      # bytes of the working directory copied to each simulated host


def copy_project(src, dst) -> None:
    """`src` copied to `dst`, without version control, environments and caches (`COPY_SKIP`)."""
    shutil.copytree(src, dst, symlinks=True, ignore=shutil.ignore_patterns(*COPY_SKIP))


def host_list(np: int, hosts: int) -> str:
    """horovodrun's -H: `np` slots on one host, or spread evenly over the simulated hosts."""
    if hosts <= 1:
        return f"localhost:{np}"
    return ",".join(f"{HOST_NAMES[h]}:{np // hosts}" for h in range(hosts))


def host_dirs(root: Path, hosts: int, cwd: str) -> list[Path]:
    """host-K/{cwd,home,tmp} under `root` for each host, `cwd` (the run's working directory)
    copied into each: a host sees its own disk, with the project as it was before the run."""
    size = 0
    for base, dirs, names in os.walk(cwd):
        dirs[:] = [d for d in dirs if d not in COPY_SKIP]
        for n in names:
            try:
                size += os.path.getsize(os.path.join(base, n))
            except OSError:
                pass
        if size > COPY_LIMIT:
            raise VerifyError(f"--hosts {hosts}: the working directory {cwd} holds more than {COPY_LIMIT >> 30} GiB "
                              "to copy to each simulated host; run verify from the project's folder")
    out = []
    for h in range(hosts):
        d = root / f"host-{h}"
        copy_project(cwd, d / "cwd")
        for sub in ("home", "tmp"):
            (d / sub).mkdir(parents=True)
        out.append(d)
    return out


# -- the rehearsal ---------------------------------------------------------------------------------
@dataclass
class Rehearsal:
    path: str
    np: int
    hosts: int = 1
    checks: list = field(default_factory=list)
    single: C.Run | None = None
    dist: C.Run | None = None
    workdir: str | None = None

    @property
    def ok(self) -> bool:
        return not any(c.status == C.FAIL for c in self.checks)

    def table(self) -> str:
        hosts = f" of {self.hosts} simulated hosts" if self.hosts > 1 else ""
        return C.table(self.checks, f"rehearsal of {self.path} on {self.np} CPU rank(s){hosts} (horovodrun --gloo)")


def verify(path, np: int = 2, timeout: float = DEFAULT_TIMEOUT, script_args=(), model_var: str | None = None,
           python: str | None = None, keep: bool = False, sets=(), as_is: bool = False, cold_cache: bool = False,
           progress=None, cwd: str | None = None, hosts: int = 1) -> Rehearsal:
    """The rehearsal of PATH. Raises `VerifyError` for usage/environment problems (missing file,
    syntax error, --set on no constant, interpreter without horovod); what happens in the
    runs is in the checks. `progress(message)` is called as the runs start; the runs start in
    `cwd` (default: the current directory), where the program's relative paths land.
    `hosts` 2 spreads the ranks over two simulated hosts, each with its own copy of `cwd`,
    HOME, empty caches and TMPDIR (no shared filesystem), and implies `cold_cache`."""
    path = Path(path)
    say = progress or (lambda message: None)
    if np < 1:
        raise VerifyError("--np must be at least 1")
    if not 1 <= hosts <= MAX_HOSTS:
        raise VerifyError(f"--hosts {hosts}: one machine rehearses 1 or {MAX_HOSTS} hosts (horovodrun runs "
                          f"`{HOST_NAMES[0]}` and `{HOST_NAMES[1]}` here as two hosts)")
    if np % hosts:
        raise VerifyError(f"--np {np} does not spread evenly over --hosts {hosts} (give a multiple of {hosts})")
    cold_cache = cold_cache or hosts > 1
    user_text = read_text(path)
    try:
        text = C.apply_sets(user_text, C.parse_sets(sets))
    except C.SetError as e:
        raise VerifyError(str(e))
    except SyntaxError as e:
        raise VerifyError(f"{path}:{e.lineno}: syntax error: {e.msg}")
    program = None if as_is else _program(path, text)
    if as_is:
        converted, conv = text, C.Check("converts", C.SKIP, "--as-is: the file runs as it is")
    elif program is not None:
        say(f"converting the program of {len(program.files)} files")
        converted, conv = convert_program_check(program, path)
    else:
        say("converting")
        converted, conv = convert(text, path)
    rehearsal = Rehearsal(path=str(path), np=np, hosts=hosts)
    if converted is None:
        rehearsal.checks = [conv] + [C.Check(name, C.SKIP, "not converted") for name in C.CHECKS[1:]]
        return rehearsal
    py = resolve_python(python)
    check_horovod(py)
    check_stack(py)
    workdir = Path(tempfile.mkdtemp(prefix="horovodize-verify-"))
    (workdir / "single").mkdir()
    single_script, dist_script = workdir / "single" / path.name, workdir / path.name
    single_script.write_text(text, encoding="utf-8")
    dist_script.write_text(converted, encoding="utf-8")
    if program is not None:       # the converted modules beside the converted entry, as in the project
        mirror = workdir / "program"
        for f in program.files:
            rel = f.path.relative_to(program.root)
            target = mirror / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(f.after, encoding="utf-8")
            for depth in range(1, len(rel.parts)):      # the packages' __init__.py (a regular package wins)
                init = program.root.joinpath(*rel.parts[:depth], "__init__.py")
                if init.is_file() and not (mirror / init.relative_to(program.root)).exists():
                    shutil.copyfile(init, mirror / init.relative_to(program.root))
        dist_script = mirror / program.entry.relative_to(program.root)
    env = dict(os.environ)
    # The scripts live in a temp dir: keep the original directory importable, as it is when
    # the script runs from there (a program's converted modules first, for its distributed run).
    env["PYTHONPATH"] = str(path.resolve().parent) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["PATH"] = str(Path(py).parent) + os.pathsep + env.get("PATH", "")
    env.update(OMP_NUM_THREADS="1", TF_NUM_INTRAOP_THREADS="1", TF_NUM_INTEROP_THREADS="1",
               PYTHONDONTWRITEBYTECODE="1", PYTHONUNBUFFERED="1", CUDA_VISIBLE_DEVICES="")
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    home = Path(os.path.expanduser("~"))
    homes = {}
    for label in ("single", "dist"):
        homes[label] = workdir / f"home-{label}" if cold_cache else None
        if cold_cache:
            homes[label].mkdir()

    def run_env(label: str) -> dict:
        out = dict(env, **cache_env(homes[label])) if cold_cache else dict(env)
        if program is not None and label == "dist":
            out["PYTHONPATH"] = str(workdir / "program") + os.pathsep + out["PYTHONPATH"]
        return out

    L = Launch(python=py, workdir=workdir, env=env, timeout=timeout, strace=shutil.which("strace"),
               cwd=os.path.abspath(cwd or os.getcwd()))
    roots, single_cwd = [], None
    if hosts > 1:
        say(f"copying {L.cwd} to {hosts} simulated hosts")
        L.host_root = workdir / "hosts"
        roots = host_dirs(L.host_root, hosts, L.cwd)
        # the single run (one process, never spread over the hosts) in its own copy too: what it
        # writes must not reach the hosts' copies of a later rehearsal
        single_cwd = str(L.host_root / "single-cwd")
        copy_project(L.cwd, single_cwd)
    try:
        L.env = run_env("single")
        say("single run (the original on one process)" if not as_is else "single run (the file on one rank)")
        single = launch(L, "single", single_script, 1, as_is, script_args, model_var, cwd=single_cwd)
        L.env, L.token = run_env("dist"), uuid.uuid4().hex
        if hosts > 1:
            L.env["HOROVODIZE_TRACK_READS"] = "1"
        say(f"distributed run on {np} ranks" + (f" of {hosts} hosts" if hosts > 1 else ""))
        dist = launch(L, "dist", dist_script, np, True, script_args, model_var, hosts=hosts)
    finally:
        if not keep:
            shutil.rmtree(workdir, ignore_errors=True)
    caches = [cache_env(h / "home") for h in roots] or [cache_env(homes["dist"] or home)]
    cache_dirs = tuple({c[k] for c in caches for k in CACHE_KEYS} | {os.environ.get(k, "") for k in CACHE_KEYS} - {""})
    temp_dirs = tuple({tempfile.gettempdir(), "/tmp", "/var/tmp", "/dev/shm"} | {str(h / "tmp") for h in roots})
    ctx = C.Context(user_path=str(path), user_text=user_text, run_text=converted, single_text=text, np=np,
                    as_is=as_is, cold_cache=cold_cache, cache_dirs=cache_dirs,
                    temp_dirs=temp_dirs, hosts=hosts, host_roots=tuple(str(h) for h in roots))
    rehearsal.single, rehearsal.dist = single, dist
    rehearsal.workdir = str(workdir) if keep else None
    rehearsal.checks = C.evaluate(ctx, conv, single, dist, timeout)
    return rehearsal


# -- CLI ------------------------------------------------------------------------------------------
USAGE = ("horovodize verify PATH [--np N] [--hosts H] [--set NAME=VALUE ...] [--as-is] [--cold-cache] [--timeout S] "
         "[--format text|json] [--python PY] [--model-var NAME] [--keep] [--show-output] [-- ARGS ...]")


def _options(parser: argparse.ArgumentParser, suppress: bool = False) -> None:
    d = (lambda v: argparse.SUPPRESS) if suppress else (lambda v: v)
    parser.add_argument("--np", type=int, default=d(2), help="number of local CPU ranks (default 2)")
    parser.add_argument("--hosts", type=int, default=d(1), metavar="H",
                        help="spread the ranks over H simulated hosts (1 or 2), each with its own copy of the "
                             "working directory, HOME, empty caches and TMPDIR: no shared filesystem")
    parser.add_argument("--timeout", type=float, default=d(DEFAULT_TIMEOUT), metavar="S",
                        help=f"seconds before a run's every process is killed (default {DEFAULT_TIMEOUT:.0f})")
    parser.add_argument("--set", action="append", metavar="NAME=VALUE", default=d(None), dest="sets",
                        help="replace a module-level constant for the run (a temp copy; repeatable)")
    parser.add_argument("--as-is", action="store_true", default=d(False),
                        help="run the file without converting it (its single run: one rank)")
    parser.add_argument("--cold-cache", action="store_true", default=d(False),
                        help="start each run with empty Keras/TFDS/XDG caches (a temp HOME)")
    parser.add_argument("--format", choices=("text", "json"), default=d("text"))
    parser.add_argument("--python", metavar="PY", default=d(None),
                        help="interpreter with tensorflow + horovod (default $HOROVODIZE_HVD_PYTHON, else python3)")
    parser.add_argument("--model-var", metavar="NAME", default=d(None),
                        help="also compare this global (any object with weights or variables)")
    parser.add_argument("--keep", action="store_true", default=d(False), help="keep the temp dir of the runs")
    parser.add_argument("--show-output", action="store_true", default=d(False), help="print the runs' output")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """`verify PATH [options] [-- ARGS]`: options may come before or after PATH; everything
    after `--` goes to the script. (argparse cannot mix a `*` positional with options that
    follow it, so PATH and what follows are taken as a remainder and parsed again in `run`.)"""
    parser.usage = USAGE
    _options(parser)
    parser.add_argument("rest", nargs=argparse.REMAINDER, metavar="PATH [-- ARGS ...]",
                        help="the single-GPU training script, then its arguments after --")


def _parse_rest(args) -> tuple[argparse.Namespace, list[str]]:
    rest = list(getattr(args, "rest", None) or [])
    if getattr(args, "path", None) and not rest:  # called with a ready namespace
        return args, list(getattr(args, "script_args", []) or [])
    head, script_args = (rest[:rest.index("--")], rest[rest.index("--") + 1:]) if "--" in rest else (rest, [])
    sub = argparse.ArgumentParser(prog="horovodize verify", usage=USAGE)
    _options(sub, suppress=True)
    sub.add_argument("path", metavar="PATH")
    return sub.parse_args(head, namespace=args), script_args


def run(args) -> int:
    args, script_args = _parse_rest(args)
    text = getattr(args, "format", "text") == "text"
    try:
        rehearsal = verify(args.path, np=args.np, timeout=args.timeout, script_args=script_args,
                           model_var=args.model_var, python=args.python, keep=getattr(args, "keep", False),
                           sets=getattr(args, "sets", None) or (), as_is=getattr(args, "as_is", False),
                           cold_cache=getattr(args, "cold_cache", False), hosts=getattr(args, "hosts", 1),
                           progress=(lambda m: print(f"horovodize verify: {m}", file=sys.stderr)) if text else None)
    except VerifyError as e:
        print(f"horovodize: {e}", file=sys.stderr)
        return 2
    if getattr(args, "show_output", False):
        for run_ in (rehearsal.single, rehearsal.dist):
            if run_ is not None:
                print(f"== {run_.label} run output\n{run_.output.rstrip()}", file=sys.stderr)
    if text:
        print(rehearsal.table())
    else:
        print(C.to_json(rehearsal.checks))
    if rehearsal.workdir:
        print(f"runs kept in {rehearsal.workdir}", file=sys.stderr)
    return 0 if rehearsal.ok else 1


def main(argv: list[str] | None = None) -> int:  # `python -m horovodize.app.verify`
    parser = argparse.ArgumentParser(prog="horovodize verify")
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
