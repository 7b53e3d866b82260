"""The conversion report: what `convert` did for each point of the whole-program contract,
what it did not do and why (like tf_upgrade_v2's report). Printed on stderr by the CLI so
stdout stays the converted program; ``--format json`` for tools.
"""

from __future__ import annotations

from ..engine import ADVISORY, LR_SCALING, Analysis, own_episodes

POINTS = [
    (1, "Horovod set-up in every worker", ("HVD001", "HVD002", "HVD003", "HVD070")),
    (2, "same start: initial state broadcast from rank 0", ("HVD021", "HVD050", "HVD060", "HVD071", "HVD072")),
    (3, "gradients averaged", ("HVD011", "HVD012", "HVD020")),
    (4, "learning rate scaled by hvd.size() once", ("HVD010", "HVD012", "HVD013", "HVD047")),   # HVD012 scales too
    (5, "work divided, equal steps on every rank", ("HVD040", "HVD041", "HVD042", "HVD043", "HVD045", "HVD046", "HVD048", "HVD049", "HVD073")),
    (6, "callbacks as Horovod's guide orders them", ("HVD050", "HVD204")),
    (7, "side effects from rank 0 (prints, files), reads after a barrier",
     ("HVD030", "HVD031", "HVD032", "HVD033", "HVD051", "HVD061", "HVD074")),
    (9, "data acquired once per host (downloads, caches, extraction, data folders)", ("HVD044",)),
    (10, "control flow the same on every rank (loop exits and branches around collectives)", ("HVD080",)),
    (11, "a stack that can run it (Keras 2 imports, no collective under XLA)", ("HVD090", "HVD091")),
]
LOOP_POINTS = {2, 3, 4, 5}
# Point-5 changes that make the ranks' data the same (a seeded split), not divided: alone,
# they do not make the work divided.
SAME_ON_EVERY_RANK = ("HVD045",)
# Horovod misuse (rules/horovod_misuse.py) by the contract point it breaks: a point with one
# of these left in the program is not "already" done, whatever else the program does.
MISUSE_POINT = {"HVD200": 1, "HVD203": 2, "HVD205": 2, "HVD202": 3, "HVD206": 3, "HVD201": 4,
                "HVD207": 5, "HVD208": 5, "HVD204": 6}


def build(analysis: Analysis, path: str = "") -> dict:
    """The report as data (the JSON form)."""
    src = analysis.source
    sites = analysis.conversion_sites()
    refused = analysis.refused
    has_loop = bool(analysis.summary and analysis.summary.sites)
    already = bool(analysis.summary and analysis.summary.sites and all(s.distributed for s in analysis.summary.sites))
    points = []
    for number, title, point_codes in POINTS:
        mine = set(point_codes) | {c for c, p in MISUSE_POINT.items() if p == number}
        changes = _unique([{"code": f.code, "line": src.position(f.start)[0] + 1, "change": f.fix.title,
                            "message": f.message} for f in sites if f.code in mine])
        # a misuse the point's own changes repair (HVD205 by the broadcast HVD050/HVD021 adds)
        # is not left; one with nothing done about it is
        left = [] if changes else [f"line {src.position(f.start)[0] + 1}: {f.code} {f.message}"
                                   for f in analysis.findings if MISUSE_POINT.get(f.code) == number and f not in sites]
        hints = [f"line {src.position(f.start)[0] + 1}: {f.code} {f.message} (a quick fix, left to you in a "
                 "program distributed by hand)" for f in analysis.rule_sites
                 if f.code in point_codes and f not in sites and has_loop and not refused
                 and (analysis.scale_lr or f.code not in LR_SCALING)]
        left += hints
        notes = [{"line": line, "note": text} for point, line, text in analysis.notes if point == number]
        stack = [r for r in analysis.refusal_reasons() if r[0] in ("HVD090", "HVD093", "HVD094")] if number == 11 else []
        if refused and stack:
            status, why = "blocked", "; ".join(f"line {line}: {m}" for _, line, m in stack)
        elif refused:
            status, why = "not done", "the conversion is refused (point 8)"
        elif left:
            status, why = ("partly done" if changes else "not done"), "; ".join(left)
        elif number == 4 and not analysis.scale_lr and any(f.code in LR_SCALING for f in analysis.rule_sites):
            status, why = "left as asked", "--no-scale-lr: the learning rate stays the single-process rate"
        elif changes and not (number == 5 and all(c["code"] in SAME_ON_EVERY_RANK for c in changes)):
            status, why = "done", ""
        elif not has_loop:
            status, why = "not applicable", "no training loop found"
            notes = []          # (what a rule noted about a program that trains nothing)
        elif already and number in LOOP_POINTS:
            status, why = "already", "the program already does this with Horovod"
        elif number == 5 and own_episodes(analysis):
            status, why = "nothing to change", (f"no dataset to divide: each rank trains on the episodes of its "
                                                f"own environment ({own_episodes(analysis)})")
        elif number == 5 and notes and all(n["note"].startswith(ADVISORY) for n in notes):
            status, why = "done", ""       # (its way is in the note: each rank draws its own batches)
        elif number == 5:
            status, why = "not done", ("no step bound (take, steps_per_epoch, steps) nor finite tf.data source "
                                       "found to divide (e.g. an infinite dataset, a generator, or epochs=1)")
        else:
            status, why = "nothing to change", ""
        hard = [n for n in notes if not n["note"].startswith(ADVISORY)]
        if hard and number == 7 and not refused:
            # a write left on every rank (or a read that does not wait) is not done, whatever
            # else the point changed
            status = "not done"
            why = "; ".join(f"line {n['line']}: {n['note']}" for n in hard)
        elif notes and status == "done" and not all(n["note"].startswith(ADVISORY) for n in notes):
            status = "partly done"
        elif notes and status == "nothing to change":
            status = "not done"         # what was left is in the notes (a fetch in a return, a per-rank flag)
        elif notes and status == "not done" and number in (5, 9):
            why = ""
        points.append({"point": number, "title": title, "status": status, "reason": why, "changes": changes,
                       "notes": notes})
    titles = {number: title for number, title, _codes in POINTS} | {8: "all or nothing"}
    reasons = [{"code": c, "line": line, "message": f"({titles[int(c[6:])]}) {m}" if c.startswith("point ") else m}
               for c, line, m in analysis.refusal_reasons()]
    restricted = bool(analysis.refusals)
    points.append({"point": 8, "title": "all or nothing", "status": "refused" if refused else "ok",
                   "reason": ("a restriction blocks the training loop: nothing was changed" if restricted else
                              "a point of the contract would be left wrong: nothing was changed") if refused else "",
                   "changes": reasons})
    points.sort(key=lambda p: p["point"])
    errors = [_error_line(e) for e in analysis.internal_errors]
    return {"path": path, "loop": analysis.loop_kind, "refused": refused, "reasons": reasons, "points": points,
            "internal_errors": errors}


