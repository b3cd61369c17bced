"""Property-based tests (Hypothesis): no generated notebook makes the grader raise, hang or lose a result.

- At least 1,000 generated notebooks go through ``prepare`` (intake, restore,
  scan): random structure, metadata, outputs, attachments, sizes and broken
  JSON or layouts. Each ends with a status (never an exception, never a
  ``grader_error``) within seconds, and a notebook that will run is valid.
- Generated records never make decoding raise anything but ``RecordError``,
  and no rubric judge raises on whatever decodes.
- Generated attachments never break the feedback page.
- A few generated but valid notebooks (stale outputs, junk metadata, pasted
  images, extra cells, Unicode student ids) are graded with ``grade_all``
  beside an honest submission: every one keeps the honest grade.

Runs are derandomized (the same examples every time) so ``make test`` is
reproducible; set ``HYPOTHESIS_SEED``-free exploration locally by removing
``derandomize``.
"""
from __future__ import annotations

import copy
import json
import os
import shutil
import time
from pathlib import Path

import nbformat
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from conftest import CORPUS_LIMITS
from grader.classroom import batch
from grader.submission import feedback
from grader.term.gradebook import path_part
from grader.submission.judge import Evidence, shown_shape
from grader.submission.rubric_loading import load_rubric
from grader.layout import Course
from grader.submission.pipeline import Job, Settings, prepare
from grader.submission.records import MIME_TYPE, RecordError, Recorded, decode
from grader.results import NotebookResult, Status
from grader.course.variants import Scenario, build

pytestmark = pytest.mark.filterwarnings("ignore::nbformat.warnings.MissingIDFieldWarning")

COURSE = Course.default()
ASSIGNMENTS = COURSE.assignments()
RELEASED = {a: json.loads(COURSE.release_notebook(a).read_text()) for a in ASSIGNMENTS}
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
PREPARED_STATUSES = {Status.GRADED, Status.TOO_LARGE, Status.INVALID_NOTEBOOK, Status.MISSING}
QUICK = settings(deadline=None, derandomize=True, database=None, print_blob=True,
                 suppress_health_check=list(HealthCheck))

text = st.text(max_size=24)
scalars = st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats() | text
json_values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(text, inner, max_size=4),
                           max_leaves=10)
mime = st.sampled_from(["text/plain", "text/html", "text/markdown", "image/png", "image/svg+xml", "application/json",
                        MIME_TYPE, "application/vnd.jupyter.widget-view+json", "application/javascript"]) | text
outputs = st.one_of(
    st.fixed_dictionaries({"output_type": st.just("stream"), "name": st.sampled_from(["stdout", "stderr", "x"]),
                           "text": text | st.lists(text, max_size=3)}),
    st.fixed_dictionaries({"output_type": st.sampled_from(["display_data", "execute_result"]),
                           "data": st.dictionaries(mime, json_values | text, max_size=3), "metadata": json_values},
                          optional={"execution_count": st.none() | st.integers(-5, 2**40), "transient": json_values}),
    st.fixed_dictionaries({"output_type": st.just("error"), "ename": text, "evalue": text,
                           "traceback": st.lists(text, max_size=3)}),
    json_values,
)
attachments = st.dictionaries(
    text, st.one_of(st.fixed_dictionaries({"image/png": st.sampled_from([PNG, "not base64!", ""])}),
                    st.dictionaries(mime, json_values | st.lists(text, max_size=2), max_size=2), json_values),
    max_size=3) | json_values
nbgrader_meta = st.fixed_dictionaries({}, optional={
    key: json_values | st.sampled_from(values) for key, values in {
        "grade_id": ["train-step", "test-quiz", "pause-and-reason", "setup", "quiz", "nope"],
        "solution": [True, False], "grade": [True, False], "locked": [True, False],
        "points": [0, 1, 2.5, -1, 1e308, "3", float("nan")], "task": [True, False], "schema_version": [3],
    }.items()})
WILD = ["source", "big_source", "metadata", "nbgrader", "cell_type", "id", "drop_id", "outputs", "attachments",
        "execution_count", "drop_key", "junk_key"]
valid_outputs = st.one_of(
    st.builds(lambda t: nbformat.v4.new_output("stream", text=t), text),
    st.builds(lambda t, m: nbformat.v4.new_output("display_data", data={"text/plain": t, "image/png": PNG}, metadata=m),
              text, st.dictionaries(text, json_values, max_size=2)),
    st.builds(lambda e, v, tb: nbformat.v4.new_output("error", ename=e, evalue=v, traceback=tb),
              text, text, st.lists(text, max_size=2)),
)
valid_attachments = st.dictionaries(text, st.fixed_dictionaries({"image/png": st.sampled_from([PNG, "bm90IGFuIGltYWdl"])}),
                                    max_size=2)
