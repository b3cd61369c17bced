"""Grades entered by hand in formgrader, read back from nbgrader's gradebook database.

The grader scores the autograded tests; the free-text answers are graded by the instructor in
formgrader, which stores them in nbgrader's database. This module reads them back so that
``grades.csv`` (``manual_score``, ``total_score``), ``python -m grader report`` and the learner's
feedback page show them, without regrading anything.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import nbformat

from grader.submission.feedback import render
from grader.submission.gradebook import Gradebook
from grader.results import NotebookResult


@dataclass(frozen=True)
class ManualGrade:
    grade_id: str
    score: float | None  # None: not graded yet
    max_score: float
    comment: str


def read_manual(db_url: str | None, results: list[NotebookResult]) -> dict[tuple[str, str, str], list[ManualGrade]]:
    """The hand-graded cells of each result's notebook, keyed by (student, assignment, notebook)."""
    found: dict[tuple[str, str, str], list[ManualGrade]] = {}
    if not db_url:
        return found
    from nbgrader.api import Gradebook as NbgraderBook, MissingEntry

    with NbgraderBook(db_url) as book:
        for result in results:
            try:
                submitted = book.find_submission_notebook(Path(result.notebook).stem, result.assignment_id,
                                                          result.student_id)
            except MissingEntry:
                continue
            autograded = {t.grade_id for t in result.tests}
            comments = {c.name: c.manual_comment or "" for c in submitted.comments}
            grades = [ManualGrade(g.name, g.manual_score, float(g.max_score), comments.get(g.name, ""))
                      for g in submitted.grades if g.name not in autograded]
            if grades:
                found[(result.student_id, result.assignment_id, result.notebook)] = grades
    return found


def points(grades: list[ManualGrade] | None) -> float | None:
    """Points graded by hand, or None while any answer is still to grade."""
    if not grades or any(g.score is None for g in grades):
        return None
    return sum(g.score for g in grades)


def default_db(out: Path) -> str | None:
    """nbgrader's database next to the grading output (the course's gradebook.db), if there is one."""
    path = out / "gradebook.db"
    return f"sqlite:///{path.resolve()}" if path.exists() else None


def feedback_page(root: Path, student: str, assignment: str, notebook: str, db_url: str | None) -> str | None:
    """The learner's feedback page for one notebook, from the grader's stored result and the hand-graded
    answers; None if the grader never graded it."""
    book = Gradebook(root)
    result = book.stored(student, assignment, notebook)
    if result is None:
        return None
    autograded = book.autograded_path(student, assignment, notebook)
    executed = nbformat.read(autograded, as_version=4) if autograded.exists() else None
    manual = read_manual(db_url, [result]).get((student, assignment, notebook))
    return render(result, executed, manual=manual)


def refresh(out: Path, db_url: str | None) -> tuple[list[NotebookResult], dict]:
    """Rewrite grades.csv, results.json and the feedback pages of hand-graded notebooks with the hand grades."""
    from grader.submission.gradebook import atomic_write

    book = Gradebook(out)
    results = book.all_results()
    manual = read_manual(db_url, results)
    book.write_tables(results, {key: points(grades) for key, grades in manual.items()})
    for (student, assignment, notebook), grades in manual.items():
        if any(g.score is not None or g.comment for g in grades):
            page = feedback_page(out, student, assignment, notebook, db_url)
            if page is not None:
                atomic_write(book.feedback_path(student, assignment, notebook), page)
    return results, manual
