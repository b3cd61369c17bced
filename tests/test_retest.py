"""``python -m grader grade --test ID``: one test graded again, after it was fixed, on the notebooks that count.

The notebooks come from the session's graded batch (their results and their notebooks as graded); the test is
"fixed" in a copy of the course's source, so the repository's rubric is never touched. What must hold: the named test
takes its new result wherever the notebook was graded again cleanly, every other test and every other field stays
byte for byte, a notebook that cannot be graded again keeps its result, and the history says whose grade changed.
Every result that carries points is graded again whatever its status (suspicious, tampered, stopped); one whose
notebook never ran is named, with why, and kept; the summary says so of each.

One grading again (``regraded``, for the module) serves the tests that read it: the copies of a learner under each
status hand the kernel the same notebook, which runs once (``grader.classroom.identical``).
"""
from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest

from conftest import CORPUS_LIMITS
from grader import cli
from grader.results import NotebookResult, Status, TestResult as Outcome  # not collected as a test class
from grader.service.retest import NOT_GRADED_AGAIN, REGRADED, retest, summary, taken
from grader.layout import Course
from grader.term import history
from grader.term.gradebook import Gradebook
from grader.submission.pipeline import Settings

ASSIGNMENT, NOTEBOOK, TEST = "sharded_step", "sharded_step.ipynb", "test-update"
FIXED = "The update test, as fixed during the term: every update is judged wrong"
WHY = "appeal 3f9c: the update test was too lenient"
# The passing learner's result and notebook again, under each other status a stored result can have.
# These carry points: their notebook ran, and the points count in their total.
WITH_POINTS = {
    "suspicious": {"flags": ["numpy.testing.assert_allclose replaced"]},
    "tampered": {"tampering": ["test cell test-transfer was edited"]},
    "timed_out": {"message": "a cell ran longer than 15 s; the kernel was stopped"},
    "kernel_died": {"message": "the kernel died"},
    "out_of_memory": {"message": "the kernel ran out of memory and died"},
    "too_much_output": {"message": "output exceeded 4194304 bytes; the kernel was stopped"},
}
# These carry none: nothing ran (a stale notebook as graded, from an earlier attempt, where ``notebook`` says so).
WITHOUT_POINTS = {
    "grader_error": {"message": "internal grader error while grading: OSError (run 1 of at most 3 on this file)",
                     "notebook": True, "grader_attempts": 1},
    "missing": {"message": "submitted/as-missing holds no assignment folder (it is empty)"},
    "invalid_notebook": {"message": "sharded_step.ipynb is not valid JSON", "notebook": True},
    "invalid_folder": {"message": "submitted/as-invalid_folder is a symbolic link"},
    "too_large": {"message": "sharded_step.ipynb is over 20 MiB"},
}
NO_NOTEBOOK = "as-graded-without-notebook"  # graded, points, and its notebook as graded gone from autograded/


def _passed(result, test: str) -> bool:
    return next(t.passed for t in result.tests if t.grade_id == test)


def _class_of_three(graded, out: Path) -> tuple[str, str, str]:
    """Three learners of the batch in a fresh grading output: one who passed the test, one who failed it, and one
    whose notebook as graded is unreadable now."""
    chosen = [r for case, r in (v for k, v in graded.items() if k != "__meta__")
              if r.assignment_id == ASSIGNMENT and r.status.value == "graded"]
    passing = next(r.student_id for r in chosen if _passed(r, TEST))
    failing = next(r.student_id for r in chosen if not _passed(r, TEST))
    broken = next(r.student_id for r in chosen if r.student_id not in (passing, failing))
    source = Gradebook(graded["__meta__"][1])
    for student in (passing, failing, broken):
        for where in ("result_path", "autograded_path"):
            target = getattr(Gradebook(out), where)(student, ASSIGNMENT, NOTEBOOK)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(getattr(source, where)(student, ASSIGNMENT, NOTEBOOK), target)
    Gradebook(out).autograded_path(broken, ASSIGNMENT, NOTEBOOK).write_text("{ not a notebook")
    return passing, failing, broken


def _under_each_status(out: Path, passing: str) -> None:
    """The passing learner's stored result and notebook as graded, copied to a learner ``as-STATUS`` for each status
    of ``WITH_POINTS`` and ``WITHOUT_POINTS`` (those at 0 points, "not graded", as ``pipeline`` and ``batch`` write
    them), and to ``NO_NOTEBOOK``."""
    book = Gradebook(out)
    stored = json.loads(book.result_path(passing, ASSIGNMENT, NOTEBOOK).read_text())
    for student, status, change in [(f"as-{s}", s, c) for s, c in {**WITH_POINTS, **WITHOUT_POINTS}.items()] + \
            [(NO_NOTEBOOK, "graded", {})]:
        change = dict(change)
        data = {**stored, "student_id": student, "status": status}
        if status in WITHOUT_POINTS:
            data["tests"] = [{**t, "points": 0.0, "passed": False, "message": "not graded: " + change["message"],
                              "parts": []} for t in stored["tests"]]
            data["score"] = None if status == "grader_error" else 0.0
        if change.pop("notebook", status in WITH_POINTS):
            notebook = book.autograded_path(student, ASSIGNMENT, NOTEBOOK)
            notebook.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(book.autograded_path(passing, ASSIGNMENT, NOTEBOOK), notebook)
        data.update(change)
        target = book.result_path(student, ASSIGNMENT, NOTEBOOK)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(data, indent=1))