SOUND = ["source", "metadata", "nbgrader", "id", "outputs", "attachments", "execution_count"]


@st.composite
def cell_from(draw, template: dict, wild: bool) -> dict:
    """A copy of a released cell with up to three changes: ``wild`` ones may break the schema, others keep it."""
    cell = copy.deepcopy(template)
    for change in draw(st.lists(st.sampled_from(WILD if wild else SOUND), max_size=3)):
        if change == "source":
            cell["source"] = draw(text | st.lists(text, max_size=3) | json_values) if wild else draw(text)
        elif change == "big_source":
            cell["source"] = "x = 1\n" * 90_000  # over the per-cell limit
        elif change == "metadata":
            if wild:
                cell["metadata"] = draw(json_values)
            else:
                cell["metadata"].update(draw(st.dictionaries(text, json_values, max_size=2)))
        elif change == "nbgrader":
            cell.setdefault("metadata", {})
            if isinstance(cell["metadata"], dict):
                cell["metadata"]["nbgrader"] = draw(nbgrader_meta | json_values) if wild else draw(nbgrader_meta)
        elif change == "cell_type":
            cell["cell_type"] = draw(st.sampled_from(["code", "markdown", "raw", "heading"]) | json_values)
        elif change == "id":
            cell["id"] = draw(st.sampled_from(["setup", "quiz", "x" * 70, "a b"]) | text | json_values) if wild \
                else draw(st.sampled_from(["setup", "quiz", "test-quiz", "pause-and-reason"]) | st.from_regex(
                    r"[a-zA-Z0-9_-]{1,64}", fullmatch=True))
        elif change == "drop_id":
            cell.pop("id", None)
        elif change == "outputs":
            if wild:
                cell["outputs"] = draw(st.lists(outputs, max_size=3) | json_values)
            elif cell["cell_type"] == "code":
                cell["outputs"] = draw(st.lists(valid_outputs, max_size=3))
        elif change == "attachments":
            if wild:
                cell["attachments"] = draw(attachments)
            elif cell["cell_type"] != "markdown":
                continue
            else:
                cell["attachments"] = draw(valid_attachments)
            cell["source"] = f"{cell.get('source', '')}\n![a](attachment:{draw(text)})"
        elif change == "execution_count":
            if wild:
                cell["execution_count"] = draw(json_values)
            elif cell["cell_type"] == "code":
                cell["execution_count"] = draw(st.none() | st.integers(0, 10**6))
        elif change == "drop_key":
            if cell:
                cell.pop(draw(st.sampled_from(sorted(cell))), None)
        elif change == "junk_key":
            cell[draw(text)] = draw(json_values)
    return cell


