"""The rehearsal's checks, table, JSON and --set, over reports as the wrapper writes them
(no Horovod run: the Horovod tier runs the real thing, tests/horovod/test_verify.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from horovodize.app import verify
from horovodize.app import verify_checks as C
from horovodize.lsp import rehearse
from pygls.exceptions import JsonRpcInvalidParams

USER = "import tensorflow as tf\nEPOCHS = 3\nmodel = make()\nmodel.fit(x, epochs=EPOCHS)\nprint('done')\n"
# the converted text: two lines inserted after the import, the fit line edited
RUN = ("import tensorflow as tf\nimport horovod.tensorflow.keras as hvd\nhvd.init()\nEPOCHS = 3\nmodel = make()\n"
       "model.fit(x, epochs=EPOCHS, verbose=0)\nprint('done')\n")


def ctx(**kw):
    base = {"user_path": "/w/train.py", "user_text": USER, "run_text": RUN, "single_text": USER, "np": 2,
            "as_is": False, "cold_cache": False, "cache_dirs": ("/home/u/.keras",), "temp_dirs": ("/tmp",)}
    base.update(kw)
    return C.Context(**base)


def report(rank, **kw):
    rep = {"rank": rank, "exit": 0, "error": None, "weights": {"model model: dense/kernel:0": "aa"}, "steps": 8,
           "writes": [], "prints": []}
    rep.update(kw)
    return rep


def runs(single_steps=16, **per_rank):
    single = C.Run("single", 1, reports={0: report(0, steps=single_steps)})
    dist = C.Run("dist", 2, reports={r: report(r, **per_rank.get(f"r{r}", {})) for r in range(2)})
    return single, dist


def evaluate(c, single, dist):
    checks = C.evaluate(c, C.Check("converts", C.PASS, "converted"), single, dist, 600)
    return {k.check: k for k in checks}


def test_all_pass():
    checks = evaluate(ctx(), *runs())
    # cold cache not asked, one host
    assert [c.status for c in checks.values()] == ["PASS"] * 5 + ["SKIP", "PASS", "SKIP"]
    assert list(checks) == list(C.CHECKS[:5]) + ["cold cache", "prints", "own disks"]


def test_shared_write_points_to_the_users_line():
    w = [["open", "/w/ckpt.h5", 6]]            # line 6 of the converted script = line 4 of the user's
    checks = evaluate(ctx(), *runs(r0={"writes": w}, r1={"writes": w}))
    c = checks["writes"]
    assert (c.status, c.rank, c.line, c.path) == ("FAIL", 1, 4, "/w/train.py"), c
    assert c.reason.startswith("/w/ckpt.h5 written by ranks 0, 1")


def test_rank1_writes_outside_caches_but_not_in_temp_or_caches():
    ok = [["open", "/tmp/x", 6], ["open", "/home/u/.keras/datasets/d.npz", 6]]
    assert evaluate(ctx(), *runs(r1={"writes": ok}))["writes"].status == "PASS"
    c = evaluate(ctx(), *runs(r1={"writes": ok + [["os.replace", "/w/log.txt", 7]]}))["writes"]
    assert c.status == "FAIL" and "rank 1 wrote /w/log.txt (os.replace)" in c.reason and c.line == 5


def test_cache_race_is_the_cold_cache_check_only_with_cold_cache():
    w = [["open", "/home/u/.keras/datasets/d.npz", 6]]
    warm = evaluate(ctx(), *runs(r0={"writes": w}, r1={"writes": w}))
    assert warm["writes"].status == "FAIL" and warm["cold cache"].status == "SKIP"
    cold = evaluate(ctx(cold_cache=True), *runs(r0={"writes": w}, r1={"writes": w}))
    assert cold["writes"].status == "PASS" and cold["cold cache"].status == "FAIL"
    assert "d.npz in the empty cache written by ranks 0, 1" in cold["cold cache"].reason


def test_strace_writes_count_and_say_when_unseen():
    single, dist = runs()
    dist.strace = {0: [("open (C)", "/w/w.h5")], 1: [("open (C)", "/w/w.h5")]}
    dist.strace_used = True
    c = evaluate(ctx(), single, dist)["writes"]
    assert c.status == "FAIL" and c.line is None and "/w/w.h5 written by ranks 0, 1" in c.reason
    assert "strace is not installed" in evaluate(ctx(), *runs())["writes"].reason


def test_steps_each_rank_about_single_over_n():
    assert evaluate(ctx(), *runs(single_steps=17))["work divided"].status == "PASS"      # 8 and 8 of 17
    c = evaluate(ctx(), *runs(single_steps=16, r0={"steps": 16}, r1={"steps": 16}))["work divided"]
    assert c.status == "FAIL" and c.rank == 0 and "made 16 optimizer steps, the single run 16" in c.reason
    assert evaluate(ctx(), *runs(single_steps=None))["work divided"].status == "SKIP"


def test_work_divided_by_whole_epochs():
    # kio_mnist_convnet's shape: fit on arrays, 15 epochs of 4 steps; converted, each of 2 ranks
    # runs ceil(15 / 2) = 8 epochs: 32 steps, not 30 -- Horovod's keras examples divide so
    single, dist = runs(single_steps=60, r0={"steps": 32, "epochs": 8}, r1={"steps": 32, "epochs": 8})
    single.reports[0]["epochs"] = 15
    c = evaluate(ctx(), single, dist)["work divided"]
    assert c.status == "PASS" and "8 of 15 epochs each" in c.reason, c
    # one epoch on 2 ranks: ceil(1 / 2) = 1 divides nothing, whatever the epochs say
    single, dist = runs(single_steps=8, r0={"steps": 8, "epochs": 1}, r1={"steps": 8, "epochs": 1})
    single.reports[0]["epochs"] = 1
    assert evaluate(ctx(), single, dist)["work divided"].status == "FAIL"
    # epochs not divided (each rank ran all 15): fails
    single, dist = runs(single_steps=60, r0={"steps": 60, "epochs": 15}, r1={"steps": 60, "epochs": 15})
    single.reports[0]["epochs"] = 15
    assert evaluate(ctx(), single, dist)["work divided"].status == "FAIL"


def test_weights_first_differing_variable():
    w1 = {"model model: dense/kernel:0": "aa", "variable dense/bias:0": "b1"}
    w2 = {"model model: dense/kernel:0": "aa", "variable dense/bias:0": "b2"}
    c = evaluate(ctx(), *runs(r0={"weights": w1}, r1={"weights": w2}))["same weights"]
    assert c.status == "FAIL" and "rank 1 differs from rank 0 in variable dense/bias:0 (1 of 2 differ)" in c.reason
    c = evaluate(ctx(), *runs(r0={"weights": {"model model: k": "1"}}, r1={"weights": {"model model: k": "2"}}))
    assert c["same weights"].line == 3         # `model = make()`


def test_weights_of_a_model_on_rank_0_only_are_named_not_compared():
    # `best = load_model(path)` under a rank-0 guard, to evaluate: rank 1 has no such model
    w0 = {"model model: k": "1", "model best: k": "9"}
    c = evaluate(ctx(), *runs(r0={"weights": w0}, r1={"weights": {"model model: k": "1"}}))["same weights"]
    assert c.status == "PASS" and "1 Keras model(s)" in c.reason and "on rank 0 only, not compared: model best" in c.reason
    # a model both ranks have, with a variable missing on one: still a difference
    c = evaluate(ctx(), *runs(r0={"weights": w0}, r1={"weights": {"model model: k": "1", "model best: j": "9"}}))
    assert c["same weights"].status == "FAIL"


def test_prints_noise_passes_a_print_fails_at_its_line():
    noise = [[None, "2026-11-26 17:00:00.123456: I tensorflow/core/foo.cc:1] hello"],
             [None, "WARNING:absl:something"], [6, "Downloading data from file:///x"],
             [6, ("    8192/30000000 [..............................] - ETA: 0s\b\b\b\r30000000/30000000 "
                  "[==============================] - 0s 0us/step")]]
    assert evaluate(ctx(), *runs(r1={"prints": noise}))["prints"].status == "PASS"
    fit_bar = [[6, "8/8 [==============================] - 0s 2ms/step - loss: 0.5"]]
    assert evaluate(ctx(), *runs(r1={"prints": noise + fit_bar}))["prints"].status == "FAIL"
    c = evaluate(ctx(), *runs(r1={"prints": noise + [[7, "done"]]}))["prints"]
    assert (c.status, c.rank, c.line) == ("FAIL", 1, 5) and "rank 1 printed 'done'" in c.reason


def test_a_rank_that_did_not_finish_skips_what_it_could_not_report():
    single, dist = runs()
    del dist.reports[1]
    dist.timed_out, dist.leftover = True, []
    checks = evaluate(ctx(), single, dist)
    assert checks["ranks finish"].status == "FAIL"
    assert "timed out after 600s, every rank's process group killed; rank 1: killed at the timeout" \
        in checks["ranks finish"].reason
    assert {k: c.status for k, c in checks.items() if k not in ("converts", "ranks finish")} == {
        "same weights": "SKIP", "work divided": "SKIP", "writes": "SKIP", "cold cache": "SKIP", "prints": "PASS",
        "own disks": "SKIP"}


def test_table_and_json():
    checks = list(evaluate(ctx(), *runs(r1={"prints": [[7, "done"]]})).values())
    text = C.table(checks, "title")
    assert text.splitlines()[0] == "title"
    assert "FAIL  prints        rank 1 printed 'done' [train.py:5]" in text
    assert text.splitlines()[-1] == "FAILED: 5 passed, 1 failed, 2 skipped"
    data = json.loads(C.to_json(checks))
    assert data[-2] == {"check": "prints", "status": "FAIL", "reason": "rank 1 printed 'done'", "rank": 1,
                        "path": "/w/train.py", "line": 5}
    assert data[0] == {"check": "converts", "status": "PASS", "reason": "converted"}


def test_set_replaces_a_module_level_constant_in_place():
    text = "A = 1\nB: int = 2  # two\ndef f():\n    A = 5\nC = [1,\n     2]\n"
    out = C.apply_sets(text, C.parse_sets(["A=10", "B=3", "C=(4, 5)"]))
    assert out == "A = 10\nB: int = 3  # two\ndef f():\n    A = 5\nC = (4, 5)\n"


@pytest.mark.parametrize("text,item,message", [
    ("A = 1\n", "B=2", "no module-level assignment `B = ...`"),
    ("A = f()\n", "A=2", "line 1 does not assign a constant"),
    ("A = 1\nA = 2\n", "A=3", "assigned 2 times at module level (lines 1, 2)"),
    ("A = B = 1\n", "A=3", "does not assign a constant"),
    ("A = 1\n", "A=abc", "the value must be a Python literal"),
    ("A = 1\n", "A", "expected NAME=VALUE"),
])
def test_set_errors(text, item, message):
    with pytest.raises(C.SetError, match=message.replace("(", r"\(").replace(")", r"\)")):
        C.apply_sets(text, C.parse_sets([item]))


def test_set_error_is_a_one_line_exit_2(tmp_path, capsys):
    script = tmp_path / "t.py"
    script.write_text("EPOCHS = 10\n")
    assert verify.main([str(script), "--set", "STEPS=1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["horovodize: --set STEPS: no module-level assignment `STEPS = ...` in the file"]
    assert script.read_text() == "EPOCHS = 10\n"


def test_line_map_through_insertions_and_edits():
    m = C.line_map(RUN, USER)
    assert [m[i] for i in range(1, 8)] == [1, 2, 2, 2, 3, 4, 5]


def test_parse_strace():
    log = ('12 openat(AT_FDCWD, "/w/a.h5", O_RDWR|O_CREAT|O_TRUNC, 0666) = 9\n'
           '12 openat(AT_FDCWD, "/w/b", O_RDONLY|O_CLOEXEC) = 3\n'
           '12 openat(AT_FDCWD, "/tmp", O_RDWR|O_EXCL|O_TMPFILE, 0600) = 4\n'
           '12 openat(AT_FDCWD, "/w/c", O_WRONLY|O_CREAT, 0666) = -1 EACCES (Permission denied)\n'
           '13 rename("/w/d.tmp", "/w/d") = 0\n'
           '13 unlink("/w/e") = 0\n')
    assert verify.parse_strace(log) == [("open (C)", "/w/a.h5", None), ("rename", "/w/d", None),
                                        ("unlink", "/w/e", None)]
    assert verify.parse_strace_reads(log) == [("/w/b", None, True)]


def test_parse_strace_with_times_keeps_failed_reads():
    log = ('12 1700000000.250000 openat(AT_FDCWD, "ckpt/checkpoint", O_RDONLY) = -1 ENOENT (No such file or directory)\n'
           '12 1700000000.500000 openat(AT_FDCWD, "/w", O_RDONLY|O_DIRECTORY|O_CLOEXEC) = 3\n'
           '1700000001.000000 openat(AT_FDCWD, "out.h5", O_WRONLY|O_CREAT|O_TRUNC, 0666) = 4\n')
    assert verify.parse_strace(log) == [("open (C)", "out.h5", 1700000001.0)]
    assert verify.parse_strace_reads(log) == [("ckpt/checkpoint", 1700000000.25, False)]


# -- two simulated hosts (--hosts 2): each its own folders under /v/hosts/host-K --------------------
H0, H1 = "/v/hosts/host-0", "/v/hosts/host-1"


def hosts_ctx(**kw):
    kw.setdefault("cache_dirs", (f"{H0}/home/.keras", f"{H1}/home/.keras"))
    return ctx(hosts=2, host_roots=(H0, H1), cold_cache=True, temp_dirs=("/tmp", "/v/hosts/host-0/tmp", "/v/hosts/host-1/tmp"),
               **kw)


def test_two_hosts_read_of_what_only_host_0_wrote_fails_own_disks():
    w = {"writes": [["open", f"{H0}/cwd/model.h5", 6, 10.0]]}
    r = {"reads": [[f"{H1}/cwd/model.h5", 7, 11.0]]}
    c = evaluate(hosts_ctx(), *runs(r0=w, r1=r))["own disks"]
    assert (c.status, c.rank, c.line) == ("FAIL", 1, 5), c
    assert c.reason.startswith("host 1 (rank 1) read model.h5, which only host 0 wrote (rank 0 at line 4)"), c.reason


def test_two_hosts_a_read_before_the_write_or_of_its_own_copy_passes():
    w = {"writes": [["open", f"{H0}/cwd/model.h5", 6, 10.0]], "reads": [[f"{H0}/cwd/model.h5", 7, 11.0]]}
    early = {"reads": [[f"{H1}/cwd/model.h5", 7, 2.0]]}
    assert evaluate(hosts_ctx(), *runs(r0=w, r1=early))["own disks"].status == "PASS"
    own = {"writes": [["open", f"{H1}/cwd/model.h5", 6, 10.0]], "reads": [[f"{H1}/cwd/model.h5", 7, 11.0]]}
    checks = evaluate(hosts_ctx(), *runs(r0=w, r1=own))
    assert checks["own disks"].status == "PASS"
    # the same file on each host's own disk: prepared once per host, not a write of rank 1 outside caches
    assert checks["writes"].status == "PASS" and "1 file(s) prepared once on each host" in checks["writes"].reason


def test_two_hosts_c_code_reads_and_missing_files():
    w = {"writes": [["open", f"{H0}/cwd/ckpt/checkpoint", 6, 10.0]]}
    single, dist = runs(r0=w)
    dist.strace_reads = {1: [(f"{H1}/cwd/ckpt/checkpoint", 12.0, False)]}
    assert evaluate(hosts_ctx(), single, dist)["own disks"].status == "FAIL"
    single, dist = runs(r0=w, r1={"exit": 1, "error": "NotFoundError: ckpt/checkpoint; No such file or directory"})
    c = evaluate(hosts_ctx(), single, dist)["own disks"]
    assert c.status == "FAIL" and "read ckpt/checkpoint, which only host 0 wrote" in c.reason


def test_two_hosts_a_listing_reads_what_was_written_in_the_folder():
    # `max(os.listdir("ckpt"))` on host 1: host 0 made the folder and wrote in it; host 1 made
    # the folder too (makedirs on every rank) but wrote nothing there
    w = {"writes": [["os.mkdir", f"{H0}/cwd/ckpt", 5, 9.0], ["open", f"{H0}/cwd/ckpt/ckpt-1.index", 6, 10.0]]}
    r = {"writes": [["os.mkdir", f"{H1}/cwd/ckpt", 5, 9.0]], "reads": [[f"{H1}/cwd/ckpt/", 7, 11.0]]}
    c = evaluate(hosts_ctx(), *runs(r0=w, r1=r))["own disks"]
    assert (c.status, c.rank, c.line) == ("FAIL", 1, 5), c
    assert c.reason.startswith("host 1 (rank 1) read ckpt/ckpt-1.index, which only host 0 wrote"), c.reason
    # a listing of a folder the host filled itself passes
    mine = {"writes": r["writes"] + [["open", f"{H1}/cwd/ckpt/ckpt-1.index", 6, 10.0]], "reads": r["reads"]}
    assert evaluate(hosts_ctx(), *runs(r0=w, r1=mine))["own disks"].status == "PASS"


def test_two_hosts_writes_in_each_hosts_caches_and_temp_are_allowed_but_not_in_its_project():
    r1 = {"writes": [["open", f"{H1}/home/.keras/datasets/d.npz", 6, 1.0], ["open", f"{H1}/tmp/x", 6, 1.0]]}
    assert evaluate(hosts_ctx(), *runs(r1=r1))["writes"].status == "PASS"
    r1 = {"writes": [["open", f"{H1}/cwd/log.txt", 6, 1.0]]}
    c = evaluate(hosts_ctx(), *runs(r1=r1))["writes"]
    assert c.status == "FAIL" and "outside caches and temp" in c.reason


def test_host_list_and_the_hosts_folders(tmp_path):
    assert verify.host_list(2, 1) == "localhost:2"
    assert verify.host_list(4, 2) == "localhost:2,127.0.0.1:2"
    project = tmp_path / "p"
    (project / ".git").mkdir(parents=True)
    (project / "data").mkdir()
    (project / "data" / "a.csv").write_text("1\n")
    (project / "train.py").write_text("print(1)\n")
    roots = verify.host_dirs(tmp_path / "hosts", 2, str(project))
    for root in roots:
        assert (root / "cwd" / "data" / "a.csv").read_text() == "1\n" and not (root / "cwd" / ".git").exists()
        assert (root / "home").is_dir() and (root / "tmp").is_dir()


@pytest.mark.parametrize("args,message", [
    (["--hosts", "3"], "one machine rehearses 1 or 2 hosts"),
    (["--np", "3", "--hosts", "2"], "--np 3 does not spread evenly over --hosts 2"),
])
def test_hosts_usage_errors_exit_2(tmp_path, capsys, args, message):
    script = tmp_path / "t.py"
    script.write_text("EPOCHS = 10\n")
    assert verify.main([str(script), *args]) == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("args,message", [
    ([], "expects \\[uri\\]"),
    ([{"uri": "file:///a.py", "np": 0}], "`np` must be a positive integer"),
    ([{"uri": "file:///a.py", "hosts": "2"}], "`hosts` must be a positive integer"),
    ([{"uri": "file:///a.py", "sets": "A=1"}], "`sets` must be a list of strings"),
    ([{"uri": "file:///a.py", "timeout": -1}], "`timeout` must be a positive number"),
    ([{"uri": "file:///a.py", "asIs": "yes"}], "`asIs` must be a boolean"),
])
def test_lsp_command_argument_errors(args, message):
    with pytest.raises(JsonRpcInvalidParams, match=message):
        rehearse.parse_args(args)


def test_lsp_command_arguments():
    assert rehearse.parse_args(["file:///a.py"])["np"] == 2
    opts = rehearse.parse_args([{"uri": "file:///a.py", "np": 2, "hosts": 2, "sets": ["E=1"], "coldCache": True,
                                 "args": ["x"]}])
    assert opts == {"uri": "file:///a.py", "np": 2, "hosts": 2, "sets": ["E=1"], "as_is": False, "cold_cache": True,
                    "timeout": verify.DEFAULT_TIMEOUT, "script_args": ["x"]}


def test_rehearsal_diagnostics_on_failed_lines():
    checks = [C.Check("prints", C.FAIL, "rank 1 printed 'x'", 1, "/w/t.py", 5), C.Check("writes", C.PASS, "ok"),
              C.Check("work divided", C.FAIL, "rank 0 ...", 0)]
    diags = rehearse.diagnostics(checks, "/w/t.py")
    assert len(diags) == 1 and diags[0].range.start.line == 4 and diags[0].source == "horovodize-rehearsal"


def test_two_hosts_a_cache_each_host_fills_itself_is_not_a_foreign_read():
    """matplotlib reads its font list, finds none in the empty HOME and writes it: each host its
    own, whichever host wrote first (the sweep's false "own disks" failure)."""
    font = "home/.cache/matplotlib/fontlist-v330.json"
    r0 = {"reads": [[f"{H0}/{font}", 5, 12.0]], "writes": [["open", f"{H0}/{font}", 5, 13.0]]}
    r1 = {"reads": [[f"{H1}/{font}", 5, 10.0]], "writes": [["open", f"{H1}/{font}", 5, 11.0],
                                                           ["os.mkdir", f"{H1}/home/.config", 5, 9.0]]}
    c = hosts_ctx(cache_dirs=(f"{H0}/home/.cache", f"{H1}/home/.cache", f"{H0}/home/.config", f"{H1}/home/.config",
                              f"{H0}/home/.keras", f"{H1}/home/.keras"))
    checks = evaluate(c, *runs(r0=r0, r1=r1))
    assert checks["own disks"].status == "PASS", checks["own disks"]
    assert checks["writes"].status == "PASS", checks["writes"]
    # a Keras cache file only host 0 fetched (global rank 0 alone) is foreign to host 1: named from ~
    r1 = {"reads": [[f"{H1}/home/.keras/datasets/d.npz", 9, 20.0]]}
    r0 = {"writes": [["open", f"{H0}/home/.keras/datasets/d.npz", 8, 15.0]]}
    got = evaluate(c, *runs(r0=r0, r1=r1))["own disks"]
    assert got.status == "FAIL" and "read ~/.keras/datasets/d.npz, which only host 0 wrote" in got.reason, got


def test_ranks_finish_names_the_rank_that_failed_first_not_the_one_a_collective_failed_with():
    single, dist = runs(r0={"exit": 1, "error": "HorovodInternalError: ncclAllReduce failed: a peer closed the connection"},
                        r1={"exit": 1, "error": "FileNotFoundError: [Errno 2] No such file: 'rh_back.h5'", "error_line": 7})
    c = evaluate(ctx(), single, dist)["ranks finish"]
    assert c.status == "FAIL" and c.rank == 1 and c.line == 5, c
    assert c.reason.startswith("2 ranks: rank 1: exit 1: FileNotFoundError"), c.reason


def test_host_of_a_rank_fills_the_hosts_in_order():
    assert [C.host_of(r, 4, 2) for r in range(4)] == [0, 0, 1, 1]
    assert C.host_of(0, 1, 2) == 0          # (an --as-is single run of one rank: no division by zero)


def test_the_wrapper_records_reads_and_folder_listings(tmp_path):
    """The per-rank wrapper, run by a plain Python (no TensorFlow needed): with the two-host
    rehearsal's variable set, files opened for reading and folders listed (glob) are recorded,
    a listing with a trailing separator."""
    from horovodize.app.verify_wrapper import WRAPPER
    (tmp_path / "wrapper.py").write_text(WRAPPER)
    (tmp_path / "script.py").write_text('import glob, os\nos.makedirs("d", exist_ok=True)\n'
                                        'open("d/a.txt", "w").write("x")\nnames = glob.glob("d/*")\n'
                                        'text = open("d/a.txt").read()\n')
    (tmp_path / "reports").mkdir()
    proc = subprocess.run([sys.executable, "wrapper.py", "script.py", "reports", "", "t"], cwd=tmp_path,
                          env=dict(os.environ, HOROVODIZE_TRACK_READS="1"), capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    report = json.loads((tmp_path / "reports" / "t-rank-0.json").read_text())
    d = str(tmp_path.resolve() / "d")
    assert [r[:2] for r in report["reads"]] == [[d + os.sep, 4], [d + os.sep + "a.txt", 5]], report["reads"]
    assert [w[:2] for w in report["writes"]] == [["os.mkdir", d], ["open", d + os.sep + "a.txt"]]


def test_line_map_a_line_inserted_inside_a_changed_block():
    # the conversion inserts a barrier and edits the two lines after it: each maps to its own
    new = "a\nbarrier()\nm = load(p, custom_objects=c)\nm.evaluate(x, verbose=v)\n"
    assert C.line_map(new, "a\nm = load(p)\nm.evaluate(x)\n") == {1: 1, 2: 2, 3: 2, 4: 3}


def test_two_hosts_keras_missing_file_and_per_host_temp_files():
    w = {"writes": [["open", f"{H0}/cwd/net.h5", 6, 10.0]]}
    single, dist = runs(r0=w, r1={"exit": 1, "error": "OSError: No file or directory found at net.h5"})
    c = evaluate(hosts_ctx(), single, dist)["own disks"]
    assert c.status == "FAIL" and "read net.h5, which only host 0 wrote" in c.reason
    # each host fills its own checkpoint folder (temp files named per host) and lists it
    w0 = {"writes": [["open", f"{H0}/cwd/ckpt/c_temp/part.tempstate123", 6, 10.0]],
          "reads": [[f"{H0}/cwd/ckpt/", 7, 11.0]]}
    w1 = {"writes": [["open", f"{H1}/cwd/ckpt/c_temp/part.tempstate456", 6, 10.0]],
          "reads": [[f"{H1}/cwd/ckpt/", 7, 11.0]]}
    assert evaluate(hosts_ctx(), *runs(r0=w0, r1=w1))["own disks"].status == "PASS"


def test_two_hosts_a_killed_rank_is_not_judged_on_what_strace_saw():
    # rank 1 was killed (no report): its own writes are unknown, so its reads prove nothing
    w = {"writes": [["open", f"{H0}/home/.keras/keras.json", 6, 1.0]]}
    single, dist = runs(r0=w)
    del dist.reports[1]
    dist.strace_reads = {1: [(f"{H1}/home/.keras/keras.json", 2.0, False)]}
    assert evaluate(hosts_ctx(), single, dist)["own disks"].status != "FAIL"
