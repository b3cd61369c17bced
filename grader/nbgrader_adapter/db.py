"""Copy grades into an nbgrader gradebook database (SQLite or PostgreSQL URL).

With the scores in nbgrader's own database, formgrader shows them, manual
grading of the free-response cells happens there, and ``nbgrader export``
works. The copy runs once, from one thread, after grading: one writer, so the
database stays consistent however many workers graded. Only student ids that follow the course's rule
(``grader.identifiers``) are ever written: formgrader prints them into its pages.
"""
from __future__ import annotations

import tempfile
from pathlib import Path

from nbgrader.api import Gradebook

from grader import identifiers
from grader.course.generate import generate
from grader.submission import timestamps
from grader.submission.intake import read_small_text
from grader.layout import Course
from grader.results import NotebookResult


def _submitted_at(submissions: Path | None, student: str, assignment: str):
    """The submission time nbgrader's ``submit`` wrote and ``collect`` kept (``timestamp.txt``), or None.

    The file travels with the learner's submission, so it is read like one (``intake.read_small_text``: a small
    regular file, never through a link, never blocking); its date is the learner's word, as in nbgrader, read by
    ``timestamps.parse`` (a time zone that names a file, an absurd date: None)."""
    if submissions is None:
        return None
    text = read_small_text(submissions / student / assignment / "timestamp.txt")
    try:
        return timestamps.parse(text) if text else None
    except timestamps.BadTimestamp:
        return None


def export_grades(db_url: str, course: Course, results: list[NotebookResult], submissions: Path | None = None,
                  out: Path | None = None, settled: dict | None = None) -> int:
    """Write every autograded score of ``results`` into ``db_url``; return how many notebooks.

    With ``submissions`` (the folder graded), each submission also gets the time in its ``timestamp.txt``,
    as ``nbgrader autograde`` records it. With ``out`` (the grading output) as well, the hand grades already in the
    database are keyed to the answers they graded (``answers.settle``: kept on an unchanged answer, held out of a
    changed one, which then needs hand grading again); ``settled`` then maps (student, assignment, notebook) to what
    changed."""
    from grader.nbgrader_adapter import answers

    assignments = sorted({r.assignment_id for r in results if r.assignment_id in course.assignments()})
    with tempfile.TemporaryDirectory() as tmp:
        # nbgrader itself records each assignment's notebooks and cells (its SaveCells step).
        generate(course, assignments, release=Path(tmp), db_url=db_url)
    written = 0
    with Gradebook(db_url) as book:
        for result in results:
            if result.assignment_id not in assignments or result.reported_score is None \
                    or result.status.value == "invalid_folder" or not identifiers.valid(result.student_id):
                continue  # no score to copy, or no student to create (an id outside the rule, even from an older run)
            book.update_or_create_student(result.student_id)
            when = _submitted_at(submissions, result.student_id, result.assignment_id)
            # nbgrader builds a new submission's rows linked to the assignment and student, then adds them to the
            # session; under SQLAlchemy 2 the lazy loads in between autoflush the half-built rows and warn
            # ("SAWarning: Object of type <SubmittedAssignment> not in session"). Without autoflush the same rows
            # are written whole at nbgrader's own add and commit.
            with book.db.no_autoflush:
                book.update_or_create_submission(result.assignment_id, result.student_id,
                                                 **({"timestamp": when} if when else {}))
            notebook = Path(result.notebook).stem
            for test in result.tests:
                grade = book.find_grade(test.grade_id, notebook, result.assignment_id, result.student_id)
                grade.auto_score = test.points
                grade.needs_manual_grade = False
            if out is not None and submissions is not None:
                autograded = {t.grade_id for t in result.tests}
                by_hand = [g.name for g in book.find_submission_notebook(notebook, result.assignment_id,
                                                                         result.student_id).grades
                           if g.name not in autograded]
                digests = answers.answer_digests(submissions / result.student_id / result.assignment_id
                                                 / result.notebook, by_hand) if by_hand else {}
                if digests:
                    changes = answers.settle(book, out, result.student_id, result.assignment_id, result.notebook,
                                             digests)
                    if settled is not None:
                        settled[(result.student_id, result.assignment_id, result.notebook)] = changes
            written += 1
        book.db.commit()
    return written


def set_auto_score(db_url: str, student: str, assignment: str, notebook: str, grade_id: str, points: float) -> bool:
    """One autograded cell's score in nbgrader's gradebook (where formgrader shows it); False: no such cell there."""
    from nbgrader.api import MissingEntry

    with Gradebook(db_url) as book:
        try:
            book.find_grade(grade_id, Path(notebook).stem, assignment, student).auto_score = points
        except MissingEntry:
            return False
        book.db.commit()
    return True
