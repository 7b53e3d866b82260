"""Every public diagnostic code: name, one-line summary, severity, and its long
explanation (``docs/<CODE>.md`` inside the package — rendered by ``horovodize explain``,
by hover, and linked from diagnostics).

Severity scheme (same in the CLI and the server, modelled on ruff/pyright):
loop findings are ``information`` (they carry "Make Horovod-distributed"), rule sites are
``hint`` (each has its own quick fix), restriction violations are ``warning`` (a rule
could not be applied there).
"""

from __future__ import annotations

from importlib import resources

from .rules.base import SEVERITY_LOOP, SEVERITY_RESTRICTION, SEVERITY_RULE
from .rules.catalogue import RULES
from .rules.horovod_misuse import RULES as HOROVOD_MISUSE
from .rules.stack_traps import RULES as STACK_TRAPS

LOOPS = {
    "HVD100": ("gradient-tape-loop", "single-GPU GradientTape training loop detected"),
    "HVD101": ("keras-fit-loop", "single-GPU optimizer detected: Keras fit training loop"),
    "HVD102": ("estimator-loop", "single-GPU Estimator training detected"),
    "HVD103": ("session-loop", "single-GPU Session training detected"),
}
RESTRICTIONS = {
    "HVD-R1": ("imports-at-top", "all imports at the top of the module"),
    "HVD-R2": ("tensorflow-bound-by-import", "the tensorflow module is bound only by an import"),
    "HVD-R3": ("no-member-alias", "members of the tensorflow module are not aliased"),
    "HVD-R4": ("pure-print", "print calls have no side effects"),
    "HVD-R5": ("create-once", "dataset and optimizer are created once, by an assignment of a call, and not aliased"),
    "HVD-R6": ("no-reassignment", "a dataset/optimizer variable is not reassigned to something else"),
    "HVD-R7": ("unconditional-creation", "dataset and optimizer are not created conditionally"),
    "HVD-R8": ("apply-gradients-statement", "apply_gradients is an expression statement or the direct right-hand side of an assignment"),
    "HVD-R9": ("global-optimizer-first", "a global optimizer used in functions is defined before them and not changed after"),
    "HVD-R10": ("checkpoint-once", "a checkpoint is created once, by an assignment of a call, and not aliased"),
    "HVD-T1": ("one-file", "the training loop is defined in one file"),
    "HVD-T2": ("supported-loop", "the loop is a distributed-tape or a distributed-optimizer loop"),
    "HVD-T3": ("one-loop-per-model", "one model has one kind of training loop"),
    "HVD-T4": ("functions-not-values", "functions are not assigned to variables or passed as arguments"),
    "HVD-T5": ("unconditional-loop", "the training loop is not defined conditionally"),
    "HVD-S1": ("session-traceable", "the session that runs the training step can be told from the code"),
    "HVD-S2": ("session-initialized", "the training session runs its variables' initializer (or a restore) where it is created"),
    "HVD-S3": ("session-step-count", "the training step runs in `for _ in range(n)` or `while not sess.should_stop()`"),
}


# Rule codes that only warn (no quick fix): severity warning. Other families add theirs here.
WARNING_RULES: dict[str, tuple[str, str]] = {**STACK_TRAPS}
WARNING_RULES.update(HOROVOD_MISUSE)      # HVD200-HVD208: warnings, some with a quick fix


def severity(code: str) -> str:
    if code in WARNING_RULES:
        return SEVERITY_RESTRICTION
    if code in LOOPS:
        return SEVERITY_LOOP
    if code in RESTRICTIONS:
        return SEVERITY_RESTRICTION
    return SEVERITY_RULE


def all_codes() -> dict[str, tuple[str, str]]:
    return {**RULES, **WARNING_RULES, **LOOPS, **RESTRICTIONS}


def normalize(code: str) -> str | None:
    """Accept ``hvd010``, ``R7``, ``hvd-r7``: return the public code or None."""
    c = code.strip().upper()
    if c in all_codes():
        return c
    if "HVD-" + c in all_codes():
        return "HVD-" + c
    return None


def doc(code: str) -> str:
    """The long explanation (markdown)."""
    path = resources.files("horovodize").joinpath("docs", f"{code}.md")
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        name, summary = all_codes()[code]
        return f"# {code} ({name})\n\n{summary}\n"


def doc_path(code: str):
    return resources.files("horovodize").joinpath("docs", f"{code}.md")
