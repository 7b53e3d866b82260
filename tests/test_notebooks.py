"""Notebooks (issue 27): `check` and `convert` of ``.ipynb`` files through the console
script, goldens of the converted notebook's JSON (byte-exact), magics masked and never
reported nor edited, hostile input (truncated JSON, nbformat 3, 50 MB of outputs, CRLF,
a source given as a string), and `--to-script`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from horovodize.app import notebook
from horovodize.errors import UserError
from horovodize.parse.source import Edit

EXE = Path(sys.executable).parent / "horovodize"
NOTEBOOKS = Path(__file__).resolve().parent / "notebooks"
CASES = ["tape_loop", "fit_string_crlf"]
TAPE = NOTEBOOKS / "tape_loop.ipynb"


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([str(EXE), *args], capture_output=True, cwd=cwd, timeout=120)


def make(cells: list, nbformat: int = 4, outputs: list | None = None) -> str:
    """An nbformat-4 notebook as Jupyter writes it (indent 1, no ASCII escapes)."""
    out = []
    for i, src in enumerate(cells):
        kind = "markdown" if isinstance(src, str) and src.startswith("# ") else "code"
        cell = {"cell_type": kind, "id": f"c{i}", "metadata": {}, "source": src}
        if kind == "code":
            cell.update(execution_count=None, outputs=outputs or [])
        out.append(cell)
    return json.dumps({"cells": out, "metadata": {}, "nbformat": nbformat, "nbformat_minor": 5},
                      indent=1, ensure_ascii=False) + "\n"


FIT_CELLS = [
    ["import numpy as np\n", "import tensorflow as tf\n"],
    "# Train",
    ["x = np.zeros((64, 2), \"float32\")\n", "y = np.zeros((64, 1), \"float32\")\n",
     "model = tf.keras.Sequential([tf.keras.layers.Dense(1)])\n",
     "model.compile(optimizer=tf.keras.optimizers.SGD(0.1), loss=\"mse\")\n", "model.fit(x, y, epochs=4)"],
]


# -- goldens ---------------------------------------------------------------------------
@pytest.mark.parametrize("case", CASES)
def test_convert_golden_byte_exact(case):
    proc = run("convert", str(NOTEBOOKS / f"{case}.ipynb"))
    assert proc.returncode == 0, proc.stderr.decode()
    assert proc.stdout == (NOTEBOOKS / f"{case}.expected.ipynb").read_bytes()


@pytest.mark.parametrize("case", CASES)
def test_only_code_sources_change(case):
    """Outputs, execution counts, ids, metadata, markdown and raw cells stay as they were;
    every line of the JSON text outside the code cells' sources is unchanged."""
    before = json.loads((NOTEBOOKS / f"{case}.ipynb").read_text(encoding="utf-8"))
    after = json.loads((NOTEBOOKS / f"{case}.expected.ipynb").read_text(encoding="utf-8"))
    assert {k: v for k, v in before.items() if k != "cells"} == {k: v for k, v in after.items() if k != "cells"}
    assert len(before["cells"]) == len(after["cells"])
    changed = 0
    for a, b in zip(before["cells"], after["cells"]):
        assert {k: v for k, v in a.items() if k != "source"} == {k: v for k, v in b.items() if k != "source"}
        if a["cell_type"] != "code":
            assert a["source"] == b["source"]
        assert type(a["source"]) is type(b["source"])      # a list stays a list, a string a string
        changed += a["source"] != b["source"]
    assert changed >= 3


def test_convert_write_replaces_atomically_and_check_is_clean_after(tmp_path):
    path = tmp_path / "nb.ipynb"
    path.write_bytes(TAPE.read_bytes())
    proc = run("convert", "--write", str(path))
    assert proc.returncode == 0, proc.stderr.decode()
    assert proc.stdout == b""
    assert path.read_bytes() == (NOTEBOOKS / "tape_loop.expected.ipynb").read_bytes()
    again = run("convert", str(path))
    assert again.returncode == 0 and again.stdout == path.read_bytes()
    assert b"nothing to change" in again.stderr


