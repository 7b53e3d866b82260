"""The pipeline: parse → environment → loop summary → restrictions → rule sites → edits.

`analyze` never raises (a rule that fails is recorded in ``Analysis.internal_errors``
and skipped); `convert_text` refuses text that does not parse. The Horovod set-up is one
edit shared by every fix that needs it, so a single quick fix is runnable on its own and
the whole-file conversion has exactly one set-up.
"""

from __future__ import annotations

import logging
import re
import traceback
from dataclasses import dataclass, field, replace

from . import codes
from .analysis import restrictions
from .analysis.env import Env, build_env
from .analysis.hvd_facts import HvdFacts
from .analysis.keras3 import keras3_problems, keras3_target_reason
from .analysis.loop import LOOP_CODES, Summary, summarize
from .parse import cell_magics
from .parse.imports import import_bindings
from .parse.source import Edit, ParseError, Source, TooDeep, apply_edits
from .rules import keras3_adapters, setup_imports, stack_traps
from .rules.base import (
    SEVERITY_LOOP,
    SEVERITY_RESTRICTION,
    Finding,
    Fix,
    Related,
    RuleContext,
)
from .rules.catalogue import RULE_MODULES
from .rules.gradient_tape import UNBROADCAST
from .rules.optimizer import UNAVERAGED
from .rules.rank0_guards import SHARED_FS, SHARED_FS_HOW, SHARED_FS_RESUMED

log = logging.getLogger(__name__)
# A restriction that stops one of these stops the whole conversion (contract point 8).
LOOP_BLOCKING = set(restrictions.SYNC_RULES) | {"HVD001", "HVD002"}
# Report points whose notes (what a rule could not do) leave the program wrong: they block the
# whole-file conversion (point 5's "divided, but" too; its "not divided" notes block while the
# learning rate is scaled: `Analysis.undivided_and_scaled`).
BLOCKING_POINTS = (7, 9, 10)
# A note that starts so says the point is done in a way that is right but costs more (the
# archive extracted again by the other ranks of a host): advisory, it blocks nothing.
ADVISORY = "done, but "
# Rules that scale the learning rate by hvd.size(): on work that is not divided (each rank
# trains on all of the data, or on the same data: one gradient) that is N times the rate for
# no gain, so point 5 left undone blocks the conversion (`Analysis.undivided_and_scaled`).
LR_SCALING = ("HVD010", "HVD012", "HVD013")
# Point-5 rules whose edit divides the work (HVD045 makes a split the same on every rank and
# HVD046 gives each rank its own exploration: neither divides anything).
DIVIDING = ("HVD040", "HVD041", "HVD042", "HVD043", "HVD048", "HVD073")
PARTLY = "partly done"
DIVIDED_BUT = "divided, but"         # a point-5 note: shares that overlap (blocks)
# --require-local-fs (`Analysis.require_local_fs`): point 7's shared-filesystem note refuses.
LOCAL_FS_UNBLOCK = ("read them on rank 0 only and broadcast the value (horovod.tensorflow's `broadcast_object`, or "
                    "`broadcast_variables` for a model's weights), or drop "
                    "--require-local-fs (the `requireLocalFs` setting) if the hosts share a filesystem")
UNBLOCK = ("or convert with --no-scale-lr to keep the single-process learning rate (each rank then trains on all "
           "of the data: right, not faster)")
NOTHING_TO_DISTRIBUTE = "nothing to distribute: every rank would compute the same step"

WHOLE_FILE_TITLE = "Make Horovod-distributed"


