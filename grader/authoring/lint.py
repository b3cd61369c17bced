"""Fail the author, not the learner: what ``python -m grader lint NAME`` checks of an assignment.

A rubric's mistakes otherwise surface at grading time, as every learner's zero (parts worth more than their cell,
a test without a judge) or as a message a learner cannot read (a record key instead of words). The lint finds them
before release, in two passes:

static (the notebook and the rubric, nothing runs)
    judged       every autograded test cell has a judge, and every judge a test cell
    points       every test cell is worth points
    programs     every program a test cell records (``record(key, exported(...))``) is declared with
                 ``@rubric.programs`` for that cell, and every declared one is recorded there
    scenarios    the assignment has a correct scenario and a wrong one (samples/scenarios/NAME, tests/corpus/NAME)

run (the instructor's solution, graded by the grader itself: the same kernel, program runner and judges)
    solution     the solution scores every test's full points at the course's device count (the hidden parts run
                 the smaller meshes too)
    read         every value a test records is read by its judge (a record nobody judges checks nothing)
    words        every value a judge reads has words a learner knows (its ``Key``'s words, or ``what=``)
    visible      a judge reads the values the visible checks record before hidden ones (Validate judges the
                 visible values alone and stops at the first it does not have)
    mistakes     every named mistake a judge passes is expected by a scenario (``expect-message``; the numbers of a
                 mistake worded for a device count or mesh size aside), so a test proves it fires (listed as
                 unproven; a failure only with ``--strict``)

Each problem names the check, the test cell and what to change.
"""
from __future__ import annotations

import asyncio
import re
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path

from grader import cells
from grader.cells import HIDDEN
from grader.layout import Course



# The checks whose findings do not fail the lint unless asked (``--strict``): the course's own rubrics name more
# mistakes than their scenarios prove (docs/how-to/author-a-lesson.md says how to add the scenario).
UNPROVEN = {"mistakes"}


@dataclass(frozen=True)
class Problem:
    check: str  # one of the module docstring's names
    where: str  # a test cell's grade_id, or a file
    says: str

    @property
    def fails(self) -> bool:
        return self.check not in UNPROVEN

    def __str__(self) -> str:
        return f"{self.where}: [{self.check}] {self.says}"


@dataclass
class Report:
    assignment: str
    problems: list[Problem] = field(default_factory=list)
    tests: int = 0
    mistakes: int = 0  # named mistakes the judges passed, on the solution's run

    def add(self, check: str, where: str, says: str) -> None:
        self.problems.append(Problem(check, where, says))

    def failures(self, strict: bool = False) -> list[Problem]:
        return [p for p in self.problems if strict or p.fails]


def recorded_keys(source: str, keys: dict[str, str] | None = None):
    """(the keys a test cell's visible code records, as Validate reads them: ``cells.record_keys``), and each
    ``record(key, exported(...))`` of the whole cell: (key as written, a pattern matching the keys it stands for);
    ``keys``: the ``Key``s of the assignment's ``rubric_cases`` a hidden part may record under, by name."""
    programs = [(text, pattern or re.compile(re.escape(text)))
                for text, pattern, exported in cells.record_calls(source, keys) if exported]
    return cells.record_keys(HIDDEN.sub("", source)), programs


def expected_messages(course: Course, name: str) -> tuple[list[str], int, int]:
    """The ``expect-message`` texts of the assignment's scenarios, and how many correct and wrong scenarios."""
    from grader.course.variants import parse

    messages, correct, wrong = [], 0, 0
    for folder in (course.samples / "scenarios" / name, course.root / "tests" / "corpus" / name):
        for path in sorted(folder.glob("*.py")) if folder.is_dir() else []:
            scenario = parse(path)
            messages += scenario.expect_message
            if scenario.expect_fail:
                wrong += 1
            elif scenario.base == "solution" and "requires" not in scenario.headers:
                correct += 1
    return messages, correct, wrong


