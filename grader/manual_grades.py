"""Grades entered by hand in formgrader, read back from nbgrader's gradebook database.

The grader scores the autograded tests; the free-text answers are graded by the instructor in
formgrader, which stores them in nbgrader's database. This module reads them back so that
``grades.csv``, ``python -m grader report`` and the learner's feedback page show them, without
regrading anything.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import nbformat

from .gradebook import Gradebook
from .feedback import render
from .results import NotebookResult


@dataclass(frozen=True)
class ManualGrade:
    grade_id: str
    score: float | None  # None: not graded yet
    max_score: float
    comment: str


def feedback_page(root: Path, student: str, assignment: str, notebook: str, db_url: str | None) -> str | None:
    """The learner's feedback page for one notebook, from the grader's stored result; None if never graded."""
    book = Gradebook(root)
    result = book.stored(student, assignment, notebook)
    if result is None:
        return None
    autograded = book.autograded_path(student, assignment, notebook)
    executed = nbformat.read(autograded, as_version=4) if autograded.exists() else None
    return render(result, executed)
