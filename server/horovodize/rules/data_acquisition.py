"""Data acquired once per host (contract point 9, HVD044): downloads, caches and archive
extraction never run on several ranks at once into the same path.

* ``<keras>.datasets.{mnist,imdb,reuters,boston_housing}.load_data()`` takes a per-rank
  path, Horovod's own idiom: ``load_data(path="mnist-%d.npz" % hvd.rank())``.
* A folder every rank makes (``os.makedirs``/``os.mkdir``) is HVD032's (``exist_ok=True``),
  whether it holds data or outputs.
* A download with no cache (``urlretrieve``, ``wget.download``, ``gdown.download``, an HTTP
  body written to a file: `data_download`) runs on local rank 0 only, with what opens,
  extracts and closes what it fetched, in one ``if hvd.local_rank() == 0:`` block, then one
  allreduce on every rank (the others fetching again would write the same file).
* A tf.data cache in a file gets a file per rank (`cache_files`).
* Every other acquisition (``load_data`` without a ``path`` parameter, imdb's and reuters'
  ``get_word_index``, ``get_file``,
  ``tfds.load``, ``download_and_prepare``, ``gdown.cached_download``, a Keras application's
  ImageNet weights (``weights="imagenet"``, the default), ``hub.KerasLayer``/``hub.load`` of
  a URL, scikit-learn's ``fetch_*`` dataset fetchers (``fetch_california_housing``,
  ``fetch_openml``), ``extractall``,
  ``shutil.unpack_archive``, ``np.loadtxt(url)``) runs on local rank 0 first: the other
  ranks wait in an allreduce that local rank 0 joins once it has the data, then run the
  statement on the host's cache. Every rank calls that allreduce exactly once, whatever
  the number of hosts; consecutive acquisitions (up to 3 plain lines apart) share one
  wrapper.
* What writes into the data folder runs on local rank 0 only, inside the wrapper: an
  ``extractall``/``unpack_archive`` statement gets ``if hvd.local_rank() == 0:``, and
  ``get_file(..., extract=True)`` gets ``extract=hvd.local_rank() == 0`` (Keras 2.15
  extracts on every call, cached or not, and returns the archive's path either way); the
  cleaning that follows before training (``shutil.rmtree``, ``os.remove``...) is taken into
  the wrapper, on local rank 0 (every host cleans its own cache). Where the others still
  extract (``get_file(untar=True)``: its path differs without ``untar``), one more allreduce
  follows on every rank, and the cleaning then gets its own local-rank-0-first wrapper
  (``data_cleaned``) so it comes after every extraction.

The wrapped unit is the statement, or the ``with``/``try``/file-system ``if`` around it
(a rank must not skip the allreduce because local rank 0 already made the file exist); the
acquisitions inside a unit (an extraction under an ``if`` there) are wrapped with it.

Provides: ``check``, ``local_rank0_only`` (the cleaning calls taken in, which HVD032 leaves),
``local_rank0_blocks`` (the statements of the download blocks, which HVD032/HVD033 leave).
Requires: env (aliases, callers), facts (rank guards, init, effects), loop summary (what trains).
"""

from __future__ import annotations

import re
from typing import Iterator

from ..parse import nodes as N
from ..parse.imports import import_bindings
from ..parse.source import Edit
from .base import Finding, Fix, RuleContext, called_on_rank0_only, finding, mentions_hvd, report_note, under_rank0_guard
from .cache_files import per_rank_caches
from .data_download import closes_after, download_block, guarded_runs, http_get_before, is_download
from .setup_imports import tf_name

RULES = {
    "HVD044": ("data-fetched-per-host", "Fetch the data once per host (per-rank path, or local rank 0 first)"),
}
# load_data's own default file name, for the datasets whose load_data takes a `path`
# (Keras 2.15: cifar10, cifar100 and fashion_mnist take none).
PER_RANK_PATH = {"mnist": "mnist.npz", "imdb": "imdb.npz", "reuters": "reuters.npz",
                 "boston_housing": "boston_housing.npz"}
LOAD_DATA = re.compile(r"^(?:tensorflow\.)?keras\.datasets\.(\w+)\.load_data$")
# imdb's and reuters' word index: a get_file of its own into ~/.keras/datasets
WORD_INDEX = re.compile(r"^(?:tensorflow\.)?keras\.datasets\.(?:imdb|reuters)\.get_word_index$")
FETCH_DOTTED = {"tfds.load", "tensorflow_datasets.load", "gdown.download", "gdown.download_folder",
                "gdown.cached_download", "urllib.request.urlretrieve", "request.urlretrieve", "urlretrieve",
                "wget.download"}
