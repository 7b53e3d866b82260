"""Compile the hot modules of horovodize with Cython into server/horovodize/_native/.

The sources are compiled unchanged (`horovodize.native` explains how and when they are
used). Run by ``make`` after the venv's install; a machine without a C compiler or Python's
headers keeps the pure-Python modules: this script then says why and exits 0, unless
``--strict``. The C files and objects go to .cache/native-build/ (ignored).

    python scripts/build_native.py [--strict] [--jobs N]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "server"))
os.environ["HOROVODIZE_PURE"] = "1"          # (importing horovodize must not load an old build)

from horovodize import native  # noqa: E402


def build(jobs: int) -> dict:
    from Cython.Build import cythonize
    from setuptools import Distribution, Extension

    work = ROOT / ".cache" / "native-build"
    work.mkdir(parents=True, exist_ok=True)
    hashes = {module: native.source_hash(module) for module in native.MODULES}   # before compiling
    # -g0 -O2 after Python's own "-g -O3": no debug info, and half the compile time of the
    # generated C (1.8 MB for the largest module).
    extensions = [Extension(f"horovodize.{module}", [str(native.source_file(module))],
                            extra_compile_args=["-g0", "-O2"])
                  for module in native.MODULES]
    # annotation_typing off: the annotations are documentation here, and Cython would
    # otherwise reject subclasses of builtins (parso's PythonVersionInfo is a tuple's).
    modules = cythonize(extensions, build_dir=str(work / "c"), nthreads=jobs, quiet=True,
                        compiler_directives={"language_level": 3, "annotation_typing": False})
    with tempfile.TemporaryDirectory(dir=work) as out:
        dist = Distribution({"name": "horovodize-native", "ext_modules": modules})
        cmd = dist.get_command_obj("build_ext")
        cmd.build_lib, cmd.build_temp, cmd.parallel = out, str(work / "obj"), jobs
        cmd.ensure_finalized()
        cmd.run()
        files = {}
        staged = native.DIRECTORY.with_name("_native.new")
        shutil.rmtree(staged, ignore_errors=True)
        staged.mkdir()
        for module in native.MODULES:
            built = Path(cmd.get_ext_fullpath(f"horovodize.{module}"))
            name = f"{module.rpartition('.')[0]}.{built.name}".lstrip(".")   # parse.source.cpython-311-...so
            shutil.copy2(built, staged / name)
            files[module] = name
    manifest = {"tag": native.tag(), "modules": hashes, "files": files}
    (staged / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    shutil.rmtree(native.DIRECTORY, ignore_errors=True)   # (a module loaded from the old files keeps its mapping)
    staged.rename(native.DIRECTORY)
    return manifest


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--strict", action="store_true", help="fail (exit 1) when the build fails")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args()
    started = time.monotonic()
    try:
        manifest = build(args.jobs)
    except Exception as error:          # ImportError (no Cython), CompileError, a missing compiler
        print(f"build_native: not built, the pure-Python modules stay in use: {type(error).__name__}: {error}",
              file=sys.stderr)
        return 1 if args.strict else 0
    print(f"build_native: {len(manifest['files'])} modules compiled for {manifest['tag']} "
          f"in {time.monotonic() - started:.0f} s -> {native.DIRECTORY.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
