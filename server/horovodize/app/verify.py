"""``horovodize verify``: convert a program, run it under ``horovodrun --gloo`` and check that
the ranks end with the same weights.

The converted program runs through a small wrapper (a fresh ``__main__`` module) that, after the script ends,
finds the model among the script's globals (``model`` by default, ``--model-var NAME``
otherwise; a Keras model, or a ``tf.estimator.Estimator``, or anything with
``get_weights()`` / ``variables``) and writes one JSON report per rank: exit status, the
first error line, a checksum (sum of |w|) and a digest (sha256 of the raw bytes) of the
weights.

This module never imports TensorFlow or Horovod: they run only in the subprocesses, with
the interpreter given by ``--python``, ``$HOROVODIZE_HVD_PYTHON`` or ``python3``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

DEFAULT_TIMEOUT = 600.0
DEFAULT_MODEL_VAR = "model"
PREFIX = re.compile(r"\[(\d+)\]<(stdout|stderr)>:")
ERROR_LINE = re.compile(r"^\s*([A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt|Failure)\b.*)$")

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

# The per-rank wrapper: run the converted script as __main__, then report.
_WRAPPER = r'''
import builtins, hashlib, json, os, sys, traceback, types

SCRIPT, REPORT_DIR, MODEL_VAR = sys.argv[1], sys.argv[2], sys.argv[3]
sys.argv = [SCRIPT] + sys.argv[4:]
RANK = int(os.environ.get("HOROVOD_RANK", os.environ.get("OMPI_COMM_WORLD_RANK", "0")))
report = {"rank": RANK, "exit": 0, "error": None, "model_var": MODEL_VAR,
          "model_found": False, "checksum": None, "digest": None, "n_weights": 0, "note": None}


def _arrays(obj):
    """(name, numpy array) pairs of a model-like object's weights, in a stable order."""
    import numpy as np
    if hasattr(obj, "get_variable_names") and hasattr(obj, "get_variable_value"):  # Estimator
        names = sorted(n for n in obj.get_variable_names())
        return [(n, np.asarray(obj.get_variable_value(n))) for n in names]
    if hasattr(obj, "numpy") and not hasattr(obj, "trainable_variables"):  # a tensor or variable
        return [("0", np.asarray(obj.numpy()))]
    if hasattr(obj, "get_weights"):
        return [(str(i), np.asarray(w)) for i, w in enumerate(obj.get_weights())]
    variables = getattr(obj, "variables", None)
    if callable(variables):
        variables = variables()
    if variables is None and isinstance(obj, (list, tuple)):
        variables = obj
    return [(str(i), np.asarray(v.numpy() if hasattr(v, "numpy") else v)) for i, v in enumerate(variables or [])]


def _find_model(globs):
    if MODEL_VAR in globs:
        return MODEL_VAR, globs[MODEL_VAR]
    if MODEL_VAR != "model":
        return None, None
    roots = ("keras", "tensorflow", "tf_keras", "tensorflow_estimator")
    found = [(k, v) for k, v in list(globs.items()) if not k.startswith("_") and not isinstance(v, type)
             and any(c.__module__.split(".")[0] in roots for c in type(v).__mro__)
             and (hasattr(v, "get_weights") or hasattr(v, "get_variable_names"))]
    return found[0] if len(found) == 1 else (None, None)


def _report(globs):
    name, obj = _find_model(globs)
    if obj is None:
        report["note"] = "no model variable `%s` among the script's globals (use --model-var)" % MODEL_VAR
        return
    report["model_found"], report["model_var"] = True, name
    import numpy as np
    digest, total, count = hashlib.sha256(), 0.0, 0
    for key, arr in _arrays(obj):
        if arr.dtype.kind not in "fiub":  # strings (e.g. Estimator names) are not weights
            continue
        digest.update(key.encode()); digest.update(np.ascontiguousarray(arr).tobytes())
        total += float(np.abs(arr.astype(np.float64)).sum())
        count += 1
    if not count:
        report["note"] = "model `%s` has no weights (never built?)" % name
        return
    report.update(checksum=total, digest=digest.hexdigest(), n_weights=count)