EXTRACT_DOTTED = {"shutil.unpack_archive"}
# What cleans a data folder after its download (a removed class folder, corrupt images).
CLEAN = {"shutil.rmtree", "os.remove", "os.unlink", "os.rmdir", "os.removedirs"}
TEXT_FROM_URL = {"np.loadtxt", "numpy.loadtxt", "np.genfromtxt", "numpy.genfromtxt"}
NAMES = ("load_data", "get_word_index", "get_file", "load", "download", "download_folder", "cached_download", "urlretrieve",
         "download_and_prepare", "extractall", "unpack_archive", "loadtxt", "genfromtxt", "open")
# Implicit downloads into the host's cache: a Keras application's ImageNet weights
# (``weights="imagenet"``, the default) through get_file into ~/.keras/models, a TF Hub
# handle into the hub cache; a second call finds the file there.
APPLICATION = re.compile(r"^(?:tensorflow\.)?keras\.applications(?:\.\w+)*\.[A-Z]\w*$")
HUB = {"tensorflow_hub.KerasLayer", "tensorflow_hub.load", "tensorflow_hub.Module"}
# scikit-learn's dataset fetchers download into ~/scikit_learn_data (``data_home``), write their
# cache (``.pkz``) and remove the archive: every local rank at once reads what another removes.
SKLEARN_FETCH = re.compile(r"^sklearn\.datasets(?:\.\w+)*\.fetch_\w+$")
FS_TEST = ("exists", "isdir", "isfile", "listdir", "glob", "os.path")
BARRIER = "data_barrier"
UNWRAPPABLE = ("not done: every rank fetches here and no wrapper can go around it ({}): fetch it on local rank 0 "
               "first, then the others")


def acquisition(ctx: RuleContext, call: N.Call) -> str | None:
    """What the call does to the host's files: "path" (load_data with a per-rank path),
    "fetch", "extract" (the others write the files again), or None. (A folder made by every
    rank, ``os.makedirs``/``os.mkdir``, is HVD032's: ``exist_ok=True``, whatever the folder holds.)"""
    q = ctx.env.callee_qualname(call) or ""
    dotted = call.callee_dotted() or ""
    name = call.method or dotted
    if name in ctx.env.functions and "." not in dotted:
        return None                        # the program's own function of that name
    if not _candidate(ctx, call, q, dotted, name) or call.has_star():
        return None                        # (by name first: most calls are neither, and cheap to tell)
    m = LOAD_DATA.match(q)
    if m:
        if m.group(1) in PER_RANK_PATH and not call.args:
            return "path"
        path = call.keyword("path") or call.positional(0)
        if path is not None and path.value.type not in ("string", "strings"):
            return None                    # a path the program computes (``% os.getpid()``): its own choice
        return "fetch"
    if WORD_INDEX.match(q):
        path = call.keyword("path") or call.positional(0)
        return "fetch" if path is None or path.value.type in ("string", "strings") else None
    if APPLICATION.match(q):
        weights = call.keyword("weights")
        if weights is None:
            return "fetch"             # weights="imagenet" by default
        value = weights.value
        if value.type == "keyword" and value.value == "None" or \
                value.type == "string" and "imagenet" not in value.value:
            return None                # no weights, or the user's own file
        return "fetch"
    if q in HUB or dotted in HUB or _hub_alias(ctx, dotted):
        handle = call.keyword("handle") or call.positional(0)
        if handle is not None and re.match(r"""^[rbuRBU]*['"]https?://""", handle.value.get_code(include_prefix=False)):
            return "fetch"
        return None
    if name == "get_file" and "keras" in q:
        extract = call.keyword("extract")
        untar = call.keyword("untar")
        if any(k is not None and k.value.get_code(include_prefix=False) != "False" for k in (extract, untar)):
            return "extract"
        return "fetch"
    if dotted == "open":              # an HTTP response body written to a file
        return "download" if is_download(ctx, call) else None
    if dotted in FETCH_DOTTED:
        download = call.keyword("download")
        if download is not None and download.value.get_code(include_prefix=False) == "False":
            return None
        return "download" if is_download(ctx, call) else "fetch"
    if call.method == "download_and_prepare":
        return "fetch"
    if name.startswith("fetch_") and _sklearn_fetch(ctx, dotted):
        download = call.keyword("download_if_missing")
        return None if download is not None and download.value.get_code(include_prefix=False) == "False" else "fetch"
    if call.method == "extractall" or dotted in EXTRACT_DOTTED:
        return "extract"
    if dotted in TEXT_FROM_URL:       # numpy's DataSource downloads a URL into the working directory
        first = call.keyword("fname") or call.positional(0)
        if first is not None and _url_like(ctx, first.value, call.node):
            return "fetch"
        return None
    return None


