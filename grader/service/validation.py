"""Validate's named diagnoses: the grader's own judges, run on the visible records only, in the grading service.

The learner's JupyterLab (``grader.learner``) runs the notebook's visible tests in the learner's kernel and POSTs
what each autograded test cell recorded, and the error it raised, to the course's grading service (``POST
/validate``, registered by ``grader.service.app``, which calls ``handle``). Here each test is judged by the
assignment's rubric in a Validate-only mode: ``ShownEvidence`` holds only the records the released (visible) part of
that test cell makes, and the moment a judge reads anything else (a record of the hidden tests, a program the grader
would run, a record the rubric grades only after submission: ``Rubric.after_submit``) it raises ``NotShown``. A
test's verdict is then fixed by what happened before the first ``NotShown``:

``fails``          a check on visible records failed first: the grader's own ``Mismatch`` message;
``visible_pass``   every check before the first ``NotShown`` passed (more cases are graded after submission);
``after_submit``   the first thing the judge read is graded only after submission (the quiz's answer);
``passes``         the judge read only visible records and every check passed.

Nothing a check computes after the first ``NotShown`` is reported, and hidden records are dropped from the request
before any judge sees them, so no answer can depend on hidden data: a request that adds records under hidden keys
gets the same answer as one without them. Neither the rubric nor any hidden source leaves this process; the answer
holds fixed sentences, the grader's messages about visible records, and the instructor's visible assertion messages.
"""
from __future__ import annotations

import contextlib
import json
import re
import sys
import threading
from dataclasses import dataclass

import nbformat

from grader import cells, raised
from grader.cells import HIDDEN, record_keys as visible_keys  # the keys a test cell's visible code records
from grader.layout import Course
from grader.submission.judge import NOT_REACHED, Evidence, Mismatch, Rubric
from grader.submission.rubric_loading import load_rubric
from grader.submission.records import MIME_TYPE, records_of_cell
from grader.visible_checks import visible_check

ROUTE = "/validate"
MAX_BODY_BYTES = 4 * 1024 * 1024  # the course's visible records are a few KiB; lowered programs some 100 KiB
MAX_TESTS = 64  # test cells per notebook (the course has at most 11)
MAX_RECORDS = 64  # records per test cell (the course's visible parts make at most 5)
MAX_TRACEBACK_LINES = 50
MAX_TRACEBACK_CHARS = 64 * 1024
NUM_DEVICES = 4  # the learner's lab runs the course's four logical devices


class NotShown(Exception):
    """A judge read something Validate does not have or does not judge; not a ``Mismatch``: nothing failed."""

    def __init__(self, why: str, key: str):
        super().__init__(f"{key}: {why}")
        #: "hidden" (a record of the hidden tests), "program" (a program run by the grader) or "after_submit"
        self.why, self.key = why, key


