"""Judge recorded values against references computed here, in the grader.

An assignment's ``source/<assignment>/rubric.py`` builds a ``Rubric`` and registers one judge per autograded
test cell (by nbgrader ``grade_id``). A judge receives the cell's ``Evidence`` and calls its checks; the first
failed check raises ``Mismatch`` with a message for the learner that never contains the reference values. Where
the lesson's rubric separates skills inside one test, the judge checks each in ``with e.part("the loss",
points=1): ...``: a ``Mismatch`` there fails that part only, judging goes on with the next part, and the test
scores the points of the parts that passed (which must add up to the cell's points). Messages name values in the
lesson's words (the rubric's ``names``, or a check's ``what``), never by their record keys, and when a wrong value
matches a mistake the lesson warns about (``Mistake``: p times the gradient, the local instead of the global
count, a transposed layout, ...) the message says which mistake it is.
"""
from __future__ import annotations

import contextlib
import math
from collections.abc import Callable
from dataclasses import dataclass, field

from coursekit.checks import Kept
from grader.programs import Program
from grader.submission.evidence.programs import ProgramChecks
from grader.submission.evidence.reading import NOT_CHECKED, NOT_REACHED  # noqa: F401  (re-exported)
from grader.submission.evidence.values import ValueChecks
from grader.submission.mistakes import (Mismatch, Mistake, denominator_mistakes, diagnose, scaled,  # noqa: F401
                                        shown_dtype, shown_shape, simple_ratio)  # re-exported: the rubrics import them from here


@dataclass
class Part:
    """One skill a test judges apart (``Evidence.part``): its words, its points, and why it failed (None: passed)."""

    what: str
    points: float
    failure: str | None = None


@dataclass(frozen=True)
class Verdict:
    """A test's outcome: the points it scores of its cell's, whether it passed whole, the learner's message."""

    points: float
    passed: bool
    message: str
    parts: tuple[Part, ...] = field(default=())


class Evidence(ProgramChecks, ValueChecks):
    """What a judge receives for one test cell: its records read typed (``evidence.reading``), the checks of values
    (``evidence.values``) and of programs (``evidence.programs``), and the skills judged apart (``part``)."""

    #: what a failed part catches; every other exception leaves ``part`` unchanged (a subclass may raise its own,
    #: for evidence it does not have, and decide what that means)
    part_failures: tuple[type[BaseException], ...] = (Mismatch,)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        #: the skills judged apart so far (``part``), in order
        self.parts: list[Part] = []
        self._in_part = False

    @contextlib.contextmanager
    def part(self, what: str, *, points: float):
        """Judge one skill of the test apart: a failure of ``part_failures`` (``Mismatch``) inside fails this part
        only, with its message, and the judge goes on after the ``with`` block; any other exception propagates
        unchanged. Parts do not nest."""
        if self._in_part:
            raise RuntimeError(f"part {what!r} inside another part (instructor error)")
        part = Part(what, float(points))
        self.parts.append(part)
        self._in_part = True
        try:
            yield part
        except self.part_failures as failure:
            part.failure = str(failure) or f"{what}: failed"
        finally:
            self._in_part = False


Judge = Callable[[Evidence], None]