def _candidate(ctx: RuleContext, call: N.Call, q: str, dotted: str, name: str) -> bool:
    """Could `acquisition` answer other than None, by the callee's name alone?"""
    return bool(LOAD_DATA.match(q) or WORD_INDEX.match(q) or APPLICATION.match(q) or q in HUB or dotted in HUB
                or name == "get_file" or dotted == "open" or dotted in FETCH_DOTTED or dotted in EXTRACT_DOTTED
                or dotted in TEXT_FROM_URL or call.method in ("download_and_prepare", "extractall")
                or _hub_alias(ctx, dotted) or name.startswith("fetch_"))


URL = re.compile(r"""^[rbuRBUfF]*['"](https?|ftp)://""")


def _url_like(ctx: RuleContext, value, at, depth: int = 0) -> bool:
    """A URL: a literal, ``root_url + "FordA_TRAIN.tsv"`` with ``root_url`` bound to one, or
    the parameter of a function some caller passes such a URL (keras-io's ``readucr(filename)``
    calling ``np.loadtxt(filename)``)."""
    value = N.unparen(value)
    if depth > 3:
        return False
    if URL.match(value.get_code(include_prefix=False)):
        return True
    if value.type == "arith_expr":
        return _url_like(ctx, value.children[0], at, depth + 1)
    if value.type != "name":
        return False
    fn = N.func_scope_of(at)
    if fn is not None and value.value in ctx.env.param_names(fn) and \
            not any(b.stmt.start_pos < at.start_pos for b in ctx.env.bindings_of(value.value, fn)):
        for caller in ctx.env.callers(fn):
            index = ctx.env.param_names(fn).index(value.value)
            arg = caller.keyword(value.value) or caller.positional(index)
            if arg is not None and _url_like(ctx, arg.value, caller.node, depth + 1):
                return True
        return False
    found = [b for b in ctx.env.bindings if b.name == value.value and b.value is not None
             and b.stmt.start_pos < at.start_pos]
    return bool(found) and URL.match(found[-1].value.get_code(include_prefix=False)) is not None


def _sklearn_fetch(ctx: RuleContext, dotted: str) -> bool:
    """``fetch_openml(...)``, ``datasets.fetch_covtype(...)``: a fetcher of ``sklearn.datasets``."""
    root, _, rest = dotted.partition(".")
    full = next((f for node in ctx.env.imports for local, f in import_bindings(node) if local == root), "")
    return bool(full) and SKLEARN_FETCH.match(f"{full}.{rest}" if rest else full) is not None


def _hub_alias(ctx: RuleContext, dotted: str) -> bool:
    """``hub.KerasLayer``/``hub.load`` where ``hub`` is ``import tensorflow_hub as hub``."""
    root, _, attr = dotted.partition(".")
    return attr in ("KerasLayer", "load", "Module") and re.search(
        rf"^\s*import\s+tensorflow_hub\s+as\s+{re.escape(root)}\b", ctx.source.text, re.M) is not None


def check(ctx: RuleContext) -> Iterator[Finding]:
    yield from _plan(ctx)[0]


def local_rank0_only(ctx: RuleContext) -> set[int]:
    """The calls (by ``id`` of their node) that HVD044's wrapper runs on local rank 0 only:
    the cleaning of the data folder (``shutil.rmtree``, ``os.remove``...) it took in. Other
    rules leave them alone (a global-rank-0 guard would leave other hosts' data uncleaned)."""
    return _plan(ctx)[1]


def local_rank0_blocks(ctx: RuleContext) -> list:
    """The statements HVD044 puts in a local-rank-0-only download block: other rules leave
    what they hold alone (the file written there is the download, not a side effect)."""
    _plan(ctx)
    return ctx.__dict__.get("_download_blocks", [])