class ShownEvidence(Evidence):
    """The visible records of one test cell; reading any other record or any program raises ``NotShown``."""

    def __init__(self, records, broken, *, visible, after_submit=frozenset(), num_devices: int = NUM_DEVICES,
                 names: dict[str, str] | None = None, elsewhere: dict | None = None):
        self._visible_keys = visible  # a callable: key -> whether the released test cell records it
        self._after_submit = frozenset(after_submit)
        shown = {k: v for k, v in records.items() if self._shows(k)}  # hidden records never enter the evidence
        super().__init__(shown, [k for k in broken if self._shows(k)], num_devices=num_devices, names=names,
                         elsewhere=elsewhere)
        #: the first NotShown raised (the verdict is fixed at that moment), and the failures known then: a Mismatch
        #: being handled, the parts (``Evidence.part``) that had failed
        self.stopped: NotShown | None = None
        self.failed_before: list[str] = []
        #: the NotShown that ended a part (each part is a skill judged from its own records; the next one goes on)
        self.part_stops: list[NotShown] = []
        self.reads = 0

    def _shows(self, key: str) -> bool:
        return key not in self._after_submit and self._visible_keys(key)

    def _stop(self, why: str, key: str):
        if self.stopped is None:
            self.stopped = NotShown(why, key)
            # A check on visible records failed and the judge, while handling it, read further (keeps_inputs adds
            # "also, ..." to a failure): that failure came first and is the verdict.
            self.failed_before = self.failed_parts()
            handling = sys.exc_info()[1]
            if isinstance(handling, Mismatch):
                self.failed_before.append(str(handling))
        raise self.stopped

    def failed_parts(self) -> list[str]:
        """The messages of the parts of the test (``Evidence.part``) that failed so far."""
        return [part.failure for part in getattr(self, "parts", []) if part.failure is not None]

    def _read(self, key: str) -> None:
        if self.stopped is not None:
            raise self.stopped  # after the first NotShown, nothing more is judged
        if key in self._after_submit:
            self._stop("after_submit", key)
        if not self._visible_keys(key):
            self._stop("hidden", key)
        self.reads += 1

    @contextlib.contextmanager
    def part(self, what: str, *, points: float):
        """``Evidence.part``, where a ``NotShown`` ends this part only: its visible checks ran (a failure among them
        is the part's), what it needs beyond them is graded after submission, and the next part is judged on its
        own visible records. Nothing the part would have checked after the ``NotShown`` is judged or reported."""
        if self.stopped is not None:
            raise self.stopped
        with super().part(what, points=points) as judged:
            try:
                yield judged
            except NotShown as stop:
                if stop is not self.stopped:
                    raise
                extra = self.failed_before[len(self.failed_parts()):]  # a Mismatch being handled at the stop
                if extra and judged.failure is None:
                    judged.failure = extra[-1]
                self.part_stops.append(stop)
                self.stopped, self.failed_before = None, []

    def has(self, key: str) -> bool:
        self._read(key)
        return super().has(key)

    def get(self, key: str, *, what: str | None = None):
        self._read(key)
        return super().get(key, what=what)

    def program(self, key: str, *, what: str | None = None):
        self._stop("program", key)


@dataclass(frozen=True)
class TestCell:
    grade_id: str
    points: float
    visible_source: str
    keys: frozenset[str]
    patterns: tuple[re.Pattern, ...]
    hidden: bool  # the instructor's cell has hidden tests

    def records(self, key: str) -> bool:
        return key in self.keys or any(p.fullmatch(key) for p in self.patterns)


_LOADING = threading.Lock()
_TESTS: dict[tuple[str, float], tuple[dict[str, TestCell], int]] = {}


def test_cells(course: Course, assignment: str) -> tuple[dict[str, TestCell], int]:
    """The assignment's autograded test cells as the learner has them (hidden blocks removed), and how many
    answers are graded by hand; read from the instructor's source, the single truth."""
    path = course.source_notebook(assignment)
    stamp = (str(path), path.stat().st_mtime)
    if stamp not in _TESTS:
        nb = nbformat.read(path, as_version=4)
        found = {}
        for cell in nb.cells:
            if cells.is_autograded_test(cell):
                visible = HIDDEN.sub("", str(cell.source))
                keys, patterns = visible_keys(visible)
                found[cells.grade_id(cell)] = TestCell(cells.grade_id(cell), cells.points(cell), visible, keys,
                                                       patterns, HIDDEN.search(str(cell.source)))
        _TESTS[stamp] = found, sum(cells.is_manual_answer(c) for c in nb.cells)
    return _TESTS[stamp]


class BadRequest(ValueError):
    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


