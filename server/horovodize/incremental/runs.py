"""Joins over runs of index pieces, kept while a run is the same pieces (keystroke path).

Some passes join one kept answer per top-level statement on every keystroke (the bound
names, the bindings, the call targets): at 10,000 lines that is ~1,150 checks and merges
for the one statement that changed, ~4 ms of a 20 ms keystroke. `cut` cuts the pieces
into runs that end after a piece whose identity hashes to a boundary, so a statement
added or removed changes only the run it is in, and a pass keeps, per run, the join of
its pieces' answers together with what they were all valid under (`Kept`). A run whose
join is still valid is added at once; any other run is joined piece by piece, as before,
and its join is made again from the pieces' (now current) answers.

A run's join is checked at each version, so the pieces under it are valid whenever it
is, and a piece's own answer is not refreshed while its run's join stands for it. When a
piece is checked alone again, its answer counts as checked at the version its last run
was (`checked`): it was valid then too, and an answer left with an older version would be
found unknown after the index memo's 64 versions of history and made again.
"""

from __future__ import annotations

from operator import is_

RUN = 32                   # pieces per run on average
LONGEST = 128              # ... and at most (a run must end somewhere)
_MIX = 0x9E3779B97F4A7C15  # Fibonacci hashing: ids are aligned and allocated in sequence


def cut(index) -> list[tuple]:
    """The index's pieces in runs (tuples, in order), made once per version. An index made
    by one walk (no pieces, no memo) is its own only run, not kept on it: that would be a
    reference cycle, and the whole analysis garbage for the full collection only."""
    if not index.pieces:
        return [(index,)]
    found = index.__dict__.get("_runs")
    if found is None:
        found, run = [], []
        for piece in index.parts():
            run.append(piece)
            if (id(piece) * _MIX >> 32) % RUN == 0 or len(run) == LONGEST:
                found.append(tuple(run))
                run = []
        if run:
            found.append(tuple(run))
        index.__dict__["_runs"] = found
    return found


class Kept:
    """One pass's joins per run in one buffer (its `IndexMemo`): the previous version's, to
    reuse, and this version's, to keep. Without a memo (one analysis), nothing is kept."""

    def __init__(self, index, kind: str):
        memo = index.history
        self.kind = kind
        self.old: dict = {}
        self.new: dict | None = None
        if memo is not None and index.version is not None:
            self.old = memo.runs.get(kind, {})
            self.new = memo.runs[kind] = {}

    @property
    def keeping(self) -> bool:
        return self.new is not None

    def get(self, run: tuple):
        """The join kept for exactly these pieces, or None."""
        join = self.old.get(id(run[0]))
        if join is not None and len(join.pieces) == len(run) and all(map(is_, join.pieces, run)):
            return join
        return None

    def put(self, run: tuple, join) -> None:
        """Keep `join` (reused) for the next version."""
        if self.new is not None:
            self.new[id(run[0])] = join

    def make(self, run: tuple, join, point: bool = True):
        """Keep `join`, made for `run` at this version; its pieces point to it, for
        `checked` (not for a join of the pieces alone: `point` False)."""
        if self.new is not None:
            join.pieces = run
            self.new[id(run[0])] = join
            if point:
                key = ("run", self.kind)
                for piece in run:
                    piece.memo[key] = join
        return join


def this_version(index, kind: str) -> dict:
    """id(first piece) -> the join of each run of `kind` made or checked at this version
    (what a later pass reads of an earlier one's joins); {} without a memo."""
    return index.history.runs.get(kind, {}) if index.history is not None and index.version is not None else {}


def checked(piece, kind: str) -> int | None:
    """The version at which the join of the run `piece` was last joined in was last found
    valid (None: never joined)."""
    join = piece.memo.get(("run", kind))
    return getattr(join, "version", None)


class Joined:
    """A join that depends on its run's pieces alone (`pure`)."""

    __slots__ = ("pieces", "value")

    def __init__(self, value):
        self.value = value


def pure(index, kind: str, join) -> list[tuple[tuple, object]]:
    """(run, ``join(run)``) for each run, the value kept while the run is the same pieces:
    for what a piece's statements decide alone (the names they write or bind)."""
    kept = Kept(index, kind)
    out = []
    for run in cut(index):
        found = kept.get(run)
        if found is None:
            found = kept.make(run, Joined(join(run)), point=False)
        else:
            kept.put(run, found)
        out.append((run, found.value))
    return out