@dataclass
class Analysis:
    source: Source
    env: Env | None = None
    summary: Summary | None = None
    findings: list[Finding] = field(default_factory=list)
    setup: Finding | None = None
    internal_errors: list[str] = field(default_factory=list)
    error: ParseError | None = None                 # TooDeep: the tree was not analysed
    refusals: list = field(default_factory=list)    # restriction problems that block the loop
    notes: list = field(default_factory=list)       # (contract point, line, text) for the report
    facts: HvdFacts | None = None                   # what the program already does with Horovod
    # False (`convert --no-scale-lr`, the `scaleLearningRate` setting): the rate-scaling rules
    # join no conversion (their quick fixes stay), so undivided work is right, not faster.
    scale_lr: bool = True
    # True (`convert --require-local-fs`, the `requireLocalFs` setting): a read of rank 0's files
    # on every rank after a barrier (point 7's "needs a shared filesystem") refuses the conversion.
    require_local_fs: bool = False
    # The text as written when the analysis read code run from strings as code
    # (parse/cell_magics.py: `conversion` unwraps nbconvert's run_cell_magic calls): edits apply to it.
    original: str | None = None
    # the Keras target the rules ran for (rules/keras_target.py) and, when the analysis chose
    # ``keras3`` over the one asked for, the Keras-3-only use that made it (`keras3_target_reason`)
    keras_target: str = "tf.keras"
    keras_target_reason: str | None = None

    @property
    def refused(self) -> bool:
        """All or nothing: a restriction blocks the training loop, or a point of the contract
        would be left wrong (`blocking_notes`), so nothing is edited."""
        return bool(self.refusals) or bool(self.blocking_notes())

    def blocking_notes(self) -> list[tuple[int, int, str]]:
        """The report's notes that leave the converted program wrong (contract point 8): a write
        or a display of rank 0's file left on every rank (7), data fetched by every rank at
        once (9), a per-rank decision around a collective (10), shares that overlap (5), an
        optimizer given to compile that nothing averages (3), data left undivided and the same
        on every rank while a rule scales the learning rate (5). The
        notes that only say the work is not divided (every rank trains on all of it: right,
        not faster) are advisory. Only when the conversion would otherwise go ahead."""
        if self.refusals or not (self.summary and self.summary.sites) or (self.facts and self.facts.uses_horovod):
            return []      # (refused already; no loop; a program distributed by hand gets hints)
        blocking = [n for n in self.notes if n[0] in BLOCKING_POINTS and not n[2].startswith(ADVISORY)
                    or (n[0] == 5 and n[2].startswith(DIVIDED_BUT)) or (n[0] == 2 and n[2].startswith(UNBROADCAST))
                    or (n[0] == 3 and n[2].startswith(UNAVERAGED))]
        return blocking + self.undivided_and_scaled() + self.needs_shared_fs() + self.stopped()

    def stopped(self) -> list[tuple[int, int, str]]:
        """A rule that failed (an internal error) leaves its part of the program unconverted:
        the rest alone would be a half conversion, so point 8 refuses it."""
        return [(8, 1, f"not done: an internal error stopped part of the conversion "
                       f"({error.strip().splitlines()[-1][:200]}); converting the rest alone would leave the "
                       "program half-distributed: please report it")
                for error in self.internal_errors[:1]]

    def needs_shared_fs(self) -> list[tuple[int, int, str]]:
        """With `require_local_fs`, point 7's note on the reads of rank 0's files after a barrier,
        reworded as a refusal that names them and says how to unblock (contract points 8, 13)."""
        if not self.require_local_fs:
            return []
        suffixes = (f"; {SHARED_FS_HOW}", f"; {SHARED_FS_RESUMED}")
        return [(7, line, (f"needs a shared filesystem (--require-local-fs): {text[len(SHARED_FS):-len(suffix)]}: "
                           f"every rank reads these files where rank 0 wrote them; {LOCAL_FS_UNBLOCK}"))
                for point, line, text in self.notes for suffix in suffixes
                if point == 7 and text.startswith(SHARED_FS) and text.endswith(suffix)]

    def undivided_and_scaled(self) -> list[tuple[int, int, str]]:
        """Point 5 left undone while a rule scales the learning rate (contract point 8): the
        ranks would each train on all of the data (or on the same data: one gradient) at N
        times the rate. Its notes, reworded to say how to unblock; a note of its own when
        nothing was divided and no rule said why. Empty with ``scale_lr`` off, or when the
        samples are each rank's own (the episodes of a reinforcement-learning environment)."""
        if not any(scales(f) and (self.scale_lr or f.code not in LR_SCALING) for f in self.rule_sites) \
                or own_episodes(self):
            return []
        undone = [n for n in self.notes if n[0] == 5 and not n[2].startswith((ADVISORY, DIVIDED_BUT, PARTLY))]
        divided = any(f.code in DIVIDING for f in self.rule_sites) or any(
            n[0] == 5 and n[2].startswith(ADVISORY) for n in self.notes)
        if not undone and divided:
            return []
        if not undone:
            line = min(s.node.start_pos[0] for s in self.summary.sites if s.node is not None)
            undone = [(5, line, "not divided: no data source, step bound (take, steps_per_epoch, steps) or epoch "
                                "count found to divide, while the learning rate is scaled by hvd.size(); shard the "
                                "data where it is read (`.shard(hvd.size(), hvd.rank())`) or divide the steps")]
        return [(5, line, f"{_identical(text)}; {UNBLOCK}") for _, line, text in undone]

    def refusal_reasons(self) -> list[tuple[str, int, str]]:
        """(code, 1-based line, message) of each restriction that blocks the conversion, then
        of each point of the contract the conversion would leave wrong (``point N``)."""
        return [(p.code if p.code.startswith("HVD") else f"HVD-{p.code}", p.node.start_pos[0], p.message)
                for p in self.refusals] + \
            [(f"point {n}", line, text) for n, line, text in self.blocking_notes()]
        # (HVD092 is a rule code's own fact, not HVD-<restriction>)

    @property
    def rule_sites(self) -> list[Finding]:
        return [f for f in self.findings if f.fix is not None]

    def fix_edits(self, fix: Fix) -> list[Edit]:
        """A fix's edits plus the shared set-up when the fix needs it and the file lacks it."""
        edits = list(fix.edits)
        if fix.needs_setup and self.setup is not None and self.setup.fix is not None:
            edits = list(self.setup.fix.edits) + edits
        return without_overlaps(edits)

    def conversion_sites(self) -> list[Finding]:
        """The rule sites the whole-file conversion applies (the report lists these)."""
        if self.blocking_notes():
            return []   # all or nothing: each site stays a quick fix of its own
        sites = self.rule_sites
        if not self.scale_lr:
            sites = [self._unscaled(f) for f in sites if f.code not in LR_SCALING or f.alternatives]
        if not (self.summary and self.summary.sites) and not (self.facts and self.facts.uses_horovod):
            return []   # no training loop: nothing to distribute (a saliency or export script)
        if self.facts is not None and self.facts.uses_horovod:
            # hints (an unguarded print, progress on every rank) stay individual quick fixes:
            # a program already distributed by hand gets only what it misses
            hints = self.facts.hint_codes()
            sites = [f for f in sites if f.code not in hints]
            if not any(f.fix.needs_setup for f in sites if f is not self.setup):
                sites = [f for f in sites if f is not self.setup]
        return sites

    def _unscaled(self, f: Finding) -> Finding:
        """``--no-scale-lr``: a site that scales and wraps (HVD012) with its unscaled fix, made once."""
        if f.code not in LR_SCALING:
            return f
        kept = self.__dict__.setdefault("_unscaled_sites", {})
        if id(f) not in kept:
            kept[id(f)] = (f, replace(f, fix=f.alternatives[0], alternatives=[]))
        return kept[id(f)][1]

    def conversion_edits(self) -> list[Edit]:
        """Every rule site's primary fix, and the set-up once."""
        edits: list[Edit] = []
        sites = self.conversion_sites()
        if self.setup is not None and self.setup in sites:
            edits += self.setup.fix.edits
        inner = _nested_guards(sites)
        for f in sites:
            if f is not self.setup and id(f) not in inner:
                edits += f.fix.edits
        return without_overlaps(edits)

    def converted(self) -> str:
        return apply_edits(self.source.text if self.original is None else self.original, self.conversion_edits())

    @property
    def loop_kind(self) -> str:
        return self.summary.label if self.summary else "none"

    @property
    def distributed(self) -> bool:
        return bool(self.env and self.env.horovod()) and not any(
            f.code in LOOP_CODES.values() for f in self.findings)


