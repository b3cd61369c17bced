"""Every instructor notebook runs headless with 2 and 8 devices and earns full marks.

Hidden tests also run the learner's functions on sub-meshes of those devices
(``coursekit.meshes.sub_mesh_sizes``: 1 of 2; 1, 4 and 7 of 8), which must pass too.

The records of each executed test cell are judged by the rubric, as in grading,
with the device count papermill used.
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import nbformat
import pytest

from grader import cells
from grader.execute import execute
from grader.judge import Evidence, load_rubric
from grader.layout import ASSIGNMENTS
from grader.records import records_of_cell

RUNS = [(a, n) for a in ASSIGNMENTS for n in (2, 8)]


@pytest.fixture(scope="module")
def executed(tmp_path_factory, course):
    out = tmp_path_factory.mktemp("devices")

    def run(item):
        assignment, devices = item
        path = out / f"{assignment}-{devices}.ipynb"
        execute(course.source_notebook(assignment), path, progress=False,
                parameters={"num_devices": devices, "figures_dir": str(out / f"figures-{devices}")})
        return item, nbformat.read(path, as_version=4)

    with ThreadPoolExecutor(max_workers=2) as pool:
        return dict(pool.map(run, RUNS))


@pytest.mark.parametrize("assignment,devices", RUNS)
def test_solution_scores_full_marks(executed, course, assignment, devices):
    rubric = load_rubric(course.rubric(assignment))
    for cell in executed[(assignment, devices)].cells:
        if cells.is_autograded_test(cell):
            records, broken = records_of_cell(cell)
            passed, message = rubric.judge(cells.grade_id(cell), Evidence(records, broken, num_devices=devices))
            assert passed, f"{assignment} at {devices} devices, {cells.grade_id(cell)}: {message}"


@pytest.mark.parametrize("assignment,devices", RUNS)
def test_a_missing_record_fails_with_words_a_learner_knows(executed, course, assignment, devices):
    """Drop each record of each test cell in turn: the test fails without naming the record's key."""
    rubric = load_rubric(course.rubric(assignment))
    for cell in executed[(assignment, devices)].cells:
        if not cells.is_autograded_test(cell):
            continue
        records, broken = records_of_cell(cell)
        for key in records:
            others = {k: v for k, v in records.items() if k != key}
            passed, message = rubric.judge(cells.grade_id(cell), Evidence(others, broken, num_devices=devices))
            assert passed or key not in message, f"{assignment} {cells.grade_id(cell)} without {key}: {message}"