@st.composite
def notebooks(draw) -> tuple[str, str, bytes]:
    """(assignment, layout, file bytes) for one generated submission.

    About half keep nbformat's schema (cells of the released notebook, in any
    order, dropped or repeated, with sound changes), the rest break it in
    every way: wild changes, junk cells, wrong versions, broken or damaged
    JSON, too many cells, too much source, deep nesting, wrong file layouts.
    """
    assignment = draw(st.sampled_from(ASSIGNMENTS))
    released = RELEASED[assignment]
    templates = released["cells"]
    mode = draw(st.sampled_from(["sound", "sound", "sound", "wild", "wild", "junk"]))
    if draw(st.sampled_from(["all", "all", "some"])) == "all":
        picked = list(range(len(templates)))  # the whole notebook, in order
    else:
        picked = draw(st.lists(st.integers(0, len(templates) - 1), max_size=len(templates) + 4))
    positions = st.lists(st.integers(0, max(len(picked) - 1, 0)), max_size=6)
    changed = set(draw(positions)) if picked else set()
    junk = set(draw(positions)) if picked and mode == "junk" else set()
    cells = []
    for position, index in enumerate(picked):
        if position in junk:
            cells.append(draw(json_values))  # junk where a cell should be
        cells.append(draw(cell_from(templates[index], mode != "sound")) if position in changed
                     else copy.deepcopy(templates[index]))
    if draw(st.sampled_from([False] * 11 + [True])):  # over the cell limit
        cells += [{"cell_type": "code", "metadata": {}, "source": "", "outputs": [], "execution_count": None}] * 2001
    nb = {"cells": cells, "metadata": copy.deepcopy(released["metadata"]), "nbformat": 4, "nbformat_minor": 5}
    if mode == "sound":
        nb["metadata"].update(draw(st.dictionaries(text, json_values, max_size=2)))
    else:
        nb["metadata"] = draw(st.just(nb["metadata"]) | json_values)
        nb["nbformat"] = draw(st.sampled_from([4, 4, 3, 5, "4", None]))
        nb["nbformat_minor"] = draw(st.sampled_from([5, 5, 4, 0, 99, -1, "x", None]))
        for key in draw(st.lists(st.sampled_from(["cells", "metadata", "nbformat", "nbformat_minor"]), max_size=1)):
            nb.pop(key)
    data = json.dumps(draw(json_values) if mode == "junk" and draw(st.booleans()) else nb).encode()
    damage = draw(st.sampled_from(["none"] * 12 + ["truncate", "insert", "deep", "bom", "latin1", "empty"]))
    if damage == "truncate":
        data = data[:draw(st.integers(0, len(data)))]
    elif damage == "insert":
        at = draw(st.integers(0, len(data)))
        data = data[:at] + draw(st.binary(min_size=1, max_size=8)) + data[at:]
    elif damage == "deep":
        depth = draw(st.sampled_from([50, 120, 5_000, 200_000]))
        data = data.replace(b'"metadata": {', b'"metadata": {"deep": ' + b"[" * depth + b"]" * depth + b", ", 1)
    elif damage == "bom":
        data = b"\xef\xbb\xbf" + data
    elif damage == "latin1":
        data = data.replace(b"e", b"\xe9", 3)
    elif damage == "empty":
        data = b""
    layout = draw(st.sampled_from(["file"] * 20 + ["missing", "wrong-name", "link", "directory"]))
    return assignment, layout, data


def _place(folder: Path, assignment: str, layout: str, data: bytes) -> None:
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    path = folder / f"{assignment}.ipynb"
    if layout == "file":
        path.write_bytes(data)
    elif layout == "wrong-name":
        (folder / "Copy of notebook.ipynb").write_bytes(data)
    elif layout == "link":
        (folder / "target.json").write_bytes(data)
        path.symlink_to(folder / "target.json")
    elif layout == "directory":
        path.mkdir()


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("generated")


EXAMPLES = int(os.environ.get("PROPERTY_EXAMPLES", "1000"))


def test_generated_notebooks_never_break_prepare(workdir):
    seen: list[Status] = []
    started = time.monotonic()

    @settings(QUICK, max_examples=EXAMPLES, phases=[Phase.generate])
    @given(notebooks())
    def check(generated):
        assignment, layout, data = generated
        folder = workdir / "submitted" / "s" / assignment
        _place(folder, assignment, layout, data)
        began = time.monotonic()
        prepared = prepare(Job("s", assignment, folder), COURSE, Settings(out=workdir / "out"))
        assert time.monotonic() - began < 30, "prepare took too long"
        result = prepared.result
        assert result.status in PREPARED_STATUSES, (result.status, result.message)
        assert result.message or result.status is Status.GRADED
        assert (prepared.notebook is not None) == (result.status is Status.GRADED)
        if prepared.notebook is not None:
            nbformat.validate(prepared.notebook)
            json.dumps(prepared.notebook)
        seen.append(result.status)

    check()
    assert len(seen) >= EXAMPLES
    assert Status.GRADED in seen and Status.INVALID_NOTEBOOK in seen and Status.TOO_LARGE in seen
    assert time.monotonic() - started < 300


# ---------------------------------------------------------------- records and rubrics

DTYPES = ["float16", "float32", "float64", "int32", "int64", "bool", "uint32", "uint8", "int8", "object", "<f8"]
arrays = st.fixed_dictionaries({"kind": st.sampled_from(["array", "jax_array"])}, optional={
    "dtype": st.sampled_from(DTYPES) | json_values,
    "shape": st.lists(st.integers(-2, 2**70) | st.sampled_from([0, 1, 2, 3, 4]), max_size=3) | json_values,
    "data": st.lists(scalars | json_values, max_size=8) | json_values,
    "sharding": json_values,
    "shards": st.lists(st.fixed_dictionaries({}, optional={
        "device": st.integers(-1, 8) | json_values,
        "index": st.lists(st.lists(st.none() | st.integers(-3, 10), max_size=3) | st.integers() | json_values,
                          max_size=2) | json_values,
        "value": st.fixed_dictionaries({"kind": st.just("array"), "dtype": st.sampled_from(DTYPES),
                                        "shape": st.lists(st.integers(0, 3), max_size=2),
                                        "data": st.lists(scalars, max_size=6)}) | json_values}) | json_values,
        max_size=4) | json_values,
})
leaf_records = arrays | st.fixed_dictionaries({"kind": st.sampled_from(["scalar", "rejected"]) | json_values},
                                              optional={"value": scalars | json_values, "type": json_values})
