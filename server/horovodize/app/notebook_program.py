"""A notebook that imports modules of its project (contract points 12 and 14): the entry of a
program, its code cells in order standing for an entry script's text.

`project.program` links and converts the program as it does an entry script's, given a
reader that reads the notebook as `app.notebook`'s one program (`program_text`: code cells
joined, magics masked by same-length comments). Each edit goes to the file its fact lives
in; `on_disk` then turns the notebook's own edits into cell edits and its JSON text, with
the guarantees of a notebook converted alone: every changed cell parses on its own, no edit
spans two cells or touches a magic, the set-up ends the cell it follows, and only the
changed cells' sources change in the JSON. `NotebookChange.cells` names a place of the
notebook by (cell, line) for the report.

Requires: app.notebook, project.program (ProgramConversion), parse (ParseError), errors.
Provides: `program_text`, `NotebookChange`, `on_disk`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..errors import UserError
from ..parse.source import ParseError
from ..project.program import ProgramConversion
from . import notebook


def program_text(raw: str, name: str) -> str:
    """The notebook's code cells as one program (what the project stage reads for it)."""
    return notebook.load(raw, name).program


@dataclass
class NotebookChange:
    path: Path
    nb: notebook.Notebook
    before: str                     # the notebook's JSON text
    after: str
    new_cells: dict                 # cell index -> its new source

    def diff(self, name: str) -> str:
        """The unified diff per changed cell."""
        return self.nb.diff(name, self.new_cells)

    def script(self, warn=None) -> str:
        return self.nb.script(self.new_cells, warn)

    def cells(self, path: Path | None, line: int) -> tuple[int, int] | None:
        """(cell, line in it) of a line of the notebook's program; None for another file."""
        if path is None or path.resolve() != self.path.resolve():
            return None
        return self.nb.locate_line(line)[:2]


def on_disk(conv: ProgramConversion, raw: str, name: str) -> NotebookChange:
    """The notebook entry of `conv` (read from `raw`, its JSON text) as the conversion
    changes it: its edits made cell edits (UserError: one straddles two cells, touches a
    magic, or leaves a cell that does not parse on its own)."""
    nb = notebook.load(raw, name)
    entry = conv.files[0]
    if entry.before != nb.program:
        raise UserError(f"{name}: changed while it was converted; run the conversion again")
    new_cells = nb.converted_cells(entry.edits, conv.setup)
    try:
        nb.check_cells(new_cells)
    except ParseError as e:
        raise UserError(f"{name}: conversion does not parse ({e.message}); no file written")
    return NotebookChange(Path(name), nb, raw, nb.converted(new_cells), new_cells)

