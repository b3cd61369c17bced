"""Every instructor notebook runs headless with 2 and 8 devices and earns full marks.

Hidden tests also run the learner's functions on sub-meshes of those devices
(``coursekit.meshes.sub_mesh_sizes``: 1 of 2; 1, 4 and 7 of 8), which must pass too.

The records of each executed test cell are judged by the rubric, as in grading,
with the device count papermill used, and so are the programs the hidden tests
exported (run on fresh inputs in their own sandbox, as in grading).
"""
from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor

import nbformat
import pytest

from grader import cells
from grader.course.execute import execute
from grader.submission.judge import Evidence
from grader.submission.rubric_loading import load_rubric
from grader.layout import ASSIGNMENTS
from grader.submission.pipeline import Settings, by_test, declared_programs, recorded_programs
from grader.programs.launch import run_programs
from grader.submission.records import records_of_cell

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
def test_solution_scores_full_marks(executed, course, assignment, devices, tmp_path):
    rubric = load_rubric(course.rubric(assignment))
    nb = executed[(assignment, devices)]
    declared = declared_programs(course, assignment, devices)
    runs = by_test(run_programs(recorded_programs(nb, declared), declared, devices, Settings(out=tmp_path)))
    everywhere = {key: run for own in runs.values() for key, run in own.items()}
    for cell in nb.cells:
        if cells.is_autograded_test(cell):
            records, broken = records_of_cell(cell)
            programs = {**everywhere, **runs.get(cells.grade_id(cell), {})}
            passed, message = rubric.judge(cells.grade_id(cell), Evidence(records, broken, num_devices=devices,
                                                                             programs=programs))
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


# -- what a learner sees in the executed notebooks (issue #14) -------------------------------------

def _figure_cells(nb):
    return [c for c in nb.cells if c.cell_type == "code" and "figures.show(" in c.source]


@pytest.mark.parametrize("assignment,devices", RUNS)
def test_every_figure_cell_displays_its_figure(executed, assignment, devices):
    """Each figure cell shows an image below itself, not only the first figure of the kernel."""
    nb = executed[(assignment, devices)]
    drawing = [c for c in nb.cells if c.cell_type == "code" and "figures." in c.source and "import" not in c.source]
    assert drawing and drawing == _figure_cells(nb), "every cell that draws a figure must display it with figures.show"
    for cell in drawing:
        images = [o for o in cell.outputs if o.output_type == "display_data"
                  and ({"image/svg+xml", "image/png"} & set(o.get("data", {})))]
        assert len(images) == 1, f"{assignment} at {devices} devices: cell {cell.id} shows {len(images)} figures, not 1"
        _has_alternative_text(images[0].data, f"{assignment} at {devices} devices, cell {cell.id}")


def _has_alternative_text(data, where: str) -> None:
    """JupyterLab shows the HTML image, whose alternative text says the figure's data (the image outputs themselves
    carry none, which axe-core's image-alt rule reports as critical): the same SVG, and words with its numbers."""
    import base64
    import html

    found = re.fullmatch(r'<img src="data:image/svg\+xml;base64,([A-Za-z0-9+/=]+)" alt="([^"<>]+)" '
                         r'style="max-width: 100%">', data.get("text/html", ""))
    assert found, f"{where}: no HTML image with alternative text: {data.get('text/html', '')[:200]!r}"
    assert base64.b64decode(found.group(1)).decode("utf-8") == data["image/svg+xml"], f"{where}: another image"
    words = html.unescape(found.group(2))
    assert len(words) > 60 and re.search(r"\d", words) and words.endswith("."), f"{where}: alt text {words!r}"


@pytest.mark.parametrize("assignment,devices", RUNS)
def test_no_learner_visible_output_shows_recorder_plumbing(executed, assignment, devices):
    """Records carry their payload for the grader and show nothing: no `<recorded key>` lines."""
    from coursekit.record import MIME_TYPE

    records = 0
    for cell in executed[(assignment, devices)].cells:
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            visible = output.get("text", "") + "".join(
                str(value) for key, value in data.items() if key.startswith("text/"))
            assert "<recorded" not in visible and MIME_TYPE not in visible, f"{assignment} cell {cell.id}: {visible[:200]}"
            if MIME_TYPE in data:
                records += 1
                assert set(data) <= {MIME_TYPE, "text/plain"} and data.get("text/plain", "") == ""
    assert records > 0


@pytest.mark.parametrize("assignment,devices", RUNS)
def test_setup_cell_shows_the_configuration_it_made(executed, assignment, devices):
    setup = next(c for c in executed[(assignment, devices)].cells if cells.grade_id(c) == "setup")
    text = "".join(o.get("text", "") for o in setup.outputs)
    assert f"{devices} cpu devices" in text
    assert "jax_platforms = 'cpu'" in text and f"jax_num_cpu_devices = {devices}" in text


@pytest.mark.parametrize("assignment,devices", RUNS)
def test_no_printed_number_is_a_negative_zero(executed, assignment, devices):
    """A value like -3e-9 printed with a fixed number of decimals reads as -0.000000 (issue #14)."""
    for cell in executed[(assignment, devices)].cells:
        for output in cell.get("outputs", []):
            text = output.get("text", "") + str(output.get("data", {}).get("text/plain", ""))
            found = re.search(r"(?<![\w.])-0\.0*(?!\d*[1-9eE])", text)
            assert not found, f"{assignment} cell {cell.id} prints {found.group()!r}"
