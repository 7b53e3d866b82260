"""``horovodize check | convert | explain | serve | verify``: a thin adapter over the engine.

Exit codes: 0 no findings / success, 1 findings, 2 usage or I/O errors (argparse's own
usage errors exit 2 as well). Nothing is ever half-written: ``--write`` goes through a
temporary file in the same directory and a rename, and only when the result parses.
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import sys
import tempfile
from pathlib import Path

from . import codes
from .engine import analyze, convert_text
from . import py2
from .source import ParseError, Source


class UserError(Exception):
    """A one-line error for the user (exit 2).

    Printed as ``horovodize: <message>``, except errors located in a source file
    (``path:line:col: syntax error: …``), which start with the location like a compiler's.
    """

    def __init__(self, message: str, located: bool = False):
        super().__init__(message)
        self.located = located

    def line(self) -> str:
        return str(self) if self.located else f"horovodize: {self}"


def read_source(path: Path) -> str:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise UserError(f"{path}: no such file")
    except IsADirectoryError:
        raise UserError(f"{path}: is a directory")
    except PermissionError:
        raise UserError(f"{path}: permission denied")
    except OSError as e:
        raise UserError(f"{path}: cannot read: {e.strerror or e}")
    if not data.strip():
        raise UserError(f"{path}: file is empty")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise UserError(f"{path}: not UTF-8 (invalid byte at offset {e.start})")
    return text


def python_files(paths: list[str]) -> list[Path]:
    out: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            # Below a directory, empty files (``__init__.py``) have nothing to convert: skipped.
            out += sorted(f for f in p.rglob("*.py")
                          if not any(part.startswith(".") for part in f.relative_to(p).parts) and not _empty(f))
        else:
            out.append(p)
    return out


def _empty(path: Path) -> bool:
    try:
        return path.is_file() and path.stat().st_size == 0
    except OSError:
        return False


# -- check ---------------------------------------------------------------------------------
def cmd_check(args) -> int:
    select = {c for c in (codes.normalize(s) for s in args.select or []) if c} or None
    if args.select and not select:
        raise UserError(f"unknown code(s): {', '.join(args.select)}")
    results, errors = [], 0
    for path in python_files(args.paths):
        try:
            text = read_source(path)
        except UserError as e:
            print(e.line(), file=sys.stderr)
            errors += 1
            continue
        analysis = analyze(text, select)
        src = analysis.source
        old = py2.find(text) if src.syntax_issues else None
        if old is not None:     # a Python 2 file: one clear line, no findings on a misparse
            print(f"{path}:{old.line}:{old.column}: {old.message}", file=sys.stderr)
            errors += 1
            continue
        for f in analysis.findings:
            (l1, c1), (l2, c2) = src.position(f.start), src.position(f.end)
            results.append({
                "path": str(path), "code": f.code, "severity": f.severity, "message": f.message,
                "line": l1 + 1, "column": c1 + 1, "end_line": l2 + 1, "end_column": c2 + 1,
                "fixable": f.fix is not None, "blocks": list(f.blocks),
                "related": [dict(zip(("line", "column"), _one_based(src.position(r.start))), message=r.message)
                            for r in f.related],
            })
    if args.format == "json":
        json.dump(results, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        for r in results:
            print(f"{r['path']}:{r['line']}:{r['column']}: {r['code']} {r['message']}")
        if results:
            print(f"Found {len(results)} finding(s).", file=sys.stderr)
    if errors:
        return 2
    return 1 if results else 0


def _one_based(pos):
    return pos[0] + 1, pos[1] + 1


# -- convert -------------------------------------------------------------------------------
def convert_file(path: Path) -> tuple[str, str]:
    """(original, converted); raises UserError on bad input (syntax errors included)."""
    text = read_source(path)
    try:
        return text, convert_text(text)
    except ParseError as e:
        raise UserError(f"{path}:{e.line}:{e.column}: syntax error: {e.message}", located=True)


def write_atomic(path: Path, text: str) -> None:
    """Temporary file in the same directory, then rename: the file is never half-written."""
    Source(text).check_parses()
    mode = path.stat().st_mode
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
        os.chmod(tmp, mode & 0o7777)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def unified_diff(path: Path, before: str, after: str) -> str:
    return "".join(difflib.unified_diff(
        before.splitlines(keepends=True), after.splitlines(keepends=True),
        fromfile=f"a/{path}", tofile=f"b/{path}"))


def cmd_convert(args) -> int:
    target = Path(args.path)
    if target.is_dir():
        if not (args.diff or args.write):
            raise UserError(f"{target}: is a directory; use --diff or --write to convert every .py below it")
        files = python_files([args.path])
    else:
        files = [target]
    if args.output and (len(files) != 1 or target.is_dir()):
        raise UserError("-o/--output takes a single input file")
    failures, changed = 0, 0
    for i, path in enumerate(files, 1):
        if len(files) > 1:
            print(f"[{i}/{len(files)}] {path}", file=sys.stderr)
        try:
            before, after = convert_file(path)
        except UserError as e:
            if len(files) == 1:
                raise
            print(e.line(), file=sys.stderr)
            failures += 1
            continue
        changed += before != after
        if args.diff:
            sys.stdout.write(unified_diff(path, before, after))
        if args.write:
            if before != after:
                try:
                    write_atomic(path, after)
                except ParseError as e:
                    raise UserError(f"{path}: conversion does not parse ({e}); file left unchanged")
                except OSError as e:
                    raise UserError(f"{path}: cannot write: {e.strerror or e}")
        elif args.output:
            out = Path(args.output)
            try:
                out.write_text(after, encoding="utf-8", newline="") if args.output != "-" else sys.stdout.write(after)
            except OSError as e:
                raise UserError(f"{out}: cannot write: {e.strerror or e}")
        elif not args.diff:
            sys.stdout.write(after)
    if len(files) > 1:
        print(f"{len(files)} file(s), {changed} converted, {failures} failed", file=sys.stderr)
    return 2 if failures else 0


# -- explain -------------------------------------------------------------------------------
def cmd_explain(args) -> int:
    if args.code is None or args.code == "all":
        for code, (name, summary) in codes.all_codes().items():
            print(f"{code:8} {codes.severity(code):12} {name:28} {summary}")
        return 0
    code = codes.normalize(args.code)
    if code is None:
        raise UserError(f"unknown code {args.code!r}; `horovodize explain` lists them")
    print(codes.doc(code).rstrip())
    return 0


# -- serve / verify ------------------------------------------------------------------------
def cmd_serve(args) -> int:
    from .lsp.server import run_server  # imported lazily: check/convert do not need pygls

    return run_server(args)


def cmd_verify(args) -> int:
    from . import verify

    return verify.run(args)


def build_parser() -> argparse.ArgumentParser:
    from . import __version__

    parser = argparse.ArgumentParser(prog="horovodize", description="Turn single-GPU TensorFlow training code into Horovod-distributed code.")
    parser.add_argument("--version", action="version", version=f"horovodize {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("check", help="report training loops, rule sites and restriction violations")
    p.add_argument("paths", nargs="+", metavar="PATH")
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.add_argument("--select", action="append", metavar="CODE", help="report only these codes (repeatable)")
    p.set_defaults(func=cmd_check)

    p = sub.add_parser("convert", help="convert a file (stdout), or files below a directory (--diff/--write)")
    p.add_argument("path", metavar="PATH")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--diff", action="store_true", help="print a unified diff")
    g.add_argument("--write", action="store_true", help="replace the file(s) atomically")
    g.add_argument("-o", "--output", metavar="OUT", help="write the converted program to OUT")
    p.set_defaults(func=cmd_convert)

    p = sub.add_parser("explain", help="explain a diagnostic code (no code: list them all)")
    p.add_argument("code", nargs="?", metavar="CODE")
    p.set_defaults(func=cmd_explain)

    p = sub.add_parser("serve", help="start the language server (stdio by default)")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--stdio", action="store_true", help="use stdio (default)")
    g.add_argument("--tcp", metavar="HOST:PORT", help="listen on TCP")
    g.add_argument("--ws", metavar="HOST:PORT", help="listen on WebSocket (needs the 'ws' extra)")
    p.add_argument("--log-file", metavar="PATH")
    p.set_defaults(func=cmd_serve)

    from . import doctor

    p = sub.add_parser("doctor", help="check that an interpreter's TensorFlow/Keras/Horovod can run converted code")
    doctor.add_arguments(p)
    p.set_defaults(func=doctor.run)

    try:
        from . import verify
    except ImportError:  # pragma: no cover - verify is optional while it is being built
        verify = None
    if verify is not None and hasattr(verify, "add_arguments"):
        p = sub.add_parser("verify", help="convert and run under horovodrun; compare ranks' weights")
        verify.add_arguments(p)
        p.set_defaults(func=cmd_verify)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except UserError as e:
        print(e.line(), file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
