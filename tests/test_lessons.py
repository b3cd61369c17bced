"""The lessons as a learner meets them (issue #14).

Static checks read the instructor notebooks in ``source/`` (the student notebooks are generated from them
and checked current by test_artifacts.py). The executed checks (figures shown, no recorder plumbing, setup
output) live in test_devices.py, which already runs every notebook at 2 and 8 devices.

The last group runs learner-like wrong answers, each breaking one promise of a TODO's docstring, in the
learner's copy of the notebook (hidden tests removed) and checks where the first error appears: in the
learner's own cell or in the visible test right after it, never first in a locked cell of the lesson.
"""
from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor

import nbformat
import pytest

from grader import cells
from grader.course.execute import ExecutionFailed, execute
from grader.layout import ASSIGNMENTS
from grader.course.variants import Scenario, build

DOCS = {
    "sharded computation": "https://docs.jax.dev/en/latest/sharded-computation.html",
    "shard_map": "https://docs.jax.dev/en/latest/notebooks/shard_map.html",
    "collectives": "https://docs.jax.dev/en/latest/jax.lax.html#parallel-operators",
}
# The primary references the seed lessons cite.
SEED_REFERENCES = {
    "sharded_step": ["https://docs.jax.dev/en/latest/config_options.html#num-cpu-devices",
                     "https://docs.jax.dev/en/latest/201/sharding.html"],
    "local_mean_diagnosis": ["https://docs.jax.dev/en/latest/config_options.html#num-cpu-devices",
                             "https://docs.jax.dev/en/latest/201/sharding.html"],
    "collectives": ["https://docs.jax.dev/en/latest/notebooks/shard_map.html",
                    "https://docs.jax.dev/en/latest/benchmarking.html"],
}


def _notebook(course, assignment):
    return nbformat.read(course.source_notebook(assignment), as_version=4)


def _markdown(nb):
    return [c for c in nb.cells if c.cell_type == "markdown" and not cells.nbgrader(c).get("solution")]


def _index(nb, predicate, what):
    for i, cell in enumerate(nb.cells):
        if predicate(cell):
            return i
    raise AssertionError(f"no cell {what}")


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_notebook_ends_with_links_to_the_documentation_and_the_seed_references(course, assignment):
    last = _notebook(course, assignment).cells[-1]
    assert last.cell_type == "markdown" and last.source.startswith("## References")
    for name, url in DOCS.items():
        assert f"]({url})" in last.source, f"{assignment}: no link to the JAX page on {name}"
    for url in SEED_REFERENCES[assignment]:
        assert url in last.source, f"{assignment}: the seed's reference {url} is missing"


# Statements that are true for one device count only. Prose may give the default as an example ("2 rows on
# four devices", "four by default") but must say what holds for p devices.
COUNT = r"(?:two|four|eight|\d+)"
COUNT_BOUND = [
    rf"\b{COUNT} (?:rows|labels|examples|values|sequences) (?:per|on each|for each) device",
    rf"\beach (?:of )?(?:the )?{COUNT} devices",
    rf"\bstored {COUNT} times\b",
    rf"\bnot {COUNT} models\b",
    rf"\b{COUNT} devices worked\b",
    rf"\b{COUNT} times too large\b(?! on)",
    rf"\bover {COUNT} devices\b(?! \()",
]


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_prose_that_states_a_device_count_holds_for_any_count(course, assignment):
    for cell in _markdown(_notebook(course, assignment)):
        text = " ".join(cell.source.split())
        for pattern in COUNT_BOUND:
            found = re.search(pattern, text, re.I)
            assert not found, f"{assignment} cell {cell.id}: {found.group()!r} is true for one device count only"


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_prose_makes_no_claim_the_platform_refutes(course, assignment):
    text = " ".join(" ".join(c.source.split()) for c in _markdown(_notebook(course, assignment)))
    # jax.make_mesh's Explicit axes run the lessons' steps with the same values (shared/notes/platform-facts.md).
    assert not re.search(r"needs \*?auto\*? axes|requires \*?auto\*? axes", text, re.I)
    # figures.mechanism_diagram draws no hatching (hatches are lost in some SVG viewers); prose must not cite it.
    assert "hatch" not in text.lower()