records = st.recursive(leaf_records, lambda inner: st.fixed_dictionaries(
    {"kind": st.sampled_from(["sequence", "mapping"])},
    optional={"items": st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3) | json_values}),
    max_leaves=6) | json_values


class _Everywhere(dict):
    """Records that hold ``value`` under every key a judge asks for."""

    def __init__(self, value: Recorded):
        super().__init__()
        self.value = value

    def __contains__(self, key):
        return True

    def __getitem__(self, key):
        return self.value


RUBRICS = {a: load_rubric(COURSE.rubric(a)) for a in ASSIGNMENTS}


@settings(QUICK, max_examples=300)
@given(records)
def test_generated_records_decode_or_fail_cleanly_and_judges_never_raise(payload):
    try:
        recorded = decode(payload)
    except RecordError:
        return
    for rubric in RUBRICS.values():
        for grade_id in rubric.judges:
            passed, message = rubric.judge(grade_id, Evidence(_Everywhere(recorded)))
            assert isinstance(message, str)


# What learner code controls after hidden tests ran reaches the feedback page only through test messages. Those
# must not carry learner-chosen text (a class name, a long shape) that could spell out hidden-test source.
covert = st.text(st.characters(codec="ascii", categories=["L", "N"]), min_size=12, max_size=60)


@settings(QUICK, max_examples=60)
@given(covert, st.lists(st.integers(65, 10**7), min_size=4, max_size=24))
def test_messages_never_quote_learner_chosen_text_or_large_shapes(name, dims):
    rejected = decode({"kind": "rejected", "type": f"{name}.{name}"})
    for rubric in RUBRICS.values():
        for grade_id in rubric.judges:
            _, message = rubric.judge(grade_id, Evidence(_Everywhere(rejected)))
            assert name not in message, message
    assert shown_shape(dims) == "another shape" and shown_shape((2, 3)) == "(2, 3)"
    assert str(dims[0]) not in shown_shape(dims)


def test_a_record_a_check_cannot_compare_fails_its_test_not_the_grader():
    import numpy as np

    from grader.submission.judge import Rubric

    rubric = Rubric()
    rubric.judges["test-portions"] = lambda e: np.allclose(np.zeros(2), np.zeros(5)[100:102])  # a forged shard index
    passed, message = rubric.judge("test-portions", Evidence({}))
    assert not passed and "could not be judged (ValueError)" in message


def test_a_student_id_cannot_take_the_place_of_another_ids_digest():
    long_id = "\u957f" * 70  # over 200 bytes: stored under "~" and a digest
    digest = path_part(long_id)
    assert digest.startswith("~") and path_part(digest) != digest  # the digest, as an id, is digested again


@settings(QUICK, max_examples=300)
@given(st.text(min_size=1, max_size=90), st.text(min_size=1, max_size=90))
def test_two_ids_never_share_a_path(first, second):
    assert first == second or path_part(first) != path_part(second)


