"""collectives' rubric, composed: the grader imports this file (``load_rubric``), and it names, in order, the modules
that register judges on the one ``rubric``, then wraps the judges that also check their function's inputs.

    rubric_keys.py           the keys the test cells record under, with their words
    rubric_collectives.py    the ``Rubric``, the shared references, the collective and program tests
    rubric_measurements.py   the timer, the ring payload and the transfer budget
    rubric_momentum.py       the partitioned momentum step and the make-it-yours reversal experiment

Each sibling imports what it needs from ``rubric_collectives`` and nothing imports this file, so there is no cycle,
and ``keeps_inputs`` below wraps judges every module has registered by then.
"""
from grader.rubric import keeps_inputs

from .rubric_collectives import rubric
from . import rubric_measurements, rubric_momentum  # noqa: F401 - each registers its judges on `rubric`

# Each function the tests call with the caller's arrays is charged at its own test if it writes into them.
for _grade_id, _function, _arguments in [
    ("test-local-contribution", "local_contribution", ["features", "labels", "weights", "global_count"]),
    ("test-make-it-yours", "reversal_experiment", ["features", "labels", "weights"]),
    ("test-budget", "transfer_budget", ["gradient_bytes", "rank_counts"]),
]:
    keeps_inputs(rubric, _grade_id, f"inputs.{_function}", _function, _arguments)

__all__ = ["rubric"]