def _plan(ctx: RuleContext) -> tuple[list, set]:
    """The findings and the calls taken onto local rank 0, worked out once per analysis."""
    plan = ctx.__dict__.get("_data_plan")
    if plan is None:
        taken: set[int] = set()
        plan = ctx.__dict__["_data_plan"] = (list(_check(ctx, taken)), taken)
    return plan


def _check(ctx: RuleContext, taken: set) -> Iterator[Finding]:
    if ctx.env.tf_alias() is None and ctx.facts.uses_horovod:
        return                        # no tensorflow name to build the allreduce with
    wrapped: list = []                # (unit, call, kind) for the local-rank-0-first wrapper
    # Keras applications, hub.KerasLayer: (a qualified name in keras.applications or
    # tensorflow_hub needs that word in the text; most capitalised calls are layers)
    text = ctx.source.text
    models = [m for m in ctx.env.index.by_method if m and m[:1].isupper()] \
        if "applications" in text or "tensorflow_hub" in text else []
    fetchers = [m for m in ctx.env.index.by_method if m and m.startswith("fetch_")] if "sklearn" in text else []
    for name in (*NAMES, *models, *fetchers):
        for call in ctx.calls(name):
            kind = acquisition(ctx, call)
            if kind is None or ctx.blocked("HVD044", call.node):
                continue
            stmt = N.statement_of(call.node)
            if mentions_hvd(call.node, ctx) or under_rank0_guard(stmt, ctx) or _locked(stmt) or _after_own_barrier(stmt):
                if kind != "path":
                    _wrapped_already(ctx, _units(ctx, call))     # (converted: its fetch function stays as it is)
                continue
            if kind == "path":
                dataset = LOAD_DATA.match(ctx.env.callee_qualname(call)).group(1)
                text = f'path="{PER_RANK_PATH[dataset].replace(".npz", "-%d.npz")}" % {ctx.hvd}.rank()'
                yield finding(ctx, "HVD044", call.node, "every rank downloads the dataset into the same file",
                              Fix("Give each rank its own download path", ctx.add_keyword(call, text)))
            else:
                units = _units(ctx, call)
                if isinstance(units, str):
                    note(ctx, call.node, units)
                    continue
                wrapped += [(unit, call, kind) for unit in _wrapped_already(ctx, units)]
    yield from _wrappers(ctx, wrapped, taken)
    yield from per_rank_caches(ctx)


def _wrappers(ctx: RuleContext, wrapped: list, taken: set) -> Iterator[Finding]:
    """One local-rank-0-first wrapper per run of consecutive units in one block, extended
    to the cleaning of the data folder that follows it; what writes into the folder
    (extraction, cleaning) runs on local rank 0 only."""
    units: dict[int, tuple] = {}
    outer = [unit for unit, _c, _k in wrapped]
    for unit, call, kind in wrapped:
        # a unit inside another (an extraction under an ``if`` of the ``if not os.path.exists``
        # that fetches) is the outer one's: no barrier under a test that differs by rank
        unit = next((o for o in outer if o is not unit and N.inside(unit, o) and not any(
            p is not o and N.inside(o, p) for p in outer)), unit)
        u = units.setdefault(id(unit), (unit, [], set()))
        u[1].append(call)
        u[2].add(kind)
    ordered = sorted(units.values(), key=lambda u: u[0].start_pos)
    groups: list[list] = []
    for u in ordered:
        if groups and _joins(ctx, groups[-1][-1][0], u[0]):
            groups[-1].append(u)
        else:
            groups.append([u])
    hvd = ctx.hvd
    tf = ctx.env.tf_alias() or tf_name(ctx)
    reduce = f'{hvd}.allreduce({tf}.constant(0), name="{BARRIER}")'
    for whole in groups:
        downloads = [i for i, u in enumerate(whole) if "download" in u[2]]
        if not downloads:
            yield from _cache_group(ctx, whole, taken, reduce)
            continue
        # the downloads, and what extracts what they fetched, on local rank 0 only; the
        # cache fetches after them keep local rank 0 first, then the others
        cut = max(downloads) + 1
        while cut < len(whole) and whole[cut][2] <= {"extract"}:
            cut += 1
        yield from _download_group(ctx, whole[:cut], taken, reduce, last_group=cut == len(whole))
        if cut < len(whole):
            yield from _cache_group(ctx, whole[cut:], taken, reduce)


