"""Horovodize: turn single-GPU TensorFlow training code into Horovod-distributed code by
minimal, exact text edits.

The pipeline, one subpackage a stage: `parse` (text to tree and index) → `incremental`
(what the server keeps across versions) → `analysis` (environment, loop summary,
restrictions) → `rules` (sites to edits) → `engine` (all of them together, pure). The
adapters `cli` and `lsp` and the services in `app` sit on the engine. docs/architecture.md
draws it.
"""

__version__ = "0.1.0"

from . import native as _native

_native.install()      # the compiled copies of the hot modules, where they match the sources