def test_convert_diff_is_per_cell(tmp_path):
    proc = run("convert", "--diff", TAPE.name, cwd=NOTEBOOKS)
    assert proc.returncode == 0
    out = proc.stdout.decode()
    assert "--- a/tape_loop.ipynb:cell 2\n+++ b/tape_loop.ipynb:cell 2\n" in out
    assert "+    tape = hvd.DistributedGradientTape(tape)\n" in out
    assert "cell 1\n" not in out and "cell 5" not in out and "matplotlib" not in out


def test_to_script_comments_magics_and_gives_the_launch_command(tmp_path):
    script = tmp_path / "train.py"
    proc = run("convert", str(TAPE), "--to-script", str(script))
    assert proc.returncode == 0 and proc.stdout == b""
    text = script.read_text(encoding="utf-8")
    assert text.startswith("# %matplotlib inline\nimport os\n")
    assert "# !echo data ready\n" in text and "# model.summary?\n" in text
    compile(text, str(script), "exec")
    # a shell line the script no longer runs is named (data it fetched would be missing); a
    # display magic or a help line is not
    assert b"`!echo data ready` is commented out in the script (IPython)" in proc.stderr
    assert b"%matplotlib" not in proc.stderr and b"summary?`" not in proc.stderr
    assert f"horovodrun -np N -H host1:4,host2:4 python {script}".encode() in proc.stderr
    plain = run("convert", str(TAPE))
    assert b"--to-script train.py" in plain.stderr        # the notebook's report says how to run it
    assert run("convert", str(NOTEBOOKS.parent / "fixtures" / "HVD001" / "tape_tf_function.py"),
               "--to-script", str(script)).returncode == 2


def test_refused_notebook_is_printed_unchanged_exit_3(tmp_path):
    cells = [["import os\n", "import tensorflow as tf\n"],
             ["if os.path.exists('/tmp/fast'):\n", "    opt = tf.keras.optimizers.SGD(0.1)\n", "else:\n",
              "    opt = tf.keras.optimizers.Adam(0.01)\n",
              "model = tf.keras.Sequential([tf.keras.layers.Dense(1)])\n"],
             ["for x in tf.data.Dataset.range(4):\n", "    with tf.GradientTape() as tape:\n",
              "        loss = tf.reduce_mean(model(tf.ones((1, 2))))\n",
              "    grads = tape.gradient(loss, model.trainable_variables)\n",
              "    opt.apply_gradients(zip(grads, model.trainable_variables))\n"]]
    path = tmp_path / "refused.ipynb"
    path.write_text(make(cells), encoding="utf-8")
    proc = run("convert", str(path))
    assert proc.returncode == 3
    assert proc.stdout == path.read_bytes()
    assert b"NOT CONVERTED" in proc.stderr and b"\n    cell 2 line 2: HVD-R7 optimizer `opt` is chosen by a test that may differ" in proc.stderr
    assert run("convert", "--write", str(path)).returncode == 3
    assert path.read_text(encoding="utf-8") == make(cells)


# -- check -----------------------------------------------------------------------------
def test_check_text_names_the_cell_as_ruff_does():
    proc = run("check", TAPE.name, cwd=NOTEBOOKS)
    assert proc.returncode == 1
    lines = proc.stdout.decode().splitlines()
    assert "tape_loop.ipynb:cell 2:5:1: HVD001 TensorFlow program without Horovod set-up" in lines
    assert "tape_loop.ipynb:cell 6:9:9: HVD030 print runs on every rank" in lines
    assert not any(":cell 1:" in line or ":cell 5:" in line for line in lines)   # markdown, raw


def test_check_json_has_cell_line_column_inside_the_cell():
    proc = run("check", "--format", "json", str(NOTEBOOKS / "fit_string_crlf.ipynb"))
    data = json.loads(proc.stdout)
    save = next(r for r in data if r["code"] == "HVD032")
    assert (save["cell"], save["line"], save["column"]) == (6, 2, 1)      # after `files = !ls`
    fit = next(r for r in data if r["code"] == "HVD043")
    assert (fit["cell"], fit["line"]) == (4, 2)                            # below %%time
    assert all("cell" in r for r in data)


