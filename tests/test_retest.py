"""``python -m grader grade --test ID``: one test graded again, after it was fixed, on the notebooks that count.

The notebooks come from the session's graded batch (their results and their notebooks as graded); the test is
"fixed" in a copy of the course's source, so the repository's rubric is never touched. What must hold: the named test
takes its new result wherever the notebook was graded again cleanly, every other test and every other field stays
byte for byte, a notebook that cannot be graded again keeps its result, and the history says whose grade changed.
"""
from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest

from conftest import CORPUS_LIMITS
from grader import cli
from grader.service.retest import retest
from grader.layout import Course
from grader.submission import history
from grader.submission.gradebook import Gradebook
from grader.submission.pipeline import Settings

ASSIGNMENT, NOTEBOOK, TEST = "sharded_step", "sharded_step.ipynb", "test-update"
FIXED = "The update test, as fixed during the term: every update is judged wrong"


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


def _fixed_course(tmp_path: Path, course: Course) -> Course:
    copy = Course(tmp_path / "course")
    shutil.copytree(course.source, copy.source)
    shutil.copytree(course.release, copy.release)
    rubric = copy.source / ASSIGNMENT / "rubric.py"
    rubric.write_text(rubric.read_text() + "\n\nrubric.judges.pop('test-update')\n\n\n@rubric.test('test-update')\n"
                      f"def _fixed(e):\n    raise Mismatch({FIXED!r})\n")
    return copy


def test_grade_test_grades_one_fixed_test_again_and_leaves_every_other_result(graded, course, tmp_path, capsys):
    out = tmp_path / "out"
    passing, failing, broken = _class_of_three(graded, out)
    before = {s: json.loads(Gradebook(out).result_path(s, ASSIGNMENT, NOTEBOOK).read_text())
              for s in (passing, failing, broken)}
    fixed = _fixed_course(tmp_path, course)

    done = {d.student: d for d in retest(out, TEST, fixed, Settings(out=out, limits=CORPUS_LIMITS),
                                         why="appeal 3f9c: the update test was too lenient")}

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


def test_the_learners_notebook_comes_back_from_the_graded_one_as_the_grader_first_took_it(graded, course):
    """``restore.as_submitted`` on every cleanly graded notebook of the batch: rebuilt on the course's cells, it gives
    the notebook the grader ran the first time (the learner's code answers and added cells, in place; as many cells),
    with no tampering of its own making. This is what makes ``grade --test`` grade the learner's work, not the grader's copy of it."""
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
