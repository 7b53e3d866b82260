"""Incremental equivalence: the language server's edit path gives what a fresh analysis gives.

After a keystroke the server does not parse the buffer again: parso's diff parser
(`lsp.server.IncrementalParser`) updates the previous tree in place, reusing the subtrees
the edit did not touch, and the analysis runs on that tree with the buffer's
`index_memo.IndexMemo` (the index pieces of the top-level statements the tree kept). A
reused subtree that keeps a stale position, a parent pointer or a cached fact would give
a finding at the wrong place, a fix for text that is gone, or a missing one — only after
some sequence of edits. So this replays random edit sequences
(typing, deleting, pasting lines, breaking and repairing the syntax) on real training
programs through the server's own analysis step (one buffer, one `IncrementalParser`),
and after every edit compares the findings, their fixes, the whole-file conversion and
the LSP diagnostics with those of `analyze` of the same text from scratch.
"""

from __future__ import annotations

import dataclasses
import itertools
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from horovodize.incremental import runs
from horovodize.engine import analyze
from horovodize.lsp import convert
from horovodize.lsp.options import Options
from horovodize.lsp.server import Document, HorovodizeServer, IncrementalParser
from horovodize.lsp.text import UTF16, Text

ROOT = Path(__file__).parent
BENCH = ROOT.parent / "bench"


def _corpus() -> list[str]:
    files = sorted((ROOT / "horovod" / "programs").glob("*.py"))
    files += sorted(p for p in (ROOT / "fixtures").glob("*/*.py") if not p.name.endswith(".expected.py"))
    return [p.read_text(encoding="utf-8") for p in files]


def _generated() -> str:
    import sys

    sys.path.insert(0, str(BENCH))
    try:
        from programs import program
    finally:
        sys.path.remove(str(BENCH))
    return program(400)


CORPUS = _corpus()
# Without the corpus (a broken checkout) the test must fail, not pass vacuously.
assert len(CORPUS) > 20, "the fixture corpus is missing"
CORPUS.append(_generated())

# What people type in a training program, and what breaks or repairs it mid-edit.
SNIPPETS = [
    "x", "_", " ", "\n", "    ", "\t", "(", ")", ":", ",", "#", '"', "'''", "\\\n", "\r\n",
    "pass\n", "return loss\n", "    print(loss)\n", "hvd.", "hvd.rank()", "if True:\n    ",
    "import horovod.tensorflow as hvd\n", "import horovod.tensorflow.keras as hvd\n",
    "hvd.init()\n", "import tensorflow as tf\n", "optimizer = tf.keras.optimizers.Adam(0.001)\n",
    "with tf.GradientTape() as tape:\n    loss = model(x)\n",
    "grads = tape.gradient(loss, model.trainable_variables)\n",
    "optimizer.apply_gradients(zip(grads, model.trainable_variables))\n",
    "model.fit(dataset, epochs=3)\n", "model.save('m.h5')\n", "@tf.function\n",
    "def step(x):\n    return x\n", "class M(tf.keras.Model):\n    pass\n",
    "for epoch in range(3):\n    ", "while True:\n    break\n", "é", "\U0001f600",
]


@st.composite
def edit(draw, length: int):
    """(start, end, new text) over a text of `length` code points."""
    start = draw(st.integers(0, length))
    kind = draw(st.sampled_from(["insert", "delete", "replace"]))
    end = start if kind == "insert" else min(length, start + draw(st.integers(0, 40)))
    new = "" if kind == "delete" else draw(st.sampled_from(SNIPPETS))
    return start, end, new


def signature(analysis) -> dict:
    """Everything a client sees of an analysis: findings, fixes, set-up, the conversion;
    and what they are made from, which the keystroke path keeps across versions: each
    binding's role, each call's target, each function's loop kinds (asking a target here
    is what a later pass or a hover could have asked of the same version)."""
    return {**_made_from(analysis),
        "findings": [dataclasses.asdict(f) for f in analysis.findings],
        "setup": dataclasses.asdict(analysis.setup) if analysis.setup else None,
        "conversion": [dataclasses.astuple(e) for e in analysis.conversion_edits()],
        "refusals": analysis.refusal_reasons(),
        "loop": analysis.loop_kind,
        "error": repr(analysis.error),
        "failed": bool(analysis.internal_errors),
    }


