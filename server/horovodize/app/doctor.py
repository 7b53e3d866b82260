"""``horovodize doctor``: can this interpreter run the converted programs?

Horovod 0.28 (the last release) only works with TensorFlow's Keras 2: on TensorFlow >= 2.16
``tf.keras`` is Keras 3 unless ``tf_keras`` is installed and ``TF_USE_LEGACY_KERAS=1`` is set,
and Horovod's TensorFlow ops exist only when it was compiled against the installed
TensorFlow. The doctor reads the interpreter's package metadata in a subprocess (nothing
here imports TensorFlow or Horovod), asks ``horovodrun --check-build`` what Horovod was built
with, and turns each incompatibility into a finding with the exact command that fixes it.
On TensorFlow >= 2.16 with tf_keras and a built Horovod the verdict comes from what runs: a
one-process probe (`_RUN_PROBE`, ``TF_USE_LEGACY_KERAS=1``) trains a tiny tf_keras model
with each Horovod feature the conversion emits and says which work (on TF 2.16.2 + tf_keras
2.16.0 + Horovod 0.28.1: DistributedOptimizer, the broadcast callback and the tape do;
Horovod's MetricAverageCallback and LearningRateWarmupCallback do not, they call Keras 3).
For the keras3 conversion target (``--keras-target keras3``: Keras 3 itself on TensorFlow >=
2.16, docs/keras3.md) Keras 3 and a Horovod built against that TensorFlow are what it needs;
tf_keras and the run probe are not.
The language server runs it once for the editor's interpreter (``lsp/doctor.py``).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import asdict, dataclass, field

HOROVOD_RELEASE = "0.28.1"          # the last Horovod release; what the install lines pin
PROBE_TIMEOUT = 60
RUN_PROBE_TIMEOUT = 300             # imports TensorFlow and trains four tiny models
CHECK_BUILD_TIMEOUT = 180           # loads TensorFlow (and every other framework Horovod found)

# Distributions that provide the `tensorflow` module, in the order they are reported.
TF_DISTS = ("tensorflow", "tensorflow-cpu", "tensorflow-gpu", "tensorflow-intel", "tensorflow-macos",
            "tf-nightly", "tf-nightly-cpu")
OTHER_DISTS = ("keras", "tf-keras", "tf-keras-nightly", "horovod")

# Runs in the inspected interpreter (any Python 3.8+): metadata only, never an import of TF.
_PROBE = r"""
import json, os, sys, sysconfig
try:
    from importlib import metadata
except ImportError:
    metadata = None
names = %r
found = {}
if metadata is not None:
    for n in names:
        try:
            found[n] = metadata.version(n)
        except Exception:
            pass
print(json.dumps({
    "executable": sys.executable,
    "python_version": "%%d.%%d.%%d" %% sys.version_info[:3],
    "scripts": sysconfig.get_path("scripts"),
    "dists": found,
    "metadata": metadata is not None,
    "tf_use_legacy_keras": os.environ.get("TF_USE_LEGACY_KERAS"),
}))
""" % ((TF_DISTS + OTHER_DISTS),)


# Runs in the inspected interpreter, one process (Horovod of size 1), TF_USE_LEGACY_KERAS=1:
# each Horovod feature the conversion may emit, tried on a tf_keras model; prints
# {feature: "ok" | "<Error>: <message>"} as its last line.
_RUN_PROBE = r"""
import json, os, sys
os.environ["TF_USE_LEGACY_KERAS"] = "1"
out = {}
def attempt(name, fn):
    try:
        fn()
        out[name] = "ok"
    except BaseException as e:
        out[name] = ("%s: %s" % (type(e).__name__, e)).splitlines()[0][:300]
def imports():
    global tf, keras, hvd, hvd_tf
    import tensorflow as tf
    import tf_keras as keras
    import horovod.tensorflow.keras as hvd
    import horovod.tensorflow as hvd_tf
    hvd.init()
def fit(*callbacks):
    x = tf.random.normal((16, 4))
    y = tf.random.normal((16, 1))
    model = keras.Sequential([keras.Input(shape=(4,)), keras.layers.Dense(1)])
    model.compile(optimizer=hvd.DistributedOptimizer(keras.optimizers.SGD(0.01)), loss="mse")
    model.fit(x, y, batch_size=8, epochs=1, verbose=0,
              callbacks=[hvd.callbacks.BroadcastGlobalVariablesCallback(0)] + [c() for c in callbacks])
