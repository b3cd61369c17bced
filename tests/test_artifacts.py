"""Generated artefacts match what source/ produces; sources are stored clean."""
from __future__ import annotations

import nbformat
import pytest

from grader import cells
from grader.course.figures import stale_figures
from grader.course.generate import stale
from grader.submission.rubric_loading import load_rubric
from grader.course.samples import stale_samples


def test_student_notebooks_are_current(course):
    assert stale(course) == [], "run `python -m grader generate`"


def test_figures_are_current(course):
    assert stale_figures(course) == [], "run `python -m grader figures`"


def test_samples_are_current(course):
    assert stale_samples(course) == [], "run `python -m grader samples`"


@pytest.mark.parametrize("assignment", ["sharded_step", "local_mean_diagnosis", "collectives"])
def test_source_is_stored_without_outputs(course, assignment):
    path = course.source_notebook(assignment)
    if not path.exists():
        pytest.skip(f"{assignment} not in this course")
    for cell in nbformat.read(path, as_version=4).cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, f"{assignment}: cell {cell.get('id')} has outputs"


@pytest.mark.parametrize("assignment", ["sharded_step", "local_mean_diagnosis", "collectives"])
def test_every_test_cell_has_a_judge_and_first_cells_are_locked_setup(course, assignment):
    path = course.source_notebook(assignment)
    if not path.exists():
        pytest.skip(f"{assignment} not in this course")
    nb = nbformat.read(path, as_version=4)
    rubric = load_rubric(course.rubric(assignment))
    tests = [cells.grade_id(c) for c in nb.cells if cells.is_autograded_test(c)]
    assert tests and set(tests) == set(rubric.judges)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert "parameters" in code[0].metadata.get("tags", []) and cells.nbgrader(code[0]).get("locked")
    assert "start_jax(num_devices, platform)" in code[1].source and cells.nbgrader(code[1]).get("locked")


@pytest.mark.parametrize("assignment", ["sharded_step", "local_mean_diagnosis", "collectives"])
def test_student_notebook_has_scaffolds_and_no_hidden_tests(course, assignment):
    path = course.release_notebook(assignment)
    if not path.exists():
        pytest.skip(f"{assignment} not in this course")
    text = path.read_text()
    assert "BEGIN HIDDEN TESTS" not in text and "BEGIN SOLUTION" not in text
    assert 'raise NotImplementedError(' in text
    assert not list(path.parent.glob("rubric*.py"))
