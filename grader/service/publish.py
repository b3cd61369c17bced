"""Step 5 of the grading service, off the learner's path: publish counting attempts into the course's gradebook.

Each attempt's result, autograded notebook and feedback page are copied from its own folder into ``{out}``; with a
gradebook, nbgrader's database gets them (``db.export_grades``, hand grades already entered kept, each change of a
hand grade a line of the history); then grades.csv, results.json and the pages are rebuilt with hand grades and late
penalties (``manual_grades.refresh``).
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

from grader.layout import Course
from grader.results import NotebookResult
from grader.term import history
from grader.term.gradebook import Gradebook


def publish(course: Course, out: Path, gradebook: str | None, items: list[tuple[Path, NotebookResult, Path]]) -> None:
    """Each counting attempt's files into the course's ``autograded/``, ``feedback/`` and results; its
    ``timestamp.txt`` (the time the late penalty is decided on) from the third folder of its item."""
    book = Gradebook(out)
    for folder, result, stamped in items:
        attempt = Gradebook(folder)
        for where in ("result_path", "autograded_path", "feedback_path"):
            source = getattr(attempt, where)(result.student_id, result.assignment_id, result.notebook)
            target = getattr(book, where)(result.student_id, result.assignment_id, result.notebook)
            if source.is_file():
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(source, target)
        if stamped != folder:  # the earlier attempt's time, where the late penalty is decided (results/)
            restamp(book, result, stamped)
        # nbgrader's release_feedback (formgrader's Release Feedback) sends an updated page (hand grades, the
        # late penalty recomputed) to the learner under the same name: it reads these two beside the page.
        beside = book.feedback_path(result.student_id, result.assignment_id, result.notebook).parent
        for name, where in (("timestamp.txt", stamped), ("submission_secret.txt", folder)):
            source = where / "submitted" / result.student_id / result.assignment_id / name
            if source.is_file() and not source.is_symlink() and beside.is_dir():
                shutil.copyfile(source, beside / name)
    if gradebook:
        from grader.nbgrader_adapter.db import export_grades

        import tempfile

        settled: dict = {}
        with tempfile.TemporaryDirectory() as stamps:  # each attempt's timestamp.txt and graded notebook, where
            for folder, result, stamped in items:       # export_grades reads them
                where = Path(stamps) / result.student_id / result.assignment_id
                where.mkdir(parents=True, exist_ok=True)
                stamp = stamped / "submitted" / result.student_id / result.assignment_id / "timestamp.txt"
                if stamp.is_file() and not stamp.is_symlink():
                    shutil.copyfile(stamp, where / "timestamp.txt")
                graded = Gradebook(folder).autograded_path(result.student_id, result.assignment_id, result.notebook)
                if graded.is_file() and not graded.is_symlink():  # the answers as formgrader shows them
                    shutil.copyfile(graded, where / result.notebook)
            export_grades(gradebook, course, [r for _, r, _ in items], Path(stamps),
                          out=out, settled=settled)
        for (student, assignment, notebook), changes in settled.items():
            for change in changes:
                history.append(out, student, assignment, "hand_grade", {
                    "held_out": "the answer changed since it was graded by hand: to be graded again",
                    "restored": "the answer is one graded by hand before: its grade applies again",
                    "to_grade": "an answer to grade by hand"}[change.what],
                    notebook=notebook, cell=change.cell, what=change.what, score=change.score)
    from grader.nbgrader_adapter.manual_grades import refresh

    refresh(out, gradebook, course.root)  # with hand grades and late penalties


def restamp(book, result, stamped: Path) -> None:
    """The counting result published in ``book`` (a ``Gradebook``) takes the submission time of the attempt graded in
    ``stamped`` (an earlier attempt with the same answers, which counts again under ``last``): the late penalty is
    decided on ``submitted_at`` in ``results/``."""
    from grader.submission import timestamps
    from grader.term.gradebook import atomic_write

    result.submitted_at, result.submitted_note = timestamps.read(
        stamped / "submitted" / result.student_id / result.assignment_id)
    path = book.result_path(result.student_id, result.assignment_id, result.notebook)
    data = json.loads(path.read_text(encoding="utf-8"))
    data.update(submitted_at=result.submitted_at, submitted_note=result.submitted_note)
    atomic_write(path, json.dumps(data, indent=1))
