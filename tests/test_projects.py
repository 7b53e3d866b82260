"""A program is a project (contract point 12): the CLI converts an entry script with the
project modules it imports, as one program.

Each project of tests/projects has its multi-file diff in tests/projects/expected (the
golden: ``convert DIR --diff`` run in tests/projects). The other tests hold what a user
relies on: the set-up in the entry only, above its first project import; a library module
gets the imports its edits need and never ``hvd.init()``; ``--write`` writes every file or
none; a module given alone is checked through the program that imports it and is not
converted alone; a folder of library code gets no set-up; a dynamic import is said to be
out of sight; ``--file-only`` is the one-file conversion; converting twice changes nothing.
The link itself (one text of several files, and the way back) is tested on its own below.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from horovodize.errors import UserError
from horovodize.parse.source import Edit
from horovodize.project.layout import Layout
from horovodize.project.link import link

PROJECTS = Path(__file__).resolve().parent / "projects"
EXE = Path(sys.executable).parent / "horovodize"
SHAPES = ["factories", "package", "library_class", "estimator", "two_entries", "dynamic", "fetch", "notebook",
          "imported_script", "shared_helper", "src_layout", "checkpoint_trainer", "keras3_library_step"]


def run(*args, cwd=None):
    return subprocess.run([str(EXE), *args], capture_output=True, text=True, timeout=120, cwd=cwd)


def read(path):
    return Path(path).read_text(encoding="utf-8")


@pytest.mark.parametrize("shape", SHAPES)
def test_multi_file_diff_matches_the_golden(shape):
    proc = run("convert", shape, "--diff", cwd=PROJECTS)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == (PROJECTS / "expected" / f"{shape}.diff").read_text(encoding="utf-8")


@pytest.mark.parametrize("shape", SHAPES)
def test_written_project_converts_again_to_nothing(shape, tmp_path):
    project = tmp_path / shape
    shutil.copytree(PROJECTS / shape, project)
    first = run("convert", str(project), "--write")
    assert first.returncode == 0, first.stderr
    again = run("convert", str(project), "--diff")
    assert again.returncode == 0 and again.stdout == "", again.stdout
    for path in project.rglob("*.py"):
        text = path.read_text()
        compile(text, str(path), "exec")
        if "hvd.init()" in text:
            assert "__init__" not in path.name and not (path.parent / "__init__.py").exists(), \
                f"set-up in a library module: {path}"      # (an entry: at the root, or src layout's scripts/)


def test_setup_goes_in_the_entry_above_its_first_project_import():
    text = run("convert", "factories", "--diff", cwd=PROJECTS).stdout
    entry = text.split("--- a/factories/data.py")[0]
    assert entry.index("+hvd.init()") < entry.index(" from data import load")
    for module in ("data.py", "model.py"):
        part = text.split(f"--- a/factories/{module}")[1].split("--- a/")[0]
        assert "+import horovod.tensorflow as hvd" in part and "hvd.init()" not in part


def test_report_places_each_change_in_its_file():
    proc = run("convert", "factories", "--diff", cwd=PROJECTS)
    report = proc.stderr
    assert "factories/model.py line 13: HVD010" in report        # the rate scaled where the optimizer is made
    assert "factories/data.py line 8: HVD041" in report          # the data divided where it is read
    assert "factories/train.py line 22: HVD021" in report        # the broadcast where the step runs
    assert "12. the program is the project (the entry and its project modules): done" in report


def test_entry_alone_without_diff_or_write_is_refused_with_the_reason():
    proc = run("convert", "factories/train.py", cwd=PROJECTS)
    assert proc.returncode == 2
    assert "also changes the project modules it imports (factories/data.py, factories/model.py)" in proc.stderr
    assert "--diff or --write" in proc.stderr and proc.stdout == ""


def test_entry_whose_modules_need_no_change_is_printed_as_one_file(tmp_path):
    """A script that imports only its settings (`import config`): the program is read as one
    (the rate comes from config.py), and only the script changes, so stdout and -o work."""
    (tmp_path / "config.py").write_text("EPOCHS = 2\nLR = 0.01\n")
    (tmp_path / "train.py").write_text(
        "import tensorflow as tf\n\nimport config\n\nx = tf.random.normal((64, 4))\n"
        "ds = tf.data.Dataset.from_tensor_slices((x, tf.reduce_sum(x, axis=1))).batch(8)\n"
        "model = tf.keras.Sequential([tf.keras.layers.Dense(1)])\n"
        "model.compile(optimizer=tf.keras.optimizers.SGD(config.LR), loss='mse')\n"
        "model.fit(ds, epochs=config.EPOCHS)\n")
    proc = run("convert", str(tmp_path / "train.py"))
    assert proc.returncode == 0, proc.stderr
    assert "hvd.init()" in proc.stdout and "config.LR * hvd.size()" in proc.stdout
    assert "12. the program is the project" in proc.stderr
    out = tmp_path / "out.py"
    assert run("convert", str(tmp_path / "train.py"), "-o", str(out)).returncode == 0
    assert out.read_text() == proc.stdout


def test_refused_program_writes_no_file(tmp_path):
    project = tmp_path / "factories"
    shutil.copytree(PROJECTS / "factories", project)
    model = project / "model.py"       # a tf.distribute strategy in a module refuses the conversion
    model.write_text(read(model).replace("def build_model():\n",
                                         "def build_model():\n    tf.distribute.MirroredStrategy()\n"))
    before = {p: p.read_bytes() for p in project.glob("*.py")}
    proc = run("convert", str(project / "train.py"), "--write")
    assert {p: p.read_bytes() for p in project.glob("*.py")} == before, proc.stderr
    assert proc.returncode == 3 and "NOT CONVERTED" in proc.stderr, proc.stderr


def test_write_writes_every_file_or_none(tmp_path):
    project = tmp_path / "factories"
    shutil.copytree(PROJECTS / "factories", project)
    before = {p: p.read_bytes() for p in project.glob("*.py")}
    os.chmod(project / "model.py", 0o444)
    try:
        if os.access(project / "model.py", os.W_OK):
            pytest.skip("root writes read-only files")
        proc = run("convert", str(project / "train.py"), "--write")
    finally:
        os.chmod(project / "model.py", 0o644)
    assert proc.returncode == 2 and "model.py" in proc.stderr
    assert {p: p.read_bytes() for p in project.glob("*.py")} == before


def test_module_is_checked_through_the_program_and_not_converted_alone():
    proc = run("check", "package/trainer/loop.py", cwd=PROJECTS)
    assert proc.returncode == 1
    assert "a module of the program" in proc.stderr and "main.py starts" in proc.stderr
    lines = proc.stdout.splitlines()
    assert lines and all(line.startswith("package/trainer/loop.py:") for line in lines)
    assert any(" HVD010 " in line for line in lines) and not any(" HVD002 " in line for line in lines)
    conv = run("convert", "package/trainer/loop.py", "--diff", cwd=PROJECTS)
    assert conv.returncode == 2 and "convert" in conv.stderr and "main.py" in conv.stderr and conv.stdout == ""


def test_check_of_an_entry_reports_findings_in_every_module():
    proc = run("check", "library_class/run.py", cwd=PROJECTS)
    files = {line.split(":")[0] for line in proc.stdout.splitlines()}
    assert files == {"library_class/run.py", "library_class/agent/core.py"}


def test_folder_of_library_code_gets_no_setup(tmp_path):
    agent = tmp_path / "agent"
    shutil.copytree(PROJECTS / "library_class" / "agent", agent)
    before = read(agent / "core.py")
    proc = run("convert", str(agent), "--write")
    assert proc.returncode == 3
    assert "library module that trains" in proc.stderr and "must set Horovod up" in proc.stderr
    assert read(agent / "core.py") == before


def test_dynamic_import_is_out_of_sight_not_nothing_to_change():
    proc = run("convert", "dynamic", "--diff", cwd=PROJECTS)
    assert "12. the program is the project (the entry and its project modules): not done" in proc.stderr
    assert "dynamic/train.py line 11: a dynamic import" in proc.stderr


def test_file_only_converts_the_entry_alone():
    proc = run("convert", "--file-only", "factories/train.py", cwd=PROJECTS)
    assert proc.returncode == 0, proc.stderr
    assert "hvd.init()" in proc.stdout and "12. the program is the project" not in proc.stderr


def test_two_entries_share_one_module_converted_once():
    proc = run("convert", "two_entries", "--diff", cwd=PROJECTS)
    assert proc.stdout.count("--- a/two_entries/common/model.py") == 1
    assert proc.stdout.count("+hvd.init()") == 2


def test_a_shared_data_helper_is_divided_at_the_training_call():
    """data.load() makes the training and the validation data: sharded inside it, the
    validation was cut too, and rank 0 printed the metric of its half (on 2 ranks: 32 of 64
    examples, and the ranks disagreed). The training call is divided where the loop uses it;
    data.py is not changed; the validation loop reads all of its data on every rank."""
    proc = run("convert", "shared_helper", "--diff", cwd=PROJECTS)
    assert proc.returncode == 0, proc.stderr
    assert "--- a/shared_helper/data.py" not in proc.stdout
    assert "+for x, y in load(\"train\").apply(lambda ds: ds.shard(hvd.size(), hvd.rank())" in proc.stdout
    assert " for x, y in load(\"val\"):" in proc.stdout
    assert ("`load()` also makes data that no training loop reads (`load(\"val\")`), which stays whole on every "
            "rank: divided where training uses it") in proc.stderr


# -- a script that another script imports ------------------------------------------------
def _top_level_calls(text: str) -> list[str]:
    """The calls a module makes when imported: its top level, its `__main__` block left out."""
    import ast

    out = []
    for stmt in ast.parse(text).body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom)):
            continue
        if isinstance(stmt, ast.If) and "__main__" in ast.unparse(stmt.test):
            continue
        out += [ast.unparse(n.func) for n in ast.walk(stmt) if isinstance(n, ast.Call)]
    return out


def test_a_script_another_imports_gets_its_setup_in_its_main_block(tmp_path):
    """calmisential's ResNet shape: evaluate.py does `from train import get_model`, train.py
    trains under `__main__`. Importing the converted train.py sets nothing up (point 12); run,
    it sets Horovod up at the head of its block, before any Horovod call (point 1)."""
    proc = run("convert", "imported_script", "--diff", cwd=PROJECTS)
    assert proc.returncode == 0, proc.stderr
    assert ("set-up in the `__main__` block of imported_script/train.py: imported_script/evaluate.py imports it, "
            "and sets nothing up") in proc.stderr
    project = tmp_path / "imported_script"
    shutil.copytree(PROJECTS / "imported_script", project)
    assert run("convert", str(project), "--write").returncode == 0
    train = read(project / "train.py")
    assert _top_level_calls(train) == [] and "import horovod.tensorflow as hvd\n" in train
    block = train.split('if __name__ == "__main__":\n')[1]
    assert block.startswith("    hvd.init()\n") and block.index("hvd_broadcast_done = ") < block.index("hvd.rank()")
    assert "hvd.init()" in read(project / "evaluate.py")      # (its modules call Horovod: evaluate sets it up)


def test_the_script_converted_alone_puts_its_setup_in_its_block_too():
    alone = run("convert", "imported_script/train.py", "--diff", cwd=PROJECTS)
    assert alone.returncode == 0, alone.stderr
    # prepare_data.py's shard calls Horovod when evaluate.py imports it: named, not "done"; the
    # entry's own edits are all in its `__main__` block, which evaluate.py does not run: not named
    point12 = alone.stderr.split("  12. ")[1]
    assert point12.startswith("the program is the project (the entry and its project modules): partly done")
    assert "prepare_data.py is also imported by imported_script/evaluate.py" in point12, point12
    assert "train.py is also imported" not in point12, point12
    whole = run("convert", "imported_script", "--diff", cwd=PROJECTS).stdout
    train = "--- a/imported_script/train.py" + whole.split("--- a/imported_script/train.py")[1].split("--- a/")[0]
    assert train in alone.stdout


def test_an_imported_script_of_one_module_is_a_program_too(tmp_path):
    """train.py imports no project module, but evaluate.py imports it: still its set-up
    goes in its block (converted alone, it would be at its top)."""
    (tmp_path / "train.py").write_text(
        "import tensorflow as tf\n\n\ndef get_model():\n    return tf.keras.Sequential([tf.keras.layers.Dense(1)])\n\n\n"
        "if __name__ == \"__main__\":\n    x = tf.random.normal((64, 4))\n    model = get_model()\n"
        "    model.compile(optimizer=tf.keras.optimizers.SGD(0.01), loss='mse')\n"
        "    model.fit(x, tf.reduce_sum(x, axis=1), batch_size=8, epochs=2)\n")
    (tmp_path / "evaluate.py").write_text("from train import get_model\n\nprint(get_model())\n")
    proc = run("convert", str(tmp_path / "train.py"))
    assert proc.returncode == 0, proc.stderr
    assert _top_level_calls(proc.stdout) == [] and '__main__":\n    hvd.init()\n' in proc.stdout
    assert "evaluate.py imports it, and sets nothing up" in proc.stderr


def test_an_imported_script_whose_top_level_runs_code_keeps_its_setup_on_top_and_says_why(tmp_path):
    project = tmp_path / "imported_script"
    shutil.copytree(PROJECTS / "imported_script", project)
    train = project / "train.py"
    train.write_text(read(train).replace("\n\ndef get_model", "\ntf.random.set_seed(7)\n\n\ndef get_model"))
    proc = run("convert", str(train), "--diff")
    assert proc.returncode == 0, proc.stderr
    assert "\n+hvd.init()" in proc.stdout and "+    hvd.init()" not in proc.stdout
    assert "12. the program is the project (the entry and its project modules): partly done" in proc.stderr
    assert "its top level runs code before the `__main__` block" in proc.stderr
    assert "put what it runs when started under `if __name__ == \"__main__\":`" in proc.stderr


def _trains_at_top_level(tmp_path: Path) -> Path:
    """imported_script with train.py's `__main__` block dedented: importing it trains."""
    project = tmp_path / "imported_script"
    shutil.copytree(PROJECTS / "imported_script", project)
    train = project / "train.py"
    head, block = read(train).split('if __name__ == "__main__":\n')
    train.write_text(head + "".join(line[4:] if line.startswith("    ") else line
                                    for line in block.splitlines(keepends=True)))
    return project


