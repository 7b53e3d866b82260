"""Stage 2, incremental: what is kept across the versions of one buffer (the language
server's keystroke path), so a keystroke re-analyses only what it changed.

Provides: `index_memo.IndexMemo` (the index built per top-level statement and merged, equal
to one walk), `keep` (kept answers, their generations and when they are still right) and
`runs` (joins over runs of pieces). The CLI runs without a memo: every answer is then
computed once and the same as the server's (a property test holds them equal).

Needs first: parse. May import: parse.
"""