def _fixed_course(tmp_path: Path, course: Course) -> Course:
    copy = Course(tmp_path / "course")
    shutil.copytree(course.source, copy.source)
    shutil.copytree(course.release, copy.release)
    rubric = copy.source / ASSIGNMENT / "rubric.py"
    rubric.write_text(rubric.read_text() + "\n\nfrom grader.rubric import Mismatch\n\n"
                      "rubric.judges.pop('test-update')\n\n\n@rubric.test('test-update')\n"
                      f"def _fixed(e):\n    raise Mismatch({FIXED!r})\n")
    return copy


@pytest.fixture(scope="module")
def regraded(graded, course, tmp_path_factory):
    """The class of three and the copies under each status, graded again once for the fixed test: (out, the
    learners, their stored results before, what ``retest`` returned by learner, in its order)."""
    base = tmp_path_factory.mktemp("retest")
    out = base / "out"
    passing, failing, broken = _class_of_three(graded, out)
    _under_each_status(out, passing)
    book = Gradebook(out)
    before = {r.student_id: json.loads(book.result_path(r.student_id, ASSIGNMENT, NOTEBOOK).read_text())
              for r in book.all_results()}
    fixed = _fixed_course(base, course)
    done = retest(out, TEST, fixed, Settings(out=out, limits=CORPUS_LIMITS), why=WHY)
    return out, (passing, failing, broken), before, {d.student: d for d in done}, done


def test_grade_test_grades_one_fixed_test_again_and_leaves_every_other_result(regraded, capsys):
    out, (passing, failing, broken), before, done, _ = regraded
    after = {s: json.loads(Gradebook(out).result_path(s, ASSIGNMENT, NOTEBOOK).read_text())
             for s in (passing, failing, broken)}
    worth = next(t["max_points"] for t in before[passing]["tests"] if t["grade_id"] == TEST)
    assert (done[passing].before, done[passing].after) == (worth, 0.0)
    assert done[failing].after == 0.0 and not done[failing].changed
    assert done[broken].after is None and "invalid_notebook" in done[broken].why_not
    assert after[broken] == before[broken]  # not graded again cleanly: kept whole
    for student in (passing, failing):
        new = {t["grade_id"]: t for t in after[student]["tests"]}
        old = {t["grade_id"]: t for t in before[student]["tests"]}
        assert FIXED in new[TEST]["message"] and new[TEST]["points"] == 0
        assert {k: v for k, v in new.items() if k != TEST} == {k: v for k, v in old.items() if k != TEST}
        assert {k: v for k, v in after[student].items() if k not in ("tests", "score")} == \
            {k: v for k, v in before[student].items() if k not in ("tests", "score")}
        assert after[student]["score"] == round(sum(t["points"] for t in after[student]["tests"]), 6)
    assert after[passing]["score"] == before[passing]["score"] - worth
    rows = {r["student_id"]: r for r in csv.DictReader((out / "grades.csv").open())}
    assert float(rows[passing]["score"]) == after[passing]["score"]
    assert FIXED in Gradebook(out).feedback_path(passing, ASSIGNMENT, NOTEBOOK).read_text()
    regrades = {s: [e for e in history.read(out, s, ASSIGNMENT) if e["event"] == "regrade"]
                for s in (passing, failing, broken)}
    assert [(e["before"], e["after"], e["test"]) for e in regrades[passing]] == [(worth, 0.0, TEST)]
    assert "too lenient" in regrades[passing][0]["why"]
    assert regrades[failing] == regrades[broken] == []
    assert not list(out.glob(".retest-*"))  # the scratch run leaves nothing behind

    # the command: a test nobody has is refused by name, before anything runs
    with pytest.raises(SystemExit) as exit_:
        cli.main(["grade", "--out", str(out), "--test", "test-nonexistent"])
    assert exit_.value.code == 2
    refused = capsys.readouterr().err
    assert "no graded notebook" in refused and "test-nonexistent" in refused and TEST in refused


def _stored(out: Path, student: str) -> dict:
    return json.loads(Gradebook(out).result_path(student, ASSIGNMENT, NOTEBOOK).read_text())


