"""A ``for step in range(n): x, y = next(it)`` GradientTape program (rules/step_loops.py) on 2
ranks: converted by the CLI, both ranks finish, identical weights, n/2 steps per rank, and
the ranks drew different batches (the fixed-order dataset is sharded at its source)."""

from __future__ import annotations

import hvd_harness as H
import pytest
from test_work_division import Spec, audited_run, checks, single_process

pytestmark = [pytest.mark.horovod, pytest.mark.timeout(300)]


def test_range_step_loop_is_divided_and_the_ranks_draw_their_own_batches(hvd_env, horovodize_exe, tmp_path):
    spec = Spec("wd_step_loop_next.py")
    program = H.PROGRAMS / spec.program
    single = single_process(program, tmp_path / "single")
    assert single["iterations"] == 40
    converted = H.convert(program, tmp_path / spec.program)
    text = converted.read_text()
    assert "for step in range(max(1, STEPS // hvd.size())):" in text
    assert "ds.shard(hvd.size(), hvd.rank())" in text
    workdir = tmp_path / "run"
    workdir.mkdir()
    run, written = audited_run(converted, workdir)
    bad = checks(spec, run, written, single, workdir)
    assert not bad, "\n".join(bad) + f"\n--- output tail ---\n{run.tail()}"
    assert [run.reports[r]["iterations"] for r in (0, 1)] == [20, 20]
    drawn = [run.reports[r]["drawn"] for r in (0, 1)]
    assert drawn[0] != drawn[1], f"both ranks drew the same batches: {drawn}"