GUARD_HEADER = re.compile(r"[ \t]*if \w+\.(rank|local_rank)\(\) == 0:\r?\n")


def _nested_guards(sites: list[Finding]) -> set[int]:
    """ids of the findings whose whole fix is an ``if hvd.rank() == 0:`` block inside the block
    of another finding's guard that already implies it (rank 0 is local rank 0): applied
    together, both would indent the inner lines by one step at the same offsets, which the
    whole-file conversion applies once, so the inner ``if`` would swallow its ``else``."""
    blocks = []
    for f in sites:
        edits = f.fix.edits if f.fix is not None else []
        heads = [e for e in edits if e.start == e.end and GUARD_HEADER.fullmatch(e.new_text)]
        if len(heads) == 1 and all(e is heads[0] or (e.start == e.end and not e.new_text.strip()) for e in edits):
            blocks.append((heads[0].start, max(e.end for e in edits), GUARD_HEADER.fullmatch(heads[0].new_text).group(1), f))
    inner = set()
    for start, end, kind, f in blocks:
        if any(g is not f and s2 < start and end <= e2 and (k2 == "rank" or k2 == kind) for s2, e2, k2, g in blocks):
            inner.add(id(f))
    return inner


def scales(finding: Finding) -> bool:
    """The site's fix scales the learning rate by hvd.size(): the scaling rules, and the
    optimizer a premade Estimator makes by default, made scaled inside the Horovod wrapper
    (HVD011 "Use a scaled ...": `--no-scale-lr` does not leave that one)."""
    return finding.code in LR_SCALING or finding.code == "HVD011" and "scaled" in finding.fix.title


