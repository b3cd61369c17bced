"""The bundled sample class: ``samples/scenarios/{assignment}/{student}.py``
built into nbgrader's layout ``samples/submitted/{student}/{assignment}/``."""
from __future__ import annotations

import csv
import tempfile
from pathlib import Path

from grader.layout import Course
from grader.course.variants import parse, write_submission


def scenario_files(course: Course) -> list[tuple[str, Path]]:
    root = course.samples / "scenarios"
    return [(a, p) for a in course.assignments() for p in sorted((root / a).glob("*.py"))]


def submission_times(course: Course) -> dict[tuple[str, str], str]:
    """(student, assignment) -> the time the sample learner submitted (``samples/submitted_at.csv``)."""
    path = course.samples / "submitted_at.csv"
    if not path.exists():
        return {}
    with path.open(newline="") as handle:
        return {(row["student_id"], row["assignment_id"]): row["timestamp"] for row in csv.DictReader(handle)}


def build_samples(course: Course, submitted: Path | None = None) -> list[Path]:
    """Each sample submission, with nbgrader's ``timestamp.txt`` beside it (what ``nbgrader collect`` writes)."""
    submitted = submitted or course.samples / "submitted"
    times = submission_times(course)
    written = []
    for assignment, path in scenario_files(course):
        notebook = write_submission(course, assignment, parse(path), submitted, path.stem)
        if (path.stem, assignment) in times:
            stamp = notebook.parent / "timestamp.txt"
            stamp.write_text(times[(path.stem, assignment)] + "\n")
            written.append(stamp)
        written.append(notebook)
    return written


def stale_samples(course: Course) -> list[str]:
    with tempfile.TemporaryDirectory() as tmp:
        fresh = build_samples(course, Path(tmp))
        committed = course.samples / "submitted"
        names = []
        for path in fresh:
            relative = path.relative_to(tmp)
            mine = committed / relative
            if not mine.exists() or mine.read_text() != path.read_text():
                names.append(str(relative))
        return names
