"""The lessons' last stage, "Keep your evidence" (issue #23): the receipt cell and ``coursekit.receipt``.

The receipt cell runs in the learner's kernel on the learner's saved notebook; under the grader it must neither
fail nor matter (a read-only folder, no notebook). These tests run the cell's own source from each lesson against
the student notebook as a learner would have saved it.
"""
from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import nbformat
import numpy as np
import pytest

from coursekit.receipt import keep_receipt, plain, your_cells
from grader import cells
from grader.layout import ASSIGNMENTS


def _cell(nb, cell_id):
    return next(c for c in nb.cells if c.get("id") == cell_id)


def _learner_copy(course, assignment, folder):
    """The student notebook with a solved first TODO, a written answer and a prediction, saved in ``folder``."""
    nb = nbformat.read(course.release_notebook(assignment), as_version=4)
    solution = next(c for c in nb.cells if cells.is_solution(c) and c.cell_type == "code")
    solution.source = "# my own solution\nmine = 42\n"
    _cell(nb, "prediction").source = 'prediction = "I expected the sum to be p times too large"'
    path = folder / f"{assignment}.ipynb"
    nbformat.write(nb, path)
    return path, cells.grade_id(solution)


def _receipt_source(course, assignment):
    return _cell(nbformat.read(course.source_notebook(assignment), as_version=4), "keep-evidence").source


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_every_lesson_ends_with_a_receipt_the_grader_ignores(course, assignment):
    nb = nbformat.read(course.source_notebook(assignment), as_version=4)
    ids = [c.get("id") for c in nb.cells]
    receipt = _cell(nb, "keep-evidence")
    assert ids.index("keep-evidence") == len(ids) - 2, f"{assignment}: the receipt is not the last stage before References"
    meta = cells.nbgrader(receipt)
    assert meta.get("locked") and not meta.get("grade") and not meta.get("solution"), (
        f"{assignment}: the receipt cell must be a locked cell the grader does not score")
    stage = nb.cells[ids.index("prediction") - 1]
    assert stage.cell_type == "markdown" and "### Keep your evidence" in stage.source
    assert "## Keep your evidence" in stage.source or "Stage 5 of 5 · Keep your evidence" in "".join(
        c.source for c in nb.cells if c.cell_type == "markdown")
    prediction = _cell(nb, "prediction")
    assert prediction.cell_type == "code" and not cells.nbgrader(prediction), (
        f"{assignment}: the prediction cell must be the learner's own (no nbgrader metadata)")
    assert "def " not in receipt.source and len(receipt.source.splitlines()) < 20, "plumbing belongs in coursekit"


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_receipt_keeps_the_learners_code_outputs_and_prediction(course, assignment, tmp_path, monkeypatch, capsys):
    path, solved = _learner_copy(course, assignment, tmp_path)
    monkeypatch.setenv("JPY_SESSION_NAME", str(path))  # as JupyterLab starts the notebook's kernel
    namespace = {"prediction": "I expected the sum to be p times too large", "expected_gradient": np.array([-5.25, -0.75])}
    monkeypatch.setattr("coursekit.receipt._namespace", lambda: namespace)
    exec(_receipt_source(course, assignment), namespace)
    assert namespace["receipt"] == tmp_path / "evidence" / f"{assignment}-receipt.json"
    receipt = json.loads((tmp_path / "evidence" / f"{assignment}-receipt.json").read_text())
    assert receipt["assignment"] == assignment
    mine = {c["cell"]: c["source"] for c in receipt["your_cells"]}
    assert mine[solved] == "# my own solution\nmine = 42\n"
    assert receipt["prediction"] == "I expected the sum to be p times too large"
    kept = {label: value for label, value in receipt["outputs"].items()}
    assert [-5.25, -0.75] in kept.values()
    assert receipt["not_computed"], "names the lesson never computed here are listed, not fatal"
    printed = capsys.readouterr().out
    assert f"Receipt written to {tmp_path / 'evidence'}" in printed and "-5.25" not in printed  # where, never what


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_receipt_under_the_grader_says_where_it_could_not_write(course, assignment, tmp_path, monkeypatch, capsys):
    """The grader's kernel: no JupyterLab session, a working folder without the notebook and read-only (for root,
    which writes into any folder it may not, /proc: nothing can be created there)."""
    folder = Path("/proc") if os.geteuid() == 0 else tmp_path / "sealed"
    if folder != Path("/proc"):
        folder.mkdir()
        folder.chmod(stat.S_IRUSR | stat.S_IXUSR)
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    monkeypatch.chdir(folder)
    namespace = {}
    monkeypatch.setattr("coursekit.receipt._namespace", lambda: namespace)
    try:
        exec(_receipt_source(course, assignment), namespace)
    finally:
        if folder != Path("/proc"):
            folder.chmod(stat.S_IRWXU)
    printed = capsys.readouterr().out
    assert f"Could not read your saved notebook {folder / (assignment + '.ipynb')}" in printed
    assert "no receipt written" in printed and len(printed.strip().splitlines()) == 1
    assert namespace["receipt"] is None and not (folder / "evidence").exists()


