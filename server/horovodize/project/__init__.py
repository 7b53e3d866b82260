"""The project stage: a program of several modules (an entry script and the project's own
modules it imports) converted as one program: `layout` finds the root, the modules and a
folder's entries, `link` makes one text of them for the engine and maps its edits and lines
back to their files, `program` converts and reports.

Needs first: the engine. May import: parse, the engine, errors. Used by the CLI (and the
services of app/), never by the core.
"""
