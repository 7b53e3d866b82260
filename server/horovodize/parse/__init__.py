"""Stage 1, parse: a buffer's text to a parso tree and an index of it.

Provides: `source.Source` (the text, its tree, offsets, `Edit` and `apply_edits`), the
fast tokenizer and parser that give parso's tree faster (`fast_tokens`, `fast_parse`,
`forked_tokens`), the reparse of an edited buffer that keeps the unchanged statements
(`splice_parse`, `diff_parse`), the Python 2 check (`py2`), small helpers over nodes
(`nodes`, `scopes`, `imports`) and the index every pass reads (`index`).

Needs first: nothing (the text). May import: the standard library and parso only,
nothing else of horovodize.
"""