def test_receipt_write_failure_is_reported_not_raised(tmp_path, capsys):
    notebook = tmp_path / "lesson.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1")]), notebook)
    blocker = tmp_path / "evidence"
    blocker.write_text("a file where the folder should be")
    assert keep_receipt("lesson", {"x": "x"}, namespace={"x": 1}, notebook=notebook) is None
    assert f"Could not write the receipt to {blocker / 'lesson-receipt.json'}" in capsys.readouterr().out
    # a folder nobody may create anything in, root included
    assert keep_receipt("lesson", {"x": "x"}, namespace={"x": 1}, notebook=notebook, folder=Path("/proc/evidence")) is None
    assert "Could not write the receipt to /proc/evidence/lesson-receipt.json" in capsys.readouterr().out


def test_a_notebook_handed_out_before_the_rename_still_keeps_its_receipt(course, tmp_path, monkeypatch, capsys):
    """Learners' notebooks from before the module was renamed import ``keep_evidence`` from ``coursekit.evidence``:
    their receipt cell writes the same receipt (in the grader's code "evidence" now means what a test is judged from)."""
    path, _ = _learner_copy(course, "sharded_step", tmp_path)
    monkeypatch.setenv("JPY_SESSION_NAME", str(path))
    namespace = {"prediction": "p times"}
    monkeypatch.setattr("coursekit.receipt._namespace", lambda: namespace)
    old = _receipt_source(course, "sharded_step").replace("from coursekit.receipt import keep_receipt",
                                                          "from coursekit.evidence import keep_evidence")
    old = old.replace("= keep_receipt(", "= keep_evidence(")
    assert "from coursekit.evidence import keep_evidence" in old and "keep_receipt" not in old
    exec(old, namespace)
    assert namespace["receipt"] == tmp_path / "evidence" / "sharded_step-receipt.json" and namespace["receipt"].exists()


def test_the_instructors_notebook_gets_no_receipt(course, tmp_path, capsys):
    source = course.source_notebook("collectives")
    assert keep_receipt("collectives", {}, namespace={}, notebook=source, folder=tmp_path) is None
    assert "instructor's notebook" in capsys.readouterr().out and not list(tmp_path.iterdir())


def test_your_cells_are_solutions_answers_and_added_code_only():
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("prose"),
        nbformat.v4.new_code_cell("locked = 1", metadata={"nbgrader": {"grade_id": "setup", "locked": True}}),
        nbformat.v4.new_code_cell("assert secret", metadata={"nbgrader": {"grade_id": "test", "grade": True}}),
        nbformat.v4.new_code_cell("def step(): ...", metadata={"nbgrader": {"grade_id": "step", "solution": True}}),
        nbformat.v4.new_markdown_cell("because", metadata={"nbgrader": {"grade_id": "why", "solution": True}}),
        nbformat.v4.new_markdown_cell("my notes", metadata={"course": {"evidence": "your explanation"}}),
        nbformat.v4.new_code_cell("print('mine')"),
        nbformat.v4.new_code_cell("prediction = 'they track each other'"),
    ])
    kept = your_cells(json.loads(nbformat.writes(nb)))
    assert [(c["cell"], c["source"]) for c in kept] == [
        ("step", "def step(): ..."), ("why", "because"), ("your explanation", "my notes"),
        ("your own cell", "print('mine')"),
        ("your prediction", "prediction = 'they track each other'")]


def test_plain_turns_arrays_and_containers_into_json():
    value = {"a": np.float32(1.5), "b": (np.arange(3), [np.nan]), 3: np.int64(7)}
    assert json.loads(json.dumps(plain(value))) == {"a": 1.5, "b": [[0, 1, 2], ["nan"]], "3": 7}
    assert plain(np.zeros(20_000)).startswith("array of shape (20000,)")


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_validate_never_writes_or_replaces_the_receipt(course, assignment, tmp_path, monkeypatch, capsys):
    """nbgrader's Validator runs every cell (with NBGRADER_VALIDATING=1 in the kernel's environment): a Validate of
    a broken version must not replace the receipt the learner wrote."""
    path, _ = _learner_copy(course, assignment, tmp_path)
    monkeypatch.setenv("JPY_SESSION_NAME", str(path))
    monkeypatch.setenv("NBGRADER_VALIDATING", "1")
    (tmp_path / "evidence").mkdir()
    mine = tmp_path / "evidence" / f"{assignment}-receipt.json"
    mine.write_text('{"kept": "the learner\'s own receipt"}')
    namespace = {"prediction": "p times"}
    monkeypatch.setattr("coursekit.receipt._namespace", lambda: namespace)
    exec(_receipt_source(course, assignment), namespace)
    assert namespace["receipt"] is None and mine.read_text() == '{"kept": "the learner\'s own receipt"}'
    assert "no receipt is written during Validate" in capsys.readouterr().out
