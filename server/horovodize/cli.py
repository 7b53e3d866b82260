"""``horovodize check | convert | explain | serve | verify | doctor | launch``: a thin adapter over the engine.

Exit codes: 0 no findings / success, 1 findings, 2 usage or I/O errors, 3 conversion
refused (a restriction blocks the training loop; nothing is changed) (argparse's own
usage errors exit 2 as well). Nothing is ever half-written: ``convert`` prints, diffs or
writes only a result that parses; ``--write`` writes it to a file that still holds what was read,
through a temporary file and a rename (a hard-linked file is rewritten in place); see `write_back`.
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import re
import stat
import sys
import tempfile
from pathlib import Path

from . import codes
from .engine import Analysis, analyze, conversion
from .errors import UserError
from .parse import py2
from .parse.source import ParseError, Source
from .rules.keras_target import DEFAULT_TARGET, TARGETS


def read_bytes(path: Path) -> bytes:
    """The bytes of a regular file. Anything else gets a one-line error at once: a FIFO or
    a device is opened without blocking and refused, never read."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise UserError(f"{path}: no such file")
    except IsADirectoryError:
        raise UserError(f"{path}: is a directory")
    except PermissionError:
        raise UserError(f"{path}: permission denied")
    except OSError as e:
        raise UserError(f"{path}: cannot read: {e.strerror or e}")
    with open(fd, "rb") as fh:
        try:
            mode = os.fstat(fd).st_mode
            if stat.S_ISDIR(mode):
                raise UserError(f"{path}: is a directory")
            if not stat.S_ISREG(mode):
                raise UserError(f"{path}: not a regular file")
            return fh.read()
        except OSError as e:
            raise UserError(f"{path}: cannot read: {e.strerror or e}")


def read_source(path: Path) -> str:
    data = read_bytes(path)
    if not data.strip():
        raise UserError(f"{path}: file is empty")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise UserError(f"{path}: not UTF-8 (invalid byte at offset {e.start})")
    return text


def python_files(paths: list[str]) -> tuple[list[Path], list[Path]]:
    """(files to read, empty files skipped): ``.py`` files and notebooks (``.ipynb``). Below a
    directory, a file with nothing but whitespace (an ``__init__.py``) has nothing to convert
    and is skipped (and said so); a named file is always read."""
    out: list[Path] = []
    skipped: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            for f in sorted(f for f in p.rglob("*") if f.suffix in (".py", ".ipynb")):
                if f.is_file() and not any(part.startswith(".") for part in f.relative_to(p).parts):
                    (skipped if _blank(f) else out).append(f)
        else:
            out.append(p)
    for f in skipped:
        print(f"{f}: empty, skipped", file=sys.stderr)
    return out, skipped


def _blank(path: Path) -> bool:
    try:
        st = path.stat()
        return stat.S_ISREG(st.st_mode) and (st.st_size == 0 or (st.st_size <= 4096 and not read_bytes(path).strip()))
    except (OSError, UserError):
        return False                      # reading it again reports the error


def _located(path: Path, e: ParseError) -> UserError:
    return UserError(f"{path}:{e.line}:{e.column}: {e.kind}: {e.message}", located=True)