def static(course: Course, name: str, report: Report, num_devices: int):
    """The checks that read files only; returns the rubric (None when it could not be loaded)."""
    from grader.submission.rubric_loading import load_rubric

    source = course.read_source(name)
    tests = {cells.grade_id(c): c for c in source.cells if cells.is_autograded_test(c)}
    report.tests = len(tests)
    try:
        rubric = load_rubric(course.rubric(name))
    except Exception as error:  # noqa: BLE001 - the author's file: any error is theirs to read
        report.add("judged", f"source/{name}/rubric.py", f"the rubric could not be loaded ({type(error).__name__}: "
                                                         f"{error})")
        return None
    for gid, cell in tests.items():
        if gid not in rubric.judges:
            report.add("judged", gid, f"no judge: add @rubric.test(\"{gid}\") in rubric.py (without one, every "
                                      "learner scores 0 on this test)")
        if cells.points(cell) <= 0:
            report.add("points", gid, "the test cell is worth no points: set its points in the nbgrader toolbar")
        declared = {p.key for p in rubric.program_specs[gid](num_devices)} if gid in rubric.program_specs else set()
        exported = recorded_keys(str(cell.source), case_keys(name))[1]
        for text, pattern in exported:
            if not any(pattern.fullmatch(key) for key in declared):
                report.add("programs", gid, f"records the exported program {text!r}, which the rubric does not "
                                            f"declare: add it to @rubric.programs(\"{gid}\") (an undeclared program "
                                            "is never run)")
        for key in sorted(declared):
            if not any(pattern.fullmatch(key) for _, pattern in exported):
                report.add("programs", gid, f"the rubric declares the program {key!r}, which the cell never records "
                                            "with record(key, exported(...))")
    for gid in sorted(set(rubric.judges) - set(tests)):
        report.add("judged", gid, "a judge without a test cell: no autograded test cell of the notebook has this "
                                  "grade_id")
    for gid in sorted(set(rubric.program_specs) - set(tests)):
        report.add("programs", gid, "programs declared for a grade_id no test cell has")
    _, correct, wrong = expected_messages(course, name)
    if not correct or not wrong:
        report.add("scenarios", f"samples/scenarios/{name}", f"{correct} correct and {wrong} wrong scenario(s): "
                                                             "write at least one of each (docs/how-to/author-a-lesson.md)")
    return rubric


def case_keys(name: str) -> dict[str, str]:
    """The ``Key``s (``coursekit.record``) the assignment's ``rubric_cases`` declares, by name, as the rubric's import
    left it (``load_rubric``); none when its rubric does not import it."""
    import sys

    module = sys.modules.get(f"_course_rubric_{name}.rubric_cases")
    return {attr: value for attr, value in vars(module).items() if hasattr(value, "words")} if module else {}


def visible_after_hidden(reads: list[tuple[str, int | None]], shown) -> tuple[str, str] | None:
    """(hidden key, visible key) when a visible value is first read where Validate no longer reads: after a hidden
    value (or a program) read outside every part, or after one read earlier in the same part (``Evidence.part``: a
    part Validate cannot finish ends there, and the next part goes on). A visible value read once before and again
    later (a last check whose words need the hidden values) is not lost: Validate judged it. ``reads``: (key, part
    index or None), in order."""
    stopped, stopped_parts, seen = None, {}, set()
    for key, part in reads:
        if shown(key):
            blocker = stopped or stopped_parts.get(part)
            if blocker is not None and key not in seen:
                return blocker, key
            seen.add(key)
        elif part is None:
            stopped = stopped or key
        else:
            stopped_parts.setdefault(part, key)
    return None


def _tracing(rubric):
    """An ``Evidence`` that notes what its judge reads, in order, which names it lacks and the mistakes passed."""
    from grader.submission.judge import Evidence

    class Traced(Evidence):
        made: list[Traced] = []

        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.read: list[tuple[str, int | None]] = []  # (key, the part it was read in, or None)
            self.unnamed: set[str] = set()
            self.mistakes: list[str] = []
            Traced.made.append(self)

        def name(self, key, what=None):
            if not what and not getattr(key, "words", None) and key not in self.names:
                self.unnamed.add(key)
            return super().name(key, what)

        def _where(self, key):
            self.read.append((key, len(self.parts) - 1 if self._in_part else None))

        def get(self, key, *, what=None):
            self._where(key)
            return super().get(key, what=what)

        def program(self, key, *, what=None):
            self._where(key)
            return super().program(key, what=what)

        def _note(self, mistakes):
            if isinstance(mistakes, dict):
                self.mistakes += [str(v) for v in mistakes.values()]
            else:
                self.mistakes += [m.says for m in mistakes or []]

        def close(self, key, expected, **kwargs):
            self._note(kwargs.get("mistakes"))
            return super().close(key, expected, **kwargs)

        def close_to_any(self, key, candidates, **kwargs):
            self._note(kwargs.get("mistakes"))
            return super().close_to_any(key, candidates, **kwargs)

        def equal(self, key, expected, **kwargs):
            self._note(kwargs.get("mistakes"))
            return super().equal(key, expected, **kwargs)

        def program_close(self, key, index, expected, **kwargs):
            self._note(kwargs.get("mistakes"))
            return super().program_close(key, index, expected, **kwargs)

    return Traced


@dataclass(frozen=True)
class _FreshRelease(Course):
    """The course, with its student notebooks generated afresh elsewhere."""

    fresh: Path = Path()

    @property
    def release(self) -> Path:
        return self.fresh