def _download_group(ctx: RuleContext, group: list, taken: set, reduce: str, last_group: bool) -> Iterator[Finding]:
    """One ``if hvd.local_rank() == 0:`` block over the units (and the ``close()`` of what
    they opened), then one allreduce on every rank (`data_download`)."""
    first, last = group[0][0], group[-1][0]
    first = http_get_before(ctx, first) or first
    calls = list({id(c): c for _u, cs, _k in group for c in cs}.values())   # (a call under two callers' tests)
    closes = closes_after(last)
    last = closes[-1] if closes else last
    runs, leak = guarded_runs(ctx, first, last)
    if leak is not None:
        note(ctx, calls[0].node, f"not done: every rank downloads here again into the same file (no cache), and "
             f"`{leak[0]}`, bound with the download, is read by every rank (line {leak[1]}): download on "
             "local rank 0 only and give the others the same value, then a barrier")
        return
    cleaning = _cleaning_after(ctx, last) if last_group else []
    edits, end = [], last
    for stmt, call, guard in cleaning:
        edits.append(guard)
        taken.add(id(call.node))
        end = stmt
    edits = download_block(ctx, runs, end, reduce) + edits
    _on_local_rank0(ctx, [s for run in runs for s in run], group)
    fix = Fix("Download on local rank 0 only, then a barrier", edits)
    for call in calls:
        kind = acquisition(ctx, call)
        why = {"download": "every rank downloads again into the same file (no cache)",
               "extract": "every rank extracts what was downloaded into the same folder at once"}.get(
            kind, "every rank fetches the data into the same path at once")
        yield finding(ctx, "HVD044", call.node, why, fix)
    for _stmt, call, _guard in cleaning:
        yield finding(ctx, "HVD044", call.node, "every host must clean its own data folder, once", fix)


def _cache_group(ctx: RuleContext, group: list, taken: set, reduce: str) -> Iterator[Finding]:
    """Local rank 0 first, then the others find the data in this host's cache."""
    hvd, unit_indent = ctx.hvd, ctx.source.indent_unit
    tf = ctx.env.tf_alias() or tf_name(ctx)
    first, last = group[0][0], group[-1][0]
    edits, again = [], False          # again: a rank > 0 still extracts (allreduce after)
    calls = list({id(c): c for _u, cs, _k in group for c in cs}.values())   # (a call under two callers' tests)
    for call in calls:
        if acquisition(ctx, call) != "extract":
            continue
        own = _extract_on_local_rank0(ctx, call)
        if own is None:
            again = True
        else:
            edits += own
    cleaning = _cleaning_after(ctx, last)
    unit_last = last
    for stmt, call, guard in cleaning:
        edits.append(guard)
        taken.add(id(call.node))
        last = stmt
    before = f"if {hvd}.local_rank() != 0:\n{unit_indent}{reduce}  # local rank 0 fetches the data first"
    after = f"if {hvd}.local_rank() == 0:\n{unit_indent}{reduce}  # then the others find it in this host's cache"
    if again:
        note(ctx, calls[0].node, "done, but ranks > 0 extract the archive again after local rank 0 "
             "(`get_file(untar=True)`: Keras 2.15 extracts again whenever the folder named after fname is "
             "missing, i.e. unless the archive's top folder has that name; or a computed `extract=`, or an "
             "extraction sharing its line): every extraction ends before the data is cleaned or read, but "
             "with more than 2 ranks on a host they write the same files at once (the same contents); "
             "`extract=True` to get_file extracts once")
        after += (f'\n{hvd}.allreduce({tf}.constant(0), name="data_extracted")  '
                  "# no rank reads while another extracts again")
    if again and cleaning:          # clean after every re-extraction, on local rank 0 first
        cleaned = f'{hvd}.allreduce({tf}.constant(0), name="data_cleaned")'
        after += (f"\nif {hvd}.local_rank() != 0:\n{unit_indent}{cleaned}  "
                  "# local rank 0 cleans the data folder first")
        edits = ([ctx.insert_before_stmt(first, before), ctx.insert_after_stmt(unit_last, after)] + edits
                 + [ctx.insert_after_stmt(last, f"if {hvd}.local_rank() == 0:\n{unit_indent}{cleaned}  "
                                          "# then the others read it")])
    else:
        edits = [ctx.insert_before_stmt(first, before)] + edits + [ctx.insert_after_stmt(last, after)]
    _on_local_rank0(ctx, [], group)
    fix = Fix("Fetch the data on local rank 0 first, then on the other ranks", edits)
    for call in calls:
        q = ctx.env.callee_qualname(call) or ""
        why = ("every rank downloads the pretrained weights into this host's cache at once"
               if APPLICATION.match(q) or q in HUB or _hub_alias(ctx, call.callee_dotted() or "") else "every rank fetches the data into the same path at once")
        yield finding(ctx, "HVD044", call.node, why, fix)
    for _stmt, call, _guard in cleaning:
        yield finding(ctx, "HVD044", call.node, "every host must clean its own data folder, once", fix)