class Rubric:
    """Judges by test-cell ``grade_id``, and the words a learner knows for each record key."""

    def __init__(self, names: dict[str, str] | None = None, *, after_submit: set[str] | None = None) -> None:
        self.judges: dict[str, Judge] = {}
        self.names: dict[str, str] = dict(names or {})
        #: record keys that are judged only after submission, never by Validate (a quiz's correctness: Validate
        #: answering right/wrong would let a learner try each choice); ``grader.service.validation`` stops there
        self.after_submit: frozenset[str] = frozenset(after_submit or ())
        #: grade_id -> the programs its test cell records, for a run with a given device count
        self.program_specs: dict[str, Callable[[int], list[Program]]] = {}

    def programs(self, grade_id: str) -> Callable:
        """Register ``declare(num_devices) -> [Program]``: the programs a test cell records (``grader.programs``)."""
        def register(declare):
            self.program_specs[grade_id] = declare
            return declare

        return register

    def declared(self, num_devices: int) -> dict[str, Program]:
        """Every program the rubric declares for a run on ``num_devices`` devices, by record key."""
        return {program.key: program for declare in self.program_specs.values() for program in declare(num_devices)}

    def test(self, grade_id: str, *, names: dict[str, str] | None = None) -> Callable[[Judge], Judge]:
        """Register the judge of the test cell ``grade_id``; ``names``: the words a learner knows for the keys that
        cell records, kept beside the judge that reads them (they join the rubric's ``names``: one key, one wording)."""
        for key, words in (names or {}).items():
            if self.names.get(key, words) != words:
                raise ValueError(f"{key!r} has two wordings: {self.names[key]!r} and {words!r}")
        self.names.update(names or {})

        def register(judge: Judge) -> Judge:
            if grade_id in self.judges:
                raise ValueError(f"two judges for {grade_id}")
            self.judges[grade_id] = judge
            return judge

        return register

    def judge(self, grade_id: str, evidence: Evidence) -> tuple[bool, str]:
        """(passed, learner message) for one test cell."""
        verdict = self.verdict(grade_id, evidence)
        return verdict.passed, verdict.message

    def verdict(self, grade_id: str, evidence: Evidence, points: float | None = None) -> Verdict:
        """The points one test cell scores of its ``points`` (1.0 when not given), whether it passed whole, and the
        learner's message. A judge with parts scores the points of the parts that passed; their points must add up
        to the cell's (an instructor error otherwise, which scores nothing). Without ``points`` (``judge``) nothing is
        checked against the cell: a test then scores 1.0, or the sum of its parts' points."""
        whole = None if points is None else float(points)
        if grade_id not in self.judges:
            return Verdict(0.0, False, f"{grade_id}: the course has no judge for this test (instructor error)")
        evidence.names = {**self.names, **evidence.names}
        evidence.declared = self.declared(evidence.num_devices)
        try:
            self.judges[grade_id](evidence)
        except Mismatch as failure:
            return self._scored(grade_id, evidence, whole, str(failure))
        except (ValueError, TypeError, IndexError, KeyError, ArithmeticError) as error:
            # Records are the learner's data: one a check cannot even compare (an index past the end, shapes that
            # do not broadcast) fails the test; it is not the grader failing. Instructor bugs still surface here,
            # named, in the message the instructor reads.
            return self._scored(grade_id, evidence, whole,
                                f"the recorded values could not be judged ({type(error).__name__})")
        return self._scored(grade_id, evidence, whole, None)

    @staticmethod
    def _scored(grade_id: str, evidence: Evidence, whole: float | None, failure: str | None) -> Verdict:
        parts = tuple(evidence.parts)
        if not parts:
            return Verdict(0.0, False, failure) if failure is not None else Verdict(1.0 if whole is None else whole, True, "passed")
        total = sum(p.points for p in parts)
        whole = total if whole is None else whole
        if not math.isclose(total, whole, rel_tol=1e-9, abs_tol=1e-9) or len({p.what for p in parts}) != len(parts):
            return Verdict(0.0, False, f"{grade_id}: the rubric's parts ({', '.join(p.what for p in parts)}) are worth "
                                       f"{total:g} points, the test cell {whole:g}, or two parts share a name "
                                       "(instructor error)", parts)
        failed = [p for p in parts if p.failure is not None]
        if failure is not None:  # a check outside every part failed: nothing of the test can be credited
            return Verdict(0.0, False, failure, parts)
        if not failed:
            return Verdict(whole, True, "passed", parts)
        scored = round(sum(p.points for p in parts if p.failure is None), 6)
        kept = [p for p in parts if p.failure is None]
        said = "; ".join(dict.fromkeys(p.failure for p in failed))  # one cause failing two parts is said once
        if kept:
            said += "; " + ", ".join(f"{p.what} passed ({p.points:g} of {whole:g} points)" for p in kept)
        return Verdict(scored, False, said, parts)


def keeps_inputs(rubric: Rubric, grade_id: str, key: str, function: str, arguments: list[str]) -> None:
    """Wrap the judge of ``grade_id``: ``function`` must also leave its arguments as they were.

    The test cell records under ``key`` one flag per argument (``coursekit.checks.call_keeping_inputs``: a ``Kept``
    each) from a call on fresh data. A function that writes into the caller's array is charged here, at its own
    test, by name, not at whichever later test first used the damaged array. Values are judged first: a function
    that is wrong and also writes into its input is told about its values, then about the argument it changed.
    """
    judge = rubric.judges[grade_id]

    def changed(e: Evidence) -> str | None:
        kept = e.outcomes(key, Kept, len(arguments), what=f"whether {function} left its arguments unchanged")
        argument = next((name for name, flag in zip(arguments, kept) if flag is not Kept.KEPT), None)
        return argument and (f"{function} changed its argument {argument}: it writes into the caller's data (an "
                             "assignment into the argument, an in-place operation such as +=, .sort() or a NaN "
                             "fill), so every later cell that uses that array sees the changed values: compute on "
                             "a copy, or with expressions that return new arrays (np.where, a * mask)")

    def judge_then_inputs(e: Evidence) -> None:
        try:
            judge(e)
        except Mismatch as failure:  # the values are wrong; when the function also wrote into its input, say so
            try:
                said = changed(e) if e.has(key) else None
            except Mismatch:  # an unusable record: the values' message stands alone
                said = None
            raise Mismatch(f"{failure}; also, {said}" if said else str(failure)) from None
        said = changed(e)
        if said:
            raise Mismatch(said)

    rubric.judges[grade_id] = judge_then_inputs

