"""Generate the student notebooks in ``notebooks/`` with nbgrader.

nbgrader's ``generate_assignment`` (configured in ``nbgrader_config.py``)
turns solution regions into scaffolds, strips hidden tests, locks cells and
writes ``notebooks/{assignment}/``; the rubric stays behind.
"""
from __future__ import annotations

import filecmp
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import nbformat

from grader.layout import Course


def generate(course: Course, assignments: list[str] | None = None, release: Path | None = None,
             db_url: str | None = None) -> list[Path]:
    """Run nbgrader for each assignment; return the written notebooks.

    nbgrader also records each assignment's cells in a gradebook database:
    ``db_url``, or a throwaway one.
    """
    written = []
    release = release or course.release
    with tempfile.TemporaryDirectory() as db_dir:
        for assignment in assignments or course.assignments():
            command = [
                sys.executable, "-m", "nbgrader", "generate_assignment", assignment, "--force", "--create",
                f"--CourseDirectory.root={course.root}", f"--CourseDirectory.release_directory={release}",
                f"--CourseDirectory.db_url={db_url or f'sqlite:///{db_dir}/gradebook.db'}", "--log-level=WARN",
            ]
            # nbgrader runs `alembic` from PATH to set up its database.
            env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
            subprocess.run(command, cwd=course.root, check=True, env=env)
            if list((release / assignment).glob("rubric*.py")):
                raise RuntimeError("nbgrader copied a rubric into the release; check nbgrader_config.py")
            path = release / assignment / f"{assignment}.ipynb"
            _normalize(path)
            written.append(path)
    return written


def _normalize(path: Path) -> None:
    """Drop volatile metadata so regenerating gives identical bytes."""
    nb = nbformat.read(path, as_version=4)
    nb.metadata.pop("celltoolbar", None)
    nbformat.write(nb, path)


def stale(course: Course) -> list[str]:
    """Assignments whose committed student notebook differs from a fresh build."""
    with tempfile.TemporaryDirectory() as tmp:
        fresh = Path(tmp) / "release"
        generate(course, release=fresh)
        return [a for a in course.assignments()
                if not course.release_notebook(a).exists()
                or not filecmp.cmp(fresh / a / f"{a}.ipynb", course.release_notebook(a), shallow=False)]