def test_magics_are_never_reported_nor_edited(tmp_path):
    cells = [["%load_ext autoreload\n", "%autoreload 2\n", "!pip install -q tensorflow\n",
              "import numpy as np\n", "import tensorflow as tf\n"],
             ["%%bash\n", "echo $((1 + 2)) (\n"],
             ["files = !ls\n", "tf.keras?\n", "total = (3\n", "    % 2)\n", "doc = '''\n", "%not a magic\n",
              "'''\n"]] + FIT_CELLS[1:]
    path = tmp_path / "magics.ipynb"
    path.write_text(make(cells), encoding="utf-8")
    check = run("check", "--format", "json", str(path))
    assert check.returncode == 1, check.stderr.decode()
    assert {r["cell"] for r in json.loads(check.stdout)} == {1, 5}      # (1-based, as ruff)
    proc = run("convert", str(path))
    assert proc.returncode == 0, proc.stderr.decode()
    after = json.loads(proc.stdout)["cells"]
    assert after[0]["source"][:5] == cells[0] and after[0]["source"][5:7] == [
        "import math\n", "import horovod.tensorflow.keras as hvd\n"]       # (math: the epochs divided)
    assert after[1]["source"] == cells[1]
    assert after[2]["source"] == cells[2]
    nb = notebook.load(make(cells))
    assert "    % 2)\n" in nb.program and "%not a magic\n" in nb.program     # Python, not magics
    assert "#%bash\n#cho" in nb.program


def test_directory_walk_includes_notebooks(tmp_path):
    (tmp_path / "nb.ipynb").write_bytes(TAPE.read_bytes())
    (tmp_path / ".ipynb_checkpoints").mkdir()
    (tmp_path / ".ipynb_checkpoints" / "nb-checkpoint.ipynb").write_bytes(TAPE.read_bytes())
    check = run("check", str(tmp_path))
    assert check.returncode == 1 and b"nb.ipynb:cell 2:5:1: HVD001" in check.stdout
    assert b"checkpoint" not in check.stdout
    diff = run("convert", "--diff", str(tmp_path))
    assert diff.returncode == 0 and b"nb.ipynb:cell 6" in diff.stdout
    assert b"1 file(s), 1 converted, 0 refused, 0 failed" in diff.stderr


def test_syntax_error_is_located_in_its_cell(tmp_path):
    path = tmp_path / "bad.ipynb"
    path.write_text(make([["import tensorflow as tf\n"], "# md", ["x = 1\n", "def f(:\n", "    pass\n"]]),
                    encoding="utf-8")
    proc = run("convert", str(path))
    assert proc.returncode == 2 and proc.stdout == b""
    assert proc.stderr.decode().startswith(f"{path}:cell 3:2:")
    assert run("check", str(path)).returncode == 2


# -- hostile input ---------------------------------------------------------------------
@pytest.mark.parametrize("text, message", [
    (TAPE.read_text(encoding="utf-8")[:1000], "not a notebook: invalid JSON at line"),
    (make([["import tensorflow as tf\n"]], nbformat=3), "nbformat 3 is not supported"),
    (make(["# only markdown"]), "no code cells"),
    ("[1, 2]", "not a notebook: no `cells` list"),
    (make([7]), "`source` is neither a string nor a list of strings"),
])
@pytest.mark.parametrize("command", [("check",), ("convert",), ("convert", "--write"), ("convert", "--diff")])
def test_bad_notebooks_one_line_exit_2_nothing_written(tmp_path, text, message, command):
    path = tmp_path / "bad.ipynb"
    path.write_text(text, encoding="utf-8")
    proc = run(*command, str(path))
    err = proc.stderr.decode()
    assert proc.returncode == 2 and proc.stdout == b"", err
    assert err.count("\n") == 1 and message in err and "Traceback" not in err, err
    assert path.read_text(encoding="utf-8") == text