# Like `python SCRIPT`: a fresh __main__ module (so the globals survive an exit or error).
main = types.ModuleType("__main__")
main.__dict__.update(__file__=SCRIPT, __builtins__=builtins, __cached__=None)
sys.modules["__main__"] = main
globs = main.__dict__
try:
    with open(SCRIPT, "rb") as fh:
        code = compile(fh.read(), SCRIPT, "exec")
    exec(code, globs)
except SystemExit as e:
    code = e.code
    report["exit"] = code if isinstance(code, int) else (0 if code is None else 1)
    if report["exit"]:
        report["error"] = "SystemExit: %s" % (code,)
except BaseException as e:
    traceback.print_exc()
    report["exit"] = 1
    report["error"] = (traceback.format_exception_only(type(e), e)[-1].strip())[:500]
if report["exit"] == 0:
    try:
        _report(globs)
    except Exception as e:
        report["note"] = "could not read the model's weights: %s: %s" % (type(e).__name__, e)
with open(os.path.join(REPORT_DIR, "rank-%d.json" % RANK), "w") as fh:
    json.dump(report, fh)
sys.stdout.flush(); sys.stderr.flush()
sys.exit(report["exit"])
'''


class VerifyError(Exception):
    """A one-line usage/environment error (exit 2)."""


@dataclass
class RankResult:
    rank: int
    exit: int | None              # None: the rank wrote no report (crashed, killed or timed out)
    error: str | None = None      # the first error line of the rank
    checksum: float | None = None
    digest: str | None = None
    model_found: bool = False
    note: str | None = None


@dataclass
class VerifyReport:
    path: str
    np: int
    ranks: list[RankResult] = field(default_factory=list)
    launcher_exit: int | None = None
    timed_out: bool = False
    wall: float = 0.0
    weights_agree: bool | None = None   # None: not comparable (a rank failed or has no model)
    output: str = ""
    command: list[str] = field(default_factory=list)
    workdir: str | None = None

    @property
    def ok(self) -> bool:
        return (not self.timed_out and len(self.ranks) == self.np
                and all(r.exit == 0 for r in self.ranks) and self.weights_agree is True)

    def summary_lines(self) -> list[str]:
        lines = []
        for r in self.ranks:
            status = "no report (crashed, killed or timed out)" if r.exit is None else f"exit {r.exit}"
            parts = [f"rank {r.rank}: {status}"]
            if r.checksum is not None:
                parts.append(f"weights sum|w| {r.checksum:.10f} sha256 {r.digest[:12]}")
            elif r.note:
                parts.append(r.note)
            if r.error:
                parts.append(f"error: {r.error}")
            lines.append(", ".join(parts))
        if self.timed_out:
            lines.append(f"timed out after {self.wall:.0f}s")
        if self.weights_agree is True:
            lines.append(f"weights agree across {self.np} ranks")
        elif self.weights_agree is False:
            lines.append("weights DIFFER across ranks")
        else:
            lines.append("weights not compared (a rank failed or no model was found)")
        lines.append(f"{'OK' if self.ok else 'FAILED'} ({self.wall:.1f}s)")
        return lines


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


def launcher(python: str) -> list[str]:
    run = Path(python).parent / "horovodrun"
    return [str(run)] if run.exists() else [python, "-m", "horovod.runner.launch"]


# -- conversion -----------------------------------------------------------------------------------
def convert_file(path: Path) -> str:
    try:
        from ..engine import convert_text
        from ..parse.source import ParseError
    except ImportError as e:  # pragma: no cover - the engine is always there in a release
        raise VerifyError(f"the converter is not available: {e}")
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise VerifyError(f"{path}: no such file")
    except (OSError, UnicodeDecodeError) as e:
        raise VerifyError(f"{path}: cannot read: {e}")
    try:
        return convert_text(text)
    except ParseError as e:
        raise VerifyError(f"{path}:{getattr(e, 'line', '?')}:{getattr(e, 'column', '?')}: syntax error: "
                          f"{getattr(e, 'message', e)}")


# -- the run ----------------------------------------------------------------------------------------
def split_ranks(output: str) -> dict[int, list[str]]:
    """Per-rank stderr lines from horovodrun's ``[rank]<stream>:`` prefixed output."""
    err: dict[int, list[str]] = {}
    for line in output.splitlines():
        matches = list(PREFIX.finditer(line))
        for i, m in enumerate(matches):
            end = matches[i + 1].start() if i + 1 < len(matches) else len(line)
            if m.group(2) == "stderr":
                err.setdefault(int(m.group(1)), []).append(line[m.end():end])
    return err


def first_error(lines: list[str]) -> str | None:
    for line in lines:
        m = ERROR_LINE.match(line)
        if m and not line.lstrip().startswith(("File ", "Traceback")):
            return m.group(1).strip()[:500]
    return None


def verify(path, np: int = 2, timeout: float = DEFAULT_TIMEOUT, script_args=(), model_var: str | None = None,
           python: str | None = None, keep: bool = False) -> VerifyReport:
    """Convert PATH, run it on NP local ranks with `horovodrun --gloo`, compare final weights.

    Raises `VerifyError` for usage/environment problems (missing file, syntax error,
    interpreter without horovod); anything that happens in the run is in the report.
    """
    path = Path(path)
    if np < 1:
        raise VerifyError("--np must be at least 1")
    converted = convert_file(path)
    py = resolve_python(python)
    check_horovod(py)

    workdir = Path(tempfile.mkdtemp(prefix="horovodize-verify-"))
    report_dir = workdir / "reports"
    report_dir.mkdir()
    script = workdir / path.name
    script.write_text(converted, encoding="utf-8")
    wrapper = workdir / "_horovodize_verify_wrapper.py"
    wrapper.write_text(_WRAPPER, encoding="utf-8")

    env = dict(os.environ)
    # The converted copy lives in a temp dir: keep the original directory importable, as it
    # would be when the script runs from there.
    src_dir = str(path.resolve().parent)
    env["PYTHONPATH"] = src_dir + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["PATH"] = str(Path(py).parent) + os.pathsep + env.get("PATH", "")
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    env.setdefault("PYTHONUNBUFFERED", "1")
    cmd = launcher(py) + ["-np", str(np), "-H", f"localhost:{np}", "--gloo",
                          py, str(wrapper), str(script), str(report_dir), model_var or DEFAULT_MODEL_VAR,
                          *script_args]
    result = VerifyReport(path=str(path), np=np, command=cmd, workdir=str(workdir) if keep else None)
    start = time.monotonic()
    try:
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                errors="replace", start_new_session=True)
    except OSError as e:
        shutil.rmtree(workdir, ignore_errors=True)
        raise VerifyError(f"cannot start horovodrun: {e}")
    try:
        output, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        result.timed_out = True
        os.killpg(proc.pid, signal.SIGKILL)  # the launcher and the ranks it started
        output, _ = proc.communicate()
    result.wall = time.monotonic() - start
    result.launcher_exit, result.output = proc.returncode, output

    errors = split_ranks(output)
    for rank in range(np):
        rep_path = report_dir / f"rank-{rank}.json"
        if rep_path.exists():
            data = json.loads(rep_path.read_text())
            r = RankResult(rank, data["exit"], data.get("error"), data.get("checksum"), data.get("digest"),
                           bool(data.get("model_found")), data.get("note"))
        else:
            r = RankResult(rank, None)
        if r.error is None and r.exit != 0:
            r.error = first_error(errors.get(rank, []))
        result.ranks.append(r)
    if not result.timed_out and all(r.exit == 0 and r.checksum is not None for r in result.ranks):
        first = result.ranks[0]
        result.weights_agree = all(r.digest == first.digest or math.isclose(r.checksum, first.checksum, rel_tol=1e-12)
                                   for r in result.ranks)
    if result.ranks and not any(r.error for r in result.ranks) and result.launcher_exit not in (0, None):
        # the launcher itself failed (e.g. no free port): surface its last error line
        tail = [l for l in output.splitlines() if not PREFIX.match(l)]
        err = first_error(tail[::-1])
        if err:
            result.ranks[0].error = result.ranks[0].error or err
    if not keep:
        shutil.rmtree(workdir, ignore_errors=True)
    return result


# -- CLI ------------------------------------------------------------------------------------------
def _options(parser: argparse.ArgumentParser, suppress: bool = False) -> None:
    d = (lambda v: argparse.SUPPRESS) if suppress else (lambda v: v)
    parser.add_argument("--np", type=int, default=d(2), help="number of local ranks (default 2)")
    parser.add_argument("--timeout", type=float, default=d(DEFAULT_TIMEOUT), metavar="S",
                        help=f"seconds before the run is killed (default {DEFAULT_TIMEOUT:.0f})")
    parser.add_argument("--python", metavar="PY", default=d(None),
                        help="interpreter with tensorflow + horovod (default $HOROVODIZE_HVD_PYTHON, else python3)")
    parser.add_argument("--model-var", metavar="NAME", default=d(None),
                        help="global holding the model to compare (default `model`, or the only Keras model)")
    parser.add_argument("--keep", action="store_true", default=d(False),
                        help="keep the temp dir with the converted script")
    parser.add_argument("--show-output", action="store_true", default=d(False), help="print horovodrun's output")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """`verify PATH [options] [-- ARGS]`: options may come before or after PATH; everything
    after `--` goes to the script. (argparse cannot mix a `*` positional with options that
    follow it, so PATH and what follows are taken as a remainder and parsed again in `run`.)"""
    parser.usage = "horovodize verify PATH [--np N] [--timeout S] [--python PY] [--model-var NAME] [--keep] [--show-output] [-- ARGS ...]"
    _options(parser)
    parser.add_argument("rest", nargs=argparse.REMAINDER, metavar="PATH [-- ARGS ...]",
                        help="the single-GPU training script, then its arguments after --")


def _parse_rest(args) -> tuple[argparse.Namespace, list[str]]:
    rest = list(getattr(args, "rest", None) or [])
    if getattr(args, "path", None) and not rest:  # called with a ready namespace
        return args, list(getattr(args, "script_args", []) or [])
    head, script_args = (rest[:rest.index("--")], rest[rest.index("--") + 1:]) if "--" in rest else (rest, [])
    sub = argparse.ArgumentParser(prog="horovodize verify", usage=(
        "horovodize verify PATH [--np N] [--timeout S] [--python PY] [--model-var NAME] [-- ARGS ...]"))
    _options(sub, suppress=True)
    sub.add_argument("path", metavar="PATH")
    return sub.parse_args(head, namespace=args), script_args


def run(args) -> int:
    args, script_args = _parse_rest(args)
    try:
        report = verify(args.path, np=args.np, timeout=args.timeout, script_args=script_args,
                        model_var=args.model_var, python=args.python, keep=getattr(args, "keep", False))
    except VerifyError as e:
        print(f"horovodize: {e}", file=sys.stderr)
        return 2
    if getattr(args, "show_output", False):
        print(report.output.rstrip("\n"))
    elif not report.ok and not any(r.error for r in report.ranks):
        print("\n".join(report.output.rstrip("\n").splitlines()[-40:]))  # the tail, for context
    print(f"verify {report.path}: {report.np} rank(s), horovodrun --gloo")
    for line in report.summary_lines():
        print(line)
    if report.workdir:
        print(f"converted script kept in {report.workdir}")
    return 0 if report.ok else 1


def main(argv: list[str] | None = None) -> int:  # `python -m horovodize.verify`
    parser = argparse.ArgumentParser(prog="horovodize verify")
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
