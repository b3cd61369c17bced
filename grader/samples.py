"""The bundled sample class: ``samples/scenarios/{assignment}/{student}.py``
built into nbgrader's layout ``samples/submitted/{student}/{assignment}/``."""
from __future__ import annotations

import tempfile
from pathlib import Path

from .layout import Course
from .variants import parse, write_submission


def scenario_files(course: Course) -> list[tuple[str, Path]]:
    root = course.samples / "scenarios"
    return [(a, p) for a in course.assignments() for p in sorted((root / a).glob("*.py"))]


def build_samples(course: Course, submitted: Path | None = None) -> list[Path]:
    submitted = submitted or course.samples / "submitted"
    return [write_submission(course, assignment, parse(path), submitted, path.stem)
            for assignment, path in scenario_files(course)]


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
