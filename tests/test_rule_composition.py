"""Rules that meet on one statement must not contradict each other: checked on every golden
conversion (``tests/fixtures/*/*.expected.py``) and every project golden
(``tests/projects/*/expected``), whatever rule made each edit.

* Inside a block that local rank 0 of each host runs alone (HVD044's download guard), no
  edit may narrow to global rank 0 (``hvd.rank() == 0``): on every host but rank 0's, the
  download would go to ``os.devnull`` or be skipped, and the data never exists there.
* Inside a rank-0 guard, no second rank-0 guard or ``os.devnull`` write: the inner one is
  dead code at best, and two guards' indents have swallowed an ``else`` before.
"""

from __future__ import annotations

import re
from pathlib import Path

import parso
import pytest

ROOT = Path(__file__).resolve().parent
EXPECTED = sorted([*ROOT.glob("fixtures/*/*.expected.py"), *ROOT.glob("projects/*/expected/**/*.py")])
GUARD = re.compile(r"^if\s+(\w+)\.(local_rank|rank)\(\)\s*==\s*0\s*:")
RANK0 = re.compile(r"\b\w+\.rank\(\)\s*==\s*0")


def guarded_blocks(tree):
    """(kind, body code) of each ``if hvd.local_rank() == 0:`` / ``if hvd.rank() == 0:``."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if node.type == "if_stmt":
            head = node.get_code(include_prefix=False).split("\n", 1)[0].strip()
            m = GUARD.match(head)
            if m and len(node.children) >= 4:
                yield m.group(2), node.children[3].get_code(include_prefix=False)
        stack.extend(getattr(node, "children", []))


@pytest.mark.parametrize("path", EXPECTED, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_rule_narrows_a_guarded_block_again(path):
    tree = parso.parse(path.read_text(encoding="utf-8"))
    for kind, body in guarded_blocks(tree):
        where = f"{path}: inside `if ...{kind}() == 0:`"
        assert not RANK0.search(body), f"{where}: an edit narrows to rank 0 again:\n{body}"
        if kind == "local_rank":
            assert "devnull" not in body, f"{where}: a download written to os.devnull:\n{body}"


def test_the_check_sees_a_contradiction():
    """The conversion before the fix: the download helper's write went to os.devnull."""
    bad = ("if hvd.local_rank() == 0:\n    if not os.path.exists(path):\n"
           "        with open(path if hvd.rank() == 0 else os.devnull, 'wb') as f:\n            f.write(raw)\n")
    kinds = [(k, bool(RANK0.search(b))) for k, b in guarded_blocks(parso.parse(bad))]
    assert kinds == [("local_rank", True)]
