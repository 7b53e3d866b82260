"""The ``horovodize`` console script, run as a subprocess: convert (stdout, --diff, --write,
-o, directories), check (text and JSON), explain, exit codes and bad input."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from horovodize import codes
from horovodize.engine import convert_text

EXE = Path(sys.executable).parent / "horovodize"
ROOT = Path(__file__).resolve().parent.parent
TAPE = (ROOT / "tests" / "fixtures" / "HVD001" / "tape_tf_function.py").read_text()
FIT = (ROOT / "tests" / "fixtures" / "HVD002" / "tf_and_keras_import.py").read_text()
CONVERTED = (ROOT / "tests" / "fixtures" / "HVD001" / "negative_already_converted.py").read_text()
BROKEN = "import tensorflow as tf\n\ndef f(:\n    pass\n"


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([str(EXE), *args], capture_output=True, text=True, encoding="utf-8", cwd=cwd, timeout=60)


def no_traceback(proc: subprocess.CompletedProcess) -> None:
    assert "Traceback" not in proc.stderr, proc.stderr


@pytest.fixture
def tape_file(tmp_path: Path) -> Path:
    path = tmp_path / "train.py"
    path.write_text(TAPE, encoding="utf-8")
    return path


def test_console_script_exists():
    assert EXE.exists(), EXE


# -- convert -------------------------------------------------------------------------------
def test_convert_prints_the_converted_program(tape_file):
    proc = run("convert", str(tape_file))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == convert_text(TAPE)
    assert tape_file.read_text() == TAPE


def test_convert_keeps_crlf_on_stdout(tmp_path):
    path = tmp_path / "crlf.py"
    path.write_bytes(TAPE.replace("\n", "\r\n").encode())
    proc = subprocess.run([str(EXE), "convert", str(path)], capture_output=True, timeout=60)
    assert proc.returncode == 0
    assert proc.stdout == convert_text(TAPE.replace("\n", "\r\n")).encode()


def test_convert_diff(tape_file):
    proc = run("convert", str(tape_file), "--diff")
    assert proc.returncode == 0
    lines = proc.stdout.splitlines()
    name = str(tape_file).lstrip("/")             # an absolute path outside the working directory
    assert lines[0] == f"--- a/{name}" and lines[1] == f"+++ b/{name}"
    assert "+import horovod.tensorflow as hvd" in lines
    assert "-optimizer = tf.optimizers.Adam(0.001)" in lines
    assert "+optimizer = tf.optimizers.Adam(0.001 * hvd.size())" in lines
    assert tape_file.read_text() == TAPE


def test_convert_diff_of_a_converted_file_is_empty(tmp_path):
    path = tmp_path / "done.py"
    path.write_text(CONVERTED)
    proc = run("convert", str(path), "--diff")
    assert proc.returncode == 0 and proc.stdout == ""


def test_convert_write_replaces_the_file_atomically(tape_file):
    tape_file.chmod(0o640)
    proc = run("convert", str(tape_file), "--write")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ""
    assert tape_file.read_text() == convert_text(TAPE)
    assert stat.S_IMODE(tape_file.stat().st_mode) == 0o640
    assert sorted(p.name for p in tape_file.parent.iterdir()) == ["train.py"]   # no temporary file left
    again = run("convert", str(tape_file), "--write")
    assert again.returncode == 0 and tape_file.read_text() == convert_text(TAPE)


def test_convert_write_leaves_a_file_that_does_not_parse_unchanged(tmp_path):
    path = tmp_path / "broken.py"
    path.write_bytes(BROKEN.encode())
    before = path.stat().st_mtime_ns
    proc = run("convert", str(path), "--write")
    assert proc.returncode == 2
    assert path.read_bytes() == BROKEN.encode() and path.stat().st_mtime_ns == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["broken.py"]
    no_traceback(proc)


def test_convert_output_file(tape_file, tmp_path):
    out = tmp_path / "out" / "converted.py"
    out.parent.mkdir()
    proc = run("convert", str(tape_file), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert out.read_text() == convert_text(TAPE) and tape_file.read_text() == TAPE
    dash = run("convert", str(tape_file), "-o", "-")
    assert dash.returncode == 0 and dash.stdout == convert_text(TAPE)


def test_convert_output_to_an_unwritable_place(tape_file, tmp_path):
    proc = run("convert", str(tape_file), "-o", str(tmp_path / "missing-dir" / "x.py"))
    assert proc.returncode == 2 and "cannot write" in proc.stderr
    no_traceback(proc)


def test_convert_options_are_exclusive(tape_file):
    proc = run("convert", str(tape_file), "--diff", "--write")
    assert proc.returncode == 2 and "not allowed with" in proc.stderr


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "pkg").mkdir(parents=True)
    (root / ".venv").mkdir()
    (root / "train_tape.py").write_text(TAPE)
    (root / "pkg" / "__init__.py").write_text("")                   # empty: skipped
    (root / "pkg" / "train_fit.py").write_text(FIT)
    (root / "pkg" / "done.py").write_text(CONVERTED)
    (root / ".venv" / "site.py").write_text(TAPE)                     # hidden: skipped
    (root / "notes.txt").write_text("not python")
    return root


def test_convert_directory_diff(project):
    proc = run("convert", str(project), "--diff")
    assert proc.returncode == 0, proc.stderr
    progress = [l for l in proc.stderr.splitlines() if l.startswith("[")]
    assert progress == [f"[1/3] {project}/pkg/done.py", f"[2/3] {project}/pkg/train_fit.py", f"[3/3] {project}/train_tape.py"]
    assert "3 file(s), 2 converted, 0 refused, 0 failed" in proc.stderr
    name = str(project).lstrip("/")
    assert f"+++ b/{name}/pkg/train_fit.py" in proc.stdout and f"+++ b/{name}/train_tape.py" in proc.stdout
    assert "done.py" not in proc.stdout and ".venv" not in proc.stdout
    assert (project / "train_tape.py").read_text() == TAPE


def test_convert_directory_write(project):
    (project / "pkg" / "broken.py").write_text(BROKEN)
    proc = run("convert", str(project), "--write")
    assert proc.returncode == 2                                   # one file failed
    assert f"{project}/pkg/broken.py:3:7: syntax error:" in proc.stderr
    assert "4 file(s), 2 converted, 0 refused, 1 failed" in proc.stderr
    assert (project / "train_tape.py").read_text() == convert_text(TAPE)
    assert (project / "pkg" / "train_fit.py").read_text() == convert_text(FIT)
    assert (project / "pkg" / "done.py").read_text() == CONVERTED
    assert (project / "pkg" / "broken.py").read_text() == BROKEN
    assert (project / ".venv" / "site.py").read_text() == TAPE
    no_traceback(proc)


def test_convert_directory_needs_diff_or_write(project):
    proc = run("convert", str(project))
    assert proc.returncode == 2
    assert "is a directory" in proc.stderr and "--diff" in proc.stderr
    assert proc.stdout == ""


# -- check ---------------------------------------------------------------------------------
def test_check_text(tape_file):
    proc = run("check", str(tape_file))
    assert proc.returncode == 1
    lines = proc.stdout.splitlines()
    assert f"{tape_file}:6:1: HVD001 TensorFlow program without Horovod set-up" in lines
    assert any(l.startswith(f"{tape_file}:26:") and " HVD010 " in l for l in lines)
    assert any(" HVD100 " in l for l in lines)
    assert f"Found {len(lines)} finding(s)." in proc.stderr


def test_check_exit_zero_without_findings(tmp_path):
    path = tmp_path / "done.py"
    path.write_text(CONVERTED)
    proc = run("check", str(path))
    assert proc.returncode == 0 and proc.stdout == ""
    plain = tmp_path / "plain.py"
    plain.write_text("print('no tensorflow here')\n")
    assert run("check", str(plain)).returncode == 0


def test_check_json_fields(tape_file):
    proc = run("check", str(tape_file), "--format", "json")
    assert proc.returncode == 1
    results = json.loads(proc.stdout)
    assert results and all({"path", "code", "severity", "message", "line", "column", "end_line", "end_column"} <= set(r)
                           for r in results)
    setup = next(r for r in results if r["code"] == "HVD001")
    assert (setup["line"], setup["column"], setup["end_line"], setup["end_column"]) == (6, 1, 6, 24)
    assert setup["path"] == str(tape_file) and setup["severity"] == "hint"
    loop = next(r for r in results if r["code"] == "HVD100")
    assert loop["severity"] == "information"
    assert {r["code"] for r in results} >= {"HVD001", "HVD010", "HVD020", "HVD021", "HVD030", "HVD100"}


def test_check_json_columns_count_characters(tmp_path):
    path = tmp_path / "emoji.py"
    path.write_text('import tensorflow as tf\nds = tf.data.Dataset.range(9)\nmodel = tf.keras.Sequential([])\n'
                    'y = ["😀😀"]; model.fit(ds.take(3))\n', encoding="utf-8")
    results = json.loads(run("check", str(path), "--format", "json").stdout)
    take = next(r for r in results if r["code"] == "HVD040")
    # y = ["😀😀"]; model.fit(ds.take(3)): `ds` is the 23rd character (code points, not UTF-8 or UTF-16 units)
    assert (take["line"], take["column"], take["end_line"], take["end_column"]) == (4, 23, 4, 33)


def test_check_select(tape_file):
    proc = run("check", str(tape_file), "--select", "hvd010", "--select", "HVD020", "--format", "json")
    assert {r["code"] for r in json.loads(proc.stdout)} == {"HVD010", "HVD020"}
    bad = run("check", str(tape_file), "--select", "NOPE")
    assert bad.returncode == 2 and "unknown code" in bad.stderr


def test_check_directory_json(project):
    proc = run("check", str(project), "--format", "json")
    assert proc.returncode == 1
    paths = {r["path"] for r in json.loads(proc.stdout)}
    assert paths == {f"{project}/train_tape.py", f"{project}/pkg/train_fit.py"}


def test_check_reports_on_broken_files(tmp_path):
    path = tmp_path / "broken.py"
    path.write_text(BROKEN)
    proc = run("check", str(path))
    assert proc.returncode == 2                        # as the README says: a file that does not parse
    assert f"{path}:3:7: syntax error:" in proc.stderr  # (the findings parso recovered are still listed)
    no_traceback(proc)


def test_check_with_a_missing_file_among_others(tape_file, tmp_path):
    proc = run("check", str(tape_file), str(tmp_path / "missing.py"))
    assert proc.returncode == 2
    assert "missing.py: no such file" in proc.stderr
    assert str(tape_file) in proc.stdout


# -- explain -------------------------------------------------------------------------------
@pytest.mark.parametrize("code", sorted(codes.all_codes()))
def test_explain_every_code(code):
    proc = run("explain", code)
    assert proc.returncode == 0, proc.stderr
    assert code in proc.stdout and len(proc.stdout.strip()) > 20


def test_explain_normalises_codes():
    assert run("explain", "hvd010").stdout == run("explain", "HVD010").stdout
    assert run("explain", "r7").stdout == run("explain", "HVD-R7").stdout


def test_explain_lists_every_code():
    proc = run("explain")
    assert proc.returncode == 0
    listed = {line.split()[0] for line in proc.stdout.splitlines() if line.strip()}
    assert listed == set(codes.all_codes())


def test_explain_unknown_code():
    proc = run("explain", "HVD999")
    assert proc.returncode == 2
    assert "unknown code" in proc.stderr and "HVD999" in proc.stderr
    no_traceback(proc)


# -- bad input -----------------------------------------------------------------------------
def test_syntax_error_is_one_located_line(tmp_path):
    path = tmp_path / "broken.py"
    path.write_text(BROKEN)
    proc = run("convert", str(path))
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.splitlines() == [f"{path}:3:7: syntax error: invalid syntax"]


def test_missing_path(tmp_path):
    for args in (("convert", str(tmp_path / "nope.py")), ("check", str(tmp_path / "nope.py"))):
        proc = run(*args)
        assert proc.returncode == 2
        assert proc.stderr.strip() == f"horovodize: {tmp_path / 'nope.py'}: no such file"


def test_non_utf8_file(tmp_path):
    path = tmp_path / "latin1.py"
    path.write_bytes("import tensorflow as tf\nprint('café')\n".encode("latin-1"))
    proc = run("convert", str(path))
    assert proc.returncode == 2
    assert "not UTF-8" in proc.stderr and "offset 34" in proc.stderr
    no_traceback(proc)


@pytest.mark.parametrize("content", ["", "\n\n   \n"])
def test_empty_file(tmp_path, content):
    path = tmp_path / "empty.py"
    path.write_text(content)
    proc = run("convert", str(path))
    assert proc.returncode == 2 and "file is empty" in proc.stderr
    no_traceback(proc)


def test_unreadable_file_symlink_loop(tmp_path):
    """A read error other than 'missing' or 'permission' (works as root, unlike chmod 000)."""
    loop = tmp_path / "loop.py"
    loop.symlink_to(loop)
    proc = run("convert", str(loop))
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"horovodize: {loop}: cannot read:")
    no_traceback(proc)


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root reads files whatever their mode")
def test_unreadable_file_permission(tmp_path):
    path = tmp_path / "secret.py"
    path.write_text(TAPE)
    path.chmod(0)
    try:
        proc = run("convert", str(path))
    finally:
        path.chmod(0o644)
    assert proc.returncode == 2 and "permission denied" in proc.stderr


def test_usage_errors_exit_2():
    assert run().returncode == 2
    assert run("convert").returncode == 2
    assert run("frobnicate").returncode == 2


def test_version():
    proc = run("--version")
    assert proc.returncode == 0 and proc.stdout.startswith("horovodize ")


@pytest.mark.parametrize("case", ["train_on_batch_gan", "sklearn_wrapper_grid_search"])
def test_training_no_loop_kind_covers_is_refused_not_nothing_to_change(tmp_path, case):
    """A program that trains by train_on_batch or inside scikit-learn is refused (exit 3) with
    what to do; its report never says "no training loop found" nor "nothing to change"."""
    program = tmp_path / "p.py"
    program.write_text((ROOT / "tests" / "fixtures" / "HVD-T2" / f"{case}.py").read_text())
    proc = run("convert", str(program))
    no_traceback(proc)
    assert proc.returncode == 3, proc.stderr
    assert "NOT CONVERTED" in proc.stderr and "HVD-T2" in proc.stderr
    assert "no training loop found" not in proc.stderr and "nothing to change" not in proc.stderr


def test_convert_keras_target_keras3(tmp_path):
    """`--keras-target keras3` keeps `import keras` and writes the Keras 3 adapters; a program
    using Keras-3-only API gets that target without the option (the report says why)."""
    plain = ROOT / "tests" / "fixtures" / "HVD090" / "keras3_target_keras2_api.py"
    proc = run("convert", "--keras-target", "keras3", str(plain))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == convert_text(plain.read_text(), "keras3")
    assert "import keras\n" in proc.stdout and "def DistributedOptimizer(optimizer):" in proc.stdout
    ops = ROOT / "tests" / "fixtures" / "HVD090" / "keras3_ops_import_unused.py"
    proc = run("convert", str(ops))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == (ROOT / "tests" / "fixtures" / "HVD090" / "keras3_ops_import_unused.expected.py").read_text()
    assert "the keras3 target (Keras 3 on its TensorFlow backend, chosen for `keras.ops` (line 2)" in proc.stderr
    proc = run("convert", "--keras-target", "keras2", str(ops))
    assert proc.returncode == 2 and "keras3" in proc.stderr