def _identical(note: str) -> str:
    """A point-5 note, saying "nothing to distribute" where every rank computes the same step."""
    return note.replace("not divided: each step trains on the same data on every rank (",
                        f"{NOTHING_TO_DISTRIBUTE} (", 1)


RL_MODULES = ("gym", "gymnasium")


def own_episodes(analysis: Analysis) -> str:
    """``line N: gym.make(...)`` when the program has no dataset and makes its samples with a
    reinforcement-learning environment (keras-io's actor-critic): there is no data to divide,
    each rank's episodes are its own; '' otherwise."""
    env = analysis.env
    if env is None or any(b.role == "dataset" for b in env.with_role()):
        return ""
    aliases = {local for node in env.index.imports for local, full in import_bindings(node) if full in RL_MODULES}
    for call in env.index.by_method.get("make", ()):
        parts = (call.callee_dotted() or "").split(".")
        if len(parts) == 2 and parts[0] in aliases:
            return f"line {call.node.start_pos[0]}: {call.callee_dotted()}(...)"
    return ""


def without_overlaps(edits: list[Edit]) -> list[Edit]:
    """Sort stably by position, drop an edit that overlaps an earlier one, and separate two
    arguments put into one empty argument list by ", "."""
    out: list[Edit] = []
    seen: set[Edit] = set()     # sites sharing edits (one rank-0 guard around a run of statements)
    last = -1
    # at one offset, whole inserted lines go before text inserted into the line there (a set-up
    # line must not land after the `if hvd.rank() == 0: ` guard put before that line's statement)
    argument_at = -1            # where an argument went into an empty argument list
    for e in sorted(edits, key=lambda e: (e.start, e.end, not (e.start == e.end and e.new_text.endswith(("\n", "\r"))))):
        if e.start < last or e in seen:
            continue
        seen.add(e)
        if e.argument and argument_at == e.start:      # ``fit()`` given callbacks= and verbose=
            e = Edit(e.start, e.end, ", " + e.new_text)
        elif e.argument:
            argument_at = e.start
        out.append(e)
        last = max(last, e.end)
    return out


class Cancelled(Exception):
    """`analyze`'s `stop` said the result is no longer wanted (the buffer changed again)."""


def _check(stop) -> None:
    if stop is not None and stop():
        raise Cancelled


