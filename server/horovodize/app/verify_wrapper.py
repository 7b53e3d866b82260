"""The per-rank wrapper of ``horovodize verify``: the source of a small ``__main__`` that runs
the user's script and writes one JSON report per rank (``WRAPPER``).

What the report holds, for the checks in `verify_checks`:

* ``exit`` / ``error``: the exit status and the first error line;
* ``weights``: ``{name: sha256}`` of every Keras model reachable from the script's globals
  (one level into lists, dicts and objects), every ``tf.Variable`` an optimizer updated
  (``apply_gradients`` of the Keras optimizers, legacy and new, and of ``tf.compat.v1``,
  patched before the script runs: Horovod's DistributedOptimizer calls through them) and
  the global named by ``--model-var``;
* ``steps``: optimizer steps (the optimizers' ``iterations`` less what they held at their first
  update: a count restored from a checkpoint is not this run's work; else eager calls counted);
* ``writes``: ``[event, path, line, time]`` from a ``sys.addaudithook`` (open for writing,
  rename/replace, mkdir, remove, rmtree), ``line`` the script's frame that caused it;
* ``reads`` (two-host rehearsal, ``$HOROVODIZE_TRACK_READS``): ``[path, line, time]`` of the
  files Python opened for reading outside the interpreter's own trees (attempts included: a
  missing file is recorded before the open fails), and of the folders it listed
  (``os.listdir``, ``os.scandir``, so ``glob``), with a trailing separator; ``host``:
  ``$HOROVOD_CROSS_RANK``;
* ``prints``: on ranks > 0, ``[line, text]`` of what reached ``sys.stdout``.

Nothing in this module runs in the horovodize process: the string is written next to the
script and run by the Horovod interpreter. Requires: nothing.
"""