def parse(course: Course, body: bytes) -> tuple[str, list[dict]]:
    """(assignment, tests) of a request, bounded; ``BadRequest`` for anything else."""
    if not isinstance(body, (bytes, bytearray)) or len(body) > MAX_BODY_BYTES:
        raise BadRequest(413, f"the request is over {MAX_BODY_BYTES // (1024 * 1024)} MiB")
    try:
        request = json.loads(bytes(body).decode("utf-8"))
    except (ValueError, RecursionError):
        raise BadRequest(400, "the request is not JSON") from None
    if not isinstance(request, dict) or not isinstance(request.get("tests"), list):
        raise BadRequest(400, "the request needs an assignment and a list of tests")
    assignment = request.get("assignment")
    if not isinstance(assignment, str) or assignment not in course.assignments():
        raise BadRequest(404, "no such assignment in this course")
    if len(request["tests"]) > MAX_TESTS:
        raise BadRequest(413, f"more than {MAX_TESTS} tests")
    tests, seen = [], set()
    for test in request["tests"]:
        if not isinstance(test, dict) or not isinstance(test.get("grade_id"), str):
            raise BadRequest(400, "each test needs a grade_id")
        records, error = test.get("records", []), test.get("error")
        if not isinstance(records, list) or len(records) > MAX_RECORDS:
            raise BadRequest(413 if isinstance(records, list) else 400, f"at most {MAX_RECORDS} records per test")
        if error is not None and not (isinstance(error, dict) and isinstance(error.get("ename"), str)
                                      and isinstance(error.get("traceback"), list)):
            raise BadRequest(400, "a test's error needs an ename and a traceback")
        if error is not None:
            lines = [str(line) for line in error["traceback"][:MAX_TRACEBACK_LINES]]
            error = {"ename": error["ename"][:100], "traceback": [line[:MAX_TRACEBACK_CHARS] for line in lines]}
        if test["grade_id"] in seen:
            raise BadRequest(400, "a test appears twice")
        seen.add(test["grade_id"])
        tests.append({"grade_id": test["grade_id"], "records": records, "error": error})
    return assignment, tests


def _parsed(records: list) -> tuple[dict, list]:
    """The request's record payloads read as a test cell's outputs are: (records, keys recorded more than once)."""
    return records_of_cell({"outputs": [{"output_type": "display_data", "data": {MIME_TYPE: payload}}
                                        for payload in records]})


def shown_records(cell: TestCell, records: list) -> dict:
    """A test's well-formed visible records, as another test's judge may read them (``Evidence.elsewhere``)."""
    found, broken = _parsed(records)
    return {k: v for k, v in found.items() if k not in set(broken) and cell.records(k)}


def verdict(rubric: Rubric, cell: TestCell, records: list, error: dict | None,
            elsewhere: dict | None = None) -> tuple[str, str, str | None]:
    """(verdict, message, why the judge stopped: None, "hidden", "program" or "after_submit") of one test, judged
    on its visible records only (and the other tests' visible records, ``elsewhere``)."""
    found, broken = _parsed(records)
    evidence = ShownEvidence(found, broken, visible=cell.records, after_submit=rubric.after_submit,
                             names=rubric.names, elsewhere=elsewhere)
    failures: list[str] = []
    judge = rubric.judges.get(cell.grade_id)
    if judge is None:
        return "fails", "the course has no judge for this test (tell your instructor)", None
    try:
        judge(evidence)
    except NotShown:
        pass
    except Mismatch as mismatch:
        failures = [] if evidence.stopped else [*evidence.failed_parts(), str(mismatch)]
    except Exception as problem:  # noqa: BLE001 - the records are the learner's data; the rubric's errors are named
        failures = [] if evidence.stopped else [*evidence.failed_parts(),
                                                f"the recorded values could not be judged ({type(problem).__name__})"]
    else:
        failures = evidence.failed_parts()
    if evidence.stopped is not None:
        failures = evidence.failed_before
    failure = "; ".join(failures) if failures else None
    if failure is None and error is not None:  # the cell's own visible assertion failed: the instructor's words
        failure = visible_check(cell.visible_source, error) or f"the test cell {raised.raised(error)}"
    elif failure is not None and error is not None:
        check = visible_check(cell.visible_source, error)
        failure = f"{failure}; {check}" if check else failure
        # raised is not stopped: a value the cell never recorded because it raised says so, in the lesson's terms
        failure = failure.replace(NOT_REACHED, raised.not_recorded(error, None))
    stops = evidence.part_stops + ([evidence.stopped] if evidence.stopped else [])
    why = stops[0].why if stops else None
    if failure is not None:
        passed = [part.what for part in getattr(evidence, "parts", []) if part.failure is None]
        if passed and len(passed) < len(evidence.parts):
            failure += f"; {' and '.join(passed)}: the visible checks pass"
        return "fails", failure, why
    if not stops:
        return "passes", "passes: every check of this test ran here", None
    if evidence.reads == 0 and all(stop.why == "after_submit" for stop in stops):
        return "after_submit", f"{evidence.name(stops[0].key)}: its correctness is graded after you submit", why
    return "visible_pass", "the visible checks pass; more cases are graded after you submit", why