def analyze(text: str, select: set[str] | None = None, module=None, memo=None, stop=None,
            line_starts: list[int] | None = None, keras_target: str = "tf.keras",
            library_spans: tuple = (), scale_lr: bool = True, require_local_fs: bool = False) -> Analysis:
    """All findings of one buffer; tolerant of syntax errors, never raises.

    `module` is an already parsed tree of exactly `text` (the language server passes the
    result of parso's incremental diff parser); by default the text is parsed here.
    `memo` (an `index_memo.IndexMemo`, one per buffer) reuses the work on the top-level
    statements that tree kept from the previous version; the result is the same.
    `stop` (language server: "has a newer edit arrived?") is asked between the passes;
    when it answers true the analysis raises `Cancelled` instead of finishing.
    `line_starts`: the offsets at which the lines of `text` start, when the caller has them.
    `keras_target`: the Keras 2 that Keras 3 imports become, ``tf.keras`` (TF <= 2.15, the
    pinned stack) or ``tf_keras`` (TF >= 2.16), or ``keras3`` (Keras 3 itself, TensorFlow
    backend, through Horovod's TensorFlow ops), which a program using Keras-3-only API gets
    whatever was asked (`Analysis.keras_target`); see rules/keras_target.py.
    `library_spans`: (start, end) offsets of the text that are other modules of the program
    (a linked project, project/link.py): their imports are in their own module's order, not
    below the entry's code (R1 does not apply to them).
    `scale_lr`: False leaves the learning rate as it is (`Analysis.scale_lr`).
    `require_local_fs`: True refuses a conversion whose ranks read rank 0's files after a
    barrier (`Analysis.require_local_fs`).
    """
    try:
        source = Source(text, module, line_starts)
    except Exception:  # parso itself failed: nothing to report
        log.exception("parse failed")
        return Analysis(Source(""), internal_errors=[traceback.format_exc()])
    analysis = Analysis(source, scale_lr=scale_lr, require_local_fs=require_local_fs)
    try:
        _run(analysis, memo, stop, keras_target, library_spans)
    except Cancelled:
        raise
    except (TooDeep, RecursionError) as e:    # pathological nesting: a clean, empty result
        analysis.error = e if isinstance(e, TooDeep) else TooDeep("too deeply nested to analyse", 1, 1)
        analysis.findings, analysis.setup = [], None
    except Exception:
        log.exception("analysis failed")
        analysis.internal_errors.append(traceback.format_exc())
    if select:  # the set-up (`analysis.setup`) still travels with the fixes that need it
        analysis.findings = [f for f in analysis.findings if f.code in select]
    return analysis


def _run(analysis: Analysis, memo=None, stop=None, keras_target: str = "tf.keras", library_spans: tuple = ()) -> None:
    source = analysis.source
    _check(stop)
    env = analysis.env = build_env(source, memo)
    env.library_spans = library_spans
    if not (env.tf_names or env.keras_import or env.horovod()):
        return  # not a TensorFlow program
    _check(stop)
    summary = analysis.summary = summarize(env)
    _check(stop)
    problems = restrictions.check(env, summary)
    # Keras-3-only API runs on the keras3 target only (point 11), whichever target was asked for
    reason = keras3_target_reason(env, keras_target)
    if reason is not None:
        keras_target = "keras3"
    analysis.keras_target, analysis.keras_target_reason = keras_target, reason
    problems += keras3_problems(env, keras_target)     # what the target cannot run blocks the whole program
    facts = analysis.facts = HvdFacts(env)
    ctx = RuleContext(source, env, summary, restrictions.Blocker(problems), facts, keras_target)
    ctx.keras_target_reason = reason
    findings: list[Finding] = []
    ctx.earlier = findings      # what the rule modules before a module found (rules/schedules.py reads it)
    for module in RULE_MODULES:
        _check(stop)
        try:
            findings.extend(module.check(ctx))
        except Exception:
            log.exception("rule module %s failed", module.__name__)
            analysis.internal_errors.append(f"rule module {module.__name__} failed\n{traceback.format_exc()}")
    analysis.notes = list(ctx.__dict__.get("notes", ()))
    findings = setup_imports.placed(ctx, findings)      # a late TensorFlow import (HVD-R1)
    # the keras3 target's adapters: one block after the set-up
    findings = keras3_adapters.merged(ctx, findings, setup_imports.after_setup(ctx), setup_imports.tf_name(ctx))
    analysis.setup = next((f for f in findings if f.code in ("HVD001", "HVD002")), None)
    if analysis.setup is None and not facts.uses_horovod:
        findings = []  # without the set-up no edit can run (a restriction says why)
    analysis.refusals = [p for p in problems if p.everywhere or set(p.blocks) & LOOP_BLOCKING]
    if not summary.sites and not facts.uses_horovod:
        # training no loop kind covers (restrictions._unwrapped_training): refused, with what to do
        analysis.refusals = [p for p in analysis.refusals if p.code == "T2"]
    if analysis.refusals and (not summary.sites or any(not s.distributed for s in summary.sites)):
        # All or nothing: half a conversion (guards and set-up around a loop whose gradients
        # are never averaged) trains ranks that never agree, so no rule site keeps its fix.
        findings, analysis.setup = [], None
    else:
        analysis.refusals = []
    findings += _loop_findings(source, summary)
    findings += _restriction_findings(source, problems)
    converting = not analysis.refusals and (analysis.setup is not None or facts.uses_horovod)
    # warnings (HVD090-092) survive a refused conversion; their fixes only join a conversion
    findings = stack_traps.merged(ctx, findings, converting)
    findings.sort(key=lambda f: (f.start, f.end, f.code))
    analysis.findings = findings