def _wrapped_already(ctx: RuleContext, units: list | str) -> list:
    """The units not yet in a local-rank-0-first wrapper. One that is (this rule's, in a
    converted program) leaves the fetch function it calls under its test to local rank 0."""
    todo = []
    for unit in units if isinstance(units, list) else ():
        if _after_own_barrier(unit):
            _on_local_rank0(ctx, [], [(unit,)])
        else:
            todo.append(unit)
    return todo


def _on_local_rank0(ctx: RuleContext, stmts: list, group: list) -> None:
    """What other rules leave alone (`local_rank0_blocks`): the statements of a download
    block, and the fetch function a unit calls under its file-system test (only a rank that
    finds the data missing runs it, local rank 0 of each host: a rank-0 guard on its clean-up
    would leave the other hosts' archives)."""
    fetchers = ctx.__dict__.get("_fetchers", {})
    blocks = ctx.__dict__.setdefault("_download_blocks", [])
    blocks += stmts + [fetchers[id(u[0])] for u in group if id(u[0]) in fetchers]


def _extract_on_local_rank0(ctx: RuleContext, call: N.Call) -> list | None:
    """The edits that make an extraction run on local rank 0 only, or None where the other
    ranks still extract: ``get_file(..., extract=True)`` gets ``extract=hvd.local_rank() == 0``
    (Keras 2.15's get_file extracts on every call, cached or not, and returns the archive's
    path either way); an ``extractall``/``unpack_archive`` statement of its own line gets
    ``if hvd.local_rank() == 0:``. ``get_file(untar=True)`` cannot: it extracts again unless
    a folder named ``fname`` exists, and without ``untar`` it returns another path."""
    if call.method == "extractall" or (call.callee_dotted() or "") in EXTRACT_DOTTED:
        guard = _guard_local_rank0(ctx, call)
        return None if guard is None else [guard]
    extract = call.keyword("extract")
    if call.keyword("untar") is not None or extract is None or \
            extract.value.get_code(include_prefix=False) != "True":
        return None
    start, end = ctx.source.span(extract.value)
    return [Edit(start, end, f"{ctx.hvd}.local_rank() == 0")]


def _guard_local_rank0(ctx: RuleContext, call: N.Call) -> Edit | None:
    """``if hvd.local_rank() == 0: <call>`` when the call is a statement alone on its line,
    ``<call> if hvd.local_rank() == 0 else None`` when it shares it (``if isdir(d): rmtree(d)``)."""
    if not call.is_whole() or not N.is_statement(call.node):
        return None
    if N.alone_on_line(call.node):
        start = ctx.source.offset(call.node.start_pos)
        return Edit(start, start, f"if {ctx.hvd}.local_rank() == 0: ")
    if N.simple_stmt_of(call.node) is None:
        return None
    end = ctx.source.offset(call.node.end_pos)
    return Edit(end, end, f" if {ctx.hvd}.local_rank() == 0 else None")


def _cleaning_after(ctx: RuleContext, last, reach: int = 40) -> list:
    """The statements that clean the data folder (``shutil.rmtree``, ``os.remove``...) in
    the block after the wrapper's last unit, before anything trains or calls Horovod:
    (the block's statement holding it, the call, its local-rank-0 guard). Stops at the
    first cleaning that cannot take a guard of its own line."""
    if last.parent is None:
        return []
    siblings = [c for c in last.parent.children if c.type not in ("newline", "endmarker", "indent", "dedent")]
    i = _index(siblings, last)
    found = []
    for stmt in siblings[i + 1:i + 1 + reach] if i is not None else ():
        if stmt.type in ("funcdef", "classdef", "decorated", "async_stmt", "async_funcdef"):
            continue
        if _trains(ctx, stmt) or mentions_hvd(stmt, ctx):
            break
        for call in N.calls_in(stmt):
            if ctx.facts.effects.qualname(call) not in CLEAN or _in_def(call.node, stmt):
                continue
            guard = _guard_local_rank0(ctx, call)
            if guard is None or under_rank0_guard(call.node, ctx) or ctx.blocked("HVD044", call.node):
                return found
            found.append((stmt, call, guard))
    return found