def test_fifty_megabytes_of_outputs(tmp_path):
    """Outputs are skipped by the C decoder: a 50 MB notebook converts in seconds and its
    outputs come back byte-identical."""
    line = "0123456789" * 10 + "\n"
    outputs = [{"name": "stdout", "output_type": "stream", "text": [line] * 250_000},
               {"data": {"image/png": "A" * 25_000_000}, "metadata": {}, "output_type": "display_data"}]
    text = make(FIT_CELLS, outputs=outputs)
    assert len(text) > 50_000_000
    path = tmp_path / "big.ipynb"
    path.write_text(text, encoding="utf-8")
    start = time.monotonic()
    proc = run("convert", "--write", str(path))
    wall = time.monotonic() - start
    assert proc.returncode == 0, proc.stderr.decode()
    assert wall < 60, wall                      # (about 3 s alone; 2 cores shared with others)
    after = path.read_text(encoding="utf-8")
    assert after != text and json.loads(after)["cells"][0]["outputs"] == outputs
    assert after.replace("hvd.DistributedOptimizer(", "").count("A" * 1000) == text.count("A" * 1000)


def test_crlf_and_string_sources_keep_their_form():
    """(fit_string_crlf: sources given as strings with CRLF lines, the file written with
    ASCII escapes) the inserted lines end with CRLF and the escapes stay."""
    after = (NOTEBOOKS / "fit_string_crlf.expected.ipynb").read_text(encoding="utf-8")
    assert "hvd.init()\\r\\n" in after and "# \\u00e9: a comment" in after and after.isascii()


def test_whole_file_json_formatting_untouched_with_crlf_json(tmp_path):
    """A notebook whose JSON itself has CRLF line ends and 2-space indentation: the new
    source list uses the same layout."""
    text = json.dumps(json.loads(make(FIT_CELLS)), indent=2).replace("\n", "\r\n") + "\r\n"
    path = tmp_path / "crlf.ipynb"
    path.write_bytes(text.encode())
    proc = run("convert", str(path))
    assert proc.returncode == 0
    out = proc.stdout.decode()
    assert "\n" not in out.replace("\r\n", "")
    assert ('        "import tensorflow as tf\\n",\r\n        "import math\\n",\r\n'
            '        "import horovod.tensorflow.keras as hvd\\n",\r\n') in out


def test_edits_that_straddle_cells_or_touch_a_magic_are_refused():
    nb = notebook.load(make([["%matplotlib inline\n", "import tensorflow as tf\n"], ["x = 1\n"]]))
    second = nb.cells[1].start
    with pytest.raises(UserError, match="straddle two cells"):
        nb.cell_edits([Edit(second - 3, second + 1, "")])
    with pytest.raises(UserError, match="IPython magic"):
        nb.cell_edits([Edit(1, 4, "")])
    assert nb.cell_edits([Edit(0, 0, "import os\n")]) == {0: [Edit(0, 0, "import os\n")]}


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root writes read-only files")
def test_read_only_notebook_not_written(tmp_path):
    path = tmp_path / "ro.ipynb"
    path.write_bytes(TAPE.read_bytes())
    path.chmod(0o444)
    proc = run("convert", "--write", str(path))
    assert proc.returncode == 2 and b"read-only" in proc.stderr
    assert path.read_bytes() == TAPE.read_bytes()


def test_setup_goes_into_the_imports_cell(tmp_path):
    """The engine puts the set-up after the last import; when that import ends its cell
    (no final newline, as Jupyter saves a cell) the lines go at the end of that cell, not
    at the top of the next code cell."""
    cells = [["import numpy as np\n", "import tensorflow as tf"], "# Train", FIT_CELLS[2]]
    path = tmp_path / "imports.ipynb"
    path.write_text(make(cells), encoding="utf-8")
    proc = run("convert", str(path))
    assert proc.returncode == 0, proc.stderr.decode()
    after = json.loads(proc.stdout)["cells"]
    assert after[0]["source"][:4] == ["import numpy as np\n", "import tensorflow as tf\n", "import math\n",
                                      "import horovod.tensorflow.keras as hvd\n"]
    assert not after[0]["source"][-1].endswith("\n")          # the cell still ends as it did
    assert after[2]["source"][0] == FIT_CELLS[2][0]