def test_a_module_that_trains_when_imported_gets_its_own_setup_too(tmp_path):
    """evaluate.py imports train.py, which trains at its top level: one program of
    evaluate.py (its set-up first), and train.py, a script too, gets the set-up at its top
    (it runs on its own; at the import, after evaluate.py's, a second one does nothing);
    point 12 says so and how to keep it out of the import."""
    project = _trains_at_top_level(tmp_path)
    proc = run("convert", str(project), "--write")
    assert proc.returncode == 0, proc.stderr
    assert "train.py trains when evaluate.py imports it" in proc.stderr
    assert "12. the program is the project (the entry and its project modules): partly done" in proc.stderr
    train, evaluate = read(project / "train.py"), read(project / "evaluate.py")
    for text in (train, evaluate):
        assert text.count("hvd.init()") == 1 and text.index("hvd.init()") < text.index("set_visible_devices")
    assert train.index("hvd.init()") < train.index("hvd_broadcast_done = ") < train.index("def get_model")
    again = run("convert", str(project), "--diff")
    assert again.returncode == 0 and again.stdout == "", again.stdout


# -- the link ----------------------------------------------------------------------------
def _link(project: Path, entry: str):
    return link(Layout(project, project / entry, read))


def test_link_reads_module_names_as_the_names_they_define():
    lk = _link(PROJECTS / "package", "main.py")
    text = lk.text
    assert "loop.run(" not in text and "run(parse_args())" in text
    assert "nets.regressor()" not in text and "regressor()" in text
    assert text.index("def regressor") < text.index("def run(") < text.index("def parse_args")