def _made_from(analysis) -> dict:
    env, summary = analysis.env, analysis.summary
    if env is None or not env.ready:
        return {}
    where = lambda node: node.start_pos if node is not None else None   # noqa: E731
    made = {
        "bindings": [(b.name, b.role, where(b.stmt), where(b.scope)) for b in env.bindings],
        "targets": sorted((where(call.node), call.index, where(env.call_target(call)))
                          for call, _owner in env.index.calls if env.may_call_local(call)),
    }
    if summary is not None:
        made["kinds"] = sorted((where(fn), sorted(kinds)) for fn, kinds in summary.functions.items())
    return made


def _line_edit(draw, text: str) -> tuple[int, int, str]:
    """Whole-line operations: delete, duplicate or move a line (a paste, a cut)."""
    lines = text.splitlines(keepends=True)
    if not lines:
        return 0, 0, "x"
    i = draw(st.integers(0, len(lines) - 1))
    start = sum(len(line) for line in lines[:i])
    op = draw(st.sampled_from(["delete", "duplicate", "indent", "dedent"]))
    line = lines[i]
    if op == "delete":
        return start, start + len(line), ""
    if op == "duplicate":
        return start, start, line
    if op == "indent":
        return start, start, "    "
    return start, start + min(4, len(line) - len(line.lstrip(" "))), ""


class Buffer:
    """One editor buffer in the language server, analysed as the server does after each
    change (`HorovodizeServer._compute`: incremental parse, memo, diagnostics with fixes)."""

    server = HorovodizeServer()
    count = itertools.count()

    def __init__(self):
        self.uri = f"file:///tmp/horovodize-incremental/{next(self.count)}.py"
        self.version = 0

    def analyse(self, text: str, prime: bool = True):
        """`prime`: after a tree parsed whole, fill the memo as the server does once the
        diagnostics are sent (`HorovodizeServer._prime`); False: the next change came first."""
        self.version += 1
        doc = Document(self.uri, self.version, Text(text))
        self.server.documents[self.uri] = doc
        entry = self.server._compute(self.uri, self.version, doc.text, Options(), UTF16)
        fresh = analyze(text)
        assert signature(entry.analysis) == signature(fresh)
        assert entry.diagnostics == convert.diagnostics(fresh, Text(text), UTF16, self.uri, self.version, Options())
        if entry.fresh and prime:       # (its analysis then replaces the entry's: the same one)
            primed = self.server._prime(self.uri, self.version, doc.text)
            assert primed is not None and signature(primed) == signature(fresh)
        return entry

    @property
    def parser(self) -> IncrementalParser:
        return self.server._parsers[self.uri]

    def close(self):
        self.server.documents.pop(self.uri, None)
        self.server._parsers.pop(self.uri, None)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_incremental_edits_match_a_fresh_analysis(data):
    _random_edits(data)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_incremental_edits_match_a_fresh_analysis_in_short_runs(data):
    """The same with runs of two pieces on average (`runs`): most programs here are one
    run of the default length, so runs that stay, break and are cut again meet here."""
    saved, runs.RUN = runs.RUN, 2
    try:
        _random_edits(data)
    finally:
        runs.RUN = saved


@pytest.fixture(params=["runs of 32", "runs of 1"])
def run_length(request):
    """Each piece its own run (`runs.RUN` = 1) as well as the default: the programs of the
    targeted tests are one run by default, so a kept run's own checks (call targets, roles
    read from other bindings) are reached only with the short runs."""
    saved = runs.RUN
    runs.RUN = 1 if request.param == "runs of 1" else saved
    yield
    runs.RUN = saved


def _random_edits(data) -> None:
    text = data.draw(st.sampled_from(CORPUS), label="program")
    buffer = Buffer()
    try:
        buffer.analyse(text, prime=data.draw(st.booleans(), label="primed"))
        for _ in range(data.draw(st.integers(1, 6), label="edits")):
            if data.draw(st.booleans(), label="line edit"):
                start, end, new = _line_edit(data.draw, text)
            else:
                start, end, new = data.draw(edit(len(text)))
            text = text[:start] + new + text[end:]
            buffer.analyse(text, prime=data.draw(st.booleans(), label="primed"))
            assert buffer.parser.module.get_code() == text
    finally:
        buffer.close()


