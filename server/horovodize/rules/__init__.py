"""Stage 4, rules: one module per rule family, each turning the sites it matches into
findings with a minimal edit (`base.Finding`, `base.Fix`); `catalogue` lists them in
conversion order. A rule reads the analysis through `base.RuleContext`, never LSP types.

Needs first: analysis (an `Env`, the loop `Summary`, the restriction blockers).
May import: parse, analysis, and `rules.base` / shared rule helpers (`tapes`).
"""