def _in_def(node, stop) -> bool:
    cur = node.parent
    while cur is not None and cur is not stop:
        if cur.type in ("funcdef", "classdef", "lambdef"):
            return True
        cur = cur.parent
    return False


def _units(ctx: RuleContext, call: N.Call) -> list | str:
    """The statements to wrap: the line holding the call, or the ``with``/``try``/file-system
    ``if`` around it; or why no wrapper can go around it (a ``return``, a statement that
    trains, a line shared with another statement, code above the set-up).

    A function called under a file-system test (``if not os.path.exists(d):
    download_archive(...)``) gets no wrapper inside: a rank that finds the data would skip
    the call and its barrier while the others wait in it. The wrappers go around the tests
    of its callers, one each (every rank reaches every one)."""
    small = N.statement_of(call.node)
    if small.type in N.COMPOUND:
        member = small
    elif small.type in ("return_stmt", "yield_expr") or any(n.type == "yield_expr" for n in N.walk(small)):
        return UNWRAPPABLE.format("it is in a return or yield")
    elif N.alone_on_line(small):
        member = N.simple_stmt_of(small) or small
    else:
        line = N.simple_stmt_of(small)
        owner = line.parent if line is not None else None
        if owner is None or owner.type not in ("if_stmt", "with_stmt", "try_stmt", "for_stmt", "while_stmt") \
                or any(c.type != "newline" and c is not small and not (c.type == "operator" and c.value == ";")
                       for c in line.children):
            return UNWRAPPABLE.format("it shares its line with another statement")
        member = owner                     # ``if not os.path.exists(p): get_file(...)`` on one line
    member = _climb(ctx, member)
    units = [member]
    fn = N.func_scope_of(member)
    calls = [N.statement_of(c.node) for c in (ctx.env.callers(fn) if fn is not None else [])]
    lines = [N.simple_stmt_of(small) or small for small in calls]
    climbed = [_climb(ctx, line) for line in lines]
    if any(up is not line for up, line in zip(climbed, lines)):
        name = fn.name.value
        bare = [line.start_pos[0] for up, line in zip(climbed, lines) if up is line]
        shared = [small.start_pos[0] for small in calls if not N.alone_on_line(small)]
        if bare or shared:
            at = f"without one (line {bare[0]})" if bare else f"on a line it shares (line {shared[0]})"
            return (f"not done: every rank fetches here; `{name}` is called under a file-system test and {at}, "
                    f"so no one wrapper lets every rank reach the same barriers: call `{name}` under a test "
                    "on a line of its own everywhere (or nowhere), or fetch on local rank 0 first, then the others")
        units = list({id(up): up for up in climbed}.values())
        ctx.__dict__.setdefault("_fetchers", {}).update((id(up), fn) for up in units)
    for member in units:
        line = member.start_pos[0]
        if member.parent is None or member.parent.type not in ("suite", "file_input"):
            return UNWRAPPABLE.format(f"the statement at line {line} shares its line")
        if _trains(ctx, member):
            return UNWRAPPABLE.format(f"the statement at line {line} also trains")
        if mentions_hvd(member, ctx):
            return UNWRAPPABLE.format(f"the statement at line {line} already calls Horovod")
        if called_on_rank0_only(ctx, N.func_scope_of(member)):
            return UNWRAPPABLE.format(f"line {line} runs on rank 0 only, where a barrier would wait for the others")
        top = ctx.env.top_imports_end
        if N.func_scope_of(member) is None and top is not None and member.start_pos < top.end_pos:
            return UNWRAPPABLE.format(f"line {line} runs above the Horovod set-up")
    return units