@pytest.mark.parametrize("index", [0, len(CORPUS) - 1])
@pytest.mark.usefixtures("run_length")
def test_typing_a_line_character_by_character(index):
    """One keystroke at a time, as an editor sends them: every prefix of a new statement."""
    text = CORPUS[index]
    at = text.find("\n\n") + 1 if "\n\n" in text else len(text)
    line = "import horovod.tensorflow as hvd\nhvd.init()\n"
    buffer = Buffer()
    buffer.analyse(text)
    reused = False
    for i in range(1, len(line) + 1):
        buffer.analyse(text[:at] + line[:i] + text[at:])
        reused |= buffer.parser.memo.walked < len(buffer.parser.module.children) - 2
    buffer.close()
    assert reused, "the memo never reused a statement: the incremental path is not exercised"


RESOLVED = '''import tensorflow as tf


def main():
    model = build()
    opt = tf.keras.optimizers.SGD(0.01)
    trainer = Trainer(model, opt)
    for x, y in tf.data.Dataset.range(4).map(lambda v: (v, v)).batch(2):
        loss = trainer.step(x, y)
        print("loss", float(loss))
    for epoch in range(2):
        step_fn(1.0, 2.0)


def build():
    return tf.keras.Sequential([tf.keras.layers.Dense(1)])


class Trainer:
    def __init__(self, model, opt):
        self.model, self.opt = model, opt

    def step(self, x, y):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((self.model(x) - y) ** 2)
        grads = tape.gradient(loss, self.model.trainable_variables)
        self.opt.apply_gradients(zip(grads, self.model.trainable_variables))
        return loss


def train_step(x, y):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean((head(x) - y) ** 2)
    grads = tape.gradient(loss, head.trainable_variables)
    optimizer.apply_gradients(zip(grads, head.trainable_variables))
    return loss


head = tf.keras.Sequential([tf.keras.layers.Dense(1)])
optimizer = tf.keras.optimizers.Adam(0.001)
step_fn = tf.function(train_step)


def unrelated():
    return 1


if __name__ == "__main__":
    main()
'''

LATER = "\n\ndef unrelated"
# Each edit is in a statement other than main(), whose calls keep what they resolved to
# (`keep.kept_target`) only while no changed statement defines a name they depend on.
ELSEWHERE = [
    ("    def step(self, x, y):", "    def step2(self, x, y):"),          # the method trainer.step runs is gone
    ("    def step2(self, x, y):", "    def step(self, x, y):"),          # and back
    (LATER, "\n\nclass Trainer:\n    def step(self, x, y):\n        return x\n" + LATER),   # a second class of that name
    ("class Trainer:\n    def step(self, x, y):\n        return x\n", ""),
    (LATER, "\n\ndef train_step(x, y):\n    return x\n" + LATER),     # step_fn runs the last train_step
    ("\n\ndef train_step(x, y):\n    return x\n", ""),
    ("step_fn = tf.function(train_step)", "step_fn = tf.function(build)"),
    ("step_fn = tf.function(build)", "step_fn = tf.function(train_step)"),
    (LATER, "\n\ndef build():\n    return None\n" + LATER),           # the last `build` wins
    ("\n\ndef build():\n    return None\n", ""),
    ("class Trainer:", "class Trainer(tf.keras.Model):"),             # a Keras subclass now
    ("def build():", "def build_model():"),                            # main's build() resolves to nothing
    ("def build_model():", "def build():"),
    (LATER, "\n\ntrainer = Trainer(build(), tf.keras.optimizers.Adam())\n" + LATER),
]


def _edit_others(text: str, edits: list, kept: int, what: str) -> None:
    """Apply `edits` one by one, each analysis compared with a fresh one (`Buffer`); the
    top-level statement number `kept` must stay the same node, so what it computed is
    really reused (not parsed again) while the edits change what it depends on."""
    buffer = Buffer()
    try:
        buffer.analyse(text)
        for old, new in edits:
            assert old in text
            statement = buffer.parser.module.children[kept]
            text = text.replace(old, new, 1)
            buffer.analyse(text)
            assert buffer.parser.module.children[kept] is statement, f"{what} was parsed again"
    finally:
        buffer.close()


