"""The compiled copies of the hot modules (`horovodize.native`): they load when built and
only where they match their sources, and they give the same answers as the sources."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from horovodize import native

ROOT = Path(__file__).resolve().parent.parent
BUILT = native.MANIFEST.is_file()
# `make test` builds them first and sets this: there, a missing build is a failure.
EXPECTED = os.environ.get("HOROVODIZE_EXPECT_NATIVE") == "1"
needs_build = pytest.mark.skipif(not BUILT and not EXPECTED, reason="not built (scripts/build_native.py)")


def _start(code: str, *, pure: bool = False, path: Path | None = None) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if k not in ("HOROVODIZE_PURE", "PYTHONPATH")}
    if pure:
        env["HOROVODIZE_PURE"] = "1"
    if path is not None:
        env["PYTHONPATH"] = str(path)
    return subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, cwd=ROOT)


def _output(proc: subprocess.Popen) -> str:
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err
    return out


def _python(code: str, *, pure: bool = False, path: Path | None = None) -> str:
    return _output(_start(code, pure=pure, path=path))


@needs_build
def test_every_hot_module_loads_compiled():
    out = _python("import importlib, sys\n"
                  "from horovodize import native\n"
                  "for m in native.MODULES: importlib.import_module('horovodize.' + m)\n"
                  "print(native.status())\n"
                  "print(sorted(m for m in native.MODULES if sys.modules['horovodize.' + m].__file__.endswith('.py')))")
    status, from_source = out.splitlines()
    assert status == f"{len(native.MODULES)} of {len(native.MODULES)} hot modules compiled"
    assert from_source == "[]"


def test_pure_when_asked():
    out = _python("import horovodize.analysis.env as e\nfrom horovodize import native\nprint(e.__file__)\nprint(native.status())",
                  pure=True)
    file, status = out.splitlines()
    assert file.endswith("env.py")
    assert status.startswith("pure Python")


@needs_build
def test_a_module_changed_since_the_build_is_imported_from_its_source(tmp_path):
    copy = tmp_path / "horovodize"
    shutil.copytree(native.PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    with open(copy / "analysis" / "env.py", "a", encoding="utf-8") as f:
        f.write("\nCHANGED_SINCE_THE_BUILD = True\n")
    out = _python("import horovodize.analysis.env as e, horovodize.incremental.keep as k\nfrom horovodize import native\n"
                  "print(e.__file__, e.CHANGED_SINCE_THE_BUILD)\nprint(k.__file__)\nprint(native.status())",
                  path=tmp_path)
    env_file, keep_file, status = out.splitlines()
    assert env_file == f"{copy / 'analysis' / 'env.py'} True"
    assert keep_file.startswith(str(copy / "_native" / "incremental.keep."))
    assert status.endswith("from source (changed since the build): analysis.env")


def test_a_build_for_another_interpreter_is_not_loaded(tmp_path):
    copy = tmp_path / "horovodize"
    shutil.copytree(native.PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__", "_native"))
    (copy / "_native").mkdir()
    (copy / "_native" / "manifest.json").write_text(json.dumps(
        {"tag": "cpython-399 .so", "modules": {"analysis.env": native.source_hash("analysis.env")},
         "files": {"analysis.env": "analysis.env.so"}}))
    out = _python("import horovodize.analysis.env as e\nfrom horovodize import native\nprint(e.__file__)\nprint(native.status())",
                  path=tmp_path)
    file, status = out.splitlines()
    assert file == str(copy / "analysis" / "env.py")
    assert status == f"pure Python (compiled modules: built for cpython-399 .so, not {native.tag()})"


# Findings, restriction problems and the whole-file conversion of every program the suite
# has, and of one large buffer made of the Horovod-tier programs and the examples (2,000 lines
# of many programs: it goes through the forked tokenizer and parso's error recovery), computed
# once from the sources and once compiled, in two processes side by side. (A buffer of all
# 650 programs, 16,000 lines, took two minutes of analysis alone: see issue 36's note.)
_ANSWERS = r"""
import glob, json, sys
from horovodize.engine import analyze, convert_text
files = sorted(set(glob.glob("tests/fixtures/**/*.py", recursive=True) + glob.glob("tests/horovod/programs/*.py")
                   + glob.glob("examples/*.py") + glob.glob("tests/lsp/data/*.py")
                   + glob.glob("tests/analysis/data/**/*.py", recursive=True)))
texts = {f: open(f, encoding="utf-8").read() for f in files}
texts["(programs and examples)"] = "\n".join(t for f, t in texts.items() if f.startswith(("tests/horovod/", "examples/")))
sys.path.insert(0, "bench")
from programs import program      # (the benchmark's generated training programs)
texts["(program 5000)"] = program(5000)
out = {}
for name, text in texts.items():
    try:
        a = analyze(text)
        out[name] = [[x.code, x.start, x.end, x.message] for x in a.findings] + \
            [[p.code, str(getattr(p, "message", ""))] for p in getattr(a, "problems", [])] + [convert_text(text)]
    except Exception as e:
        out[name] = repr(e)
print(json.dumps(out))
"""


@needs_build
def test_compiled_and_source_modules_give_the_same_answers():
    runs = _start(_ANSWERS), _start(_ANSWERS, pure=True)
    compiled, source = (json.loads(_output(run)) for run in runs)
    assert len(compiled) > 100 and compiled.keys() == source.keys()
    differ = [name for name in compiled if compiled[name] != source[name]]
    assert not differ, differ[:5]


@needs_build
def test_a_compiled_file_that_does_not_load_is_run_from_its_source(tmp_path):
    copy = tmp_path / "horovodize"
    shutil.copytree(native.PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    manifest = json.loads((copy / "_native" / "manifest.json").read_text())
    (copy / "_native" / manifest["files"]["incremental.runs"]).write_bytes(b"not an ELF file")
    out = _python("import horovodize.engine as en, horovodize.incremental.runs as r\nfrom horovodize import native\n"
                  "print(r.__file__, r.cut.__module__)\nprint([f.code for f in en.analyze('import tensorflow as tf\\n').findings])\n"
                  "print(native.status())", path=tmp_path)
    runs_file, findings, status = out.splitlines()
    assert runs_file == f"{copy / 'incremental' / 'runs.py'} horovodize.incremental.runs"
    assert findings == "['HVD001']"
    assert status.startswith(f"{len(native.MODULES) - 1} of {len(native.MODULES)} hot modules compiled; "
                             "incremental.runs from source: its compiled file did not load (")
