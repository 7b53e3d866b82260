"""Downloads with no cache (contract point 9, HVD044): ``urlretrieve``, ``wget.download``,
``gdown.download``/``download_folder``, and a ``requests.get``/``urlopen`` body written to a
file. Fetching again overwrites the file, so "local rank 0 first, then the others" would
have the other local ranks download into the same file at once, while one of them opens
it. The download, and what opens, extracts and closes what it fetched, run on local rank 0
only, in one ``if hvd.local_rank() == 0:`` block, then every rank joins one allreduce.

Provides: ``is_download`` (a call that fetches with no cache), ``guarded_runs`` (what goes
on local rank 0, or the name that keeps it from it), ``download_block`` (the edits).
Requires: parse nodes, rules.base (``guard_lines``).
"""

from __future__ import annotations

from ..parse import nodes as N
from .base import RuleContext, guard_lines

NO_CACHE = {"urllib.request.urlretrieve", "request.urlretrieve", "urlretrieve", "wget.download",
            "gdown.download", "gdown.download_folder"}
HTTP_GET = {"requests.get", "urllib.request.urlopen", "request.urlopen", "urlopen"}
BODY = (".content", ".iter_content(", ".read()", ".raw")
BINDERS = ("expr_stmt", "with_stmt", "for_stmt", "import_name", "import_from", "funcdef", "classdef")


def is_download(ctx: RuleContext, call: N.Call) -> bool:
    """The call downloads with no cache: a known downloader, or a file opened for writing
    (``open(p, "wb")``) in a statement that also reads an HTTP response body
    (``requests.get(url).content``, ``urlopen(url).read()``, or a name bound to one)."""
    dotted = call.callee_dotted() or ""
    if dotted in NO_CACHE:
        # urlretrieve(url) with no filename writes a temporary file of its own per process
        return not dotted.endswith("urlretrieve") or call.positional(1) is not None or \
            call.keyword("filename") is not None
    if dotted != "open":
        return False
    mode = call.keyword("mode") or call.positional(1)
    if mode is None or mode.value.type != "string" or "w" not in mode.value.value.lower():
        return False
    stmt = N.statement_of(call.node)
    if stmt.type in ("with_stmt",):
        scope_stmt = stmt
    else:
        scope_stmt = N.simple_stmt_of(stmt) or stmt
    return _reads_http(ctx, scope_stmt)


def _reads_http(ctx: RuleContext, stmt) -> bool:
    """`stmt` writes an HTTP response body: it calls requests.get/urlopen and reads its body
    (``.content``, ``.iter_content(...)``, ``.read()``), or reads a name one of the 5
    statements before it (same block) bound to such a call (``r = requests.get(url)`` then
    ``r.content``, or ``data = urlopen(url).read()``). A decoded reply (``.json()``) is not."""
    code = stmt.get_code(include_prefix=False)
    if any((c.callee_dotted() or "") in HTTP_GET for c in N.calls_in(stmt)):
        return any(b in code for b in BODY)
    names = {n.value for n in N.walk(stmt) if n.type == "name"}
    prev, seen = stmt.get_previous_sibling(), 0
    while prev is not None and seen < 5:
        if prev.type == "simple_stmt" and _defined(prev) & names and \
                any((c.callee_dotted() or "") in HTTP_GET for c in N.calls_in(prev)):
            body = prev.get_code(include_prefix=False)
            return any(b in code or b in body for b in BODY)
        seen += prev.type != "newline"
        prev = prev.get_previous_sibling()
    return False


def http_get_before(ctx: RuleContext, unit):
    """The plain statement just before `unit` (same block) that binds an HTTP response
    (``r = requests.get(url)``): it belongs to the download, or None."""
    prev = unit.get_previous_sibling()
    while prev is not None and prev.type in ("newline",):
        prev = prev.get_previous_sibling()
    if prev is None or prev.type != "simple_stmt":
        return None
    if any((c.callee_dotted() or "") in HTTP_GET for c in N.calls_in(prev)) and \
            any(s.type == "expr_stmt" for s in prev.children):
        return prev
    return None