def tape():
    model = keras.Sequential([keras.Input(shape=(4,)), keras.layers.Dense(1)])
    opt = keras.optimizers.SGD(0.01)
    with tf.GradientTape() as t:
        loss = tf.reduce_mean(model(tf.random.normal((8, 4))) ** 2)
    t = hvd_tf.DistributedGradientTape(t)
    grads = t.gradient(loss, model.trainable_variables)
    opt.apply_gradients(zip(grads, model.trainable_variables))
    hvd_tf.broadcast_variables(model.variables, root_rank=0)
    hvd_tf.broadcast_variables(opt.variables(), root_rank=0)
attempt("import", imports)
if out["import"] == "ok":
    attempt("fit", fit)
    attempt("tape", tape)
    attempt("metric_average", lambda: fit(hvd.callbacks.MetricAverageCallback))
    attempt("warmup", lambda: fit(lambda: hvd.callbacks.LearningRateWarmupCallback(initial_lr=0.01, warmup_epochs=1)))
print(json.dumps(out))
"""
# What each probed feature is, as the doctor names it.
PROBED = {"import": "import horovod.tensorflow.keras with tf_keras",
          "fit": "fit with hvd.DistributedOptimizer and BroadcastGlobalVariablesCallback",
          "tape": "hvd.DistributedGradientTape and broadcast_variables",
          "metric_average": "hvd.callbacks.MetricAverageCallback",
          "warmup": "hvd.callbacks.LearningRateWarmupCallback"}


@dataclass
class Finding:
    severity: str       # "error" (converted programs will not run), "warning", "info"
    title: str          # one line, short enough for a status bar tooltip
    detail: str
    fix: list[str] = field(default_factory=list)    # shell lines, in order


@dataclass
class Build:
    """What ``horovodrun --check-build`` reports: section -> {name: available}."""

    version: str | None
    frameworks: dict[str, bool]
    controllers: dict[str, bool]
    operations: dict[str, bool]


@dataclass
class Report:
    python: str
    python_version: str | None = None
    tensorflow: str | None = None
    tensorflow_dist: str | None = None
    keras: str | None = None
    tf_keras: str | None = None
    horovod: str | None = None
    tf_use_legacy_keras: str | None = None
    horovodrun: str | None = None
    build: Build | None = None
    runs: dict[str, str] | None = None   # the run probe (TF >= 2.16): feature -> "ok" or the error
    findings: list[Finding] = field(default_factory=list)
    keras_target: str = "tf.keras"       # the conversion target the verdict is for (docs/keras3.md)

    @property
    def ready(self) -> bool:
        return self.python_version is not None and not any(f.severity == "error" for f in self.findings)

    @property
    def verdict(self) -> str:
        if self.python_version is None:
            return "cannot inspect"
        return "ready" if self.ready else "not ready"

    def summary(self) -> str:
        """One line: the verdict and the first problem (or the stack when it is ready)."""
        errors = [f for f in self.findings if f.severity == "error"]
        if self.python_version is None or errors:
            first = (errors or self.findings)[0].title if (errors or self.findings) else "unknown"
            more = f" (+{len(errors) - 1} more)" if len(errors) > 1 else ""
            return f"{self.verdict}: {first}{more}"
        parts = [f"TensorFlow {self.tensorflow}"]
        if self.tf_keras and self.keras_target != "keras3":
            parts.append(f"tf_keras {self.tf_keras}")
        elif self.keras:
            parts.append(f"Keras {self.keras}")
        built = [n for n, ok in (self.build.frameworks.items() if self.build else ()) if ok and n == "TensorFlow"]
        built += [n for n, ok in (self.build.controllers.items() if self.build else ()) if ok]
        parts.append(f"Horovod {self.horovod}" + (f" ({', '.join(built)})" if built else ""))
        return f"ready: {', '.join(parts)}"

    def to_json(self) -> dict:
        data = asdict(self)
        data.update(verdict=self.verdict, ready=self.ready, summary=self.summary())
        return data


# -- versions -------------------------------------------------------------------------------------
def version_tuple(v: str | None) -> tuple[int, ...]:
    """Leading numeric release parts: "2.16.0rc1" -> (2, 16, 0); enough for the checks here."""
    out: list[int] = []
    for part in (v or "").split("."):
        m = re.match(r"\d+", part)
        if not m:
            break
        out.append(int(m.group()))
        if m.end() != len(part):
            break
    return tuple(out)


def _minor(v: str | None) -> str:
    return ".".join(map(str, version_tuple(v)[:2]))


# -- horovodrun --check-build ---------------------------------------------------------------------
_SECTIONS = {"available frameworks": "frameworks", "available controllers": "controllers",
             "available tensor operations": "operations"}


def parse_check_build(text: str) -> Build | None:
    """Parse ``horovodrun --check-build``; None when the text is not its output."""
    version = re.search(r"Horovod v(\S+?):?\s*$", text, re.M)
    sections: dict[str, dict[str, bool]] = {"frameworks": {}, "controllers": {}, "operations": {}}
    current = None
    for line in text.splitlines():
        head = line.strip().rstrip(":").lower()
        if head in _SECTIONS:
            current = sections[_SECTIONS[head]]
            continue
        m = re.match(r"\s*\[([ Xx])\]\s+(\S.*?)\s*$", line)
        if m and current is not None:
            current[m.group(2)] = m.group(1) != " "
    if not sections["frameworks"]:
        return None
    return Build(version.group(1) if version else None, **sections)


def _horovodrun(python: str, scripts: str | None) -> list[str]:
    """The interpreter's own horovodrun, run by that interpreter (shebangs may be stale)."""
    for d in filter(None, (scripts, os.path.dirname(python))):
        path = os.path.join(d, "horovodrun")
        if os.path.isfile(path):
            return [python, path]
    return [python, "-m", "horovod.runner.launch"]


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return lines[-1] if lines else "no output"