def _loop_findings(source: Source, summary: Summary) -> list[Finding]:
    out = []
    for site in summary.sites:
        if site.distributed:
            continue
        start, end = source.span(site.node)
        related = [Related(*source.span(node), msg) for node, msg in site.related]
        if site.driver is not None:
            header = site.driver.children[0]
            related.insert(0, Related(*source.span(site.driver_header),
                                      f"the `{header.value}` loop that drives this training step"))
        code = LOOP_CODES[site.kind]
        out.append(Finding(code, start, end, codes.LOOPS[code][1], SEVERITY_LOOP, None, related=related))
    return out


def _restriction_findings(source: Source, problems) -> list[Finding]:
    out = []
    for p in problems:
        if p.code.startswith("HVD"):
            continue      # a rule code's own fact (HVD092): reported by that rule
        start, end = source.span(p.node)
        code = f"HVD-{p.code}"
        related = [Related(*source.span(node), msg) for node, msg in p.related]
        # the message stays one short line; the rules it stops are in `blocks` (JSON, hover)
        out.append(Finding(code, start, end, p.message, SEVERITY_RESTRICTION, None,
                           related=related, blocks=tuple(p.blocks)))
    return out


def conversion(text: str, keras_target: str = "tf.keras", scale_lr: bool = True,
               require_local_fs: bool = False) -> Analysis:
    """The analysis a whole-file conversion applies (one parse, one analysis: the CLI's
    report and warnings read the same one); raises `ParseError` when the input does not
    parse or is too deeply nested. `scale_lr` False: the learning rate is left as it is
    (`Analysis.scale_lr`); `require_local_fs` True: `Analysis.require_local_fs`."""
    source = Source(text)
    source.check_parses()
    unwrapped, spans = cell_magics.unwrap(text)
    analysis = analyze(unwrapped, module=None if spans else source.module, keras_target=keras_target,
                       scale_lr=scale_lr, require_local_fs=require_local_fs)
    if analysis.error is not None:
        raise analysis.error
    if spans:
        analysis.original = text
        _in_strings(analysis, spans)
    return analysis


def _in_strings(analysis: Analysis, spans) -> None:
    """An edit inside a run_cell_magic call's string (or across its head) would not be code
    there: point 7 says so, and the conversion is refused (all or nothing)."""
    for e in analysis.conversion_edits():
        if not cell_magics.outside(spans, e.start, e.end, e.new_text):
            start, _end, b0, b1 = next(s for s in spans if not cell_magics.outside([s], e.start, e.end, e.new_text))
            line = analysis.source.text.count("\n", 0, start) + 1
            analysis.notes.append((7, line, (
                f"not done: line {line} runs `{analysis.source.text[b0:b1]}` from a string "
                "(`get_ipython().run_cell_magic(...)`, a notebook's cell magic exported as a script), and the "
                "conversion would edit inside it: write that code as code (without the magic), then convert again")))
            return


def convert_text(text: str, keras_target: str = "tf.keras", scale_lr: bool = True,
                 require_local_fs: bool = False) -> str:
    """The whole-file conversion; raises `ParseError` when the input does not parse."""
    return conversion(text, keras_target, scale_lr, require_local_fs).converted()


__all__ = ["Analysis", "analyze", "conversion", "convert_text", "ParseError", "WHOLE_FILE_TITLE"]
