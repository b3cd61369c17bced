"""Grades entered by hand in formgrader, read back from nbgrader's gradebook database.

The grader scores the autograded tests; the free-text answers are graded by the instructor in
formgrader, which stores them in nbgrader's database. This module reads them back so that
``grades.csv`` (``manual_score``, ``total_score``), ``python -m grader report`` and the learner's
feedback page show them, without regrading anything. A late penalty is a share of the earned points, so it is
computed again here, with the hand grades (``grader.nbgrader_adapter.late``).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import nbformat

from grader.layout import Course
from grader.nbgrader_adapter import late as deadlines
from grader.submission.feedback import render
from grader.term.gradebook import Gradebook
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


def _root(root: Path | None) -> Path:
    return root or Course.default().root


def feedback_page(root: Path, student: str, assignment: str, notebook: str, db_url: str | None,
                  course_root: Path | None = None) -> str | None:
    """The learner's feedback page for one notebook, from the grader's stored result, the hand-graded answers and
    the late penalty; None if the grader never graded it."""
    result = Gradebook(root).stored(student, assignment, notebook)
    if result is None:
        return None
    key = (student, assignment, notebook)
    manual = read_manual(db_url, [result]).get(key)
    penalty = deadlines.penalties([result], {key: points(manual)}, db_url, _root(course_root)).get(key)
    return _page(Gradebook(root), result, manual, penalty)


def _page(book: Gradebook, result: NotebookResult, manual, penalty) -> str:
    autograded = book.autograded_path(result.student_id, result.assignment_id, result.notebook)
    executed = nbformat.read(autograded, as_version=4) if autograded.exists() else None
    return render(result, executed, manual=manual, late=penalty)


def current(out: Path, db_url: str | None, course_root: Path | None = None):
    """(results, hand-graded cells, points by hand, late penalties) of the grading output ``out``, as they stand."""
    results = Gradebook(out).all_results()
    manual = read_manual(db_url, results)
    by_hand = {key: points(grades) for key, grades in manual.items()}
    return results, manual, by_hand, deadlines.penalties(results, by_hand, db_url, _root(course_root))


def _refresh(out: Path, db_url: str | None, course_root: Path | None):
    from grader.term.gradebook import atomic_write

    from grader.term import history
    from grader.nbgrader_adapter import answers
    from grader.term.gradebook import total_score

    book = Gradebook(out)
    results, manual, by_hand, late = current(out, db_url, course_root)
    book.write_tables(results, by_hand, late)
    rows = []
    for r in results:
        key = (r.student_id, r.assignment_id, r.notebook)
        penalty = late.get(key)
        rows.append({"student": r.student_id, "assignment": r.assignment_id, "notebook": r.notebook,
                     "autograded": r.reported_score, "by_hand": by_hand.get(key), "manual_max": r.manual_max_score,
                     "penalty": penalty.points if penalty else 0.0, "total": total_score(r, by_hand.get(key), penalty),
                     "max": r.max_score + r.manual_max_score, "status": r.status.value})
    history.record_totals(out, rows)  # the history of every total that grades.csv and the export have shown
    answers.remember(out, manual)  # each hand grade filed under the answer it graded
    if db_url and late:
        deadlines.store(db_url, late)
    touched = {key for key, grades in manual.items() if any(g.score is not None or g.comment for g in grades)}
    by_key = {(r.student_id, r.assignment_id, r.notebook): r for r in results}
    for key in sorted(touched | set(late)):
        atomic_write(book.feedback_path(*key), _page(book, by_key[key], manual.get(key), late.get(key)))
    return results, manual, by_hand, late


def refreshed(out: Path, db_url: str | None, course_root: Path | None = None):
    """Rewrite grades.csv, results.json and the feedback pages of hand-graded or late notebooks with the hand grades
    and the late penalties (into nbgrader's gradebook too, where formgrader shows them); return (results, points by
    hand, late penalties). Raises ValueError, naming it, on a due date that is not a date."""
    results, _, by_hand, late = _refresh(out, db_url, course_root)
    return results, by_hand, late


def refresh(out: Path, db_url: str | None, course_root: Path | None = None) -> tuple[list[NotebookResult], dict]:
    """As ``refreshed``; returns (results, the hand-graded cells of each notebook)."""
    results, manual, _, _ = _refresh(out, db_url, course_root)
    return results, manual