def test_lines_continuing_a_cells_block_stay_in_that_cell(tmp_path):
    """(tensorflow/docs dcgan.ipynb, cyclegan.ipynb) a step function whose last line is
    `apply_gradients(...)`, at the end of its cell: the broadcast the engine adds after it
    is indented, so it belongs to that cell; at the top of the next cell it would not parse."""
    cells = [["import tensorflow as tf\n", "model = tf.keras.Sequential([tf.keras.layers.Dense(1)])\n",
              "opt = tf.keras.optimizers.SGD(0.1)"],
             ["@tf.function\n", "def step(x):\n", "    with tf.GradientTape() as tape:\n",
              "        loss = tf.reduce_mean(model(x))\n",
              "    grads = tape.gradient(loss, model.trainable_variables)\n",
              "    opt.apply_gradients(zip(grads, model.trainable_variables))"],
             ["for x in tf.data.Dataset.from_tensor_slices(tf.ones((8, 2))).batch(2):\n", "    step(x)"]]
    path = tmp_path / "step.ipynb"
    path.write_text(make(cells), encoding="utf-8")
    proc = run("convert", str(path))
    assert proc.returncode == 0, proc.stderr.decode()
    after = json.loads(proc.stdout)["cells"]
    assert "        hvd_broadcast_done.assign(True)" in after[1]["source"][-1]
    assert after[2]["source"][0].startswith("for x in tf.data.Dataset")


def test_a_cell_indented_as_a_whole_is_dedented_as_ipython_does(tmp_path):
    """(tensorflow/docs guide/data.ipynb cell 177) IPython removes the first line's
    indentation from every line of a cell; the analysis sees it so, the edits keep it."""
    cells = [FIT_CELLS[0], FIT_CELLS[2], [" for i in range(2):\n", "   print(i)\n", " print('done')"]]
    path = tmp_path / "indented.ipynb"
    path.write_text(make(cells), encoding="utf-8")
    check = run("check", str(path))
    assert b"cell 3:2:4: HVD030" in check.stdout and b"syntax error" not in check.stderr
    proc = run("convert", str(path))
    assert proc.returncode == 0, proc.stderr.decode()
    assert json.loads(proc.stdout)["cells"][2]["source"] == [
        " for i in range(2):\n", "   if hvd.rank() == 0: print(i)\n", " if hvd.rank() == 0: print('done')"]
    nb = notebook.load(make(cells))
    edit = notebook._indented(nb.cells[2], Edit(19, 19, "x = 1\n"))     # (offsets in the dedented cell)
    assert edit == Edit(21, 21, "x = 1\n ")          # a line added before `  print(i)`, indented


def test_shell_line_continued_with_a_backslash_is_masked_whole():
    nb = notebook.load(make([["!saved_model_cli run --dir d \\\n", " --tag_set serve\n", "import tensorflow as tf\n"]]))
    assert nb.program.startswith("#saved_model_cli run --dir d \\\n #-tag_set serve\nimport tensorflow")


def test_to_script_of_a_refused_notebook_writes_nothing_exit_3(tmp_path):
    cells = [["import os\n", "import tensorflow as tf\n", "if os.path.exists('/tmp/fast'):\n",
              "    opt = tf.keras.optimizers.SGD(0.1)\n", "else:\n", "    opt = tf.keras.optimizers.Adam(0.01)\n",
              "model = tf.keras.Sequential([tf.keras.layers.Dense(1)])\n", "model.compile(optimizer=opt, loss='mse')\n",
              "model.fit(tf.ones((8, 2)), tf.ones((8, 1)), epochs=2)\n"]]
    path, script = tmp_path / "refused.ipynb", tmp_path / "train.py"
    path.write_text(make(cells), encoding="utf-8")
    proc = run("convert", str(path), "--to-script", str(script))
    assert proc.returncode == 3 and not script.exists(), proc.stderr.decode()
    assert b"refused; " in proc.stderr



# -- the notebook's own syntax (issue 38) ------------------------------------------------
COLAB_HEADERS = {
    "magic_in_try": ["try:\n", "    %tensorflow_version 2.x\n", "except Exception:\n", "    pass\n"],
    "magic_in_if": ["IS_COLAB = True\n", "if IS_COLAB:\n", "    %pip install -q -U tensorflow-addons\n"],
    "shell_in_if": ["import sys\n", "if 'google.colab' in sys.modules:\n", "    !pip install -q tfds-nightly \\\n",
                    "        tensorflow-datasets\n", "print('ready')\n"],
}