def test_link_maps_lines_and_edits_back_to_their_files():
    project = PROJECTS / "factories"
    lk = _link(project, "train.py")
    at = lk.text.index("return tf.keras.optimizers.SGD")
    line = lk.text.count("\n", 0, at) + 1
    assert lk.locate_line(line) == ((project / "model.py").resolve(), 13)
    edits = lk.file_edits([Edit(at, at, "X"), Edit(at + 7, at + 9, "tensorflow")])
    model = (project / "model.py").resolve()
    offset = read(model).index("return tf.keras.optimizers.SGD")
    assert edits == {model: [Edit(offset, offset, "X"), Edit(offset + 7, offset + 9, "tensorflow")]}


def test_edit_on_a_rewritten_import_is_refused():
    lk = _link(PROJECTS / "factories", "train.py")
    at = lk.text.index("pass\n", lk.text.index("def make_optimizer"))      # the entry's `from data import load`
    with pytest.raises(UserError, match="project import"):
        lk.file_edits([Edit(at + 1, at + 3, "xx")])


def test_a_name_two_modules_define_is_said(tmp_path):
    """Read as one text, two modules' `build` are one name: the report says so (point 12)."""
    (tmp_path / "nets.py").write_text("import tensorflow as tf\n\n\ndef build():\n"
                                      "    return tf.keras.Sequential([tf.keras.layers.Dense(1)])\n")
    (tmp_path / "inputs.py").write_text("import tensorflow as tf\n\n\ndef build():\n"
                                        "    return tf.data.Dataset.range(8).batch(2)\n")
    (tmp_path / "train.py").write_text(
        "import tensorflow as tf\n\nimport inputs\nimport nets\n\nmodel = nets.build()\n"
        "model.compile(optimizer=tf.keras.optimizers.SGD(0.1), loss='mse')\n"
        "model.fit(inputs.build(), epochs=2)\n")
    proc = run("convert", str(tmp_path / "train.py"), "--diff")
    assert "12. the program is the project (the entry and its project modules): not done" in proc.stderr
    assert "`build` is also defined in" in proc.stderr