def _error_line(trace: str) -> str:
    """The rule that failed and its exception, from a traceback the engine kept."""
    lines = [line.strip() for line in trace.strip().splitlines() if line.strip()]
    rule = next((line for line in lines if line.startswith("rule module")), "")
    return f"{rule}: {lines[-1]}" if rule else (lines[-1] if lines else "")


def _unique(changes: list[dict]) -> list[dict]:
    """One line per change: two sites of one rule on one line (an optimizer created and
    compiled in one statement) are one change to the reader."""
    seen, out = set(), []
    for c in changes:
        key = (c["code"], c["line"], c["change"])
        if key not in seen:
            seen.add(key)
            out.append(c)
    return out


def text(report: dict) -> str:
    """The human form: one line per contract point, then its changes."""
    lines = [f"horovodize report for {report['path'] or '<input>'} (loop: {report['loop']})"]
    if report["refused"]:
        restricted = any(not r["code"].startswith("point ") for r in report["reasons"])
        lines.append("  NOT CONVERTED: a restriction blocks the training loop; the file is left unchanged:" if restricted
                     else "  NOT CONVERTED: the conversion would leave the program wrong here; the file is left "
                          "unchanged:")
        for r in report["reasons"]:
            lines.append(f"    {_at(r)}: {r['code']} {r['message']}")
        lines.append("  nothing else was done: every point of the contract waits for the restriction above" if restricted
                     else "  nothing else was done: change each line above as it says, then convert again (each "
                          "rule's quick fix still applies on its own: horovodize check)")
        return "\n".join(lines)
    for p in report["points"]:
        if p["point"] == 8:
            continue            # (the refusal is said above)
        reason = f" ({p['reason']})" if p["reason"] else ""
        lines.append(f"  {p['point']}. {p['title']}: {p['status']}{reason}")
        for group in _grouped(p["changes"]):
            c = group[0]
            if len(group) < GROUP_AT:
                lines += [f"       {_at(c)}: {c['code']} {c['change']} ({c['message']})" for c in group]
            else:
                why = f"; {c['message']}" if len({g["message"] for g in group}) == 1 else ""
                lines.append(f"       {_places(group)}: {c['code']} {_kind(c['change'])} ({len(group)} sites{why})")
        for n in p.get("notes", ()):
            lines.append(f"       {_at(n)}: {n['note']}")
    if report.get("launch"):
        lines.append(f"  {report['launch']}")
    for error in report.get("internal_errors", ()):
        lines.append(f"  WARNING: an internal error stopped part of the conversion ({error}); what that part "
                     "would change is missing from this conversion: please report it")
    return "\n".join(lines)


# From this many sites of one change on (12 imports rewritten, a figure's plt calls), the text
# report gives them one line; the JSON form keeps every site.
GROUP_AT = 3


def _grouped(changes: list[dict]) -> list[list[dict]]:
    """The changes by (code, change), in the order each first appears."""
    groups: dict = {}
    for c in changes:
        groups.setdefault((c["code"], _kind(c["change"])), []).append(c)
    return list(groups.values())


def _kind(change: str) -> str:
    """A change's title without what it names (``import Keras 2 (tf.keras): `from ...```)."""
    return change.split(": `", 1)[0]


def _places(group: list[dict], shown: int = 4) -> str:
    """``lines 3, 5, 9, 12 and 8 more`` (cells and files named as `_at` names them)."""
    first = [_at(c) for c in group[:shown]]
    if all(p.startswith("line ") for p in first):
        first = ["lines " + first[0][5:]] + [p[5:] for p in first[1:]]
    more = f" and {len(group) - shown} more" if len(group) > shown else ""
    return ", ".join(first) + more


def _at(item: dict) -> str:
    """``line N``, ``cell C line N`` in a notebook (the cell's number in its `cells` list), or
    ``FILE line N`` (``FILE cell C line N``: its notebook) in a program of several files."""
    if "file" in item:
        cell = f" cell {item['cell']}" if "cell" in item else ""
        return f"{item['file']}{cell} line {item['line']}"
    return f"cell {item['cell']} line {item['line']}" if "cell" in item else f"line {item['line']}"