def _climb(ctx: RuleContext, member):
    """`member`, or the ``with``/``try``/file-system ``if`` around it (outermost first reached)."""
    while member.parent is not None and member.parent.type == "suite":
        owner = member.parent.parent
        if owner.type in ("with_stmt", "try_stmt") or (
                owner.type in ("if_stmt", "while_stmt") and _fs_test(owner)):
            if _trains(ctx, owner):
                break
            member = owner
            continue
        break
    return member


def _fs_test(stmt) -> bool:
    """An ``if``/``while`` whose test reads the file system (``if not os.path.exists(p):``)."""
    tests = [stmt.children[i + 1] for i, c in enumerate(stmt.children) if c in ("if", "elif", "while")]
    return any(any(w in t.get_code(include_prefix=False) for w in FS_TEST) for t in tests)


def _joins(ctx: RuleContext, prev, unit, bridge: int = 3) -> bool:
    """`unit` follows `prev` in the same block, at most `bridge` plain lines between them that
    neither train nor call Horovod (``zip_file = ZipFile(zip_path)`` between a ``get_file``
    and its ``extractall``): one wrapper covers them all."""
    if prev.parent is not unit.parent:
        return False
    siblings = [c for c in prev.parent.children if c.type not in ("newline", "endmarker", "indent")]
    i, j = _index(siblings, prev), _index(siblings, unit)
    if i is None or j is None or j <= i:
        return False
    between = siblings[i + 1:j]
    # (a blank line ends a group: a notebook's cells are joined with one, app/notebook.py, and a
    # window spanning two cells would leave the first unable to run alone)
    gap = ctx.source.text[ctx.source.offset(prev.end_pos):ctx.source.offset(unit.start_pos)]
    blank = any(not line.strip() for line in gap.split("\n")[:-1])     # (the gap starts a line)
    return len(between) <= bridge and not blank and all(
        s.type == "simple_stmt" and not _trains(ctx, s) and not mentions_hvd(s, ctx) for s in between)


def _index(items, item):
    return next((i for i, c in enumerate(items) if c is item), None)


def _locked(stmt) -> bool:
    """Inside ``with FileLock(...)`` (Horovod's PyTorch examples) or another lock."""
    cur = stmt.parent
    while cur is not None and cur.type != "funcdef":
        if cur.type == "with_stmt":
            items = "".join(c.get_code(include_prefix=False) for c in cur.children[1:-2])
            if "lock" in items.lower():
                return True
        cur = cur.parent
    return False


def _after_own_barrier(stmt) -> bool:
    """The statement right after a barrier (the user's own local-rank-0-first), or inside
    this rule's wrapper (a rank ``if`` holding an allreduce a few statements before it and
    another after it)."""
    cur, first = stmt, True
    while cur.parent is not None and cur.type != "funcdef":
        if cur.parent.type in ("suite", "file_input"):
            siblings = [c for c in cur.parent.children if c.type not in ("newline", "endmarker", "indent")]
            i = _index(siblings, cur)
            if first and i and _barrier_like(siblings[i - 1]):
                return True
            first = False
            if i is not None and any(_rank_if_allreduce(s) for s in siblings[max(0, i - 12):i]) \
                    and any(_rank_if_allreduce(s) for s in siblings[i + 1:i + 13]):
                return True
        cur = cur.parent
    return False


def _barrier_like(prev) -> bool:
    code = prev.get_code(include_prefix=False)
    if prev.type == "if_stmt" and "rank()" in prev.children[1].get_code(include_prefix=False):
        return True                        # ``if hvd.local_rank() == 0: download(...)`` just above
    return ("allreduce" in code and "barrier" in code) or ".join()" in code


def _rank_if_allreduce(stmt) -> bool:
    return stmt.type == "if_stmt" and "local_rank()" in stmt.children[1].get_code(include_prefix=False) \
        and "allreduce" in stmt.get_code(include_prefix=False)


def _trains(ctx: RuleContext, stmt) -> bool:
    """The statement holds a training step or its loop, or calls a function that trains."""
    start, end = stmt.start_pos, stmt.end_pos
    inside = lambda n: n is not None and start <= n.start_pos and n.end_pos <= end  # noqa: E731
    if any(inside(s.node) or inside(s.driver) for s in ctx.summary.sites):
        return True
    return any(ctx.summary.functions.get(t) for t in (ctx.env.call_target(c) for c in N.calls_in(stmt))
               if t is not None)


def note(ctx: RuleContext, node, text: str) -> None:
    """A contract-point-9 remark for the conversion report."""
    report_note(ctx, 9, node, text)