WRAPPER = r'''
import builtins, hashlib, json, os, sys, time, traceback, types

SCRIPT, REPORT_DIR, MODEL_VAR, TAG = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
sys.argv = [SCRIPT] + sys.argv[5:]
RANK = int(os.environ.get("HOROVOD_RANK", os.environ.get("OMPI_COMM_WORLD_RANK", "0")))
REPORT = os.path.join(REPORT_DIR, "%s-rank-%d.json" % (TAG, RANK))
report = {"rank": RANK, "pid": os.getpid(), "exit": 0, "error": None, "weights": {}, "steps": None,
          "step_calls": 0, "writes": [], "reads": [], "prints": [], "notes": [],
          "host": int(os.environ.get("HOROVOD_CROSS_RANK", "0"))}
_READS = bool(os.environ.get("HOROVODIZE_TRACK_READS"))
# The interpreter's own trees: its stdlib and packages are read by imports, never written by ranks.
_SYSTEM = tuple(sorted({os.path.realpath(p) + os.sep for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)}
                       | {"/usr/", "/lib/", "/etc/", "/sys/", "/proc/", "/dev/", "/run/"}))
_ACTIVE = [False]
_IN_HOOK = [False]
_TMPFILE = getattr(os, "O_TMPFILE", 0)
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC


def _user_line():
    f = sys._getframe(2)
    while f is not None:
        if f.f_code.co_filename == SCRIPT:
            return f.f_lineno
        f = f.f_back
    return None


def _absolute(path):
    """The absolute path of an audit event's path argument (None: a file descriptor, undecodable)."""
    if isinstance(path, int):
        return None
    try:
        return os.path.abspath(os.fsdecode(path))
    except Exception:
        return None


def _record(event, path):
    path = _absolute(path)
    if path is None or path.startswith(("/dev/", "/proc/", REPORT_DIR)) or "__pycache__" in path or os.path.isdir(path):
        return  # (a directory: tempfile.TemporaryFile's unnamed O_TMPFILE file, opened "w+" in it)
    if len(report["writes"]) < 5000:
        report["writes"].append([event, path, _user_line(), time.time()])


def _record_read(path, listing=False):
    path = _absolute(path)
    if path is None or path.startswith(_SYSTEM + (REPORT_DIR,)) or "__pycache__" in path or \
            path.endswith((".py", ".so", ".pyc")):
        return
    if len(report["reads"]) < 5000:    # (a folder listed: with a trailing separator)
        report["reads"].append([path.rstrip(os.sep) + os.sep if listing else path, _user_line(), time.time()])


def _hook(event, args):
    if not _ACTIVE[0] or _IN_HOOK[0]:
        return
    if event not in ("open", "os.rename", "os.replace", "os.mkdir", "os.remove", "shutil.rmtree",
                     "os.listdir", "os.scandir"):
        return
    _IN_HOOK[0] = True
    try:
        if event in ("os.listdir", "os.scandir"):
            if _READS and isinstance(args[0], (str, bytes, os.PathLike)):
                _record_read(args[0], listing=True)
        elif event == "open":
            path, mode, flags = args
            if mode is None and _TMPFILE and (flags & _TMPFILE) == _TMPFILE:
                return  # an unnamed temp file (tempfile.TemporaryFile): no path is written
            if (isinstance(mode, str) and any(c in mode for c in "wax+")) or (mode is None and flags & _WRITE_FLAGS):
                _record("open", path)
            elif _READS:
                _record_read(path)
        elif event in ("os.rename", "os.replace"):
            _record(event, args[1])
        else:
            _record(event, args[0])
    finally:
        _IN_HOOK[0] = False


class _Stdout:
    """Ranks > 0: what the program prints, with the script's line that printed it."""
    def __init__(self, inner):
        self._inner, self._line, self._text = inner, None, ""

    def write(self, s):
        if _ACTIVE[0] and isinstance(s, str) and len(report["prints"]) < 200:
            if not self._text:
                self._line = _user_line()   # print() writes its pieces one by one: one record a line
            self._text += s
            while "\n" in self._text or "\r" in self._text:
                cut = min(i for i in (self._text.find("\n"), self._text.find("\r")) if i >= 0)
                self.done(self._text[:cut])
                self._text = self._text[cut + 1:]
        return self._inner.write(s)

    def done(self, text):
        if text.strip():
            report["prints"].append([self._line, text.strip()[:300]])

    def __getattr__(self, name):
        return getattr(self._inner, name)


# -- optimizers: which variables they update, how many steps ----------------------------------------
_OPTIMIZERS, _VARIABLES, _BASE = [], {}, {}    # _BASE: each optimizer's steps before its first update


def _patch(cls):
    orig = cls.__dict__.get("apply_gradients")
    if orig is None or getattr(orig, "_horovodize_patched", False):
        return

    def apply_gradients(self, grads_and_vars, *args, **kwargs):
        grads_and_vars = list(grads_and_vars)
        if not any(o is self for o in _OPTIMIZERS):
            _OPTIMIZERS.append(self)
            _BASE[id(self)] = _iterations(self)     # restored from a checkpoint: not this run's steps
        for _, v in grads_and_vars:
            if v is not None:
                _VARIABLES.setdefault(id(v), v)
        report["step_calls"] += 1
        return orig(self, grads_and_vars, *args, **kwargs)

    apply_gradients._horovodize_patched = True
    cls.apply_gradients = apply_gradients


def _install_optimizer_patch():
    try:
        import tensorflow as tf
    except Exception as e:
        report["notes"].append("tensorflow not importable: %s" % e)
        return
    try:
        tf.config.threading.set_intra_op_parallelism_threads(1)
    except Exception:
        pass
    try:   # epochs run by fit: a division by whole epochs (Horovod's keras examples) rounds up
        history = tf.keras.callbacks.History
        orig_end = history.on_epoch_end

        def on_epoch_end(self, epoch, logs=None):
            report["epochs"] = (report.get("epochs") or 0) + 1
            return orig_end(self, epoch, logs)

        history.on_epoch_end = on_epoch_end
    except Exception:
        pass
    for getter in (lambda: tf.keras.optimizers.Optimizer, lambda: tf.keras.optimizers.legacy.Optimizer,
                   lambda: tf.compat.v1.train.Optimizer):
        try:
            _patch(getter())
        except Exception:
            pass


def _iterations(opt):
    """The optimizer's step counter now (read eagerly, also while a tf.function traces), or None."""
    try:
        import tensorflow as tf
        with tf.init_scope():
            it = getattr(opt, "iterations", None)
            return int(it.numpy() if hasattr(it, "numpy") else it)
    except Exception:
        return None


def _steps():
    total, known = 0, False
    for opt in _OPTIMIZERS:
        now = _iterations(opt)
        if now is not None:
            total += now - (_BASE.get(id(opt)) or 0)
            known = True
    if known:
        return total
    import tensorflow as tf
    return report["step_calls"] if tf.executing_eagerly() and _OPTIMIZERS else None


# -- weights -------------------------------------------------------------------------------------
def _digest(arrays):
    import numpy as np
    h = hashlib.sha256()
    for a in arrays:
        a = np.asarray(a)
        if a.dtype.kind in "fiub":
            h.update(str(a.shape).encode()); h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()[:16]


def _is_model(v):
    try:
        import tensorflow as tf
        return isinstance(v, tf.keras.Model)
    except Exception:
        return False


def _models(globs):
    seen, found = set(), []

    def visit(name, v):
        if id(v) not in seen and _is_model(v):
            seen.add(id(v)); found.append((name, v))

    for k, v in list(globs.items()):
        if k.startswith("__") or isinstance(v, (type, types.ModuleType, types.FunctionType)):
            continue
        visit(k, v)
        items = []
        if isinstance(v, dict):
            items = [("%s[%r]" % (k, kk), vv) for kk, vv in list(v.items())[:200]]
        elif isinstance(v, (list, tuple)):
            items = [("%s[%d]" % (k, i), vv) for i, vv in enumerate(v[:200])]
        elif hasattr(v, "__dict__") and not _is_model(v):
            try:
                items = [("%s.%s" % (k, a), vv) for a, vv in list(vars(v).items())[:200]]
            except TypeError:
                pass
        for n, vv in items:
            visit(n, vv)
    return found


def _weights(globs):
    out = {}
    for name, m in _models(globs):
        for i, w in enumerate(m.weights):
            out["model %s: %s" % (name, getattr(w, "name", i))] = _digest([w.numpy()])
    count = {}
    for v in _VARIABLES.values():
        try:
            name = v.name
            count[name] = count.get(name, 0) + 1
            key = "variable %s" % name + ("" if count[name] == 1 else " #%d" % count[name])
            out[key] = _digest([v.numpy()])
        except Exception:
            pass
    if MODEL_VAR and MODEL_VAR in globs:
        v = globs[MODEL_VAR]
        try:
            if hasattr(v, "get_variable_names"):  # an Estimator: its last checkpoint
                arrays = [v.get_variable_value(n) for n in sorted(v.get_variable_names())]
            elif hasattr(v, "get_weights"):
                arrays = v.get_weights()
            elif hasattr(v, "numpy"):
                arrays = [v.numpy()]
            else:
                arrays = [x.numpy() if hasattr(x, "numpy") else x for x in v]
            out["global %s" % MODEL_VAR] = _digest(arrays)
        except Exception as e:
            report["notes"].append("could not read `%s`: %s" % (MODEL_VAR, e))
    return out


# Like `python SCRIPT`: a fresh __main__ module (so the globals survive an exit or error).
sys.addaudithook(_hook)
_install_optimizer_patch()
if RANK > 0:
    sys.stdout = _Stdout(sys.stdout)
main = types.ModuleType("__main__")
main.__dict__.update(__file__=SCRIPT, __builtins__=builtins, __cached__=None)
sys.modules["__main__"] = main
globs = main.__dict__
try:
    with open(SCRIPT, "rb") as fh:
        code = compile(fh.read(), SCRIPT, "exec")
    _ACTIVE[0] = True
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
    report["error_line"] = ([f.lineno for f in traceback.extract_tb(e.__traceback__) if f.filename == SCRIPT]
                            or [None])[-1]
finally:
    _ACTIVE[0] = False
try:
    if isinstance(sys.stdout, _Stdout):
        sys.stdout.done(sys.stdout._text)
    sys.stdout.flush()
    report["weights"] = _weights(globs)
    report["steps"] = _steps()
except Exception as e:
    report["notes"].append("could not read the weights: %s: %s" % (type(e).__name__, e))
with open(REPORT, "w") as fh:
    json.dump(report, fh)
sys.stdout.flush(); sys.stderr.flush()
sys.exit(report["exit"])
'''