def _cells_compile(after: dict) -> None:
    """Each code cell of a converted notebook compiles on its own, magics masked (as
    Jupyter runs it: IPython turns a magic into a statement first)."""
    for i, cell in enumerate(after["cells"]):
        if cell["cell_type"] == "code":
            src = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
            compile(notebook.mask(notebook.dedent(src)[0])[0], f"cell {i + 1}", "exec")


@pytest.mark.parametrize("header", sorted(COLAB_HEADERS))
def test_a_magic_inside_a_block_is_a_statement_not_an_empty_block(tmp_path, header):
    """(a textbook's Colab header) `try:` / `    %tensorflow_version 2.x` runs in Jupyter:
    masked as a comment the block was empty and the notebook a syntax error (exit 2)."""
    path = tmp_path / f"{header}.ipynb"
    path.write_text(make([COLAB_HEADERS[header], *FIT_CELLS]), encoding="utf-8")
    check = run("check", str(path))
    assert check.returncode == 1 and b"syntax error" not in check.stdout + check.stderr, check.stderr.decode()
    proc = run("convert", str(path))
    assert proc.returncode == 0, proc.stderr.decode()
    after = json.loads(proc.stdout)
    source = after["cells"][0]["source"]
    assert [line for line in COLAB_HEADERS[header] if line.lstrip()[:1] in "%!"] == \
        [line for line in source if line.lstrip()[:1] in "%!"]           # the magics untouched
    _cells_compile(after)
    script = tmp_path / "train.py"
    assert run("convert", str(path), "--to-script", str(script)).returncode == 0
    compile(script.read_text(encoding="utf-8"), str(script), "exec")
    nb = notebook.load(path.read_text(encoding="utf-8"))
    assert [nb.cell_at(c.start) for c in nb.cells] == nb.cells          # positions stay the cells'


def test_a_later_cells_future_import_is_legal(tmp_path):
    """(a library's tutorials: a `pip install` cell, then `from __future__ import ...`)
    Jupyter compiles each cell on its own; the script puts the import at its top."""
    future = "from __future__ import absolute_import, division, print_function\n"
    cells = [["x = 1\n"], [future, "import numpy as np\n", "import tensorflow as tf\n"], *FIT_CELLS[1:]]
    path = tmp_path / "future.ipynb"
    path.write_text(make(cells), encoding="utf-8")
    proc = run("convert", str(path))
    assert proc.returncode == 0, proc.stderr.decode()
    after = json.loads(proc.stdout)
    assert after["cells"][1]["source"][0] == future          # still the first line of its cell
    _cells_compile(after)
    script = tmp_path / "train.py"
    assert run("convert", str(path), "--to-script", str(script)).returncode == 0
    text = script.read_text(encoding="utf-8")
    assert text.startswith(future) and "# " + future in text
    compile(text, str(script), "exec")


def test_a_cell_whose_future_import_an_edit_would_displace_is_refused():
    nb = notebook.from_cells(["x = 1\n", "from __future__ import division\nimport tensorflow as tf\n"])
    with pytest.raises(notebook.ParseError, match="__future__"):
        nb.check_cells({1: "import os\nfrom __future__ import division\nimport tensorflow as tf\n"})


def test_a_rank0_guard_never_spans_two_cells(tmp_path):
    """(a textbook's cats-and-dogs notebook) a print ends one cell and more prints start the
    next; cells saved without a final newline were joined into one run of statements, so
    one `if hvd.rank() == 0:` covered both and the next cell started indented."""
    cells = [FIT_CELLS[0], ["import os\n", "d = '.'\n", "print('total training cat images:', len(os.listdir(d)))"],
             ["print('total training dog images:', len(os.listdir(d)))\n", "print('x')"], *FIT_CELLS[1:]]
    path = tmp_path / "span.ipynb"
    path.write_text(make(cells), encoding="utf-8")
    proc = run("convert", str(path))
    assert proc.returncode == 0, proc.stderr.decode()
    after = json.loads(proc.stdout)
    _cells_compile(after)
    assert after["cells"][1]["source"][-1] == "if hvd.rank() == 0: print('total training cat images:', len(os.listdir(d)))"
    assert after["cells"][2]["source"] == ["if hvd.rank() == 0:\n", "    print('total training dog images:', len(os.listdir(d)))\n",
                                           "    print('x')"]


