"""A notebook that imports modules of its project (issue 40; contract points 12 and 14): the
notebook is the entry of a program, its code cells in order, and the modules it imports are
converted with it.

The golden of tests/projects/notebook (train.ipynb + model.py + data.py) and converting twice
are in test_projects.py with the other shapes. Here: each edit in the file its fact lives in
(the rate in model.py, the shard in data.py, the set-up in the notebook's imports cell, never
in a module), every changed cell parses on its own and only code sources change in the JSON,
`check` names cells and modules, `--write` writes every file or none, `--to-script` waits for
the modules to be converted, a notebook that imports no project module is converted alone.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from horovodize.app import notebook

PROJECTS = Path(__file__).resolve().parent / "projects"
EXE = Path(sys.executable).parent / "horovodize"


def run(*args, cwd=None):
    return subprocess.run([str(EXE), *args], capture_output=True, text=True, timeout=120, cwd=cwd)


def copy(tmp_path: Path) -> Path:
    project = tmp_path / "notebook"
    shutil.copytree(PROJECTS / "notebook", project)
    return project


def test_each_edit_goes_to_the_file_of_its_fact():
    proc = run("convert", "notebook", "--diff", cwd=PROJECTS)
    assert proc.returncode == 0, proc.stderr
    report = proc.stderr
    assert "notebook/train.ipynb cell 2 line 5: HVD001" in report          # the set-up in the imports cell
    assert "notebook/model.py line 13: HVD010" in report                   # the rate where the optimizer is made
    assert "notebook/data.py line 8: HVD041" in report                     # the data divided where it is read
    assert "notebook/train.ipynb cell 4 line 6: HVD021" in report          # the broadcast where the step runs
    assert "12. the program is the project (the entry and its project modules): done" in report
    diff = proc.stdout
    assert "--- a/notebook/train.ipynb:cell 2" in diff and "--- a/notebook/model.py" in diff
    for module in ("data.py", "model.py"):
        part = diff.split(f"--- a/notebook/{module}")[1].split("--- a/")[0]
        assert "+import horovod.tensorflow as hvd" in part and "hvd.init()" not in part


def test_written_notebook_keeps_its_cells_and_everything_but_code_sources(tmp_path):
    project = copy(tmp_path)
    before = json.loads((project / "train.ipynb").read_text(encoding="utf-8"))
    proc = run("convert", str(project), "--write")
    assert proc.returncode == 0, proc.stderr
    after = json.loads((project / "train.ipynb").read_text(encoding="utf-8"))
    assert len(before["cells"]) == len(after["cells"])
    for a, b in zip(before["cells"], after["cells"]):
        assert {k: v for k, v in a.items() if k != "source"} == {k: v for k, v in b.items() if k != "source"}
        assert type(a["source"]) is type(b["source"])
    nb = notebook.load((project / "train.ipynb").read_text(encoding="utf-8"))
    nb.check_cells({c.index: c.text for c in nb.cells})          # every cell parses on its own
    imports_cell = "".join(after["cells"][1]["source"])
    assert imports_cell.index("hvd.init()") < imports_cell.index("import data")
    assert "%matplotlib inline" in imports_cell
    assert "learning_rate=lr * hvd.size()" in (project / "model.py").read_text()
    assert "hvd.init()" not in (project / "model.py").read_text() + (project / "data.py").read_text()


def test_check_names_cells_in_the_notebook_and_lines_in_modules():
    proc = run("check", "notebook/train.ipynb", "--format", "json", cwd=PROJECTS)
    assert proc.returncode == 1, proc.stderr
    found = {(r["path"], r.get("cell"), r["code"]) for r in json.loads(proc.stdout)}
    assert ("notebook/train.ipynb", 2, "HVD001") in found
    assert ("notebook/train.ipynb", 4, "HVD020") in found
    assert ("notebook/model.py", None, "HVD010") in found
    assert ("notebook/data.py", None, "HVD041") in found
    text = run("check", "notebook/train.ipynb", cwd=PROJECTS).stdout
    assert "notebook/train.ipynb:cell 4:3:10: HVD020" in text


def test_write_writes_every_file_or_none(tmp_path):
    project = copy(tmp_path)
    before = {p: p.read_bytes() for p in project.iterdir()}
    (project / "model.py").chmod(0o444)
    try:
        proc = run("convert", str(project / "train.ipynb"), "--write")
    finally:
        (project / "model.py").chmod(0o644)
    assert proc.returncode == 2 and "model.py" in proc.stderr, proc.stderr
    assert {p: p.read_bytes() for p in project.iterdir()} == before


def test_notebook_alone_without_diff_or_write_says_what_else_changes():
    proc = run("convert", "notebook/train.ipynb", cwd=PROJECTS)
    assert proc.returncode == 2 and proc.stdout == ""
    assert "also changes the project modules it imports (notebook/data.py, notebook/model.py)" in proc.stderr


def test_to_script_waits_for_the_modules_then_writes_the_program(tmp_path):
    project = copy(tmp_path)
    script = project / "train_nb.py"
    early = run("convert", str(project / "train.ipynb"), "--to-script", str(script))
    assert early.returncode == 2 and not script.exists()
    assert "then --to-script on the converted notebook" in early.stderr
    assert run("convert", str(project / "train.ipynb"), "--write").returncode == 0
    proc = run("convert", str(project / "train.ipynb"), "--to-script", str(script))
    assert proc.returncode == 0, proc.stderr
    text = script.read_text()
    compile(text, str(script), "exec")
    assert "# %matplotlib inline" in text and "hvd.init()" in text and "import data" in text
    assert f"horovodrun -np 2 -H localhost:2 python {script}" in proc.stderr
    # a shell line the script comments out is named, as for a notebook alone
    raw = json.loads((project / "train.ipynb").read_text(encoding="utf-8"))
    first = next(c for c in raw["cells"] if c["cell_type"] == "code")
    first["source"] = ["!wget -q https://example.com/data.npz\n"] + list(first["source"])
    (project / "train.ipynb").write_text(json.dumps(raw), encoding="utf-8")
    again = run("convert", str(project / "train.ipynb"), "--to-script", str(script))
    assert again.returncode == 0, again.stderr
    assert ":1: `!wget -q https://example.com/data.npz` is commented out in the script" in again.stderr


def test_a_notebook_that_imports_no_project_module_is_converted_alone(tmp_path):
    project = copy(tmp_path)
    raw = (project / "train.ipynb").read_text(encoding="utf-8")
    cells = json.loads(raw)
    cells["cells"] = cells["cells"][:2]
    cells["cells"][1]["source"] = ["import tensorflow as tf\n", "import json"]
    (project / "alone.ipynb").write_text(json.dumps(cells, indent=1) + "\n", encoding="utf-8")
    proc = run("convert", str(project / "alone.ipynb"))
    assert proc.returncode == 0 and "12. the program is the project" not in proc.stderr, proc.stderr
