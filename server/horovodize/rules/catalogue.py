"""The rule catalogue: one module per rule family, in conversion order.

Order matters only where two rules insert at the same offset (e.g. HVD050's
``callbacks=`` before HVD051's ``verbose=`` at a ``fit`` call's closing parenthesis):
edits at one point are applied in the order the rules yield them. HVD044's wrapper comes
right after the set-up: its closing allreduce must precede a barrier HVD033 puts before
the next statement (two collectives in a different order on two ranks would hang).
"""

from . import (
    data_acquisition,
    data_shard,
    estimator,
    gradient_tape,
    keras_fit,
    optimizer,
    rank0_guards,
    setup_imports,
    use_site,
    work_division,
)

RULE_MODULES = (setup_imports, data_acquisition, optimizer, gradient_tape, rank0_guards, data_shard, use_site, work_division, keras_fit, estimator)

from . import tf1_session  # noqa: E402  (TF1 graph mode: HVD070-HVD074)

RULE_MODULES = RULE_MODULES + (tf1_session,)

from . import horovod_misuse  # noqa: E402  (warnings on code that already uses Horovod: HVD200-HVD208)

RULE_MODULES = RULE_MODULES + (horovod_misuse,)

from . import collective_flow  # noqa: E402  (contract point 10: per-rank loop exits, HVD080)

RULE_MODULES = RULE_MODULES + (collective_flow,)

from . import data_seeds  # noqa: E402  (contract point 5: the same random split on every rank, HVD045)

RULE_MODULES = RULE_MODULES + (data_seeds,)

from . import step_loops  # noqa: E402  (contract point 5: range(n) step loops, HVD042 there, HVD048)

RULE_MODULES = RULE_MODULES + (step_loops,)

from . import schedules  # noqa: E402  (contract point 4: schedules follow the divided steps, HVD047)

RULE_MODULES = RULE_MODULES + (schedules,)

from . import epoch_counts  # noqa: E402  (contract point 5: initial_epoch and the epochs' name after a divided fit)

RULE_MODULES = RULE_MODULES + (epoch_counts,)

from . import step_counts  # noqa: E402  (contract point 5: a checkpoint every K steps of a divided loop)

RULE_MODULES = RULE_MODULES + (step_counts,)

from . import identical_data  # noqa: E402  (contract point 5: undivided data the same on every rank; last: it reads
#   the point-5 notes every dividing rule above left)

RULE_MODULES = RULE_MODULES + (identical_data,)

RULES: dict[str, tuple[str, str]] = {}
for _module in RULE_MODULES:
    RULES.update(_module.RULES)
