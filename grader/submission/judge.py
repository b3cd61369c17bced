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
import re
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from grader.programs import Program, ProgramRun
from grader.submission.records import Recorded
from grader.submission.mistakes import (Mismatch, Mistake, denominator_mistakes, diagnose, scaled,  # noqa: F401
                                        shown_dtype, shown_shape, simple_ratio)  # re-exported: the rubrics import them from here


# An HLO sharding as XLA prints a plain one ({replicated}, {devices=[4,1]<=[4]}); anything longer or with other
# characters (metadata holds any text) is the program's own text and is not quoted.
_PLAIN_SHARDING = re.compile(r"\{[a-z_]*(=\[[0-9,]{1,20}\](<=\[[0-9,]{1,12}\](T\([0-9,]{1,12}\))?)?)?( last_tile_dim_replicate)?\}")


# What a test says of a value its cell never recorded: the notebook stopped before it, or a cell raised
# (grader.raised.not_recorded). The class report counts these apart from the mistakes of learners who got that far.
NOT_CHECKED = "not checked: "
NOT_REACHED = (NOT_CHECKED + "the notebook stopped before this test could record it "
               "(is every TODO above it solved and run?)")



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


class Evidence:
    """The records of one test cell, with checks that raise ``Mismatch``."""

    #: what a failed part catches; every other exception leaves ``part`` unchanged (a subclass may raise its own,
    #: for evidence it does not have, and decide what that means)
    part_failures: tuple[type[BaseException], ...] = (Mismatch,)

    def __init__(self, records: dict[str, Recorded], broken: list[str] | None = None, *, num_devices: int = 4,
                 names: dict[str, str] | None = None, programs: dict[str, ProgramRun] | None = None,
                 elsewhere: dict[str, dict[str, Recorded]] | None = None):
        self._records = records
        #: grade_id -> the well-formed records of another test cell of the notebook (``elsewhere``)
        self._elsewhere = dict(elsewhere or {})
        #: record key -> what the program recorded under it did in the grader's runner (``grader.programs``)
        self._programs = dict(programs or {})
        self._broken = set(broken or [])
        #: the device count the grader ran the notebook with (not what the kernel claims)
        self.num_devices = num_devices
        #: record key -> the words a learner knows for it (set by ``Rubric.judge``)
        self.names = dict(names or {})
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

    def elsewhere(self, grade_id: str, key: str) -> np.ndarray | None:
        """An array another test cell recorded (that test's own evidence, to check a relative judgement against),
        as float64; None when it did not, or recorded no plain array (Validate has none: ``ShownEvidence``)."""
        recorded = self._elsewhere.get(grade_id, {}).get(key)
        if recorded is None or recorded.kind not in ("array", "jax_array") or recorded.value.dtype.kind not in "fiu":
            return None
        return recorded.value.astype(np.float64)

    def name(self, key: str, what: str | None = None) -> str:
        return what or self.names.get(key) or key

    # -- access ---------------------------------------------------------
    def has(self, key: str) -> bool:
        return key in self._records and key not in self._broken

    def get(self, key: str, *, what: str | None = None) -> Recorded:
        name = self.name(key, what)
        if key in self._broken:
            raise Mismatch(f"{name}: recorded more than once or malformed; the test cell must run unmodified")
        if key not in self._records:
            raise Mismatch(f"{name}: {NOT_REACHED}")
        recorded = self._records[key]
        if recorded.kind == "rejected":
            # Not the object's type name: a learner class can be named with any text (hidden-test source included).
            raise Mismatch(f"{name}: got an object of another type, expected a plain NumPy or JAX array/number")
        return recorded

    def array(self, key: str, *, shape=None, float_dtype: bool = True, jax: bool = False,
              what: str | None = None, shape_mistakes: dict[tuple, str] | None = None) -> np.ndarray:
        name = self.name(key, what)
        recorded = self.get(key, what=what)
        if recorded.kind not in ("array", "jax_array"):
            raise Mismatch(f"{name}: expected an array, got a {recorded.kind}")
        if jax and recorded.kind != "jax_array":
            raise Mismatch(f"{name}: expected a JAX array computed on the devices, got a host array")
        value = recorded.value
        if float_dtype and value.dtype.kind != "f":
            raise Mismatch(f"{name}: expected floating-point values, got dtype {shown_dtype(value.dtype)}")
        if shape is not None and tuple(value.shape) != tuple(shape):
            hint = (shape_mistakes or {}).get(tuple(value.shape))
            raise Mismatch(f"{name}: expected shape {tuple(shape)}, got {shown_shape(value.shape)}"
                           + (f": {hint}" if hint else ""))
        if value.dtype.kind == "f" and not np.all(np.isfinite(value)):
            raise Mismatch(f"{name}: contains NaN or infinity")
        return value

    def number(self, key: str, *, what: str | None = None) -> float:
        name = self.name(key, what)
        recorded = self.get(key, what=what)
        if recorded.kind == "scalar" and type(recorded.value) in (int, float) and not isinstance(recorded.value, bool):
            value = float(recorded.value)
        elif recorded.kind in ("array", "jax_array") and recorded.value.size == 1 and recorded.value.dtype.kind in "fi":
            value = float(recorded.value.reshape(()))
        else:
            raise Mismatch(f"{name}: expected a single number")
        if not math.isfinite(value):
            raise Mismatch(f"{name}: is NaN or infinite")
        return value

    def text(self, key: str, *, what: str | None = None) -> str:
        recorded = self.get(key, what=what)
        if recorded.kind != "scalar" or type(recorded.value) is not str:
            raise Mismatch(f"{self.name(key, what)}: expected text")
        return recorded.value

    def values(self, key: str, shape, *, what: str | None = None, shape_mistakes=None) -> np.ndarray:
        """The recorded number or array as float64, checked for shape and finiteness."""
        if tuple(shape) == ():
            recorded = self.get(key, what=what)
            if recorded.kind in ("array", "jax_array") and recorded.value.size != 1:
                hint = (shape_mistakes or {}).get(tuple(recorded.value.shape))
                raise Mismatch(f"{self.name(key, what)}: expected a single number, got shape "
                               f"{shown_shape(recorded.value.shape)}" + (f": {hint}" if hint else ""))
            return np.asarray(self.number(key, what=what), dtype=np.float64)
        return self.array(key, shape=shape, what=what, shape_mistakes=shape_mistakes).astype(np.float64)

    # -- checks ---------------------------------------------------------
    def close(self, key: str, expected, *, rtol: float = 1e-5, atol: float = 1e-6, what: str | None = None,
              mistakes: list[Mistake] | None = None, shape_mistakes: dict[tuple, str] | None = None) -> np.ndarray:
        expected = np.asarray(expected, dtype=np.float64)
        actual = self.values(key, expected.shape, what=what, shape_mistakes=shape_mistakes)
        if not np.allclose(actual, expected, rtol=rtol, atol=atol):
            hint = diagnose(actual, mistakes, rtol=max(rtol, 1e-4), atol=max(atol, 1e-6))
            ratio = None if hint else simple_ratio(actual, expected)  # what differs, when no mistake is the cause
            raise Mismatch(f"{self.name(key, what)}: differs from the host NumPy reference"
                           + (f": {hint}" if hint else f": it is {ratio} the reference" if ratio else ""),
                           named=hint is not None)
        return actual

    def close_to_any(self, key: str, candidates: list, *, rtol: float = 1e-5, atol: float = 1e-6,
                     what: str | None = None, mistakes: list[Mistake] | None = None,
                     reason: str = "differs from the host NumPy reference") -> np.ndarray:
        """Passes when the value matches any of ``candidates`` (the reference, or the learner's own values)."""
        shapes = {np.shape(c) for c in candidates}
        expected_shape = next(iter(shapes))
        actual = self.values(key, expected_shape, what=what)
        for candidate in candidates:
            if np.allclose(actual, np.asarray(candidate, dtype=np.float64), rtol=rtol, atol=atol):
                return actual
        hint = diagnose(actual, mistakes, rtol=max(rtol, 1e-4), atol=max(atol, 1e-6))
        raise Mismatch(f"{self.name(key, what)}: {reason}" + (f": {hint}" if hint else ""))

    def equal(self, key: str, expected, *, what: str | None = None, mistakes: dict | None = None) -> None:
        recorded = self.get(key, what=what)
        value = recorded.value
        if recorded.kind in ("array", "jax_array"):
            value = value.tolist()
        if type(value) is not type(expected) or value != expected:
            hint = (mistakes or {}).get(value) if isinstance(value, (int, float, str)) else None
            raise Mismatch(f"{self.name(key, what)} is not the expected answer" + (f": {hint}" if hint else ""))

    def shard_shapes(self, key: str, expected_shape, *, devices: int | None = None, what: str | None = None) -> None:
        name = self.name(key, what)
        recorded = self.get(key, what=what)
        if recorded.kind != "jax_array":
            raise Mismatch(f"{name}: expected a JAX array placed on the devices, got a host array")
        if devices is not None and len(recorded.shards) != devices:
            found = len(recorded.shards) if len(recorded.shards) <= 64 else "more"
            raise Mismatch(f"{name}: expected a shard on each of the {devices} devices, found {found}")
        shapes = {tuple(s.value.shape) for s in recorded.shards}
        if not recorded.shards or shapes != {tuple(expected_shape)}:
            found = ", ".join(shown_shape(shape) for shape in sorted(shapes)[:2]) + (", ..." if len(shapes) > 2 else "")
            raise Mismatch(f"{name}: each device should hold shape {tuple(expected_shape)}, found {found}")

    def replicas_close(self, key: str, expected, *, rtol: float = 1e-5, atol: float = 1e-6, what: str | None = None,
                       against: str = "the host reference") -> None:
        """Every addressable shard holds the whole ``expected`` array."""
        expected = np.asarray(expected, dtype=np.float64)
        self.shard_shapes(key, expected.shape, what=what)
        for shard in self.get(key, what=what).shards:
            if not np.allclose(shard.value.astype(np.float64), expected, rtol=rtol, atol=atol):
                raise Mismatch(f"{self.name(key, what)}: the copy on device {shard.device} differs from {against}")

    def require(self, condition: bool, message: str) -> None:
        if not condition:
            raise Mismatch(message)

    # -- programs, run outside the kernel -------------------------------------
    def program(self, key: str, *, what: str | None = None) -> ProgramRun:
        """The run of the program recorded under ``key`` on the grader's own inputs; ``Mismatch`` if it did not run."""
        name = self.name(key, what)
        run = self._programs.get(key)
        if run is None:
            raise Mismatch(f"{name}: no program was recorded (the test stopped before exporting it)")
        if run.error:
            raise Mismatch(f"{name}: {run.error}")
        return run

    def program_inputs(self, key: str, *, what: str | None = None) -> ProgramRun:
        """The program's run, after checking that it takes its inputs split as the course says."""
        name = self.name(key, what)
        run = self.program(key, what=what)
        for index, (actual, expected) in enumerate(zip(run.in_shardings, run.expected_in_shardings)):
            if actual is not None and actual != expected:
                actual = actual if _PLAIN_SHARDING.fullmatch(actual) else "another placement"
                raise Mismatch(f"{name}: argument {index + 1} is placed as {actual}, the course places it as "
                               f"{expected} (use the shardings the notebook defines, on the mesh they name)")
        return run

    def program_shardings(self, key: str, *, outputs: list[bool], what: str | None = None) -> ProgramRun:
        """The program takes its inputs split as the course says, and ``outputs[i]`` says whether output i is
        replicated on every device (True) or split (False)."""
        name = self.name(key, what)
        run = self.program_inputs(key, what=what)
        self.require(len(run.outputs) == len(outputs),
                     f"{name}: returns {len(run.outputs)} value(s), expected {len(outputs)}")
        for index, (output, replicated) in enumerate(zip(run.outputs, outputs)):
            self.require(output.shards_consistent, f"{name}: output {index + 1}'s shards disagree with its value")
            if replicated:
                self.require(output.replicated, f"{name}: output {index + 1} should be replicated on every device, "
                                                f"it is split as {output.sharding}")
            else:
                self.require(not output.replicated, f"{name}: output {index + 1} should stay split over the "
                                                    "devices, it is replicated")
        return run

    def program_close(self, key: str, index: int, expected, *, rtol: float = 1e-4, atol: float = 1e-5,
                      what: str | None = None, mistakes: list[Mistake] | None = None) -> None:
        """Output ``index`` of the program's run equals ``expected`` (computed by the rubric from ``run.inputs``)."""
        name = self.name(key, what)
        run = self.program(key, what=what)
        self.require(index < len(run.outputs), f"{name}: returns {len(run.outputs)} value(s), not {index + 1}")
        actual = run.outputs[index].value
        expected = np.asarray(expected, dtype=np.float64)
        if actual.shape != expected.shape:
            raise Mismatch(f"{name}: has shape {shown_shape(actual.shape)} on the grader's inputs, expected "
                           f"{expected.shape}")
        if not np.allclose(actual, expected, rtol=rtol, atol=atol):
            said = diagnose(actual, mistakes or [], rtol=rtol, atol=atol)
            ratio = None if said else simple_ratio(actual, expected)
            raise Mismatch(f"{name}: wrong on inputs it had not seen" + (
                f": {said}" if said else f": it is {ratio} the reference" if ratio else ""), named=said is not None)


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

    def test(self, grade_id: str) -> Callable[[Judge], Judge]:
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

    The test cell records under ``key`` one flag per argument (``coursekit.checks.call_keeping_inputs``: 1 kept,
    0 changed) from a call on fresh data. A function that writes into the caller's array is charged here, at its own
    test, by name, not at whichever later test first used the damaged array. Values are judged first: a function
    that is wrong and also writes into its input is told about its values, then about the argument it changed.
    """
    judge = rubric.judges[grade_id]

    def changed(e: Evidence) -> str | None:
        kept = e.array(key, shape=(len(arguments),), float_dtype=False,
                       what=f"whether {function} left its arguments unchanged")
        argument = next((name for name, flag in zip(arguments, kept.tolist()) if flag != 1), None)
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


from grader.submission.rubric_loading import load_rubric  # noqa: E402,F401  (re-exported: the callers' name)