def _grade_solution(course: Course, name: str, num_devices: int, evidence, runs=None):
    """The solution graded as a submission (the kernel, the program runner), judged with ``evidence``; ``runs``:
    a grading run's kept kernel and program runs (``Identical``, ``Judged``) to read before running anything."""
    import os

    from grader.classroom.batch import _run_once
    from grader.course.variants import Scenario, write_submission
    from grader.submission import order
    from grader.submission.pipeline import Job, Settings, judge_tests, prepare, program_runs

    with tempfile.TemporaryDirectory(prefix="lint-") as tmp:
        from grader.course.generate import generate

        if runs is None:  # the learner's copy as it is now, not notebooks/ (a grading run's reuse took notebooks/)
            generate(course, [name], release=Path(tmp) / "release")
            course = _FreshRelease(course.root, Path(tmp) / "release")
        submitted = Path(tmp) / "submitted"
        notebook = write_submission(course, name, Scenario(name="solution"), submitted, "lint")
        settings = Settings(out=Path(tmp) / "out", num_devices=num_devices, confine=os.geteuid() == 0,
                            prewarm=False, fork_server=False, compile_cache=False,
                            identical=runs[0] if runs else None, judged=runs[1] if runs else None)
        prepared = prepare(Job("lint", name, notebook.parent), course, settings)
        if prepared.notebook is None:
            raise RuntimeError(f"the solution could not be read as a submission: {prepared.result.message}")
        execution = asyncio.run(_run_once(prepared, settings, None, None))
        programs = program_runs(prepared, execution, course, settings)
        execution = replace(execution, notebook=order.rejoin(execution.notebook))  # each test's hidden part rejoined
        return judge_tests(course, name, course.read_source(name), execution, num_devices, programs,
                           evidence=evidence), execution


def run(course: Course, name: str, rubric, report: Report, num_devices: int, runs=None) -> None:
    """The checks on the solution's run."""
    from grader.submission.records import records_of_cell

    traced = _tracing(rubric)
    results, execution = _grade_solution(course, name, num_devices, traced, runs)
    source = course.read_source(name)
    tests = [c for c in source.cells if cells.is_autograded_test(c)]
    executed = {cells.grade_id(c): c for c in execution.notebook.cells if cells.grade_id(c)}
    judged = iter(traced.made)
    messages, _, _ = expected_messages(course, name)
    for cell, result in zip(tests, results):
        gid = cell_id = cells.grade_id(cell)
        if not result.passed or abs(result.points - result.max_points) > 1e-9:
            report.add("solution", gid, f"the solution scores {result.points:g} of {result.max_points:g}: "
                                        f"{result.message}")
        if result.message.startswith("not run") or result.message.startswith("not judged"):
            continue
        e = next(judged, None)
        if e is None:
            break
        visible = recorded_keys(str(cell.source))[0]
        recorded, _ = records_of_cell(executed[cell_id]) if cell_id in executed else ({}, [])
        for key in sorted(set(recorded) - {key for key, _ in e.read}):
            report.add("read", gid, f"records {key!r}, which its judge never reads: judge it, or stop recording it")
        for key in sorted(e.unnamed):
            report.add("words", gid, f"the judge reads {key!r} with no words for it: a learner would read the key; "
                                     "declare it as a Key with its words in rubric_cases.py, or pass what=\"...\"")

        def shown(key: str, visible=visible) -> bool:  # a visible value, and not one Validate never has
            return key not in rubric.after_submit and (key in visible[0] or any(p.fullmatch(key) for p in visible[1]))

        lost = visible_after_hidden(e.read, shown)
        if lost:
            report.add("visible", gid, f"the judge reads the hidden {lost[0]!r} before the visible {lost[1]!r}: "
                                       "Validate, which has only the visible values, stops there; judge the "
                                       "visible values first (or in a part of their own)")
        for says in {_template(says): says for says in reversed(e.mistakes)}.values():  # one per wording, numbers aside
            report.mistakes += 1
            if not any(m and _template(m) in _template(says) for m in messages):
                report.add("mistakes", gid, f"no scenario expects the named mistake {says[:90]!r}: add a wrong "
                                            "scenario with this expect-message, so a test proves it fires")


def _template(says: str) -> str:
    """A mistake's words with its numbers left out: one mistake, worded for a device count or a mesh size (the
    denominator of 2, 3 or 4 devices), is proven by a scenario that triggers it at any of them."""
    return re.sub(r"\d+(\.\d+)?", "#", says)


def lint(course: Course, name: str, *, num_devices: int = 4, execute: bool = True, runs=None) -> Report:
    """Every problem the checks of the module docstring find in assignment ``name``; ``execute=False``: the static
    checks only; ``runs``: an earlier grading run's (``Identical``, ``Judged``), whose run of the same solution the
    lint then judges instead of running it again (against the course's ``notebooks/``, as that run was)."""
    report = Report(name)
    if name not in course.assignments():
        report.add("judged", f"source/{name}", f"no assignment {name!r}: the course has "
                                               f"{', '.join(course.assignments()) or 'none'}")
        return report
    rubric = static(course, name, report, num_devices)
    if rubric is not None and execute:
        run(course, name, rubric, report, num_devices, runs)
    return report