@pytest.mark.usefixtures("run_length")
def test_edits_elsewhere_change_what_calls_resolve_to():
    _edit_others(RESOLVED, ELSEWHERE, 1, "main()")


ROLES = '''import tensorflow as tf

raw = tf.data.Dataset.range(64).map(lambda v: (tf.cast(v, tf.float32), tf.cast(v, tf.float32)))

shuffled = raw.shuffle(64)


def pipeline():
    batched = shuffled.batch(8)
    return batched


model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
model.compile(optimizer=tf.keras.optimizers.SGD(0.01), loss="mse")
model.fit(pipeline(), epochs=2)
'''
# `shuffled` and `batched` get their role from the binding before them; the edits are in the
# first statement only, so the other two keep their statements and must find their roles
# again (a role kept by `keep.StaticRoles.kept` is dropped when a name it read changed, and a
# role that changes is noted so that the roles read from it are found again too).
ROLE_EDITS = [
    ("raw = tf.data.Dataset.range(64)", "raw = list(range(64))  # "),
    ("raw = list(range(64))  # ", "raw = tf.data.Dataset.range(64)"),
    ("raw = tf.data", "raw = tf.data.experimental.service if False else tf.data"),
]


@pytest.mark.usefixtures("run_length")
def test_roles_read_from_a_changed_binding_are_found_again():
    _edit_others(ROLES, ROLE_EDITS, 3, "pipeline()")


LOCALS = '''import functools

import tensorflow as tf


def make_optimizer(lr):
    return tf.keras.optimizers.Adam(lr)


def main():
    ds = tf.data.Dataset.from_tensor_slices(([1.0], [2.0])).batch(2)
    model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
    build = functools.partial(make_optimizer, 0.01)
    opt = build()
    for x, y in ds:
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(model(x) - y)
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))


def helper(v):
    return v


main()
'''

# A function's locals are not in the file-wide generations (keep.StaticRoles): adding or
# removing `build` as a local of another function, or at module level, must not leave a
# kept answer about `opt = build()` (a role through a local wrapper) wrong.
LOCAL_EDITS = [("    return v\n", "    build = v\n    return build\n"),
               ("    build = v\n    return build\n", "    return v\n"),
               ("\n\nmain()\n", "\n\nbuild = helper\nmain()\n"),
               ("\n\nbuild = helper\nmain()\n", "\n\nmain()\n")]

# `opt = build()` with no `build` anywhere, then one bound at module level before `main`
# (inside the imports' statement, so `main` keeps its index): the role (an optimizer
# through the wrapper) must be found although `main()` is kept, and dropped again.
OUTER = LOCALS.replace("    build = functools.partial(make_optimizer, 0.01)\n", "")
BOUND = "import tensorflow as tf; build = functools.partial(make_optimizer, 0.1)\n"   # (one statement)
OUTER_EDITS = [("import tensorflow as tf\n", BOUND), (BOUND, "import tensorflow as tf\n")]


@pytest.mark.usefixtures("run_length")
def test_a_local_wrapper_keeps_its_role_while_other_statements_bind_its_name():
    # (HVD010 on `opt` shows its role: HVD021 now broadcasts any optimizer the tape's
    # gradients reach, whatever σ knows of it)
    assert "HVD010" in [f.code for f in analyze(LOCALS).findings]      # opt = build(): an optimizer
    _edit_others(LOCALS, LOCAL_EDITS, 3, "main()")
    assert "HVD010" not in [f.code for f in analyze(OUTER).findings]
    assert "HVD010" in [f.code for f in analyze(OUTER.replace(*OUTER_EDITS[0])).findings]
    _edit_others(OUTER, OUTER_EDITS, 3, "main()")


LATE = '''import tensorflow as tf

dataset = tf.data.Dataset.from_tensor_slices(([1.0] * 8, [2.0] * 8)).batch(2)
model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
optimizer = tf.keras.optimizers.SGD(0.1)


def step(x, y):
    pass


for x, y in dataset:
    train_step(x, y)
'''

