"""Horovodize: turn single-GPU TensorFlow training code into Horovod-distributed code by
minimal, exact text edits. The core (``engine``) is pure; ``cli`` and ``lsp`` adapt it."""

__version__ = "0.1.0"

from . import native as _native

_native.install()      # the compiled copies of the hot modules, where they match the sources
