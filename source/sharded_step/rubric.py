"""sharded_step's rubric, composed: the grader imports this file (``load_rubric``), and it names, in order, the
modules that register judges on the one ``rubric``, then wraps the judge that also checks its function's inputs.

    rubric_cases.py        the hidden cases (as released: its text draws the programs' inputs)
    rubric_keys.py         the keys the test cells record under, with their words
    rubric_step.py         the ``Rubric``, the step's references and programs, the loss and gradient, update and
                           placement tests
    rubric_transfer.py     the ten steps, the transfer and the quiz

The expected values come from the analytic gradient 2/N X^T (Xw - y), never from JAX.
"""
from grader.rubric import keeps_inputs

from . import rubric_transfer  # noqa: F401 - registers its judges on `rubric`
from .rubric_step import rubric

# A function the tests call with the caller's arrays is charged at its own test if it writes into them.
keeps_inputs(rubric, "test-transfer", "inputs.transfer_step", "transfer_step",
             ["true_weights", "start", "learning_rate"])

__all__ = ["rubric"]