def test_a_cell_that_would_start_inside_the_block_of_the_cell_before_is_refused():
    nb = notebook.from_cells(["import os\nif True:\n    x = 1", "print('a')\n"])
    with pytest.raises(notebook.ParseError, match="cell 2: .*block"):
        nb.check_cells({1: "    print('a')\n"})


# IPython lines in every position the notebooks of three public sources put them (issue 38)
TRICKY_CELLS = [
    *("".join(lines) for lines in COLAB_HEADERS.values()),
    "%matplotlib inline\nimport os\n",
    "!saved_model_cli run --dir {model_path} --tag_set serve \\\n    --signature_def serving_default \\\n"
    "    --input_exprs 'x=1'\nprint('done')\n",
    "files = !ls data\nmodel.summary?\n??model.fit\n",
    "%%bash\necho hi\n  indented\n",
    "%%time\nx = 1\n",
    "s = '''\n%not a magic\n!nor this\n'''\nt = (1,\n     2)\n",
    "if True:\n    !echo a\n    x = 1\nelse:\n    %time y = 2\n",
    "def f():\n    %timeit g()\n    return 1\n",
    "print('100%!')  # a comment with % and !\n",
    "from __future__ import print_function\nimport numpy as np\n",
    "import os\r\n%matplotlib inline\r\nx = 1\r\n",                 # CRLF, and lone CR line ends
    "a = 1\rb = 2\r!ls\r",
    "x = 1",
    "!ls",
]


@pytest.mark.parametrize("cell", TRICKY_CELLS)
def test_the_own_rules_mask_what_ipythons_transformer_does(cell, monkeypatch):
    """Both paths pinned: IPython's input transformer (ipython==9.17.1, the test extra) and
    the rules `mask` follows without it give the same masked program."""
    pytest.importorskip("IPython.core.inputtransformer2")
    monkeypatch.delenv("HOROVODIZE_NO_IPYTHON", raising=False)
    monkeypatch.setattr(notebook, "_TRANSFORMER", [])
    assert notebook.ipython_lines("x = 1\n", ["x = 1\n"]) == set()      # (IPython's path is taken)
    with_ipython = notebook.mask(cell)
    monkeypatch.setattr(notebook, "_TRANSFORMER", [None])
    assert notebook.mask(cell) == with_ipython
    compile(with_ipython[0], "cell", "exec")


# -- idempotence (issue 39): converting a converted notebook changes nothing ---------------------------
@pytest.mark.parametrize("path", sorted(p for p in Path(__file__).resolve().parent.rglob("*.ipynb")
                                        if not p.name.endswith(".expected.ipynb") and "projects" not in p.parts),
                         ids=lambda p: p.name)
def test_converting_a_converted_notebook_changes_nothing(path, tmp_path):
    """Every notebook of the suite: the first conversion's output is a fixed point. (A
    notebook of tests/projects is converted with its modules: test_projects.py.)"""
    once = run("convert", str(path))
    assert once.returncode == 0, once.stderr.decode()
    converted = tmp_path / path.name
    converted.write_bytes(once.stdout)
    twice = run("convert", str(converted))
    assert twice.returncode == 0, twice.stderr.decode()
    assert twice.stdout == once.stdout


