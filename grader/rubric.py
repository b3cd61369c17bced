"""Everything a rubric uses, from one place: ``from grader.rubric import ...`` (docs/reference/rubric-api.md).

One way per job:

    Key                      a record key and its words for the learner, declared once in ``rubric_cases.py``
                             beside the hidden cases; the test cell records under it, the judge reads it
    Rubric, Evidence         the judges by test cell (``@rubric.test``), and what a judge reads and checks
    Reference, mistake       a reference and its named mistakes, as functions applied to a case
    factors, scaled,         mistakes that are the reference times known factors; the lessons' wrong denominators
    denominator_mistakes
    Program, Input, Expect   the programs a test cell exports, and what they must look like, as data
    HostCopy, Trace,         what a hidden test watched in the kernel (``coursekit.checks``), read back typed with
    Dispatch, Kept           ``e.outcome(key, HostCopy)``
    keeps_inputs             a function must also leave its arguments unchanged
    Mismatch                 a failed check (a judge may catch one to say more, or raise its own)

A rubric is trusted instructor code that the grader imports (``grader.submission.rubric_loading``); nothing in
``grader/`` imports this module, which only gathers the names.
"""
from __future__ import annotations

from coursekit.checks import Dispatch, HostCopy, Kept, Trace
from coursekit.record import Key
from grader.programs import Expect, Input, Program
from grader.submission.judge import Evidence, Rubric, keeps_inputs
from grader.submission.mistakes import Mismatch, denominator_mistakes, scaled
from grader.submission.references import Reference, factors, mistake, reference

__all__ = ["Dispatch", "Evidence", "Expect", "HostCopy", "Input", "Kept", "Key", "Mismatch", "Program", "Reference",
           "Rubric", "Trace", "denominator_mistakes", "factors", "keeps_inputs", "mistake", "reference", "scaled"]