def test_no_figure_relies_on_hatching(course):
    for svg in course.figures.glob("*.svg"):
        assert "<pattern" not in svg.read_text(), f"{svg.name} uses a hatch pattern"


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_parameters_and_setup_explain_themselves(course, assignment):
    nb = _notebook(course, assignment)
    parameters = next(c for c in nb.cells if cells.grade_id(c) == "parameters")
    assert "papermill" not in parameters.source.lower()
    for line in parameters.source.splitlines():
        if "=" in line:
            assert "#" in line, f"{assignment}: the setting {line.split('=')[0].strip()} is not explained"
    setup_index = _index(nb, lambda c: cells.grade_id(c) == "setup", "setup")
    prose = " ".join(c.source for c in nb.cells[:setup_index] if c.cell_type == "markdown")
    assert 'jax.config.update("jax_platforms", "cpu")' in prose
    assert 'jax.config.update("jax_num_cpu_devices", num_devices)' in prose


def test_sharded_step_shows_the_data_it_asks_about(course):
    nb = _notebook(course, "sharded_step")
    reference = next(c for c in nb.cells if cells.grade_id(c) == "host-reference")
    assert 'print("X =' in reference.source and 'print("y =' in reference.source
    prose = next(c for c in _markdown(nb) if "X^\\mathsf{T}y" in c.source or "X^\\mathsf{T} =" in c.source)
    assert "1 & 0 & 1 & 2 & 0 & 2 & 1 & 2" in prose.source  # the first column of X, as a row of X^T


def test_sharded_step_teaches_the_seed_parts(course):
    nb = _notebook(course, "sharded_step")
    text = {c.id: c.source for c in nb.cells}
    prose = " ".join(" ".join(c.source.split()) for c in _markdown(nb))
    assert "not a training system" in prose and "resilient" in prose  # the seed's caveat on the ten-step loop
    assert "checkpoint" in prose and "failed device" in prose
    figure = _index(nb, lambda c: cells.grade_id(c) == "figure", "figure")
    assert "**Predict:**" in nb.cells[figure - 1].source
    # partial contributions -> global gradient -> the same next weights on every replica, computed
    assert "partial contribution" in text["contributions"] and "w_next" in text["contributions"]
    assert "new_w.addressable_shards" in text["contributions"]
    # The quiz is about local means: they are taught before it.
    taught = _index(nb, lambda c: c.cell_type == "markdown" and "*local mean" in c.source, "defining local means")
    assert taught < _index(nb, lambda c: cells.grade_id(c) == "quiz", "quiz")


def test_each_pause_question_is_asked_once(course):
    questions = {}
    for assignment in ASSIGNMENTS:
        for cell in _markdown(_notebook(course, assignment)):
            for question in re.findall(r"\*\*([^*]+\?)\*\*", cell.source):
                key = " ".join(question.lower().split())
                assert key not in questions, f"{assignment} asks {question!r} again (first in {questions[key]})"
                questions[key] = assignment


def test_collectives_teaches_the_seed_parts(course):
    nb = _notebook(course, "collectives")
    momentum = _index(nb, lambda c: cells.grade_id(c) == "momentum", "momentum")
    assert "Predict before running:" in nb.cells[momentum - 1].source
    assert "momentum" in nb.cells[momentum - 1].source
    # The learner explains the label-only reversal; the prose before the test does not give the reason away.
    exercise = _index(nb, lambda c: cells.grade_id(c) == "make-it-yours", "make-it-yours")
    assert "different regression problem" not in nb.cells[exercise - 1].source
    test = _index(nb, lambda c: cells.grade_id(c) == "test-make-it-yours", "test-make-it-yours")
    explain = nb.cells[test + 1]
    assert explain.cell_type == "markdown" and "**Explain.**" in explain.source and "labels alone" in explain.source


# -- wrong answers: where does the learner first see the error? ---------------------------------------------

def _mutate(course, assignment, grade_id, old, new):
    nb = nbformat.read(course.source_notebook(assignment), as_version=4)
    source = next(c.source for c in nb.cells if cells.grade_id(c) == grade_id)
    assert old in source, f"{assignment}/{grade_id}: {old!r} not in the solution"
    return source.replace(old, new)