def closes_after(last) -> list:
    """The statements right after `last` that close what the block opened (``zip_ref.close()``)."""
    bound = _bound_names(last)
    out, cur = [], last.get_next_sibling()
    while cur is not None and cur.type == "simple_stmt":
        code = cur.get_code(include_prefix=False).strip()
        if not (code.endswith(".close()") and code[:-len(".close()")] in bound):
            break
        out.append(cur)
        cur = cur.get_next_sibling()
    return out


def _bound_names(stmt) -> set:
    """Names bound in the block holding `stmt`, up to and including it."""
    names = set()
    parent = stmt.parent
    for sib in parent.children if parent is not None else ():
        names |= _defined(sib)
        if sib is stmt:
            break
    return names


def _defined(node) -> set:
    names = set()
    for n in [node, *N.walk(node)]:
        if n.type in BINDERS or n.type == "simple_stmt":
            for child in ([n] if n.type != "simple_stmt" else n.children):
                if child.type in BINDERS:
                    try:
                        names |= {d.value for d in child.get_defined_names()}
                    except (AttributeError, NotImplementedError):
                        pass
    return names


def _statements(first, last) -> list:
    """The statements from `first` through its sibling `last` (layout tokens left out)."""
    out, cur = [first], first
    while cur is not last and cur.get_next_sibling() is not None:
        cur = cur.get_next_sibling()
        if cur.type not in ("newline", "endmarker", "indent", "dedent"):
            out.append(cur)
    return out


def _read_after(ctx: RuleContext, names: set, after, scope) -> tuple[str, int] | None:
    for n in N.walk(scope):
        if n.type == "name" and n.value in names and n.start_pos > after.end_pos and not n.is_definition():
            return n.value, n.start_pos[0]
    return None


def guarded_runs(ctx: RuleContext, first, last) -> tuple[list, tuple[str, int] | None]:
    """The runs of statements `first`..`last` to put on local rank 0, and None; or ([], (name,
    line)) where a name bound there is read by every rank and cannot stay out of the block.

    A plain statement (no call) binding a name read after the block (``training_dir =
    "data/"`` between the download and its extraction) stays out, on every rank: the runs
    around it are guarded apart."""
    stmts = _statements(first, last)
    scope = N.func_scope_of(first) or ctx.source.module
    bound = set()
    for s in stmts:
        bound |= _defined(s)
    later = {n for n in bound if _read_after(ctx, {n}, last, scope) is not None}
    keep = [s for s in stmts if _defined(s) & later]
    for s in keep:
        if s.type != "simple_stmt" or list(N.calls_in(s)):
            return [], _read_after(ctx, _defined(s) & later, last, scope)
    runs, run, inside = [], [], set()       # inside: names bound by the guarded statements so far
    for s in stmts:
        if any(s is k for k in keep):
            read = {n.value for n in N.walk(s) if n.type == "name" and not n.is_definition()}
            if read & inside:
                return [], (sorted(read & inside)[0], s.start_pos[0])
            if run:
                runs.append(run)
            run = []
            continue
        run.append(s)
        inside |= _defined(s)
    if run:
        runs.append(run)
    return runs, None


def download_block(ctx: RuleContext, runs: list, end, barrier: str) -> list:
    """``if hvd.local_rank() == 0:`` over each run of statements (one step right), then,
    after `end` (the last statement or the cleaning that follows it), the allreduce every
    rank joins once."""
    edits = []
    for run in runs:
        edits += guard_lines(ctx, run[0], run[-1], f"{ctx.hvd}.local_rank() == 0")
    edits.append(ctx.insert_after_stmt(end, f"{barrier}  # the other local ranks wait for local rank 0's download"))
    return edits