# -- the inspection -------------------------------------------------------------------------------
def resolve_python(python: str | None) -> str:
    """``--python`` as given (a name is looked up on PATH); default: the ``python3`` on PATH,
    i.e. the active virtual environment's."""
    cand = python or "python3"
    if os.sep in cand or (os.altsep and os.altsep in cand):
        return os.path.abspath(cand)
    return shutil.which(cand) or cand


def inspect(python: str, check_build: bool = True, keras_target: str = "tf.keras") -> Report:
    python = resolve_python(python)
    report = Report(python=python, keras_target=keras_target)
    env = dict(os.environ, PYTHONNOUSERSITE=os.environ.get("PYTHONNOUSERSITE", ""))
    env.pop("PYTHONPATH", None)   # the server's own path (its bundled libraries) is not the user's
    try:
        proc = subprocess.run([python, "-c", _PROBE], capture_output=True, text=True, timeout=PROBE_TIMEOUT,
                              env=env, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as e:
        report.findings.append(Finding("error", f"cannot run {python}", str(e),
                                       ["pick an existing interpreter (--python PATH, or the editor's Python interpreter)"]))
        return report
    try:
        data = json.loads(proc.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        report.findings.append(Finding("error", f"cannot inspect {python}",
                                       f"exit {proc.returncode}: {_last_line(proc.stderr)}",
                                       ["pick a Python 3.8+ interpreter (--python PATH)"]))
        return report
    dists = data.get("dists", {})
    report.python = data.get("executable") or python
    report.python_version = data.get("python_version")
    report.tf_use_legacy_keras = data.get("tf_use_legacy_keras")
    for name in TF_DISTS:
        if name in dists:
            report.tensorflow, report.tensorflow_dist = dists[name], name
            break
    report.keras = dists.get("keras")
    report.tf_keras = dists.get("tf-keras") or dists.get("tf-keras-nightly")
    report.horovod = dists.get("horovod")
    if report.horovod and check_build:
        cmd = _horovodrun(report.python, data.get("scripts"))
        report.horovodrun = " ".join(cmd[1:]) if cmd[1] != "-m" else "python -m horovod.runner.launch"
        try:
            run = subprocess.run([*cmd, "--check-build"], capture_output=True, text=True,
                                 timeout=CHECK_BUILD_TIMEOUT, stdin=subprocess.DEVNULL,
                                 env=dict(env, TF_CPP_MIN_LOG_LEVEL="3"))
            report.build = parse_check_build(run.stdout)
            build_error = None if report.build else f"exit {run.returncode}: {_last_line(run.stderr or run.stdout)}"
        except (OSError, subprocess.TimeoutExpired) as e:
            build_error = str(e)
        if build_error:
            report.findings.append(_broken_horovod(report, build_error))
        elif _probes(report) and keras_target != "keras3":
            report.runs = run_probe(report.python, env)
    report.findings[:0] = list(diagnose(report))
    return report


def _probes(report: Report) -> bool:
    """The run probe is for TF >= 2.16 with tf_keras and a Horovod built with TensorFlow."""
    return (version_tuple(report.tensorflow) >= (2, 16) and report.tf_keras is not None
            and report.build is not None and bool(report.build.frameworks.get("TensorFlow")))


def run_probe(python: str, env: dict) -> dict[str, str]:
    """`_RUN_PROBE` in `python`: feature -> "ok" or its error line (a probe that dies is an
    error of its "import" step)."""
    try:
        proc = subprocess.run([python, "-c", _RUN_PROBE], capture_output=True, text=True, timeout=RUN_PROBE_TIMEOUT,
                              stdin=subprocess.DEVNULL,
                              env=dict(env, TF_USE_LEGACY_KERAS="1", TF_CPP_MIN_LOG_LEVEL="3",
                                       CUDA_VISIBLE_DEVICES=""))
    except (OSError, subprocess.TimeoutExpired) as e:
        return {"import": f"the probe did not finish: {e}"}
    try:
        return json.loads(proc.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {"import": f"the probe died (exit {proc.returncode}): {_last_line(proc.stderr)}"}


# -- the checks -----------------------------------------------------------------------------------
def _pip(report: Report, *args: str) -> str:
    return " ".join([shlex.quote(report.python), "-m", "pip", "install", *args])


def _reinstall_horovod(report: Report, extra: str = "") -> str:
    ver = report.horovod or HOROVOD_RELEASE
    flags = f"HOROVOD_WITH_TENSORFLOW=1 HOROVOD_WITH_GLOO=1{extra} "
    return flags + _pip(report, "--no-cache-dir", "--force-reinstall", "--no-deps", f"horovod=={ver}")


def _broken_horovod(report: Report, why: str) -> Finding:
    return Finding("error", "horovodrun --check-build failed",
                   f"Horovod {report.horovod} is installed but `horovodrun --check-build` failed ({why}); "
                   "the installation is broken or was built against another TensorFlow.",
                   [_reinstall_horovod(report)])


def diagnose(report: Report):
    """The findings from the versions and the build (pure: ``report`` is already filled in)."""
    tf, tfv = report.tensorflow, version_tuple(report.tensorflow)
    if tf is None:
        yield Finding("error", "TensorFlow is not installed",
                      "The converted programs import tensorflow and horovod.tensorflow.",
                      [_pip(report, "'tensorflow<2.16'"),
                       "HOROVOD_WITH_TENSORFLOW=1 HOROVOD_WITH_GLOO=1 "
                       + _pip(report, "--no-cache-dir", f"horovod=={HOROVOD_RELEASE}")])
    elif tfv >= (2, 16) and report.keras_target == "keras3":
        yield from _keras3_target(report)
    elif tfv >= (2, 16):
        legacy = (report.tf_use_legacy_keras or "").strip().lower() in ("1", "true", "yes")
        pin_tf = [_pip(report, "'tensorflow<2.16'")]
        if report.horovod:
            pin_tf.append(_reinstall_horovod(report))      # Horovod's ops are built against one TF
        if not report.tf_keras:
            yield Finding("error", f"TensorFlow {tf} needs tf_keras for Horovod",
                          f"TensorFlow {_minor(tf)} makes tf.keras Keras 3, which Horovod "
                          f"{report.horovod or HOROVOD_RELEASE} does not support (hvd.DistributedOptimizer and "
                          "horovod.tensorflow.keras fail). Either use the legacy Keras 2 (tf_keras) or pin "
                          "TensorFlow below 2.16.",
                          [_pip(report, f"'tf_keras~={_minor(tf)}.0'"), "export TF_USE_LEGACY_KERAS=1",
                           "# or: " + " && ".join(pin_tf),
                           "# or, Keras 3 itself through Horovod's TensorFlow ops (docs/keras3.md): "
                           "horovodize convert --keras-target keras3 FILE; horovodize doctor --keras-target keras3"])
        else:
            if _minor(report.tf_keras) != _minor(tf):
                yield Finding("warning", f"tf_keras {report.tf_keras} does not match TensorFlow {tf}",
                              "tf_keras must have the same minor version as TensorFlow.",
                              [_pip(report, f"'tf_keras~={_minor(tf)}.0'")])
            if not legacy:
                yield Finding("warning", "TF_USE_LEGACY_KERAS=1 is not set",
                              f"tf_keras {report.tf_keras} is installed, but tf.keras stays Keras 3 unless "
                              "TF_USE_LEGACY_KERAS=1 is set in the environment that runs horovodrun "
                              "(the doctor sees the environment it was started from).",
                              ["export TF_USE_LEGACY_KERAS=1"])
            if report.runs is not None:
                yield from _run_findings(report, pin_tf)
    elif report.keras and version_tuple(report.keras) >= (3,):
        yield Finding("error", f"Keras {report.keras} is installed with TensorFlow {tf}",
                      f"TensorFlow {_minor(tf)}'s tf.keras expects Keras {_minor(tf)}; Keras 3 breaks it "
                      "(and Horovod's Keras support).",
                      [_pip(report, f"'keras~={_minor(tf)}.0'")])

    if report.horovod is None:
        yield Finding("error", "Horovod is not installed",
                      "Horovod compiles against the installed TensorFlow, so install it after TensorFlow "
                      "(it needs cmake and a C++17 compiler).",
                      ["HOROVOD_WITH_TENSORFLOW=1 HOROVOD_WITH_GLOO=1 "
                       + _pip(report, "--no-cache-dir", f"horovod=={HOROVOD_RELEASE}")])
        return
    b = report.build
    if b is None:
        return                                              # reported by inspect (or not checked)
    if not b.frameworks.get("TensorFlow"):
        yield Finding("error", "Horovod is not built with TensorFlow",
                      f"horovodrun --check-build lists no TensorFlow: Horovod {report.horovod} was built "
                      f"without it, or against another TensorFlow than the installed {tf or 'none'}.",
                      [_reinstall_horovod(report)])
    if not any(b.controllers.values()):
        yield Finding("error", "Horovod has no controller (Gloo or MPI)",
                      "horovodrun cannot start ranks without Gloo or MPI.", [_reinstall_horovod(report)])
    elif not b.controllers.get("Gloo"):
        yield Finding("info", "Horovod has no Gloo",
                      "Runs need MPI (`horovodrun` without --gloo); `horovodize verify` uses --gloo.",
                      [_reinstall_horovod(report)])
    if not b.operations.get("NCCL"):
        ops = [n for n, ok in b.operations.items() if ok]
        yield Finding("info", "Horovod has no NCCL",
                      f"Fine on CPU; on GPUs tensors are reduced with {', '.join(ops) or 'no operation'} "
                      "through host memory. For multi-GPU speed, rebuild with NCCL.",
                      [_reinstall_horovod(report, " HOROVOD_GPU_OPERATIONS=NCCL")])


def _keras3_target(report: Report):
    """TF >= 2.16 for the keras3 target: Keras 3 itself runs, on its TensorFlow backend, through
    Horovod's TensorFlow ops (no tf_keras, no TF_USE_LEGACY_KERAS: that would make tf.keras
    Keras 2 under a program written for Keras 3)."""
    if not report.keras or version_tuple(report.keras) < (3,):
        yield Finding("error", "the keras3 target needs Keras 3",
                      f"Converted for Keras 3 (`--keras-target keras3`), the program imports keras 3 on "
                      f"TensorFlow {report.tensorflow}; this interpreter has {report.keras or 'no keras'}.",
                      [_pip(report, "'keras>=3'")])
        return
    if (report.tf_use_legacy_keras or "").strip().lower() in ("1", "true", "yes"):
        yield Finding("warning", "TF_USE_LEGACY_KERAS=1 is set",
                      "It makes tf.keras tf_keras (Keras 2); a keras3 conversion uses Keras 3 itself: unset it "
                      "where horovodrun runs.", ["unset TF_USE_LEGACY_KERAS"])
    yield Finding("info", f"Keras {report.keras}: the keras3 target runs here",
                  "The converted program sets KERAS_BACKEND=tensorflow and uses Horovod's TensorFlow ops through "
                  "its own DistributedOptimizer, DistributedGradientTape and callbacks (proven on TF 2.21.0 + "
                  "Keras 3.15.1, docs/keras3.md).", [])


def _run_findings(report: Report, pin_tf: list[str]):
    """The verdict of the run probe: training (fit, tape) failing is an error; Horovod's
    callbacks failing is a warning whose fix is the tf_keras conversion target, which emits
    a stand-in for the metric average and no warm-up callback."""
    runs = report.runs or {}
    broken = [k for k in ("import", "fit", "tape") if runs.get(k, "not run") != "ok"]
    if broken:
        first = broken[0]
        yield Finding("error", f"Horovod {report.horovod} does not train tf_keras models here",
                      f"{PROBED[first]}: {runs.get(first, 'not run')} (a one-process probe with "
                      "TF_USE_LEGACY_KERAS=1).", pin_tf)
        return
    failing = [k for k in ("metric_average", "warmup") if runs.get(k) != "ok"]
    if failing:
        yield Finding("warning", "Horovod's Keras callbacks fail on this TensorFlow",
                      "; ".join(f"{PROBED[k]}: {runs.get(k, 'not run')}" for k in failing)
                      + f". Horovod {report.horovod}'s callbacks import `keras`, which is Keras 3 on TensorFlow "
                      f"{_minor(report.tensorflow)}. fit with DistributedOptimizer, the broadcast callback and the "
                      "tape run (probed).",
                      ["horovodize convert --keras-target tf_keras FILE   # averages the metrics with its own "
                       "callback, emits no warm-up callback",
                       "# or: " + " && ".join(pin_tf)])


# -- output ---------------------------------------------------------------------------------------
def render(report: Report) -> str:
    def row(name, value):
        return f"  {name:21}{value}"

    lines = [f"horovodize doctor: {report.python}" + (f" (Python {report.python_version})" if report.python_version else ""), ""]
    if report.python_version is not None:
        tf = report.tensorflow and f"{report.tensorflow} ({report.tensorflow_dist})"
        lines += [row("TensorFlow", tf or "not installed"),
                  row("Keras", report.keras or "not installed"),
                  row("tf_keras", report.tf_keras or "not installed"),
                  row("Horovod", report.horovod or "not installed"),
                  row("TF_USE_LEGACY_KERAS", report.tf_use_legacy_keras if report.tf_use_legacy_keras is not None else "not set")]
        if report.build:
            b = report.build
            def names(d):
                return ", ".join(n for n, ok in d.items() if ok) or "none"
            lines += [row("Horovod built with", f"frameworks: {names(b.frameworks)}; controllers: "
                                                f"{names(b.controllers)}; operations: {names(b.operations)}")]
        if report.runs is not None:
            lines.append(row("Runs (probed)", "; ".join(f"{k}: {'ok' if v == 'ok' else 'fails'}"
                                                        for k, v in report.runs.items())))
        lines.append("")
    lines.append(f"Verdict: {report.summary()}")
    for f in report.findings:
        lines += ["", f"{f.severity}: {f.title}", f"  {f.detail}"]
        lines += [f"  fix: {fix}" for fix in f.fix[:1]] + [f"       {fix}" for fix in f.fix[1:]]
    return "\n".join(lines) + "\n"


def add_arguments(parser) -> None:
    parser.add_argument("--python", metavar="PATH",
                        help="interpreter to inspect (default: the python3 on PATH, e.g. the active venv's)")
    parser.add_argument("--format", choices=("text", "json"), default="text")
    parser.add_argument("--keras-target", choices=("tf.keras", "tf_keras", "keras3"), default="tf.keras",
                        help="the conversion target to judge for (keras3: Keras 3 itself, TensorFlow >= 2.16)")


def run(args) -> int:
    """Exit 0 when ready (warnings allowed), 1 when something must be fixed, 2 when the
    interpreter cannot be inspected."""
    report = inspect(args.python, keras_target=getattr(args, "keras_target", "tf.keras"))
    if args.format == "json":
        json.dump(report.to_json(), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(render(report))
    if report.python_version is None:
        return 2
    return 0 if report.ready else 1