# (assignment, learner cell, old text of the solution, wrong text, the cell expected to report it): the visible
# test, or the learner's own cell, whose self-check (below the solution) tests a promise that the visible test
# cannot check without stopping before the hidden records the grader judges. A locked
# cell that is not a test may report it only with a message that names the learner's function.
WRONG_ANSWERS = [
    ("sharded_step", "train-step", "weights - learning_rate * gradient", "weights - 0.1 * gradient", "train-step"),
    ("sharded_step", "transfer", "host_new_w = start - learning_rate *", "host_new_w = start + 0 *", "test-transfer"),
    ("local_mean_diagnosis", "local-gradients", "bounds = np.cumsum(sizes)[:-1]", "bounds = len(sizes)",
     "test-local-gradients"),
    ("local_mean_diagnosis", "unequal-shards", "return np.tensordot(sizes, local_gradients, axes=1) / sizes.sum()",
     "return (sizes[:, None] * local_gradients).sum(axis=0) / sizes.sum()", "test-unequal-shards"),
    ("local_mean_diagnosis", "shard-statistics", "sums = np.where(mask, token_losses, 0.0)", "sums = (token_losses)",
     "test-shard-statistics"),
    ("local_mean_diagnosis", "shard-map", "def make_sharded_masked_mean(mesh):",
     "def make_sharded_masked_mean(given_mesh):", "shard-map"),
    ("collectives", "collectives", ", check_vma=False)", ")", "collectives"),
    ("collectives", "timing", "    fn(*args).block_until_ready()\n    samples", "    samples", "timing"),
    ("collectives", "momentum", "return w_slice - learning_rate * new_v, new_v",
     "return w_slice - learning_rate * v_slice, new_v", "momentum-check"),
]


def _first_error(course, tmp_path, assignment, learner_cell, old, new, expected):
    scenario = Scenario(name=f"{learner_cell}-wrong", replace={learner_cell: _mutate(course, assignment, learner_cell,
                                                                                        old, new)})
    nb = nbformat.reads(build(course, assignment, scenario), as_version=4)
    stop = _index(nb, lambda c: cells.grade_id(c) == expected, expected)
    nb.cells = nb.cells[:stop + 1]  # nothing after the cell that should report the mistake needs to run
    path = tmp_path / f"{assignment}-{learner_cell}.ipynb"
    nbformat.write(nb, path)
    out = tmp_path / f"{assignment}-{learner_cell}-out.ipynb"
    try:
        execute(path, out, progress=False, parameters={"figures_dir": str(tmp_path / "figures")}, cell_timeout=120)
    except ExecutionFailed:
        pass  # papermill stops at the first error; read which cell holds it
    for cell in nbformat.read(out, as_version=4).cells:
        for output in cell.get("outputs", []):
            if output.output_type == "error":
                return cells.grade_id(cell) or cell.get("id"), f"{output.ename}: {output.evalue}"
    return None, "no cell failed"


def test_a_broken_docstring_promise_is_reported_at_its_todo(course, tmp_path):
    with ThreadPoolExecutor(max_workers=2) as pool:
        outcomes = list(pool.map(lambda case: (case, _first_error(course, tmp_path, *case)), WRONG_ANSWERS))
    for (assignment, learner_cell, _, _, expected), (failed, error) in outcomes:
        assert failed in {learner_cell, expected}, (
            f"{assignment}: a wrong {learner_cell} first failed in {failed!r} ({error[:300]}), "
            f"not in the learner's cell or in {expected}")
        assert failed == expected, f"{assignment}/{learner_cell}: expected {expected} to report it, got {failed}: {error}"
        if not (failed == learner_cell or failed.startswith("test-")):
            function = re.search(r"^def (\w+)", _mutate(course, assignment, learner_cell, "", ""), re.M).group(1)
            assert function in error, f"{assignment}: {failed} reports a wrong {learner_cell} without naming {function}"


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_every_visible_test_asserts_something(course, assignment):
    for cell in _notebook(course, assignment).cells:
        if cells.is_autograded_test(cell):
            visible = cell.source.split("### BEGIN HIDDEN TESTS")[0]
            assert re.search(r"^\s*(assert |np\.testing\.assert_)", visible, re.M), (
                f"{assignment}: the visible part of {cells.grade_id(cell)} checks nothing")


def test_notebooks_run_at_once_each_start_their_kernel_in_their_own_folder(tmp_path):
    """``execute`` runs a notebook in its own folder, where its hidden tests import ``rubric_cases``. papermill's
    ``cwd`` changes the whole process's folder while the kernel starts, so two notebooks executed at once from threads
    (as tests/test_devices.py does) started kernels in each other's folders: the fresh-clone run at 3d03abb failed
    there with "No module named 'rubric_cases'"."""
    probe = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        "import os, time\nstarted_in = os.getcwd()\ntime.sleep(0.5)\nprint('STARTED', started_in)")])
    folders = [tmp_path / f"lesson-{i}" for i in range(4)]
    for folder in folders:
        folder.mkdir()
        nbformat.write(probe, folder / "probe.ipynb")

    def run(folder):
        out = execute(folder / "probe.ipynb", folder / "out.ipynb", progress=False)
        return nbformat.read(out, as_version=4).cells[0].outputs[0]["text"].split("STARTED ", 1)[1].strip()

    with ThreadPoolExecutor(max_workers=4) as pool:
        started = list(pool.map(run, folders))
    assert started == [str(folder) for folder in folders]
