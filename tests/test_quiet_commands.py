"""Nothing a newcomer runs prints alarming noise (issue #23).

- `make demo`'s gradebook step (``grade --gradebook``: ``export_grades``) printed three SQLAlchemy ``SAWarning``s
  ("Object of type <SubmittedAssignment> not in session ... will not proceed") that read like failed writes;
- ``nbgrader validate`` printed ipykernel's "Kernel is running over TCP without encryption" warning.

Each test runs the step that printed it, checks that the step did its work, and that the warning is gone.
"""
from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
import warnings
from pathlib import Path

import nbformat
import pytest

from grader import cells
from grader.layout import Course
from grader.results import NotebookResult, Status, TestResult as Outcome

ROOT = Path(__file__).resolve().parent.parent
ASSIGNMENT = "local_mean_diagnosis"
TCP_WARNING = "running over TCP without encryption"


def _passing_result(course: Course, student: str) -> NotebookResult:
    nb = nbformat.read(course.source_notebook(ASSIGNMENT), as_version=4)
    tests = [Outcome(cells.grade_id(c), float(cells.nbgrader(c)["points"]), float(cells.nbgrader(c)["points"]),
                        True, "") for c in nb.cells if cells.is_autograded_test(c)]
    assert tests
    return NotebookResult(student, ASSIGNMENT, f"{ASSIGNMENT}.ipynb", Status.GRADED, "", tests=tests)


def test_copying_grades_into_the_gradebook_prints_no_sqlalchemy_warning(tmp_path):
    from sqlalchemy.exc import SAWarning

    from grader.nbgrader_adapter.db import export_grades

    course = Course.default()
    db = tmp_path / "gradebook.db"
    results = [_passing_result(course, student) for student in ("ada", "blake")]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")  # every occurrence, not only the first per line as a terminal shows
        written = export_grades(f"sqlite:///{db}", course, results)
        again = export_grades(f"sqlite:///{db}", course, results)  # the second run updates the same rows
    noise = [f"{w.filename}:{w.lineno}: {w.message}" for w in caught if issubclass(w.category, SAWarning)]
    assert not noise, "the gradebook copy warns:\n" + "\n".join(noise)
    assert written == again == 2
    expected = sum(t.points for t in results[0].tests)
    with sqlite3.connect(db) as connection:
        rows = connection.execute(
            "SELECT s.student_id, SUM(g.auto_score) FROM submitted_assignment s "
            "JOIN submitted_notebook n ON n.assignment_id = s.id JOIN grade g ON g.notebook_id = n.id "
            "GROUP BY s.student_id ORDER BY s.student_id").fetchall()
    assert rows == [("ada", expected), ("blake", expected)]  # the rows the warning seemed to drop are written


@pytest.mark.parametrize("config", ["course", "learner"])
def test_nbgrader_validate_prints_no_unencrypted_kernel_warning(tmp_path, config):
    """``nbgrader validate`` with the instructor's configuration (run from the course root, as docs say) and with
    the learner's (lab/learner on JUPYTER_CONFIG_PATH, as `make lab`'s Validate button reads it)."""
    notebook = tmp_path / "work" / f"{ASSIGNMENT}.ipynb"
    notebook.parent.mkdir()
    shutil.copy2(ROOT / "notebooks" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", notebook)
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
               JUPYTER_CONFIG_DIR=str(tmp_path / "config"), JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"),
               JUPYTER_DATA_DIR=str(tmp_path / "data"))
    env.pop("JUPYTER_CONFIG_PATH", None)
    cwd = ROOT
    if config == "learner":
        env["JUPYTER_CONFIG_PATH"] = str(ROOT / "lab" / "learner")
        cwd = notebook.parent
    done = subprocess.run([str(Path(sys.executable).parent / "nbgrader"), "validate", str(notebook)], cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=600)
    output = done.stdout + done.stderr
    # The kernel ran the notebook: the unsolved TODOs fail their tests.
    assert "VALIDATION FAILED" in output and "NotImplementedError" in output, output[-2000:]
    assert TCP_WARNING not in output, output[:2000]
