"""Initialization options (``initializationOptions`` in ``initialize``).

```json
{"select": ["HVD010", "HVD-R7"], "docsBaseUrl": "https://example.org/codes/"}
```

* ``select``: report only these codes (same spelling as ``horovodize check --select``).
  It filters what is reported; the whole-file conversion always applies every rule, like
  ``horovodize convert``.
* ``docsBaseUrl``: diagnostics link to ``docsBaseUrl + CODE`` instead of the packaged
  page (a ``file:`` URI to ``horovodize/docs/<CODE>.md``).
* ``python``: the interpreter the user's programs run with; the server runs
  ``horovodize doctor`` for it once (``lsp/doctor.py``).
* ``kerasTarget``: the Keras that Keras 3 / keras_core imports run on in a conversion
  (HVD090): ``"tf.keras"`` (the default; TensorFlow <= 2.15, Horovod 0.28's pinned stack)
  or ``"tf_keras"`` (TensorFlow >= 2.16), both Keras 2, or ``"keras3"`` (Keras 3 itself on
  its TensorFlow backend; a program using Keras-3-only API gets it whatever is set), as
  ``horovodize convert --keras-target``.
* ``scaleLearningRate`` (default true): false leaves the learning rate as it is, as
  ``horovodize convert --no-scale-lr``.
* ``requireLocalFs`` (default false): true refuses a conversion whose ranks read, after a
  barrier, files rank 0 wrote (they need a shared filesystem; reads made on rank 0 and
  broadcast do not count), as ``horovodize convert --require-local-fs``.
* ``maxFileLines`` / ``maxFileBytes``: a buffer over either limit (defaults
  `MAX_FILE_LINES`, `MAX_FILE_BYTES`; 0 = no limit) is not analysed; it gets one
  information diagnostic that says why, instead of minutes of analysis on every edit.

Invalid options are reported (one warning message) and replaced by their defaults, as
jedi-language-server does.
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import codes
from ..rules.keras_target import DEFAULT_TARGET, TARGETS

# Well above a 50k-line training program (usable: an edit takes well under a second
# there); a generated or vendored file past this costs tens of seconds per analysis.
MAX_FILE_LINES = 100_000
MAX_FILE_BYTES = 8_000_000


@dataclass(frozen=True)
class Options:
    select: frozenset[str] | None = None
    docs_base_url: str | None = None
    python: str | None = None
    max_file_lines: int = MAX_FILE_LINES
    max_file_bytes: int = MAX_FILE_BYTES
    keras_target: str = "tf.keras"
    scale_lr: bool = True            # `scaleLearningRate`: engine.Analysis.scale_lr
    require_local_fs: bool = False   # `requireLocalFs`: engine.Analysis.require_local_fs


def load(raw) -> tuple[Options, list[str]]:
    """(options, problems): never raises, whatever the client sends."""
    if raw is None:
        return Options(), []
    if not isinstance(raw, dict):
        return Options(), [f"initializationOptions must be an object, not {type(raw).__name__}"]
    problems: list[str] = []
    select = None
    if raw.get("select") is not None:
        value = raw["select"]
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(c, str) for c in value):
            problems.append("`select` must be a list of codes")
        else:
            known = {c: codes.normalize(c) for c in value}
            unknown = [c for c, n in known.items() if n is None]
            if unknown:
                problems.append(f"`select`: unknown code(s) {', '.join(unknown)}")
            select = frozenset(n for n in known.values() if n) or None
    base = raw.get("docsBaseUrl")
    if base is not None and not isinstance(base, str):
        problems.append("`docsBaseUrl` must be a string")
        base = None
    python = raw.get("python")
    if python is not None and not isinstance(python, str):
        problems.append("`python` must be a string")
        python = None
    keras_target = raw.get("kerasTarget", DEFAULT_TARGET)
    if keras_target not in TARGETS:
        problems.append('`kerasTarget` must be "tf.keras", "tf_keras" or "keras3"')
        keras_target = DEFAULT_TARGET
    scale_lr = raw.get("scaleLearningRate", True)
    if not isinstance(scale_lr, bool):
        problems.append("`scaleLearningRate` must be true or false")
        scale_lr = True
    require_local_fs = raw.get("requireLocalFs", False)
    if not isinstance(require_local_fs, bool):
        problems.append("`requireLocalFs` must be true or false")
        require_local_fs = False
    limits = {}
    for key, field_name, default in (("maxFileLines", "max_file_lines", MAX_FILE_LINES),
                                     ("maxFileBytes", "max_file_bytes", MAX_FILE_BYTES)):
        value = raw.get(key)
        if value is None:
            limits[field_name] = default
        elif isinstance(value, bool) or not isinstance(value, int) or value < 0:
            problems.append(f"`{key}` must be a non-negative integer (0 = no limit)")
            limits[field_name] = default
        else:
            limits[field_name] = value
    return Options(select=select, docs_base_url=base or None, python=python or None, keras_target=keras_target,
                   scale_lr=scale_lr, require_local_fs=require_local_fs, **limits), problems
