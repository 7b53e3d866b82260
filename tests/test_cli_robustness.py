"""The CLI never mangles a file: ``--diff`` is a patch GNU ``patch`` and ``git apply``
accept, ``--write`` goes through links and keeps what it must keep, and hostile input
(a FIFO, a whitespace-only ``__init__.py``, 250 levels of nesting) gets a one-line answer.
Real files, the installed ``horovodize`` script, the real ``patch`` and ``git``."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from horovodize.cli import UserError, write_back
from horovodize.engine import convert_text
from horovodize.parse.source import GRAMMAR, nesting_error

EXE = Path(sys.executable).parent / "horovodize"
TAPE = (Path(__file__).parent / "lsp" / "data" / "tape.py").read_text(encoding="utf-8")
DEEP = TAPE + "z = " + "f(" * 250 + "1" + ")" * 250 + "\n"


def run(*args: str, cwd: Path | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
    proc = subprocess.run([str(EXE), *args], capture_output=True, cwd=cwd, timeout=timeout)
    assert b"Traceback" not in proc.stderr, proc.stderr.decode()
    return proc


def one_line(proc: subprocess.CompletedProcess) -> str:
    lines = proc.stderr.decode().splitlines()
    assert len(lines) == 1, lines
    return lines[0]


def says(proc: subprocess.CompletedProcess, line: str) -> bool:
    """`line` is one of the lines on stderr (``convert`` also prints its report there)."""
    return line in proc.stderr.decode().splitlines()


# -- --diff is a patch ------------------------------------------------------------------
PATCH_INPUTS = {
    "no_final_newline": TAPE.rstrip("\n"),
    "lone_cr": TAPE.replace("\n", "\r"),
    "crlf": TAPE.replace("\n", "\r\n"),
    "form_feed": TAPE.replace("import os\n", "import os\n\f\n# \f section two\n", 1),
    "line_separators": TAPE.replace("import tensorflow as tf\n", "import tensorflow as tf\nNOTE = 'a\u2028b\x85c\x1cd\vf'\n", 1),
    "crlf_no_final_newline": TAPE.replace("\n", "\r\n").rstrip("\r\n"),
}


@pytest.mark.parametrize("case", sorted(PATCH_INPUTS))
@pytest.mark.parametrize("tool", ["patch", "git"])
def test_diff_applies_with_patch_and_git(tmp_path, case, tool):
    if shutil.which(tool) is None:
        pytest.skip(f"no {tool}")
    text = PATCH_INPUTS[case]
    expected = convert_text(text).encode("utf-8")
    assert expected != text.encode("utf-8")
    (tmp_path / "src").mkdir()
    original = tmp_path / "src" / "train.py"
    original.write_bytes(text.encode("utf-8"))
    proc = run("convert", "src/train.py", "--diff", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    diff = proc.stdout
    assert diff.startswith(b"--- a/src/train.py\n+++ b/src/train.py\n")
    if tool == "patch":
        applied = subprocess.run(["patch", "-p1", "--batch", "--no-backup-if-mismatch"], input=diff,
                                 cwd=tmp_path, capture_output=True, timeout=60)
    else:
        applied = subprocess.run(["git", "apply", "--unidiff-zero", "-"], input=diff, cwd=tmp_path,
                                 capture_output=True, timeout=60)
    assert applied.returncode == 0, (applied.stdout + applied.stderr).decode()
    assert original.read_bytes() == expected


def test_diff_header_of_an_absolute_path(tmp_path):
    path = tmp_path / "train.py"
    path.write_text(TAPE)
    proc = run("convert", str(path), "--diff", cwd=Path("/"))
    name = str(path).lstrip("/")
    assert proc.stdout.startswith(f"--- a/{name}\n+++ b/{name}\n".encode())          # not a//tmp/...
    applied = subprocess.run(["patch", "-p1", "--batch", "-d", "/"], input=proc.stdout, capture_output=True)
    assert applied.returncode == 0, applied.stderr
    assert path.read_text() == convert_text(TAPE)
    # below the working directory the header is relative to it
    path.write_text(TAPE)
    proc = run("convert", str(path), "--diff", cwd=tmp_path)
    assert proc.stdout.startswith(b"--- a/train.py\n+++ b/train.py\n")


def test_nothing_to_change(tmp_path):
    path = tmp_path / "plain.py"
    path.write_text("print('hello')\n")
    for extra in ([], ["--diff"], ["--write"]):
        proc = run("convert", str(path), *extra)
        assert proc.returncode == 0
        assert says(proc, f"{path}: nothing to change")
        assert proc.stdout == (b"print('hello')\n" if not extra else b"")
    assert path.read_text() == "print('hello')\n"


# -- --write ----------------------------------------------------------------------------
def test_write_through_a_symlink(tmp_path):
    target = tmp_path / "real.py"
    target.write_text(TAPE)
    link = tmp_path / "link.py"
    link.symlink_to(target)
    proc = run("convert", str(link), "--write")
    assert proc.returncode == 0, proc.stderr
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert target.read_text() == convert_text(TAPE)


def test_write_keeps_hard_links(tmp_path):
    one = tmp_path / "one.py"
    one.write_text(TAPE)
    other = tmp_path / "other.py"
    os.link(one, other)
    proc = run("convert", str(one), "--write")
    assert proc.returncode == 0, proc.stderr
    assert os.path.samefile(one, other)
    assert other.read_text() == convert_text(TAPE)


def test_write_keeps_the_mode_and_owner(tmp_path):
    path = tmp_path / "train.py"
    path.write_text(TAPE)
    path.chmod(0o751)
    owner = (path.stat().st_uid, path.stat().st_gid)
    if os.geteuid() == 0:                         # root can give the file to someone else first
        os.chown(path, 4321, 4321)
        owner = (4321, 4321)
    assert run("convert", str(path), "--write").returncode == 0
    assert stat.S_IMODE(path.stat().st_mode) == 0o751 and path.read_text() == convert_text(TAPE)
    assert (path.stat().st_uid, path.stat().st_gid) == owner


def test_write_refuses_a_read_only_file(tmp_path):
    path = tmp_path / "train.py"
    path.write_text(TAPE)
    path.chmod(0o444)
    proc = run("convert", str(path), "--write")
    assert proc.returncode == 2
    assert says(proc, f"horovodize: {path}: is read-only; not written")
    assert "report" not in proc.stderr.decode()        # no report of a conversion that was not written
    assert path.read_text() == TAPE and stat.S_IMODE(path.stat().st_mode) == 0o444


def test_write_refuses_a_file_changed_since_it_was_read(tmp_path):
    path = tmp_path / "train.py"
    path.write_text(TAPE)
    before = TAPE
    path.write_text(TAPE + "# edited in the editor meanwhile\n")      # after the read, before the write
    with pytest.raises(UserError, match="changed since it was read; not written"):
        write_back(path, before, convert_text(before))
    assert path.read_text() == TAPE + "# edited in the editor meanwhile\n"
    write_back(path, path.read_text(), convert_text(path.read_text()))  # unchanged since read: written
    assert path.read_text() == convert_text(TAPE + "# edited in the editor meanwhile\n")


@pytest.mark.parametrize("how", [[], ["-o", "out.py"], ["-o", "-"], ["--diff"], ["--write"]])
def test_a_conversion_that_does_not_parse_is_never_output(tmp_path, monkeypatch, capsys, how):
    """stdout, -o and --diff refuse what --write refuses (exit 2), not print it with exit 0."""
    from horovodize import cli, engine

    path = tmp_path / "train.py"
    path.write_text(TAPE)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(engine.Analysis, "converted", lambda self: self.source.text + "f(a=1 b=2)\n")
    assert cli.main(["convert", str(path), *how]) == 2
    out, err = capsys.readouterr()
    assert out == "" and f"{path}: conversion does not parse" in err
    assert path.read_text() == TAPE and sorted(p.name for p in tmp_path.iterdir()) == ["train.py"]


def test_directory_write_goes_on_after_a_read_only_file(tmp_path):
    (tmp_path / "a.py").write_text(TAPE)
    (tmp_path / "b.py").write_text(TAPE)
    (tmp_path / "a.py").chmod(0o444)
    proc = run("convert", str(tmp_path), "--write")
    assert proc.returncode == 2
    assert f"horovodize: {tmp_path / 'a.py'}: is read-only; not written" in proc.stderr.decode()
    assert "2 file(s), 1 converted, 0 refused, 1 failed" in proc.stderr.decode()
    assert f"report for {tmp_path / 'a.py'}" not in proc.stderr.decode()
    assert (tmp_path / "a.py").read_text() == TAPE and (tmp_path / "b.py").read_text() == convert_text(TAPE)


# -- hostile inputs ---------------------------------------------------------------------
@pytest.mark.parametrize("command", [["check"], ["convert"], ["convert", "--diff"]])
def test_fifo_is_refused_at_once(tmp_path, command):
    fifo = tmp_path / "pipe.py"
    os.mkfifo(fifo)
    writer = threading.Timer(20, lambda: _unblock(fifo))     # were it read, this would end the wait
    writer.start()
    try:
        proc = run(*command, str(fifo), timeout=15)
    finally:
        writer.cancel()
    assert proc.returncode == 2
    assert one_line(proc) == f"horovodize: {fifo}: not a regular file"


def _unblock(fifo: Path) -> None:
    fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
    os.close(fd)


def test_whitespace_only_init_is_skipped_in_directory_runs(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("\n")
    (pkg / "empty.py").write_text("")
    (pkg / "blank.py").write_text(" \r\n\t\n")
    (pkg / "train.py").write_text(TAPE)
    proc = run("check", str(tmp_path))
    assert proc.returncode == 1                                   # findings; the empty files are no error
    err = proc.stderr.decode()
    for name in ("__init__.py", "empty.py", "blank.py"):
        assert f"{pkg / name}: empty, skipped" in err
    proc = run("convert", str(tmp_path), "--write")
    assert proc.returncode == 0, proc.stderr
    assert "1 file(s), 1 converted, 0 refused, 0 failed, 3 empty skipped" in proc.stderr.decode()
    assert (pkg / "__init__.py").read_text() == "\n" and (pkg / "train.py").read_text() == convert_text(TAPE)
    # a file named on the command line is still an error when empty
    proc = run("check", str(pkg / "__init__.py"))
    assert proc.returncode == 2 and one_line(proc) == f"horovodize: {pkg / '__init__.py'}: file is empty"


@pytest.mark.parametrize("shape", ["calls", "parens", "lists", "lambdas", "unary"])
def test_deep_nesting_is_a_one_line_error(tmp_path, shape):
    nest = {"calls": "f(" * 250 + "1" + ")" * 250, "parens": "(" * 250 + "1" + ")" * 250,
            "lists": "[" * 250 + "1" + "]" * 250, "lambdas": "lambda: " * 250 + "1", "unary": "-" * 250 + "1"}[shape]
    path = tmp_path / "deep.py"
    path.write_text(TAPE + "z = " + nest + "\n")
    line = TAPE.count("\n") + 1
    for command in (["check"], ["check", "--format", "json"], ["convert"], ["convert", "--diff"], ["convert", "--write"]):
        proc = run(*command, str(path))
        assert proc.returncode == 2, (command, proc.stderr)
        assert one_line(proc).startswith(f"{path}:{line}:"), command
        assert ": too deeply nested: more than 150 levels" in one_line(proc)
    assert path.read_text() == TAPE + "z = " + nest + "\n"


def test_nesting_just_below_the_bound_is_analysed(tmp_path):
    """The deepest call nesting inside the train step that the bound allows: analysed and
    converted (the bound leaves room for the recursion below it)."""
    def text_of(n):
        return TAPE.replace("    return loss\n", "    return " + "tf.identity(" * n + "loss" + ")" * n + "\n", 1)

    n = next(n for n in range(1, 200) if nesting_error(GRAMMAR.parse(text_of(n + 1))) is not None)
    assert n > 40
    text = text_of(n)
    path = tmp_path / "deepish.py"
    path.write_text(text)
    assert run("check", str(path)).returncode == 1
    proc = run("convert", str(path))
    assert proc.returncode == 0 and proc.stdout.decode() == convert_text(text)