def test_a_library_modules_main_block_is_left_out_with_its_module_reads():
    """evaluate.py imports train.py, whose `__main__` block reads `config.EPOCHS`: the block
    is left out of evaluate's program whole (its reads were cut out of it and garbled it)."""
    lk = _link(PROJECTS / "imported_script", "evaluate.py")
    compile(lk.text, "linked", "exec")
    assert "def get_model" in lk.text and "for epoch" not in lk.text and "EPOCHS):" not in lk.text


def test_a_name_read_through_its_module_is_replaced_with_its_module(tmp_path):
    """`config.EPOCHS` is linked as `EPOCHS`; the edit that divides it maps back with the
    module's name inside (it once gave `config.int(math.ceil(EPOCHS / hvd.size()))`)."""
    (tmp_path / "config.py").write_text("EPOCHS = 2\nLR = 0.01\n")
    (tmp_path / "train.py").write_text(
        "import tensorflow as tf\n\nimport config\n\nx = tf.random.normal((64, 4))\n"
        "model = tf.keras.Sequential([tf.keras.layers.Dense(1)])\n"
        "model.compile(optimizer=tf.keras.optimizers.SGD(config.LR), loss='mse')\n"
        "model.fit(x, tf.reduce_sum(x, axis=1), batch_size=8, epochs=config.EPOCHS)\n")
    proc = run("convert", str(tmp_path / "train.py"))
    assert proc.returncode == 0, proc.stderr
    assert "epochs=int(math.ceil(config.EPOCHS / hvd.size()))" in proc.stdout, proc.stdout
    lk = _link(tmp_path, "train.py")
    at = lk.text.index("EPOCHS)")
    config_read = read(tmp_path / "train.py").index("config.EPOCHS")
    assert lk.file_edits([Edit(at, at + 6, "f(EPOCHS)")]) == {
        (tmp_path / "train.py").resolve(): [Edit(config_read, config_read + 13, "f(config.EPOCHS)")]}