# The loop's call names no function until an edit elsewhere writes one: the loop statement
# is kept, and what its calls resolve to must be found again (its kept call targets were
# made when `train_step(...)` could not run local code, and read no name then).
LATE_EDITS = [("def step(x, y):\n    pass\n",
               "def train_step(x, y):\n"
               "    with tf.GradientTape() as tape:\n"
               "        loss = tf.reduce_mean(model(x) - y)\n"
               "    grads = tape.gradient(loss, model.trainable_variables)\n"
               "    optimizer.apply_gradients(zip(grads, model.trainable_variables))\n")]


@pytest.mark.usefixtures("run_length")
def test_a_function_written_after_its_caller_is_found_from_the_kept_caller():
    _edit_others(LATE, LATE_EDITS, 5, "the loop")
    assert "HVD041" in [f.code for f in analyze(LATE.replace(*LATE_EDITS[0])).findings]


ALIASED = '''import tensorflow as tf


def build():
    opt = make(0.01)
    return opt


def helper():
    make = None
    return make


model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
model.compile(optimizer=build(), loss="mse")
model.fit(tf.data.Dataset.range(8).map(lambda v: (v, v)).batch(2), epochs=1)
'''


@pytest.mark.usefixtures("run_length")
def test_an_alias_written_in_one_function_changes_what_a_kept_function_reads():
    """Member aliases are file-wide: ``make = tf.keras.optimizers.SGD`` in `helper` makes
    `build`'s ``make(0.01)`` an optimizer (R3 blocks the conversion). `build` is kept, and
    writes the name, so the tables' generation must change (`keep.generation`)."""
    edits = [("make = None", "make = tf.keras.optimizers.SGD"), ("make = tf.keras.optimizers.SGD", "make = None")]
    _edit_others(ALIASED, edits, 1, "build()")
    codes = [f.code for f in analyze(ALIASED.replace(*edits[0])).findings]
    assert "HVD-R3" in codes and "HVD002" not in codes


KINDS = '''import tensorflow as tf

model = tf.keras.Sequential([tf.keras.layers.Dense(1)])


def epoch():
    return helper()


def helper():
    return 1


if __name__ == "__main__":
    epoch()
'''


@pytest.mark.usefixtures("run_length")
def test_a_kept_function_gets_the_loop_kinds_of_a_changed_callee():
    """`epoch` is kept while `helper`, the function it calls, starts and stops a Keras
    fit: epoch's kinds follow (its call target is made again, and so is the run's part of
    the loop summary, `loop._RunFunctions`)."""
    fit = "def helper():\n    model.fit(tf.zeros((2, 1)), tf.zeros((2, 1)), epochs=1)\n"
    _edit_others(KINDS, [("def helper():\n    return 1\n", fit), (fit, "def helper():\n    return 1\n"),
                         ("def helper():\n    return 1\n", fit)], 2, "epoch()")