def later(course: Course, assignment: str, rubric: Rubric) -> str:
    """The sentence that says what Validate did not check: fixed for the assignment (the same for every request),
    from the course's own structure: test cells with hidden blocks, the programs the grader runs, the answers
    graded by hand, the records graded after submission."""
    known, manual = test_cells(course, assignment)
    hidden = sum(cell.hidden for cell in known.values())
    programs = [program for gid in known for program in rubric.program_specs.get(gid, lambda p: [])(NUM_DEVICES)]
    kinds = ["batches you have not seen"] if hidden else []
    if any(program.mesh != NUM_DEVICES for program in programs):
        kinds.append("other mesh sizes")
    if programs:
        kinds.append("your programs run by the grader")
    parts = [f"{hidden} more case{'s' if hidden != 1 else ''}" + (f" ({', '.join(kinds)})" if kinds else "")] \
        if hidden else []
    if manual:
        parts.append("the written answer" + ("s" if manual != 1 else ""))
    if rubric.after_submit:
        parts.append("the quiz's correctness")
    if not parts:
        return "Every check the grader makes ran here."
    said = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
    plural = len(parts) > 1 or hidden > 1 or manual > 1
    return f"{said[0].upper()}{said[1:]} {'are' if plural else 'is'} graded after you submit."


def handle(course: Course, body: bytes) -> tuple[int, dict]:
    """(HTTP status, JSON answer) for ``POST /validate``: the named verdicts of a notebook's visible checks.

    Never raises: a malformed request is a 4xx answer, a course that cannot be loaded a 500 (its reason goes to the
    service's log, not to the learner)."""
    try:
        assignment, tests = parse(course, body)
    except BadRequest as refused:
        return refused.status, {"error": str(refused)}
    try:
        with _LOADING:  # the service answers from several threads; a rubric is imported once
            rubric = load_rubric(course.rubric(assignment))
            known, _ = test_cells(course, assignment)
            after = later(course, assignment, rubric)
    except Exception as problem:  # noqa: BLE001 - an instructor's error: logged by the service, not shown
        print(f"validate: {assignment}: the course could not be loaded: {type(problem).__name__}: {problem}",
              file=sys.stderr)
        return 500, {"error": "the grading service could not load this assignment"}
    results = []
    asked = {t["grade_id"]: t for t in tests}
    elsewhere = {gid: shown_records(cell, asked[gid]["records"]) for gid, cell in known.items() if gid in asked}
    for grade_id, cell in known.items():  # in the notebook's order; grade ids the course lacks are ignored
        if grade_id not in asked:
            continue
        test = asked[grade_id]
        said, message, _ = verdict(rubric, cell, test["records"], test["error"], elsewhere)
        results.append({"grade_id": grade_id, "points": cell.points, "verdict": said, "message": message})
    return 200, {"assignment": assignment, "tests": results, "later": after}