def test_one_entry_names_the_other_programs_that_import_a_module_it_changes(tmp_path):
    """Converting one entry changes a module another entry imports too: point 12 names that
    entry and says to convert the folder (sweep 40c: the other entry crashed, 'Horovod has not
    been initialized', while the report was silent); the folder's conversion does not say it."""
    project = tmp_path / "two_entries"
    shutil.copytree(PROJECTS / "two_entries", project)
    entries = sorted(p.name for p in project.glob("*.py") if "__main__" in p.read_text())
    alone = run("convert", str(project / entries[0]), "--diff")
    assert alone.returncode == 0, alone.stderr
    point12 = next(line for line in alone.stderr.splitlines() if line.strip().startswith("12."))
    assert "partly done" in point12 and f"also imported by {entries[1]}" in point12 and "convert DIR" in point12
    folder = run("convert", str(project), "--diff")
    assert folder.returncode == 0 and "also imported by" not in folder.stderr


def test_a_folder_does_not_set_up_its_documentation_config(tmp_path):
    """Sphinx's docs/conf.py imports the package for its version: it is not a program of the
    folder (sweep 40d: it got hvd.init() and made the real entry's conversion conflict)."""
    project = tmp_path / "src_layout"
    shutil.copytree(PROJECTS / "src_layout", project)
    (project / "docs").mkdir()
    (project / "docs" / "conf.py").write_text(
        "import os\nimport sys\n\nsys.path.insert(0, os.path.join(os.path.dirname(__file__), '../src'))\n"
        "project = 'mypkg'\ntry:\n    from mypkg import Trainer as version\nexcept ImportError:\n"
        "    version = ''\nrelease = version\n", encoding="utf-8")
    proc = run("convert", str(project), "--diff")
    assert proc.returncode == 0, proc.stderr
    assert "+++ b/" in proc.stdout and "docs/conf.py" not in "".join(
        line for line in proc.stdout.splitlines(keepends=True) if line.startswith("+++"))