def test_names_written_only_in_the_typed_function_keep_the_generations():
    """Typing a new function whose names are written nowhere else (a new function name, a
    local that is a member alias until its ``(``) keeps every generation object, so the
    answers kept in the other statements are reused; each analysis equals a fresh one."""
    text = _generated()
    at = text.index("\n\ndef ", len(text) // 2) + 1
    typed = "def scale_batch(images, factor):\n    scaled = tf.cast(images, tf.float32)\n    return scaled * factor\n\n"
    assert "scale_batch" not in text and "scaled" not in text
    buffer = Buffer()
    try:
        buffer.analyse(text)
        generations = dict(buffer.parser.memo.generations)
        for i in range(1, len(typed) + 1):
            buffer.analyse(text[:at] + typed[:i] + text[at:])
        kept = {kind: found[2] is buffer.parser.memo.generations[kind][2] for kind, found in generations.items()}
        assert kept and all(kept.values()), kept
    finally:
        buffer.close()


def _span(piece) -> tuple[int, int]:
    """The character range of a piece's statement in its buffer."""
    stmt = piece.funcdefs[0] if piece.funcdefs else None
    if stmt is None:
        return (0, 0)
    while stmt.parent is not None and stmt.parent.type != "file_input":
        stmt = stmt.parent
    code = stmt.get_root_node().get_code()
    lines = code.splitlines(keepends=True)
    start = sum(len(line) for line in lines[:stmt.start_pos[0] - 1]) + stmt.start_pos[1]
    end = sum(len(line) for line in lines[:stmt.end_pos[0] - 1]) + stmt.end_pos[1]
    return (start, end)


def test_kept_answers_outlive_the_edit_history():
    """More edits than `index_memo.HISTORY` remembers, all in one function: the other
    statements' call targets are checked at each version and stay kept (the same table),
    instead of being found unknown and made again together once the history moves on;
    then an edit in another run of statements (`runs`) breaks that run's join, and the
    run's other statements still keep their tables (the run's version is handed down)."""
    from horovodize.incremental.index_memo import HISTORY

    text = _generated()
    buffer = Buffer()
    saved, runs.RUN = runs.RUN, 4
    try:
        buffer.analyse(text)
        memo = buffer.parser.memo
        at = text.index("\n    return ", len(text) // 2) + len("\n    return ")
        tables = []              # id(piece) -> its targets table, after the first two edits
        alive = []               # (those pieces, held: a freed piece's id may name a new one)
        for _ in range(HISTORY + 6):
            text = text[:at] + "x" + text[at:]
            index = buffer.analyse(text).analysis.env.index
            if len(tables) < 2:
                alive.append(list(index.parts()))
                tables.append({id(p): p.memo["targets"][2] for p in alive[-1] if "targets" in p.memo})
        # (a caller of the edited function makes its table again at each edit: left out)
        reused = {key for key, table in tables[1].items() if tables[0].get(key) is table}
        kept = [p for p in index.parts() if id(p) in reused]
        assert len(kept) > 20
        assert all(p.memo["targets"][2] is tables[1][id(p)] for p in kept)
        joins = memo.runs["targets"].values()
        assert len(joins) > 5 and all(join.version == memo.version for join in joins)
        # an edit in another run: its other pieces were checked only through the run
        edited = next(p for p in index.parts() if at in range(*_span(p)))
        # (runs are cut by the pieces' ids: which run holds the edited function's caller,
        # whose table is made again at each edit, changes from process to process)
        run = next(r for r in runs.cut(index) if len(r) > 2 and edited not in r
                   and any(p.funcdefs for p in r) and all(id(p) in reused for p in r))
        piece = next(p for p in run if p.funcdefs)
        others = [p for p in run if p is not piece]
        assert all(p.memo["targets"][0] < memo.version - HISTORY for p in others)
        fn = piece.funcdefs[0]
        where = sum(len(line) for line in text.splitlines(keepends=True)[:fn.start_pos[0]])
        before = {id(p): p.memo["targets"][2] for p in others}
        index = buffer.analyse(text[:where] + "    pass\n" + text[where:]).analysis.env.index
        still = [p for p in index.parts() if id(p) in before]
        assert len(still) == len(before)
        assert all(p.memo["targets"][2] is before[id(p)] for p in still)
    finally:
        runs.RUN = saved
        buffer.close()


def test_typing_before_a_called_def_analyses_again_only_what_mentions_its_names():
    """Each character typed at the start of a ``def`` line that other statements call
    takes the function (and its locals, which become module-level names) in and out of the
    tables. The roles and names generations are carried over (`IndexMemo.forget`): the
    statements that mention none of those names keep their bindings; each analysis equals a
    fresh one."""
    text = _generated()
    at = text.index("\n\ndef ", len(text) // 2) + 2
    while text.count(text[at + 4:text.index("(", at)] + "(") < 2:   # one that is called elsewhere
        at = text.index("\n\ndef ", at) + 2
    buffer = Buffer()
    try:
        buffer.analyse(text)
        memo = buffer.parser.memo
        generations = {kind: memo.generations[kind][2] for kind in ("roles", "names")}
        before = {id(piece): piece.memo.get("bindings") for piece in memo._merged.pieces}
        for i in range(1, 6):                                # "d" ... "def s"
            buffer.analyse(text[:at] + "def scale_batch("[:i] + text[at:])
        assert {kind: memo.generations[kind][2] for kind in generations} == generations
        kept = [piece for piece in memo._merged.pieces if id(piece) in before]
        same = [piece for piece in kept if piece.memo.get("bindings") is before[id(piece)]]
        assert len(kept) > 40 and len(same) > 0.75 * len(kept), (len(same), len(kept))
    finally:
        buffer.close()
