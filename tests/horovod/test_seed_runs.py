"""Issue 39 on 2 ranks: after a global TensorFlow seed, fit's shuffle must differ per rank.

`seeded_fit.py` seeds numpy (its data) and TensorFlow (fit's shuffle), then trains on
in-memory arrays. Converted, the epochs are divided and TensorFlow's seed gets
``+ hvd.rank()``: the ranks' first batches differ (each reports the sum of its first
batch's labels) while their weights end equal. The control is the same conversion with that
one edit undone: both ranks then draw the very same batches (one gradient at N times the rate).
"""

from __future__ import annotations

import math

import hvd_harness as H
import pytest

pytestmark = [pytest.mark.horovod, pytest.mark.timeout(600)]


def test_ranks_draw_their_own_batches_after_the_seed_change(hvd_env, horovodize_exe, tmp_path):
    converted = H.convert(H.PROGRAMS / "seeded_fit.py", tmp_path / "seeded_fit.py")
    text = converted.read_text()
    assert "tf.random.set_seed(42 + hvd.rank())" in text and "np.random.seed(42)\n" in text
    run = H.horovodrun(converted, tmp_path / "run", np=2)
    assert run.returncode == 0 and sorted(run.reports) == [0, 1], run.output[-3000:]
    first = [run.reports[r]["first_batch_labels"] for r in (0, 1)]
    checksums = [run.reports[r]["checksum"] for r in (0, 1)]
    assert math.isclose(checksums[0], checksums[1], rel_tol=1e-6), checksums
    assert first[0] != first[1], f"both ranks trained on the same first batch: {first}"

    control = tmp_path / "control.py"
    control.write_text(text.replace("tf.random.set_seed(42 + hvd.rank())", "tf.random.set_seed(42)"))
    same = H.horovodrun(control, tmp_path / "control", np=2)
    assert same.returncode == 0 and sorted(same.reports) == [0, 1], same.output[-3000:]
    assert same.reports[0]["first_batch_labels"] == same.reports[1]["first_batch_labels"]