def test_to_script_comments_out_ipython_magic_machinery(tmp_path):
    """A cell that defines a cell magic (`%%backend`, as a book's notebooks do) imports IPython's
    magic machinery and decorates a function with it: the script runs without IPython, so the
    import and the decorator are commented out (named in the warnings), and the script runs."""
    cells = [["import os\n", "from IPython.core.magic import register_cell_magic\n", "\n",
              "@register_cell_magic\n", "def backend(line, cell):\n",
              "    current, required = os.environ.get('KERAS_BACKEND', ''), line.split()[-1]\n",
              "    if current == required:\n", "        get_ipython().run_cell(cell)\n"],
             ["import tensorflow as tf\n", "model = tf.keras.Sequential([tf.keras.layers.Dense(1)])\n",
              "opt = tf.keras.optimizers.SGD(0.1)\n",
              "for x in tf.data.Dataset.range(4).map(lambda i: tf.ones((1, 2))):\n",
              "    with tf.GradientTape() as tape:\n", "        loss = tf.reduce_mean(model(x))\n",
              "    grads = tape.gradient(loss, model.trainable_variables)\n",
              "    opt.apply_gradients(zip(grads, model.trainable_variables))\n"]]
    path, script = tmp_path / "book.ipynb", tmp_path / "book.py"
    path.write_text(make(cells), encoding="utf-8")
    proc = run("convert", str(path), "--to-script", str(script))
    assert proc.returncode == 0, proc.stderr
    text = script.read_text(encoding="utf-8")
    assert "# from IPython.core.magic import register_cell_magic\n" in text and "# @register_cell_magic\n" in text
    assert "\ndef backend(line, cell):\n" in text and "hvd.init()" in text
    assert b"cell 1:2: `from IPython.core.magic import register_cell_magic` is commented out in the script" in proc.stderr
    assert b"cell 1:4: `@register_cell_magic` is commented out" in proc.stderr
    compile(text, str(script), "exec")
    converted = tmp_path / "conv.ipynb"       # the notebook itself keeps them: it runs in IPython
    assert run("convert", str(path), "-o", str(converted)).returncode == 0
    assert "@register_cell_magic" in json.loads(converted.read_text())["cells"][0]["source"][3]


def test_a_data_window_stays_in_the_cell_of_its_fetch(tmp_path):
    """Local rank 0 fetches first, then the others: both waits go in the fetch's cell, also
    when it is the cell's last statement (re-running that cell alone runs both halves)."""
    cells = [["import numpy as np\n", "import tensorflow as tf\n", "from tensorflow.keras.datasets import imdb\n",
              "(train_data, train_labels), _ = imdb.load_data(num_words=1000)"],
             ["print(train_data[0])\n"],
             ["x = np.zeros((len(train_data), 1000))\n",
              "model = tf.keras.Sequential([tf.keras.layers.Dense(1, activation='sigmoid')])\n",
              "model.compile(optimizer='adam', loss='binary_crossentropy')\n",
              "model.fit(x, train_labels.astype('float32'), epochs=4, batch_size=512)\n"]]
    path, out = tmp_path / "nb.ipynb", tmp_path / "out.ipynb"
    path.write_text(make(cells), encoding="utf-8")
    assert run("convert", str(path), "-o", str(out)).returncode == 0
    first, second = ("".join(c["source"]) for c in json.loads(out.read_text())["cells"][:2])
    assert first.count('name="data_barrier"') == 2 and first.rstrip().endswith("# then the others find it in this host's cache")
    assert "data_barrier" not in second


def test_fetches_in_two_cells_get_a_window_each(tmp_path):
    """imdb's data in one cell and its word index in the next: each cell fetches in a window of
    its own (one window across both would leave the first cell unable to run alone: ranks > 0
    would wait for local rank 0 to finish the second)."""
    cells = [["import numpy as np\n", "import tensorflow as tf\n", "from tensorflow.keras.datasets import imdb\n"],
             ["(train_data, train_labels), _ = imdb.load_data(num_words=1000)\n"],
             ["word_index = imdb.get_word_index()\n"],
             ["x = np.zeros((len(train_data), 1000))\n",
              "model = tf.keras.Sequential([tf.keras.layers.Dense(1, activation='sigmoid')])\n",
              "model.compile(optimizer='adam', loss='binary_crossentropy')\n",
              "model.fit(x, train_labels.astype('float32'), epochs=4, batch_size=512)\n"]]
    path, out = tmp_path / "nb.ipynb", tmp_path / "out.ipynb"
    path.write_text(make(cells), encoding="utf-8")
    assert run("convert", str(path), "-o", str(out)).returncode == 0
    sources = ["".join(c["source"]) for c in json.loads(out.read_text())["cells"]]
    for fetch in sources[1:3]:
        assert fetch.count('name="data_barrier"') == 2 and "local_rank() != 0" in fetch and "local_rank() == 0" in fetch
