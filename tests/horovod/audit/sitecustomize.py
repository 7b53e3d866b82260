"""Audit hook for the Horovod run tier (on PYTHONPATH only when a test asks for it).

Records, per process, every file the Python level opens for writing, every directory it
makes, every rename and every removal (``os.remove``/``unlink``, ``os.rmdir``,
``shutil.rmtree``: event ``remove``), each with its wall-clock time (``t``), into
``$HVD_AUDIT_DIR/audit-<rank>.jsonl`` at exit. The rank comes
from ``HOROVOD_RANK`` (set by horovodrun; absent: 0). Writes done in C++ (TensorFlow
checkpoints, SavedModel, h5py) raise no audit event: the programs put those in per-rank
directories, which the tests inspect.
"""
import atexit
import json
import os
import sys
import time

_DIR = os.environ.get("HVD_AUDIT_DIR")
_EXCLUDE = tuple(p for p in (os.environ.get("HVD_REPORT_DIR"), _DIR, "/dev/", "/proc/") if p)
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC
_events = []
_busy = False


def _keep(path) -> bool:
    try:
        path = os.fsdecode(path) if not isinstance(path, int) else None
    except Exception:
        return False
    return bool(path) and not os.path.abspath(path).startswith(_EXCLUDE)


def _hook(event, args):
    global _busy
    if _busy:
        return
    if event == "open":
        path, mode, flags = (tuple(args) + (None, None, None))[:3]
        writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or \
            (mode is None and isinstance(flags, int) and flags & _WRITE_FLAGS)
        if writing and _keep(path):
            _events.append({"event": "write", "path": os.path.abspath(os.fsdecode(path)), "t": time.time()})
    elif event == "os.mkdir" and args and _keep(args[0]) and os.path.isdir(args[0]):
        return                         # ``makedirs(exist_ok=True)`` of a folder that exists: no write
    elif event in ("os.mkdir", "os.rename", "os.replace") and args and _keep(args[0]):
        _events.append({"event": event, "path": os.path.abspath(os.fsdecode(args[0])), "t": time.time()})
    elif event in ("os.remove", "os.rmdir", "shutil.rmtree") and args and _keep(args[0]) \
            and (len(args) < 2 or args[1] in (None, -1)):
        # (os.remove's dir_fd is -1 when not given; the entries shutil.rmtree removes relative
        # to a directory fd are its own event's)
        _events.append({"event": "remove", "path": os.path.abspath(os.fsdecode(args[0])), "t": time.time()})


def _dump():
    global _busy
    _busy = True
    rank = os.environ.get("HOROVOD_RANK", "0")
    with open(os.path.join(_DIR, f"audit-{rank}.jsonl"), "a") as fh:
        for e in _events:
            fh.write(json.dumps(e) + "\n")


if _DIR:
    os.makedirs(_DIR, exist_ok=True)
    sys.addaudithook(_hook)
    atexit.register(_dump)