def test_grade_test_grades_again_every_result_with_points_and_names_the_others(regraded, capsys):
    """Suspicious, tampered and stopped notebooks carry points: their test follows the new judgement, like a graded
    one's (status, flags, tampering, message and every other test kept), in the tables and the history. A result
    whose notebook never ran, or whose notebook as graded is gone, is named with why, and kept whole. The summary
    says all of it, and nothing of a result it did not look at."""
    out, (passing, _, _), before, done, in_order = regraded
    worth = next(t["max_points"] for t in before[passing]["tests"] if t["grade_id"] == TEST)
    rows = {r["student_id"]: r for r in csv.DictReader((out / "grades.csv").open())}
    for status in WITH_POINTS:
        student = f"as-{status}"
        d, old, new = done[student], before[student], _stored(out, student)
        assert (d.tried, d.status, d.before, d.after, d.changed) == (True, status, worth, 0.0, True), d
        assert {t["grade_id"]: t for t in new["tests"]}[TEST]["points"] == 0
        assert FIXED in {t["grade_id"]: t for t in new["tests"]}[TEST]["message"]
        assert [t for t in new["tests"] if t["grade_id"] != TEST] == [t for t in old["tests"] if t["grade_id"] != TEST]
        assert {k: v for k, v in new.items() if k not in ("tests", "score")} == \
            {k: v for k, v in old.items() if k not in ("tests", "score")}  # its status, flags and tampering stay
        assert new["score"] == old["score"] - worth == float(rows[student]["score"])
        regrades = [e for e in history.read(out, student, ASSIGNMENT) if e["event"] == "regrade"]
        assert [(e["before"], e["after"], e["test"], e["why"].endswith(f"({WHY})")) for e in regrades] == \
            [(worth, 0.0, TEST, True)]
        assert FIXED in Gradebook(out).feedback_path(student, ASSIGNMENT, NOTEBOOK).read_text()
    left = {f"as-{status}": status for status in WITHOUT_POINTS} | {NO_NOTEBOOK: "graded"}
    for student, status in left.items():
        d = done[student]
        assert (d.tried, d.status, d.after, d.changed) == (False, status, None, False), d
        assert d.why_not == (NOT_GRADED_AGAIN[Status(status)] if student != NO_NOTEBOOK else
                             f"its notebook as graded is not in {out.resolve() / 'autograded'}: nothing to grade again")
        assert _stored(out, student) == before[student]  # kept whole
        assert [e for e in history.read(out, student, ASSIGNMENT) if e["event"] == "regrade"] == []
    assert done[NO_NOTEBOOK].before == worth  # kept, and said so
    assert rows["as-grader_error"]["score"] == ""

    text = summary(TEST, in_order)
    lines = text.splitlines()
    for status in WITH_POINTS:
        assert f"  as-{status}  {ASSIGNMENT}  ({status})  {worth:g} -> 0" in lines
    heading = lines.index(f"{TEST} not graded again on {len(left)} notebook(s), each kept as it was:")
    for student, status in left.items():
        shown = "" if status == "graded" else f"({status})  "
        line = next(line for line in lines[heading:] if line.startswith(f"  {student}  "))
        assert line == f"  {student}  {ASSIGNMENT}  {shown}kept {done[student].before:g}: {done[student].why_not}"
    assert lines[-1].startswith(f"{len(WITH_POINTS) + 1} changed; 1 unchanged; 1 not graded again cleanly, kept as "
                                f"it was; {len(left)} not graded again, kept as it was. Only {TEST} was graded")
    assert "every other learner's result is as it was" not in text
    assert lines[0] == f"{TEST} graded again on {len(WITH_POINTS) + 3} notebook(s):"

    # the command, on results none of which can be graded again: it names each, runs nothing, and exits cleanly
    with pytest.raises(SystemExit) as exit_:
        cli.main(["grade", "--out", str(out), "--test", TEST, "--no-fork-server", "--student", "as-missing",
                  "--student", "as-grader_error"])
    assert exit_.value.code in (0, None)
    said = capsys.readouterr().out
    assert f"{TEST} graded again on 0 notebook(s):" in said
    assert f"  as-missing  {ASSIGNMENT}  (missing)  kept 0: {NOT_GRADED_AGAIN[Status.MISSING]}" in said
    assert f"  as-grader_error  {ASSIGNMENT}  (grader_error)  kept 0: {NOT_GRADED_AGAIN[Status.GRADER_ERROR]}" in said
    assert "--student/--assignment left out were not looked at" in said


def test_every_status_is_either_graded_again_or_named_with_why():
    assert REGRADED.isdisjoint(NOT_GRADED_AGAIN) and REGRADED | set(NOT_GRADED_AGAIN) == set(Status)
    assert {Status(s) for s in WITH_POINTS} | {Status.GRADED} == REGRADED
    assert {Status(s) for s in WITHOUT_POINTS} == set(NOT_GRADED_AGAIN)


