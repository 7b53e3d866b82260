"""Compiled copies of the hot modules, used only where they match the sources exactly.

The parse and the analysis are pure Python, and the object-making loops there are at
Python's floor: opening a 10,000-line file spends ~0.4 s in them. The same modules compiled by
Cython, unchanged (`scripts/build_native.py`, run by ``make``), run ~15-20% faster. They are
an accelerator, not a second implementation:

* they live apart from the sources, in ``_native/`` next to this file (not in git, not in
  the wheel or the ``.vsix``), with a manifest of the interpreter they were built for and the
  SHA-256 of each source they were built from;
* `install` puts a finder first on ``sys.meta_path`` that loads a compiled module only when
  its source's hash matches the manifest: a module edited since the build (or a checkout of
  another commit) is imported from its ``.py``, so a stale build can be slower, never wrong;
* a compiled file that does not load (damaged) is run from its source too, and said so;
* ``HOROVODIZE_PURE=1`` turns them off (the test suite compares both ways).

`status` says which modules run compiled (``horovodize --version``, the server's log).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from importlib.machinery import EXTENSION_SUFFIXES, ExtensionFileLoader
from importlib.util import module_from_spec, spec_from_file_location
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent
DIRECTORY = PACKAGE / "_native"
MANIFEST = DIRECTORY / "manifest.json"

# The modules a whole-file open and a keystroke spend their time in (the parse, the index,
# the passes). Not the rules (~2 ms of a keystroke), the adapters (cli, lsp), nor this one.
MODULES = (
    "parse.fast_tokens", "parse.fast_parse", "parse.forked_tokens", "parse.splice_parse", "parse.diff_parse",
    "parse.source", "parse.nodes", "parse.index", "parse.imports", "parse.scopes", "parse.py2",
    "incremental.keep", "incremental.index_memo", "incremental.runs",
    "analysis.env", "analysis.roles", "analysis.bindings", "analysis.creations", "analysis.callables",
    "analysis.loop", "analysis.gradflow", "analysis.restrictions", "analysis.hvd_facts", "analysis.hvd_reach",
    "analysis.session", "analysis.keras3", "analysis.strategy", "analysis.effects", "engine",
)

_loaded: set[str] = set()            # the modules the finder loads compiled
_failed: dict[str, str] = {}         # module -> why its compiled file did not load
_why_not = "not installed"           # why nothing is compiled (when `_loaded` is empty)


def source_file(module: str) -> Path:
    """The source of `module`, a name relative to the package (``parse.source``)."""
    return PACKAGE.joinpath(*module.split(".")).with_suffix(".py")


def source_hash(module: str) -> str:
    return hashlib.sha256(source_file(module).read_bytes()).hexdigest()


def tag() -> str:
    """What a compiled module is built for: this interpreter's ABI (``cpython-311``) and its
    extension suffix (platform)."""
    return f"{sys.implementation.cache_tag} {EXTENSION_SUFFIXES[0]}"


def matching(manifest: dict) -> dict[str, Path]:
    """The modules of `manifest` whose compiled file exists and whose source is unchanged."""
    found = {}
    for module, digest in manifest.get("modules", {}).items():
        path = DIRECTORY / manifest.get("files", {}).get(module, "")
        if module in MODULES and path.is_file() and source_file(module).is_file() \
                and source_hash(module) == digest:
            found[module] = path
    return found


class _Finder:
    """Finds ``horovodize.<module>`` in ``_native/`` for the modules it was given."""

    def __init__(self, files: dict[str, Path]):
        self.files = {f"{__package__}.{module}": path for module, path in files.items()}

    def find_spec(self, fullname, path=None, target=None):
        found = self.files.get(fullname)
        if found is None:
            return None
        return spec_from_file_location(fullname, found, loader=_Loader(fullname, str(found)))


class _Loader(ExtensionFileLoader):
    """A compiled module that does not load (a damaged file) is run from its source."""

    _source = None

    def create_module(self, spec):
        try:
            return super().create_module(spec)
        except ImportError as error:
            module = spec.name.partition(".")[2]
            _loaded.discard(module)
            _failed[module] = str(error)
            source = spec_from_file_location(spec.name, source_file(module))
            self._source = source.loader
            return module_from_spec(source)

    def exec_module(self, module):
        if self._source is not None:
            self._source.exec_module(module)
        else:
            super().exec_module(module)


def install() -> None:
    """Load the compiled modules that match their sources from now on (idempotent)."""
    global _why_not
    if any(isinstance(finder, _Finder) for finder in sys.meta_path):
        return
    if os.environ.get("HOROVODIZE_PURE", "") not in ("", "0"):
        _why_not = "HOROVODIZE_PURE is set"
        return
    try:
        manifest = json.loads(MANIFEST.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        _why_not = "not built (make builds it: scripts/build_native.py)"
        return
    if manifest.get("tag") != tag():
        _why_not = f"built for {manifest.get('tag')}, not {tag()}"
        return
    files = matching(manifest)
    if not files:
        _why_not = "every module changed since the build"
        return
    sys.meta_path.insert(0, _Finder(files))
    _loaded.update(files)


def status() -> str:
    """One line: which of `MODULES` run compiled, and which run from source."""
    failed = "".join(f"; {m} from source: its compiled file did not load ({why})" for m, why in _failed.items())
    if not _loaded:
        return f"pure Python (compiled modules: {_why_not}){failed}"
    changed = [m for m in MODULES if m not in _loaded and m not in _failed]
    text = f"{len(_loaded)} of {len(MODULES)} hot modules compiled"
    if changed:
        text += f"; from source (changed since the build): {', '.join(changed)}"
    return text + failed