@settings(QUICK, max_examples=150)
@given(attachments, text)
def test_generated_attachments_never_break_the_feedback_page(found, name):
    cell = nbformat.v4.new_markdown_cell(f"answer ![x](attachment:{name}) ![y](attachment:image.png)")
    cell["attachments"] = found
    nb = nbformat.from_dict({"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5})  # unvalidated
    page = feedback.render(NotebookResult("s", "a", "a.ipynb", Status.GRADED, ""), nb)
    assert page.startswith("<!doctype html>")


# ---------------------------------------------------------------- valid generated notebooks, graded for real

ids = st.text(st.characters(categories=["L", "N"], include_characters="-_. "), min_size=1, max_size=16).filter(
    batch.valid_id)


cell_metadata = st.fixed_dictionaries({}, optional={  # what JupyterLab writes, with the values nbformat allows
    "collapsed": st.booleans(), "scrolled": st.sampled_from([True, False, "auto"]), "editable": st.booleans(),
    "jupyter": st.fixed_dictionaries({}, optional={"source_hidden": st.booleans()}),
    "tags": st.lists(st.sampled_from(["a", "raises-exception", "remove-cell"]), unique=True), "x-junk": json_values})


@st.composite
def harmless_variants(draw) -> dict:
    """The honest solution with what a real learner's file carries: nothing that should change its grade."""
    nb = json.loads(build(COURSE, "sharded_step", Scenario("honest")))
    for cell in nb["cells"]:
        if draw(st.integers(0, 3)) == 0:
            cell["metadata"].update(draw(cell_metadata))
        if cell["cell_type"] == "code" and draw(st.booleans()):
            cell["execution_count"] = draw(st.integers(1, 500))
            cell["outputs"] = [nbformat.v4.new_output("stream", text=draw(text)),
                               nbformat.v4.new_output("display_data", data={"text/plain": draw(text),
                                                                             "image/png": PNG})]
            if draw(st.booleans()):
                cell["outputs"].append(nbformat.v4.new_output("error", ename="NameError", evalue=draw(text),
                                                              traceback=[draw(text)]))
        elif cell["cell_type"] == "code" and "test" in cell["id"] and draw(st.booleans()):
            cell["source"] = "\n".join(line + "  " for line in "".join(cell["source"]).splitlines())
    answer = next(c for c in nb["cells"] if c["id"] == "pause-and-reason")
    if draw(st.booleans()):
        answer["source"] = "".join(answer["source"]) + "\n\n![pasted](attachment:image.png)"
        answer["attachments"] = {"image.png": {"image/png": PNG}}
    for number in range(draw(st.integers(0, 3))):
        at = draw(st.integers(0, len(nb["cells"])))
        kind = draw(st.sampled_from(["markdown", "raw", "code"]))
        new = (nbformat.v4.new_code_cell(f"_scratch_{number} = {number}  # {draw(text)!r}") if kind == "code"
               else nbformat.v4.new_markdown_cell(draw(text)) if kind == "markdown"
               else nbformat.v4.new_raw_cell(draw(text)))
        new["id"] = f"extra-{number}"
        nb["cells"].insert(at, new)
    nb["metadata"].update(draw(st.dictionaries(st.sampled_from(["widgets", "toc", "celltoolbar"]), json_values,
                                               max_size=2)))
    return nb


def _signature(nb: dict, honest: dict) -> tuple:
    return (len(nb["cells"]) - len(honest["cells"]), any("attachments" in c for c in nb["cells"]),
            any(o.get("output_type") == "error" for c in nb["cells"] for o in c.get("outputs", [])),
            frozenset(nb["metadata"]))


def test_generated_valid_notebooks_keep_the_honest_grade(tmp_path):
    honest = json.loads(build(COURSE, "sharded_step", Scenario("honest")))
    pool: list[tuple[str, dict]] = []

    @settings(QUICK, max_examples=80, phases=[Phase.generate])
    @given(ids, harmless_variants())
    def collect(student, nb):
        pool.append((student, nb))

    collect()
    submissions: dict[str, dict] = {}
    signatures: set[tuple] = set()
    for student, nb in reversed(pool):  # Hypothesis's later examples vary the most; take six different ones
        signature = _signature(nb, honest)
        taken = {s.casefold() for s in submissions} | {"honest"}
        if student.casefold() not in taken and signature not in signatures and len(submissions) < 6:
            submissions[student] = nb
            signatures.add(signature)
    assert len(submissions) == 6
    assert any(s[0] > 0 for s in signatures) and any(s[1] for s in signatures) and any(s[2] for s in signatures)
    submissions["honest"] = honest
    submitted = tmp_path / "submitted"
    for student, nb in submissions.items():
        folder = submitted / student / "sharded_step"
        folder.mkdir(parents=True)
        (folder / "sharded_step.ipynb").write_text(json.dumps(nb))
    results = batch.grade_all(submitted, COURSE, Settings(out=tmp_path / "out", limits=CORPUS_LIMITS),
                              workers=os.cpu_count() or 2)
    by_student = {r.student_id: r for r in results}
    assert set(by_student) == set(submissions), "a submission has no row"
    assert by_student["honest"].status is Status.GRADED and by_student["honest"].score == 11
    for student, result in by_student.items():
        assert result.status is Status.GRADED, (student, result.status, result.message)
        assert [(t.grade_id, t.points, t.passed) for t in result.tests] == \
               [(t.grade_id, t.points, t.passed) for t in by_student["honest"].tests], student