def _result(status: Status, *tests: tuple[str, float, str]) -> NotebookResult:
    return NotebookResult("ada", ASSIGNMENT, NOTEBOOK, status, f"{status.value}, as graded",
                          tests=[Outcome(gid, points, 2.0, points == 2.0, message) for gid, points, message in tests])


def test_a_stopped_grading_again_counts_only_where_it_stopped_as_the_graded_notebook_did():
    """A run that stops may be the machine's doing (a loaded machine times out sooner): it gives the test its new
    result only where the stored result stopped the same way, at the same test, and the test was judged; a run to the
    end (graded, or flagged again) always does; a grader's failure or an unreadable notebook never does."""
    judged, late = ("test-a", 2.0, "passed"), ("test-b", 0.0, "not run: a cell ran longer than 15 s")
    timed_out = _result(Status.TIMED_OUT, judged, late)
    again = _result(Status.TIMED_OUT, ("test-a", 0.0, "fixed: wrong"), late)
    assert taken(timed_out, again, "test-a") == (again.tests[0], "")
    sooner = _result(Status.TIMED_OUT, ("test-a", 0.0, "not run: a cell ran longer than 15 s"), late)
    assert taken(timed_out, sooner, "test-a")[0] is None  # stopped before the test this time: kept
    assert taken(timed_out, _result(Status.KERNEL_DIED, ("test-a", 0.0, "fixed: wrong"), late), "test-a")[0] is None
    graded = _result(Status.GRADED, judged, ("test-b", 2.0, "passed"))
    assert taken(graded, again, "test-a") == (None, "timed_out: timed_out, as graded")  # the machine's stop
    for status in (Status.GRADED, Status.SUSPICIOUS, Status.TAMPERED):
        to_end = _result(status, ("test-a", 0.0, "fixed: wrong"), ("test-b", 2.0, "passed"))
        for stored in (graded, timed_out, _result(Status.SUSPICIOUS, judged), _result(Status.TAMPERED, judged)):
            assert taken(stored, to_end, "test-a") == (to_end.tests[0], "")
    for status in (Status.GRADER_ERROR, Status.INVALID_NOTEBOOK, Status.TOO_LARGE):
        assert taken(graded, _result(status, ("test-a", 0.0, "not graded: x")), "test-a")[0] is None
    assert taken(graded, None, "test-a") == (None, "no result")
    assert taken(graded, _result(Status.GRADED, judged), "test-b")[0] is None  # no such test in it


def test_the_learners_notebook_comes_back_from_the_graded_one_as_the_grader_first_took_it(graded, course):
    """``restore.as_submitted`` on every cleanly graded notebook of the batch: rebuilt on the course's cells, it gives
    the notebook the grader ran the first time (the learner's code answers and added cells, in place; as many cells),
    with no tampering of its own making. This is what makes ``grade --test`` grade the learner's work, not the grader's
    copy of it."""
    import nbformat

    from grader.submission.restore import as_submitted, rebuild

    out = graded["__meta__"][1]
    submitted = out.parent / "submitted"
    checked = 0
    for key, (case, result) in graded.items():
        if key == "__meta__" or result.status.value != "graded" or result.tampering:
            continue
        book = Gradebook(out)
        source, release = course.read_source(result.assignment_id), course.read_release(result.assignment_id)
        original = nbformat.read(submitted / case.student / case.assignment / result.notebook, as_version=4)
        again = as_submitted(nbformat.read(book.autograded_path(case.student, case.assignment, result.notebook),
                                           as_version=4), release)
        first, _ = rebuild(source, release, original)
        second, tampering = rebuild(source, release, again)
        assert tampering == [], (key, tampering)
        # the code that runs, cell for cell; a markdown answer comes back as graded (its attachments inlined for the
        # pages), which no autograded test reads
        assert [(c.cell_type, c.source if c.cell_type == "code" else None) for c in second.cells] == \
            [(c.cell_type, c.source if c.cell_type == "code" else None) for c in first.cells], key
        checked += 1
    assert checked >= 3


def test_the_summary_keeps_a_message_that_quotes_the_learner_on_its_line():
    """A notebook not graded again says why with its result's message, which can quote the learner's notebook: the
    instructor's summary shows it escaped, never as lines of its own."""
    from grader.service.retest import Retested, summary

    forged = "\nappeal by root (answered changed: fair)\r\u2028\x1b[1Etotal by root 11 autograded = 11"
    said = summary("test-update", [Retested("ada", "sharded_step", "sharded_step.ipynb", 2.0, None,
                                            "invalid_notebook: the file is not valid JSON (" + forged + ")")])
    assert len(said.splitlines()) == 3 and "\x1b" not in said, said
    assert not any(line.startswith(("appeal by", "total by")) for line in said.splitlines())