# -- check ---------------------------------------------------------------------------------
def cmd_check(args) -> int:
    select = {c for c in (codes.normalize(s) for s in args.select or []) if c} or None
    if args.select and not select:
        raise UserError(f"unknown code(s): {', '.join(args.select)}")
    results, errors = [], 0
    for path, root, only in _check_plan(args):
        if root is not None:
            try:
                _check_program(path, root, select, args, results, only)
            except UserError as e:
                print(e.line(), file=sys.stderr)
                errors += 1
            continue
        try:
            text = read_source(path)
        except UserError as e:
            print(e.line(), file=sys.stderr)
            errors += 1
            continue
        if path.suffix == ".ipynb":
            errors += _check_notebook(path, text, select, args, results)
            continue
        analysis = analyze(text, select, keras_target=getattr(args, "keras_target", "tf.keras"))
        src = analysis.source
        old = py2.find(text) if analysis.error is None and src.syntax_issues else None
        if old is not None:     # a Python 2 file: one clear line, no findings on a misparse
            print(f"{path}:{old.line}:{old.column}: {old.message}", file=sys.stderr)
            errors += 1
            continue
        problem = analysis.error or _parse_error(src)
        if problem is not None:          # findings parso recovered are still listed; exit 2
            print(_located(path, problem).line(), file=sys.stderr)
            errors += 1
        for f in analysis.findings:
            (l1, c1), (l2, c2) = src.position(f.start), src.position(f.end)
            results.append({
                "path": str(path), "code": f.code, "severity": f.severity, "message": f.message,
                "line": l1 + 1, "column": c1 + 1, "end_line": l2 + 1, "end_column": c2 + 1,
                "fixable": f.fix is not None, "blocks": list(f.blocks),
                "related": [dict(zip(("line", "column"), (n + 1 for n in src.position(r.start))), message=r.message)
                            for r in f.related],
            })
        if select is None and analysis.error is None:
            # what `convert` would refuse for (a point it would leave wrong): check says it too
            for code, line, message in analysis.refusal_reasons():
                if code.startswith("point "):
                    results.append({"path": str(path), "code": code, "severity": "warning",
                                    "message": f"blocks convert: {message}", "line": line, "column": 1,
                                    "end_line": line, "end_column": 1, "fixable": False, "blocks": [],
                                    "related": []})
    if args.format == "json":
        json.dump(results, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        for r in results:
            cell = f"cell {r['cell']}:" if "cell" in r else ""      # (a notebook: as ruff says it)
            print(f"{r['path']}:{cell}{r['line']}:{r['column']}: {r['code']} {r['message']}")
        if results:
            print(f"Found {len(results)} finding(s).", file=sys.stderr)
    if errors:
        return 2
    return 1 if results else 0


def _check_notebook(path: Path, text: str, select, args, results: list) -> int:
    """A notebook's findings into `results`, each located in its cell; 1 on an error."""
    from .app import notebook

    try:
        nb = notebook.load(text, str(path))
    except UserError as e:
        print(e.line(), file=sys.stderr)
        return 1
    analysis = analyze(nb.program, select, keras_target=getattr(args, "keras_target", "tf.keras"))
    problem = analysis.error or _parse_error(analysis.source)
    if problem is not None:
        print(_located_cell(path, nb, problem).line(), file=sys.stderr)
    for f in analysis.findings:
        if nb.masked(f.start, f.end):
            continue
        cell, l1, c1 = nb.locate(f.start)
        end_cell, l2, c2 = nb.locate(f.end)
        if end_cell != cell:
            l2, c2 = l1, c1
        results.append({
            "path": str(path), "cell": cell, "code": f.code, "severity": f.severity, "message": f.message,
            "line": l1, "column": c1, "end_line": l2, "end_column": c2,
            "fixable": f.fix is not None, "blocks": list(f.blocks),
            "related": [dict(zip(("cell", "line", "column"), nb.locate(r.start)), message=r.message)
                        for r in f.related],
        })
    return int(problem is not None)


def _located_cell(path: Path, nb, e: ParseError) -> UserError:
    cell, line, column = nb.locate_line(e.line, e.column)
    message = e.message.split(": ", 1)[1] if e.message.startswith("cell ") else e.message
    return UserError(f"{path}:cell {cell}:{line}:{column}: {e.kind}: {message}", located=True)


def _parse_error(source: Source) -> ParseError | None:
    try:
        source.check_parses()
    except ParseError as e:
        return e
    return None


# -- convert -------------------------------------------------------------------------------
def convert_file(path: Path, keras_target: str = "tf.keras", scale_lr: bool = True,
                 require_local_fs: bool = False) -> tuple[str, Analysis]:
    """(original, its conversion's analysis); raises UserError on bad input (syntax errors included)."""
    text = read_source(path)
    try:
        return text, conversion(text, keras_target, scale_lr, require_local_fs)
    except ParseError as e:
        raise _located(path, e)


def write_back(path: Path, before: str, after: str, program: bool = True) -> None:
    """Replace the text of `path`, read as `before`, by `after`.

    Through a symbolic link the target is written (the link stays a link); mode and owner
    are kept. A file nobody may write (0444) or one that no longer holds `before` (edited
    since it was read) is refused with a one-line error. A file with one name is replaced
    atomically (temporary file in its directory, then rename); a hard-linked file, or one
    whose owner a new file could not keep, is rewritten in place. `after` must parse (a
    notebook, `program` false: its caller checked each changed cell).
    """
    if program:
        check_parses(path, after)
    real, st = check_writable(path)
    if read_bytes(real) != before.encode("utf-8"):
        raise UserError(f"{path}: changed since it was read; not written (run the conversion again)")
    data = after.encode("utf-8")
    if st.st_nlink == 1 and os.access(real.parent, os.W_OK | os.X_OK) and _replace(real, data, st):
        return
    with open(real, "r+b") as fh:           # in place: hard links (and an owner we cannot set) kept
        fh.write(data)
        fh.truncate()
        fh.flush()
        os.fsync(fh.fileno())


def check_parses(path: Path, after: str) -> None:
    """A conversion that does not parse is neither written nor printed (-o, --diff, stdout)."""
    if (e := _parse_error(Source(after))) is not None:
        raise UserError(f"{path}: conversion does not parse ({e}); file left unchanged, nothing printed")


def check_writable(path: Path) -> tuple[Path, os.stat_result]:
    """The file `path` names (through links) and its stat, or the one-line error that says
    why it cannot be written (asked before the report is printed, and again when writing)."""
    real = Path(os.path.realpath(path))
    try:
        st = os.stat(real)
    except OSError as e:
        raise UserError(f"{path}: cannot write: {e.strerror or e}")
    if not st.st_mode & 0o222:
        raise UserError(f"{path}: is read-only; not written")
    if not os.access(real, os.W_OK):
        raise UserError(f"{path}: permission denied; not written")
    return real, st


def _replace(real: Path, data: bytes, st: os.stat_result) -> bool:
    """Atomic replacement keeping mode and owner; False (nothing changed) when the owner
    cannot be kept."""
    fd, tmp = tempfile.mkstemp(prefix=f".{real.name}.", suffix=".tmp", dir=real.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        if hasattr(os, "geteuid") and (st.st_uid, st.st_gid) != (os.geteuid(), os.getegid()):
            try:
                os.chown(tmp, st.st_uid, st.st_gid)
            except OSError:
                os.unlink(tmp)
                return False
        os.chmod(tmp, stat.S_IMODE(st.st_mode))
        os.replace(tmp, real)
        return True
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def patch_lines(text: str) -> list[str]:
    """Lines as ``patch`` and ``git apply`` see them: ended by ``\\n`` only (a form feed, a
    lone ``\\r`` or a U+2028 is part of its line); the last may lack the ``\\n``."""
    return re.findall(r"[^\n]*\n|[^\n]+$", text)


def diff_name(path: Path) -> str:
    """The path in a diff header: relative to the working directory when below it, else
    without its leading ``/`` (``a/tmp/x.py``, not ``a//tmp/x.py``)."""
    if path.is_absolute():
        try:
            path = path.relative_to(Path.cwd())
        except ValueError:
            return path.as_posix().lstrip("/")
    return path.as_posix()


def unified_diff(path: Path, before: str, after: str) -> str:
    """A unified diff that GNU ``patch -p1`` and ``git apply`` accept: a last line without
    a line break gets the ``\\ No newline at end of file`` marker."""
    name = diff_name(path)
    out = []
    for line in difflib.unified_diff(patch_lines(before), patch_lines(after),
                                     fromfile=f"a/{name}", tofile=f"b/{name}"):
        out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(out)


def trap_warnings(path: Path, analysis: Analysis) -> list[str]:
    """The stack-trap warnings (HVD090-092) of a converted file, one line per message: where
    one message repeats (one per rewritten import), its first place, then the other lines."""
    src = analysis.source
    places: dict = {}
    for f in analysis.findings:
        if f.code in codes.STACK_TRAPS:
            places.setdefault((f.code, f.message), []).append(src.position(f.start))
    out = []
    for (code, message), where in places.items():
        (l, c), rest = where[0], where[1:]
        also = f" (also line{'s' if len(rest) > 1 else ''} {', '.join(str(r[0] + 1) for r in rest)})" if rest else ""
        out.append(f"{path}:{l + 1}:{c + 1}: warning: {code} {message}{also}")
    return out


def cmd_convert(args) -> int:
    from .project import plan

    target = Path(args.path)
    programs: dict[Path, Path] = {}         # entry -> root: the scripts converted with their project modules
    if target.is_dir():
        if not (args.diff or args.write):
            raise UserError(f"{target}: is a directory; use --diff or --write to convert every .py and .ipynb below it")
        files, skipped = python_files([args.path])
        if not args.file_only:
            files, programs = _plan(target, files)
    else:
        files, skipped = [target], []
        found = None if args.file_only else plan.program_for(target, _read)
        if found is not None and found[0] != target:
            raise UserError(f"{target}: a module of the program {found[0]} starts; it is converted with that "
                            f"program: horovodize convert {found[0]} --diff (or --file-only to convert this file alone)")
        root = found[1] if found is not None else None
        if root is not None:
            if args.to_script and target.suffix != ".ipynb":
                raise UserError("--to-script takes a single notebook (.ipynb)")
            programs = {target: root}
    if args.output and (len(files) != 1 or target.is_dir()):
        raise UserError("-o/--output takes a single input file")
    if args.to_script and target.suffix != ".ipynb":
        raise UserError("--to-script takes a single notebook (.ipynb)")
    failures, changed = 0, 0
    refused = 0
    done: dict = {}                         # a module two programs share: its converted text
    prepared = plan.prepare(programs, args.keras_target, done, _read, args.scale_lr,
                            args.require_local_fs) if target.is_dir() else {}
    for i, path in enumerate(files, 1):
        if len(files) > 1:
            print(f"[{i}/{len(files)}] {path}", file=sys.stderr)
        try:
            if path in programs:
                c, r = convert_program_files(path, programs[path], args, done, prepared.get(path))
                changed, refused = changed + c, refused + r
                continue
            if path.suffix == ".py" and not args.file_only and plan.library_only(path, _read):
                print(f"{path}: a library module that trains (only definitions: nothing runs when it is started); "
                      "not converted, no set-up added: the script that imports it must set Horovod up (hvd.init(), "
                      "GPU pinning) before it; convert that script (horovodize convert ENTRY --diff), which "
                      "converts this module with it; a script of its own needs an `if __name__ == \"__main__\":` "
                      "block", file=sys.stderr)
                refused += 1
                continue
            if path.suffix == ".ipynb":
                c, r = convert_notebook(path, args, single=len(files) == 1)
                changed, refused = changed + c, refused + r
                continue
            before, analysis = convert_file(path, args.keras_target, args.scale_lr, args.require_local_fs)
            after = analysis.converted()
            if before != after:
                check_parses(path, after)       # (stdout, -o and --diff, as --write)
            if args.write and before != after:
                check_writable(path)    # (a report of a conversion that is not written would say "done")
        except UserError as e:
            if path == target:
                raise
            print(e.line(), file=sys.stderr)
            failures += 1
            continue
        was_refused = int(bool(analysis.refused))
        print_report(path, analysis, getattr(args, "format", "text"))
        refused += was_refused
        changed += before != after
        for line in trap_warnings(path, analysis):
            print(line, file=sys.stderr)          # HVD090-092: the conversion proceeds, the report warns
        if before == after and len(files) == 1 and not was_refused:
            print(f"{path}: nothing to change", file=sys.stderr)
        if args.diff:
            sys.stdout.write(unified_diff(path, before, after))
        if args.write:
            if before != after:
                try:
                    try:
                        write_back(path, before, after)
                    except OSError as e:
                        raise UserError(f"{path}: cannot write: {e.strerror or e}")
                except UserError as e:
                    if path == target:
                        raise
                    print(e.line(), file=sys.stderr)      # the other files are still converted
                    failures += 1
                    changed -= 1
        elif args.output:
            out = Path(args.output)
            try:
                out.write_text(after, encoding="utf-8", newline="") if args.output != "-" else sys.stdout.write(after)
            except OSError as e:
                raise UserError(f"{out}: cannot write: {e.strerror or e}")
        elif not args.diff:
            sys.stdout.write(after)
    if target.is_dir():
        empty = f", {len(skipped)} empty skipped" if skipped else ""
        print(f"{len(files)} file(s), {changed} converted, {refused} refused, {failures} failed{empty}", file=sys.stderr)
    return 2 if failures else 3 if refused else 0


def convert_notebook(path: Path, args, single: bool) -> tuple[int, int]:
    """Convert one notebook as `convert` does a .py: (1 if changed, 1 if refused). Only the
    sources of changed code cells change in its JSON text; `--to-script` writes the converted
    program as a script instead, and the report says how to launch it."""
    from .app import notebook

    raw = read_source(path)
    nb = notebook.load(raw, str(path))
    try:
        analysis = conversion(nb.program, args.keras_target, args.scale_lr, args.require_local_fs)
    except ParseError as e:
        raise _located_cell(path, nb, e)
    setup = analysis.setup.fix.edits if analysis.setup is not None and analysis.setup.fix else ()
    new_cells = nb.converted_cells(analysis.conversion_edits(), setup)
    try:
        nb.check_cells(new_cells)
    except ParseError as e:
        raise UserError(f"{path}: conversion does not parse ({e.message}); file left unchanged")
    after = nb.converted(new_cells)
    script = getattr(args, "to_script", None)
    refused = int(bool(analysis.refused))
    if args.write and raw != after:
        check_writable(path)
    print_report(path, analysis, getattr(args, "format", "text"), nb, script)
    for f in analysis.findings:
        if f.code in codes.STACK_TRAPS:
            cell, line, col = nb.locate(f.start)
            print(f"{path}:cell {cell}:{line}:{col}: warning: {f.code} {f.message}", file=sys.stderr)
    if raw == after and single and not refused:
        print(f"{path}: nothing to change", file=sys.stderr)
    if args.diff:
        sys.stdout.write(nb.diff(diff_name(path), new_cells))
    elif args.write:
        if raw != after:
            try:
                write_back(path, raw, after, program=False)
            except OSError as e:
                raise UserError(f"{path}: cannot write: {e.strerror or e}")
    elif script:
        if refused:
            print(f"{path}: refused; {script} not written", file=sys.stderr)
        else:
            _write_out(Path(script), nb.script(new_cells, lambda m: print(f"{path}:{m}", file=sys.stderr)))
    elif args.output:
        _write_out(Path(args.output), after)
    else:
        sys.stdout.write(after)
    return int(raw != after), refused


# -- programs of several modules (contract point 12) ----------------------------------------
def _read(path: Path) -> str:
    """A module of a program: an empty one (a package's ``__init__.py``) reads as ''; a
    notebook as its code cells' one program."""
    if not read_bytes(path).strip():
        return ""
    if path.suffix == ".ipynb":
        from .app.notebook_program import program_text
        return program_text(read_source(path), str(path))
    return read_source(path)


def _check_plan(args) -> list[tuple]:
    """(file, project root of the program it starts or None, the one module of it to report
    or None) for each file `check` reads."""
    from .project import plan

    out: list[tuple] = []
    for name in args.paths:
        files = python_files([name])[0]
        if getattr(args, "file_only", False):
            out += [(f, None, None) for f in files]
        elif Path(name).is_dir():
            files, programs = _plan(Path(name), files)
            out += [(f, programs.get(f), None) for f in files]
        else:
            for f in files:
                found = plan.program_for(f, _read)
                if found is not None and found[0] != f:
                    print(f"{f}: a module of the program {found[0]} starts: its findings come from that program",
                          file=sys.stderr)
                    out.append((found[0], found[1], f))
                else:
                    out.append((f, found[1] if found else None, None))
    return out


def _plan(folder: Path, files: list[Path]) -> tuple[list[Path], dict[Path, Path]]:
    from .project import plan

    files, programs, said = plan.plan_folder(folder, files, _read)
    for line in said:
        print(line, file=sys.stderr)
    return files, programs


def _check_program(entry: Path, root: Path, select, args, results: list, only: Path | None = None) -> None:
    """`check` of a program of several modules: each finding in the file it is in (`only`:
    the findings of that module of it)."""
    from .project import plan
    from .project.program import analyze_program

    _layout, lk, analysis = analyze_program(entry, _read, root, getattr(args, "keras_target", "tf.keras"),
                                            strict=False)
    nb = None
    if lk.entry.suffix == ".ipynb":           # (a notebook's places are (cell, line, column), as ruff says them)
        from .app import notebook
        nb = notebook.load(read_source(entry), str(entry))

    def where(offset: int) -> tuple[Path, dict]:
        path, off = lk.locate(offset)
        path = path or lk.entry
        if nb is not None and path == lk.entry:
            return path, dict(zip(("cell", "line", "column"), nb.locate(off)))
        line, col = lk.modules[path].source.position(off)
        return path, {"line": line + 1, "column": col + 1}

    for f in analysis.findings:
        if select is not None and f.code not in select:
            continue
        path, at = where(f.start)
        if only is not None and path != only.resolve():
            continue
        if "cell" in at and nb.masked(lk.locate(f.start)[1], lk.locate(f.end)[1]):
            continue                          # (a magic: never reported)
        p2, end = where(f.end)
        if p2 != path or end.get("cell") != at.get("cell"):
            end = at
        results.append({
            "path": plan.shown(path), **({"cell": at["cell"]} if "cell" in at else {}), "code": f.code,
            "severity": f.severity, "message": f.message, "line": at["line"], "column": at["column"],
            "end_line": end["line"], "end_column": end["column"], "fixable": f.fix is not None, "blocks": list(f.blocks),
            "related": [dict(where(r.start)[1], message=r.message, path=plan.shown(where(r.start)[0])) for r in f.related],
        })
    if select is None and only is None:
        for code, line, message in analysis.refusal_reasons():
            if code.startswith("point "):
                path, file_line = lk.locate_line(line)
                cell = nb.locate_line(file_line)[:2] if nb is not None and path == lk.entry else None
                results.append({"path": plan.shown(path or lk.entry), **({"cell": cell[0]} if cell else {}),
                                "code": code, "severity": "warning", "message": f"blocks convert: {message}",
                                "line": cell[1] if cell else file_line, "column": 1, "end_line": cell[1] if cell else file_line,
                                "end_column": 1, "fixable": False, "blocks": [], "related": []})



def convert_program_files(entry: Path, root: Path, args, done: dict, prepared=None) -> tuple[int, int]:
    """Convert the program `entry` starts with the project modules it imports: one report,
    a diff per file, every file written or none. (1 if changed, 1 if refused). A notebook
    entry's edits become cell edits of its JSON text (`app.notebook_program`)."""
    from .app import report
    from .project import plan
    from .project.program import FileChange, convert_program, note_shared, relocate_report

    if isinstance(prepared, UserError):
        raise prepared
    if prepared is None:
        conv = convert_program(entry, plan.original_reader(done, _read), root, args.keras_target,
                               args.scale_lr, args.require_local_fs)
        note_shared(conv, _read)          # (a folder's conversion converts the other importers with it)
    else:
        conv = prepared
    files, nbc = list(conv.files), None
    if entry.suffix == ".ipynb":
        from .app import notebook, notebook_program
        nbc = notebook_program.on_disk(conv, read_source(entry), str(entry))
        files[0] = FileChange(conv.entry, nbc.before, nbc.after)
    changes = [f for f in files if f.changed]
    whole = args.diff or args.write
    if not whole and any(f.path != conv.entry for f in changes):
        raise UserError(f"{entry}: the conversion also changes the project modules it imports "
                        f"({', '.join(conv.name(f.path) for f in changes if f.path != conv.entry)}); use --diff or "
                        "--write (or --file-only to convert this file alone)" +
                        (", then --to-script on the converted notebook" if nbc is not None and args.to_script else ""))
    for f in changes:
        if f.path in done and done[f.path] != f.after:
            raise UserError(f"{f.path}: two programs of {root} need different edits in this shared module; "
                            f"convert {entry} on its own (horovodize convert {entry} --diff)")
    for f in (f for f in changes if f.path.suffix != ".ipynb"):   # (a notebook's cells: checked)
        check_parses(f.path, f.after)
    if args.write:
        for f in changes:
            check_writable(f.path)
    data = relocate_report(report.build(conv.analysis, str(entry)), conv, nbc.cells if nbc else None)
    if nbc is not None:
        data["launch"] = notebook.launch(args.to_script)
    print(json.dumps(data) if getattr(args, "format", "text") == "json" else report.text(data), file=sys.stderr)
    if nbc is not None and args.to_script:
        if conv.refused:
            print(f"{entry}: refused; {args.to_script} not written", file=sys.stderr)
        else:
            _write_out(Path(args.to_script), nbc.script(lambda m: print(f"{entry}:{m}", file=sys.stderr)))
    elif not whole:            # only the entry changes: printed (or -o) as for one file
        _write_out(Path(args.output), files[0].after) if args.output else sys.stdout.write(files[0].after)
    if conv.refused:
        return 0, 1
    if not changes:
        print(f"{entry}: nothing to change", file=sys.stderr)
    for f in changes:
        if args.diff and done.get(f.path) != f.after:       # (a module two programs share: once)
            sys.stdout.write(nbc.diff(diff_name(entry)) if nbc is not None and f is files[0]
                             else unified_diff(f.path, f.before, f.after))
    if args.write:
        for f in changes:             # (all checked writable above: a failure here is the disk's)
            if done.get(f.path) == f.after:
                continue
            try:
                write_back(f.path, f.before, f.after, program=f.path.suffix != ".ipynb")
            except OSError as e:
                raise UserError(f"{f.path}: cannot write: {e.strerror or e}")
    for f in changes:
        done[f.path] = f.after
    return int(bool(changes)), 0


def _write_out(out: Path, text: str) -> None:
    try:
        out.write_text(text, encoding="utf-8", newline="") if str(out) != "-" else sys.stdout.write(text)
    except OSError as e:
        raise UserError(f"{out}: cannot write: {e.strerror or e}")


def print_report(path: Path, analysis: Analysis, fmt: str, nb=None, script: str | None = None) -> int:
    """The conversion report on stderr (stdout stays the program); 1 when the conversion is
    refused. A notebook's (`nb`) names cells and says how to launch it."""
    from .app import notebook, report

    data = report.build(analysis, str(path))
    if nb is not None:
        data = notebook.relocate_report(data, nb, script)
    print(json.dumps(data) if fmt == "json" else report.text(data), file=sys.stderr)
    return int(data["refused"])


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
    from .lsp.serve import (
        run_server,  # imported lazily: check/convert do not need pygls
    )

    return run_server(args)


def cmd_verify(args) -> int:
    from .app import verify

    return verify.run(args)


def _keras_target_argument(p) -> None:
    p.add_argument("--keras-target", choices=TARGETS, default=DEFAULT_TARGET,
                   help="the Keras `import keras` runs on: Keras 2 as tf.keras (TF <= 2.15; default) or tf_keras (TF "
                        ">= 2.16), or keras3 (TensorFlow backend; chosen for Keras-3-only API such as keras.ops)")


def _scale_lr_argument(p) -> None:
    p.add_argument("--no-scale-lr", dest="scale_lr", action="store_false",
                   help="leave the learning rate as it is (by default it is scaled by hvd.size()); a program whose "
                        "work cannot be divided (each rank would train on all of its data, or compute the same step) "
                        "is then converted instead of refused: right, not faster")


def _require_local_fs_argument(p) -> None:
    p.add_argument("--require-local-fs", action="store_true",
                   help="assume no filesystem shared by the hosts: a program whose ranks read, after a barrier, "
                        "files rank 0 wrote (the report's 'needs a shared filesystem') is refused instead of "
                        "converted; the reason names the paths and lines (reads made on rank 0 and broadcast, "
                        "as the conversion does where it can, do not count)")


def build_parser() -> argparse.ArgumentParser:
    from . import __version__, native

    parser = argparse.ArgumentParser(prog="horovodize", description="Turn single-GPU TensorFlow training code into Horovod-distributed code.")
    parser.add_argument("--version", action="version", version=f"horovodize {__version__} ({native.status()})")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("check", help="report training loops, rule sites and restriction violations")
    p.add_argument("paths", nargs="+", metavar="PATH")
    p.add_argument("--file-only", action="store_true",
                   help="check each file alone (by default a script is checked with the project modules it imports)")
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.add_argument("--select", action="append", metavar="CODE", help="report only these codes (repeatable)")
    _keras_target_argument(p)
    p.set_defaults(func=cmd_check)

    p = sub.add_parser("convert", help="convert a file (stdout), or files below a directory (--diff/--write)")
    p.add_argument("path", metavar="PATH")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--diff", action="store_true", help="print a unified diff")
    g.add_argument("--write", action="store_true", help="replace the file(s) atomically")
    g.add_argument("-o", "--output", metavar="OUT", help="write the converted program to OUT")
    g.add_argument("--to-script", metavar="SCRIPT", help="a notebook: write its converted code cells as a "
                   "script to run with horovodrun (the report gives the command)")
    p.add_argument("--format", choices=("text", "json"), default="text",
                   help="format of the conversion report printed on stderr")
    p.add_argument("--file-only", action="store_true",
                   help="convert each file alone: its imports of project modules are read as libraries "
                   "(by default a script is converted with the project modules it imports)")
    _scale_lr_argument(p)
    _require_local_fs_argument(p)
    _keras_target_argument(p)
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

    from .app import launch

    p = sub.add_parser("launch", help="print the file that runs a converted script on N ranks "
                       "(horovodrun, Slurm, Kubeflow MPIJob, Ray)")
    launch.add_arguments(p)
    p.set_defaults(func=launch.run)

    from .app import doctor

    p = sub.add_parser("doctor", help="check that an interpreter's TensorFlow/Keras/Horovod can run converted code")
    doctor.add_arguments(p)
    p.set_defaults(func=doctor.run)

    try:
        from .app import verify
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