def test_point_12_names_importers_through_a_package_and_notebooks(tmp_path):
    """The changed module is reached through a package's `__init__.py` re-export (by another
    script) and imported by a notebook: point 12 names both (sweep 40d r12, r12b: it named
    only the files whose own imports named the module, and no notebook)."""
    import json

    pkg = tmp_path / "regress"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("from regress.fitting import fit_line\n")
    (pkg / "fitting.py").write_text(
        "def fit_line(net, data, rounds=3):\n    net.fit(data.batch(16), epochs=rounds)\n"
        "    print('fitted', net.count_params())\n")
    script = ("import tensorflow as tf\n\nimport regress\n\nif __name__ == '__main__':\n"
              "    pts = tf.random.uniform((96, 2))\n"
              "    data = tf.data.Dataset.from_tensor_slices((pts[:, :1], pts[:, 1:]))\n"
              "    net = tf.keras.Sequential([tf.keras.Input((1,)), tf.keras.layers.Dense(1)])\n"
              "    net.compile(tf.keras.optimizers.SGD(0.1), loss='mae')\n"
              "    regress.fit_line(net, data)\n")
    (tmp_path / "line_a.py").write_text(script)
    (tmp_path / "line_b.py").write_text(script)
    cell = "from regress.fitting import fit_line\nimport tensorflow as tf\n"
    (tmp_path / "explore.ipynb").write_text(json.dumps({
        "cells": [{"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [], "source": cell}],
        "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'regress'\n")
    alone = run("convert", str(tmp_path / "line_a.py"), "--diff")
    assert alone.returncode == 0, alone.stderr
    assert "regress/fitting.py" in alone.stdout
    point12 = next(line for line in alone.stderr.splitlines() if line.strip().startswith("12."))
    assert "partly done" in point12 and "regress/fitting.py is also imported by " in point12, point12
    named = point12.split("is also imported by ")[1].split(", outside")[0]
    assert sorted(named.split(", ")) == ["explore.ipynb", "line_b.py"], point12


def test_a_callback_a_sibling_helper_returns_is_rank_0s_and_its_read_waits(tmp_path):
    """helper_functions.py (mrdbourke's) returns the TensorBoard and ModelCheckpoint callbacks the
    notebook passes to fit: they write, so rank 0 alone gets them (review 39f: every rank wrote
    the same SavedModel directory, point 6 said done), and the load of the checkpoint after the
    fit is rank 0's read of its own file (its path filled in from the helper's default and the
    call's literal)."""
    (tmp_path / "helper_functions.py").write_text(
        "import datetime\nimport os\nimport tensorflow as tf\n\n\n"
        "def create_tensorboard_callback(dir_name, experiment_name):\n"
        "    log_dir = dir_name + '/' + experiment_name + '/' + datetime.datetime.now().strftime('%Y%m%d-%H%M%S')\n"
        "    tensorboard_callback = tf.keras.callbacks.TensorBoard(log_dir=log_dir)\n"
        "    return tensorboard_callback\n\n\n"
        "def create_model_checkpoint(model_name, save_path='model_experiments'):\n"
        "    return tf.keras.callbacks.ModelCheckpoint(filepath=os.path.join(save_path, model_name),\n"
        "                                              save_best_only=True)\n")
    (tmp_path / "train.py").write_text(
        "import tensorflow as tf\nfrom helper_functions import create_model_checkpoint, create_tensorboard_callback\n\n"
        "x = tf.random.normal((64, 4))\ny = tf.reduce_sum(x, axis=1)\n"
        "model = tf.keras.Sequential([tf.keras.layers.Dense(1)])\n"
        "model.compile(optimizer=tf.keras.optimizers.Adam(), loss='mae')\n"
        "checkpoint = create_model_checkpoint('model_2')\n"
        "model.fit(x, y, epochs=4, validation_data=(x, y),\n"
        "          callbacks=[create_tensorboard_callback('logs', 'model_2'), checkpoint])\n"
        "model = tf.keras.models.load_model('model_experiments/model_2')\n")
    proc = run("convert", str(tmp_path / "train.py"), "--diff")
    assert proc.returncode == 0, proc.stderr
    assert ("*([create_tensorboard_callback('logs', 'model_2')] if hvd.rank() == 0 else []), "
            "*([checkpoint] if hvd.rank() == 0 else [])]") in proc.stdout, proc.stdout
    # (its value is never used: the read runs on rank 0, which wrote the file, with no barrier)
    assert "+if hvd.rank() == 0: model = tf.keras.models.load_model(" in proc.stdout
    assert "helper_functions.py" not in proc.stdout      # (the helpers stay as they are)
