"""No submission can stall, abort or corrupt a grading run (issue 12).

One test (or a few) per defense; each fails when its defense is removed:

1. work before any learner code runs is bounded (size from ``stat``, streaming
   fingerprint, linear intake and scan, nesting, cells, source, a time budget);
2. a malformed record is that test's failure, never a grader error;
3. attachments in answers are kept and rendered;
5. every folder under the submissions directory gets a row with its reason;
6. a grader error has no score, says what failed, is retried once within the
   run when a kernel does not start, and across runs a bounded number of times;

and one run of a hostile class beside honest submissions. (4, the output cap,
is covered by ``tests/attacks/sharded_step/output-cap-*.py``; 7, Hypothesis, by
``tests/test_properties.py``.)
"""
from __future__ import annotations

import asyncio
import contextlib
import copy
import csv
import json
import os
import subprocess
import time
from pathlib import Path

import nbformat
import pytest

from conftest import CORPUS_LIMITS
from grader.classroom import batch
from grader.submission import feedback, intake, pipeline, restore, scan
from grader.term.gradebook import MAX_GRADER_ATTEMPTS, Gradebook
from grader.kernel.run import Execution
from grader.submission.pipeline import Job, Settings, judge_tests, prepare
from grader.submission.records import MIME_TYPE, RecordError, decode, records_of_cell
from grader.results import Status
from grader.submission.sanitize import sanitize_notebook
from grader.course.variants import Scenario, build, parse, write_submission

ROOT = Path(__file__).resolve().parent.parent
ASSIGNMENT = "sharded_step"
NOTEBOOK = f"{ASSIGNMENT}.ipynb"
# A 1x1 PNG, as JupyterLab stores an image pasted into a markdown cell.
PNG = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")


def solution(course) -> dict:
    return json.loads(build(course, ASSIGNMENT, Scenario("honest")))


def with_attachment(course) -> dict:
    nb = solution(course)
    answer = next(c for c in nb["cells"] if c.get("id") == "pause-and-reason")
    answer["source"] = ("".join(answer["source"])
                        + "\n\n![image.png](attachment:image.png)\n![gone](attachment:missing.png)\n")
    answer["attachments"] = {"image.png": {"image/png": PNG}}
    return nb


def submit(folder: Path, content) -> Path:
    """Write ``content`` (a notebook dict, text or bytes) as folder/sharded_step.ipynb."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / NOTEBOOK
    if isinstance(content, dict):
        content = json.dumps(content)
    if isinstance(content, str):
        content = content.encode()
    path.write_bytes(content)
    return path


def prepared_for(tmp_path: Path, course, content, student: str = "s") -> pipeline.Prepared:
    folder = tmp_path / "submitted" / student / ASSIGNMENT
    submit(folder, content)
    return prepare(Job(student, ASSIGNMENT, folder), course, Settings(out=tmp_path / "out"))


def nested(depth: int) -> str:
    return '{"cells": [], "metadata": {"x": ' + "[" * depth + "]" * depth + '}, "nbformat": 4, "nbformat_minor": 5}'


def sparse_terabyte(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["truncate", "-s", "1T", str(path)], check=True)
    return path


# ---------------------------------------------------------------- 1. bounded work before any learner code runs


def test_sparse_terabyte_notebook_is_rejected_without_reading_a_byte(tmp_path, course, monkeypatch):
    path = sparse_terabyte(tmp_path / "submitted" / "s" / ASSIGNMENT / NOTEBOOK)
    read = []
    real_read = os.read

    def counting_read(fd, n):
        data = real_read(fd, n)
        if os.fstat(fd).st_size == path.stat().st_size:
            read.append(len(data))
        return data

    monkeypatch.setattr(os, "read", counting_read)
    started = time.monotonic()
    fingerprint = intake.fingerprint(path)
    prepared = prepare(Job("s", ASSIGNMENT, path.parent), course, Settings(out=tmp_path / "out"))
    assert time.monotonic() - started < 10
    assert read == [], f"read {sum(read)} bytes of a file over the limit"
    assert fingerprint and fingerprint.startswith("size:1099511627776:")
    assert prepared.notebook is None and prepared.result.status is Status.TOO_LARGE
    assert "1099511627776 bytes; the limit is" in prepared.result.message
    assert prepared.sha256 == fingerprint  # kept by the next run without reading it again


def test_fingerprint_is_a_streaming_digest_of_the_file(tmp_path):
    import hashlib

    path = tmp_path / NOTEBOOK
    path.write_bytes(os.urandom(3 * intake.CHUNK + 17))
    assert intake.fingerprint(path) == hashlib.sha256(path.read_bytes()).hexdigest()


def test_nesting_deeper_than_the_limit_is_too_large_and_never_a_recursion_error(tmp_path, course):
    for depth in (intake.MAX_NESTING + 20, 200_000):  # one json can parse, one it cannot
        prepared = prepared_for(tmp_path, course, nested(depth))
        assert prepared.result.status is Status.TOO_LARGE, prepared.result.message
        assert f"nested {depth + 2} levels deep; the limit is {intake.MAX_NESTING}" in prepared.result.message
    # Brackets inside strings do not nest.
    assert intake.nesting_depth(json.dumps({"source": "[" * 10_000 + '\\"{{{'}).encode()) == 1


def test_too_many_cells_is_too_large(tmp_path, course):
    nb = solution(course)
    nb["cells"] += [nbformat.v4.new_code_cell("pass") for _ in range(intake.MAX_CELLS)]
    prepared = prepared_for(tmp_path, course, nb)
    assert prepared.result.status is Status.TOO_LARGE
    assert f"cells; the limit is {intake.MAX_CELLS}" in prepared.result.message


def test_oversized_cell_source_and_total_source_are_too_large(tmp_path, course):
    nb = solution(course)
    nb["cells"].append(nbformat.v4.new_code_cell("x = 1\n" * (intake.MAX_CELL_SOURCE_CHARS // 6 + 1)))
    prepared = prepared_for(tmp_path, course, nb)
    assert prepared.result.status is Status.TOO_LARGE
    assert "characters of source; the limit is" in prepared.result.message and "per cell" in prepared.result.message
    nb = solution(course)
    cells = intake.MAX_SOURCE_CHARS // intake.MAX_CELL_SOURCE_CHARS + 1
    nb["cells"] += [nbformat.v4.new_markdown_cell("x" * intake.MAX_CELL_SOURCE_CHARS) for _ in range(cells)]
    prepared = prepared_for(tmp_path, course, nb)
    assert prepared.result.status is Status.TOO_LARGE
    assert f"characters of source; the limit is {intake.MAX_SOURCE_CHARS}" in prepared.result.message


def test_prepare_phase_has_a_time_budget(tmp_path, course, monkeypatch):
    nb = solution(course)
    nb["cells"].append(nbformat.v4.new_code_cell("eval(x)\n" * 40_000))  # within every size limit, slow to scan
    monkeypatch.setattr(pipeline, "PREPARE_BUDGET_S", 0.2)
    prepared = prepared_for(tmp_path, course, nb)
    assert prepared.notebook is None and prepared.result.status is Status.TOO_LARGE
    assert "preparing the notebook took longer than 0.2 s" in prepared.result.message
    assert all(t.points == 0 and t.message.startswith("not graded: ") for t in prepared.result.tests)
    assert prepared.sha256 == intake.fingerprint(tmp_path / "submitted" / "s" / ASSIGNMENT / NOTEBOOK)  # kept on resume


def test_intake_is_linear_in_the_number_of_cells(tmp_path, monkeypatch):
    """100,000 cell ids (an nbformat 3 file, so nbformat's own validation is not timed): the old per-id
    list.count took minutes; a linear pass takes well under a second."""
    monkeypatch.setattr(intake, "MAX_CELLS", 10**6)
    cells = [{"cell_type": "code", "id": f"c{number}" if number % 1000 else "twin", "source": ""}
             for number in range(100_000)]
    path = tmp_path / NOTEBOOK
    path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 3, "nbformat_minor": 0}))
    started = time.monotonic()
    with pytest.raises(intake.InvalidSubmission, match="nbformat 3 is not supported"):
        intake.read(path)
    assert time.monotonic() - started < 15
    assert intake.duplicate_ids([c["id"] for c in cells]) == ["twin"]


def test_scan_is_linear_and_its_flags_bounded():
    """60,000 lines of eval: the old list de-duplication took 33-55 s."""
    started = time.monotonic()
    flags = scan.flags_for("cell x", "eval(x)\n" * 60_000)
    assert time.monotonic() - started < 30  # about 3 s unloaded
    assert len(flags) == scan.MAX_FLAGS_PER_CELL + 1 and "more construct(s) flagged" in flags[-1]
    # A deep attribute chain is shown by an excerpt, never unparsed whole (quadratic); deep nesting is a flag.
    assert scan.flags_for("c", "x" + ".modules" * 150 + " = 1\n")
    assert scan.flags_for("c", "y = " + "+".join(["sys.modules"] * 30_000)) == ["c: nested too deeply to scan"]


def test_feedback_finds_hidden_blocks_in_linear_time(course):
    """A 512 KiB learner cell of BEGIN HIDDEN TESTS lines with no END: the old regular expression took minutes
    per pass (quadratic), holding the GIL, so every worker stopped while the page was written."""
    from grader.results import NotebookResult
    from grader.cells import HIDDEN

    nb = nbformat.read(course.source_notebook("sharded_step"), as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell("### BEGIN HIDDEN TESTS\n" * 22_000 + "pass\n"))
    result = NotebookResult("s", "sharded_step", "sharded_step.ipynb", Status.GRADED, "")
    started = time.monotonic()
    page = feedback.render(result, nb)
    assert time.monotonic() - started < 10  # about 0.5 s
    assert "90204" not in page  # the course's hidden blocks are still found
    assert HIDDEN.sub("-", "a\n ### BEGIN HIDDEN TESTS x\nb\n\t### END HIDDEN TESTS y\nc") == "a\n-c"
    assert HIDDEN.findall("### BEGIN HIDDEN TESTS\n### BEGIN HIDDEN TESTS\nz") == []


def test_an_attachment_referenced_many_times_renders_once(course):
    """470 references to a 1 MB attachment made a 470 MB feedback page (the renderer inlines it at each)."""
    import base64

    from grader import cells as cell_kinds
    from grader.results import NotebookResult

    nb = nbformat.read(course.source_notebook("sharded_step"), as_version=4)
    answer = next(c for c in nb.cells if cell_kinds.grade_id(c) == "pause-and-reason")
    answer.source = "![](attachment:a.png)" * 470
    answer.attachments = {"a.png": {"image/png": base64.b64encode(os.urandom(750_000)).decode()}}
    page = feedback.render(NotebookResult("s", "sharded_step", "sharded_step.ipynb", Status.GRADED, ""), nb)
    assert page.count("data:image/png;base64,") == 1 and len(page) < 2_000_000
    cleaned = sanitize_notebook(nb)
    assert len(nbformat.writes(cleaned)) < 4_000_000  # formgrader renders this copy: one inlined image


def test_a_notebook_that_is_not_a_regular_file_is_a_status_not_a_hang(tmp_path, course):
    folder = tmp_path / "submitted" / "s" / ASSIGNMENT
    folder.mkdir(parents=True)
    os.mkfifo(folder / NOTEBOOK)  # opening it for reading would block forever
    prepared = prepare(Job("s", ASSIGNMENT, folder), course, Settings(out=tmp_path / "out"))
    assert prepared.result.status is Status.INVALID_NOTEBOOK
    assert prepared.result.message == f"{NOTEBOOK} is not a regular file"


# ---------------------------------------------------------------- 2. malformed records


def _good():
    return {"kind": "array", "dtype": "float32", "shape": [2], "data": [1.0, 2.0]}


def malformed_records() -> list:
    deep = {"kind": "scalar", "value": 1}
    for _ in range(5000):
        deep = {"kind": "sequence", "items": [deep]}
    jax = {"kind": "jax_array", "dtype": "float32", "shape": [2], "data": [1.0, 2.0]}
    return [
        {**jax, "shards": [1, 2, 3]},  # the case: AttributeError before
        {**jax, "shards": [{"device": 0, "value": 7}]},
        {**jax, "shards": [{"device": "0", "index": [[0, 2]], "value": _good()}]},
        {**jax, "shards": [{"device": 0, "index": [["a", None]], "value": _good()}]},
        {**jax, "shards": [{"device": 0, "index": 3, "value": _good()}]},
        {**jax, "shards": [{"device": float("nan"), "value": _good()}]},
        {**jax, "shards": [{"device": 2**61 + 1, "index": [[0, 2]], "value": _good()}]},  # quoted in messages
        {**jax, "shards": {"0": _good()}},
        {**jax, "shards": "abc"},
        {**jax, "sharding": {"a": [1]}},
        {"kind": "array", "dtype": ["float32"], "shape": [2], "data": [1, 2]},
        {"kind": "array", "dtype": "int8", "shape": [1], "data": [10**30]},
        {"kind": "array", "dtype": "uint8", "shape": [1], "data": [-1]},
        {"kind": "array", "dtype": "float64", "shape": [2**62, 2**62], "data": []},
        {"kind": "array", "dtype": "float64", "shape": [2**64], "data": [1.0]},
        {"kind": "array", "dtype": "float64", "shape": [1], "data": [10**400]},
        {"kind": "array", "dtype": "float64", "shape": [1.5], "data": [1.0]},
        {"kind": "array", "dtype": "float64", "shape": [2], "data": [float("nan"), float("inf")]},
        {"kind": "array", "dtype": "float64", "shape": [1], "data": [[1.0]]},
        {"kind": "array"},
        {"kind": "scalar", "value": [1]},
        {"kind": "scalar", "value": float("nan")},
        {"kind": "scalar", "value": 10**400},
        {"kind": "sequence", "items": 5},
        {"kind": "sequence", "items": {"a": 1}},
        {"kind": "mapping", "items": [1, 2]},
        {"kind": "mapping", "items": {"a": {"kind": "nope"}}},
        {"kind": {"nested": ["junk"]}},
        {"kind": "rejected", "type": {"x": 1}},
        deep,
        None, 5, "x", [1, 2], {},
    ]


def test_decoding_a_malformed_record_raises_only_record_error():
    for payload in malformed_records():
        try:
            decode(payload)
        except RecordError:
            pass


def test_malformed_records_are_each_tests_failure_never_a_grader_error(course):
    """Every record every test cell needs is malformed: each test fails with a message; nothing raises."""
    import re

    payloads = malformed_records()
    count = 0
    for assignment in course.assignments():
        source = nbformat.read(course.source_notebook(assignment), as_version=4)
        executed = copy.deepcopy(source)
        for cell in executed.cells:
            if cell.cell_type != "code" or not cell.metadata.get("nbgrader", {}).get("grade"):
                continue
            cell.execution_count = 1
            cell.outputs = [{"output_type": "display_data", "metadata": {}, "data": [1, 2]},
                            {"output_type": "display_data", "metadata": {}, "data": {MIME_TYPE: {"key": 5}}}]
            for key in re.findall(r'record\("([^"]+)"', cell.source):
                cell.outputs.append({"output_type": "display_data", "metadata": {},
                                     "data": {MIME_TYPE: {"key": key, "value": payloads[count % len(payloads)]}}})
                count += 1
        results = judge_tests(course, assignment, source, Execution(notebook=executed), 4)
        assert results
        for test in results:
            assert not test.passed and test.points == 0 and test.message, (assignment, test)
    assert count >= len(payloads)
    found, broken = records_of_cell({"outputs": [{"output_type": "display_data",
                                                  "data": {MIME_TYPE: {"key": "k", "value": p}}} for p in payloads]})
    assert "k" in broken and not found  # the same key many times: unusable


# ---------------------------------------------------------------- 3. attachments


def test_attachments_in_answers_are_kept_and_rendered(course, tmp_path):
    prepared = prepared_for(tmp_path, course, with_attachment(course))
    assert prepared.result.status is Status.GRADED, prepared.result.message
    answer = next(c for c in prepared.notebook.cells if c.get("id") == "pause-and-reason")
    assert answer.attachments == {"image.png": {"image/png": PNG}}
    nbformat.validate(prepared.notebook)
    page = feedback.render(prepared.result, prepared.notebook)  # the missing attachment is simply not shown
    assert f"data:image/png;base64,{PNG}" in page
    formgrader_copy = sanitize_notebook(prepared.notebook)
    kept = next(c for c in formgrader_copy.cells if c.get("id") == "pause-and-reason")
    assert kept.attachments["image.png"]["image/png"] == PNG  # formgrader renders it (inline, or from here)
    assert "attachment:image.png" in kept.source or f"data:image/png;base64,{PNG}" in kept.source
    # An answer without attachments drops none the course cell may have had, and junk is left out.
    nb = with_attachment(course)
    answer = next(c for c in nb["cells"] if c.get("id") == "pause-and-reason")
    answer["attachments"] = {"a.png": {"image/png": ["iVBOR", "w0KG"]}, "b.png": {"text/plain": 5}}
    rebuilt, _ = restore.rebuild(nbformat.read(course.source_notebook(ASSIGNMENT), as_version=4),
                                 nbformat.read(course.release_notebook(ASSIGNMENT), as_version=4),
                                 nbformat.from_dict(nb))
    cell = next(c for c in rebuilt.cells if c.get("id") == "pause-and-reason")
    assert cell.attachments == {"a.png": {"image/png": "iVBORw0KG"}}


# ---------------------------------------------------------------- 5. every folder gets a row


def _rows(out: Path) -> list[dict]:
    return list(csv.DictReader((out / "grades.csv").open(encoding="utf-8")))


def test_every_folder_gets_a_row_with_its_reason(tmp_path, course, monkeypatch):
    submitted = tmp_path / "submitted"
    honest = submit(submitted / "josé" / ASSIGNMENT, "{not json")  # a Unicode id nbgrader accepts
    submit(submitted / "Ann Lee" / ASSIGNMENT, "{}")
    (submitted / "linked-student").symlink_to(submitted / "josé")
    (submitted / "linked-notebook" / ASSIGNMENT).mkdir(parents=True)
    (submitted / "linked-notebook" / ASSIGNMENT / NOTEBOOK).symlink_to(honest)
    (submitted / "linked-assignment").mkdir()
    (submitted / "linked-assignment" / ASSIGNMENT).symlink_to(honest.parent)
    submit(submitted / "bad\nname" / ASSIGNMENT, "{}")
    submit(submitted / ".hidden" / ASSIGNMENT, "{}")
    submit(submitted / ("x" * 300)[:250] / ASSIGNMENT, "{}")
    os.makedirs(os.fsencode(submitted) + b"/caf\xe9/" + ASSIGNMENT.encode())  # not UTF-8
    submit(submitted / "unknown-assignment" / "homework1", "{}")
    (submitted / "stray").mkdir()
    (submitted / "stray" / NOTEBOOK).write_text("{}")  # one level too high
    submit(submitted / "unreadable" / ASSIGNMENT, "{}")
    (submitted / "notes.txt").write_text("not a folder")
    (submitted / ".ipynb_checkpoints").mkdir()
    real_entries = batch._entries

    def entries(folder):
        if Path(folder).name == "unreadable":
            raise PermissionError(13, "Permission denied")
        return real_entries(folder)

    monkeypatch.setattr(batch, "_entries", entries)
    results = batch.grade_all(submitted, course, Settings(out=tmp_path / "out", fork_server=False),
                              workers=1, only=[ASSIGNMENT, "homework1"])
    by_student = {r.student_id: r for r in results}
    expected = {
        "josé": (Status.INVALID_NOTEBOOK, "not valid JSON"),
        "Ann Lee": (Status.INVALID_NOTEBOOK, "not a Jupyter notebook"),
        "linked-student": (Status.INVALID_FOLDER, "submitted/linked-student is a symbolic link"),
        "linked-notebook": (Status.INVALID_NOTEBOOK, f"{NOTEBOOK} is a symbolic link, not a file"),
        "linked-assignment": (Status.INVALID_FOLDER, f"submitted/linked-assignment/{ASSIGNMENT} is a symbolic link"),
        "bad\\nname": (Status.INVALID_FOLDER, "is not a usable student id"),
        ".hidden": (Status.INVALID_FOLDER, "is not a usable student id"),
        "x" * 250: (Status.INVALID_FOLDER, "is not a usable student id"),
        "caf\\udce9": (Status.INVALID_FOLDER, "is not a usable student id"),
        "unknown-assignment": (Status.INVALID_FOLDER, "unknown assignment 'homework1'"),
        "stray": (Status.MISSING, f"submitted/stray holds no assignment folder (found: {NOTEBOOK})"),
        "unreadable": (Status.INVALID_FOLDER, "submitted/unreadable cannot be read: Permission denied"),
    }
    assert set(by_student) == set(expected)
    for student, (status, reason) in expected.items():
        result = by_student[student]
        assert result.status is status and reason in result.message, (student, result.status, result.message)
    assert by_student["josé"].assignment_id == ASSIGNMENT and by_student["josé"].max_score == 11
    rows = _rows(tmp_path / "out")
    assert {row["student_id"] for row in rows} == set(expected)
    assert all(row["status"] and row["message"] for row in rows)
    json.loads((tmp_path / "out" / "results.json").read_text(encoding="utf-8"))


# ---------------------------------------------------------------- 6. grader errors


@pytest.fixture()
def one_submission(tmp_path, course):
    submitted = tmp_path / "submitted"
    submit(submitted / "ada" / ASSIGNMENT, solution(course))
    return submitted, Settings(out=tmp_path / "out", fork_server=False, prewarm=False)


class FakeKernel:
    conf = None


async def fake_kernel(settings, zygote):
    return FakeKernel(), contextlib.AsyncExitStack()


async def fake_run_in(kernel, nb, conf):
    return Execution(notebook=nb)  # as if run; no records, so every test is "not run"


def test_a_grader_error_row_has_no_score_and_says_what_failed(one_submission, course, monkeypatch):
    """The issue's case: every test passed, then writing the feedback page failed: the row showed 11/11."""
    submitted, settings = one_submission

    def broken_render(result, executed):
        if executed is not None:
            raise KeyError("image.png")
        return "<p>page</p>"

    def all_tests_passed(course, assignment, source, execution, num_devices, programs=None):
        tests = pipeline._skeleton(Job("ada", assignment, Path()), source).tests
        for test in tests:
            test.points, test.passed, test.message = test.max_points, True, "passed"
        return tests

    monkeypatch.setattr(batch, "warm_kernel", fake_kernel)
    monkeypatch.setattr(batch, "run_in", fake_run_in)
    monkeypatch.setattr(pipeline, "judge_tests", all_tests_passed)
    monkeypatch.setattr(pipeline, "render", broken_render)
    [result] = batch.grade_all(submitted, course, settings, workers=1)
    assert result.status is Status.GRADER_ERROR
    assert result.message.startswith(
        "internal grader error while judging and recording the result: KeyError: 'image.png' (run 1 of at most")
    assert all(t.points == 0 and not t.passed for t in result.tests)
    [row] = _rows(settings.out)
    assert row["status"] == "grader_error" and row["score"] == "" and row["max_score"] == "11"
    [stored] = json.loads((settings.out / "results.json").read_text())
    assert stored["score"] is None and stored["status"] == "grader_error"
    assert (settings.out / "feedback" / "ada" / ASSIGNMENT / f"{ASSIGNMENT}.html").read_text() == "<p>page</p>"


def test_a_kernel_that_does_not_start_is_retried_once_within_the_run(one_submission, course, monkeypatch):
    submitted, settings = one_submission
    starts = []

    async def flaky_kernel(settings, zygote):
        starts.append(1)
        if len(starts) == 1:
            raise RuntimeError("the kernel could not import the course libraries")
        return await fake_kernel(settings, zygote)

    monkeypatch.setattr(batch, "warm_kernel", flaky_kernel)
    monkeypatch.setattr(batch, "run_in", fake_run_in)
    [result] = batch.grade_all(submitted, course, settings, workers=1)
    assert len(starts) == 2
    assert result.status is Status.GRADED, result.message


def test_a_kernel_that_never_starts_is_an_infrastructure_error_not_the_learners(one_submission, course, monkeypatch):
    submitted, settings = one_submission
    starts = []

    async def no_kernel(settings, zygote):
        starts.append(1)
        raise RuntimeError("no free sandbox uid")

    monkeypatch.setattr(batch, "warm_kernel", no_kernel)
    [result] = batch.grade_all(submitted, course, settings, workers=1)
    assert len(starts) == 2
    assert result.status is Status.GRADER_ERROR and result.reported_score is None
    assert result.message.startswith("infrastructure failure, not caused by the submission: the kernel did not start "
                                     "(RuntimeError: no free sandbox uid); then the kernel did not start")
    assert "run 1 of at most" in result.message


def test_grader_errors_are_retried_by_later_runs_a_bounded_number_of_times(one_submission, course, monkeypatch):
    submitted, settings = one_submission
    calls = []

    def failing_prepare(job, course, settings):
        calls.append(job.student_id)
        raise OSError("disk trouble")

    monkeypatch.setattr(batch, "prepare", failing_prepare)
    for attempt in range(1, MAX_GRADER_ATTEMPTS + 2):
        [result] = batch.grade_all(submitted, course, settings, workers=1)
        assert result.status is Status.GRADER_ERROR
        assert len(calls) == min(attempt, MAX_GRADER_ATTEMPTS), "retried past the bound, or not retried"
        assert "while preparing the submission: OSError: disk trouble (" in result.message
    assert f"({MAX_GRADER_ATTEMPTS} runs failed on this file; not retried again until it changes or a run with " \
           "--force)" in result.message
    batch.grade_all(submitted, course, settings, workers=1, force=True)
    assert len(calls) == MAX_GRADER_ATTEMPTS + 1
    submit(submitted / "ada" / ASSIGNMENT, solution(course) | {"metadata": {"changed": True}})
    batch.grade_all(submitted, course, settings, workers=1)
    assert len(calls) == MAX_GRADER_ATTEMPTS + 2
    stored = json.loads(Gradebook(settings.out).result_path("ada", ASSIGNMENT, NOTEBOOK).read_text())
    assert stored["grader_attempts"] == 1  # a changed file starts over


# ---------------------------------------------------------------- one hostile class beside honest submissions

OWN_SCENARIOS = ["output-cap-error-evalue", "output-cap-display-metadata", "output-cap-display-updates",
                 "malformed-records"]


@pytest.fixture(scope="module")
def hostile_class(tmp_path_factory, course):
    base = tmp_path_factory.mktemp("hostile-class")
    submitted = base / "submitted"
    submit(submitted / "ada" / ASSIGNMENT, solution(course))
    submit(submitted / "josé" / ASSIGNMENT, with_attachment(course))  # honest, with a pasted image
    sparse_terabyte(submitted / "sparse" / ASSIGNMENT / NOTEBOOK)
    submit(submitted / "deep" / ASSIGNMENT, nested(300_000))
    many = solution(course)
    many["cells"] += [nbformat.v4.new_code_cell("pass") for _ in range(60_000)]
    submit(submitted / "many-cells" / ASSIGNMENT, many)
    big = solution(course)
    big["cells"].append(nbformat.v4.new_code_cell("eval(x)\n" * 70_000))
    submit(submitted / "big-source" / ASSIGNMENT, big)
    (submitted / "linked").symlink_to(submitted / "ada")
    (submitted / "linked-notebook" / ASSIGNMENT).mkdir(parents=True)
    (submitted / "linked-notebook" / ASSIGNMENT / NOTEBOOK).symlink_to(submitted / "ada" / ASSIGNMENT / NOTEBOOK)
    submit(submitted / "bad\tname" / ASSIGNMENT, solution(course))
    for name in OWN_SCENARIOS:
        scenario = parse(ROOT / "tests" / "attacks" / ASSIGNMENT / f"{name}.py")
        write_submission(course, ASSIGNMENT, scenario, submitted, name)
    settings = Settings(out=base / "out", limits=CORPUS_LIMITS)
    started = time.monotonic()
    first = batch.grade_all(submitted, course, settings, workers=os.cpu_count() or 2)
    seconds = time.monotonic() - started
    first_tables = (settings.out / "grades.csv").read_text(encoding="utf-8")
    started = time.monotonic()
    again = batch.grade_all(submitted, course, settings, workers=os.cpu_count() or 2)  # resume: no --force
    return first, again, settings.out, seconds, time.monotonic() - started, first_tables


def test_hostile_class_keeps_every_honest_grade_and_names_every_problem(hostile_class):
    first, _, out, seconds, _, _ = hostile_class
    by_student = {r.student_id: r for r in first}
    for honest in ("ada", "josé"):
        assert by_student[honest].status is Status.GRADED, by_student[honest].message
        assert by_student[honest].score == by_student[honest].max_score == 11
    expected = {
        "sparse": (Status.TOO_LARGE, "1099511627776 bytes"),
        "deep": (Status.TOO_LARGE, "nested 300002 levels deep"),
        "many-cells": (Status.TOO_LARGE, "cells; the limit is"),
        "big-source": (Status.TOO_LARGE, "characters of source; the limit is"),
        "linked": (Status.INVALID_FOLDER, "is a symbolic link"),
        "linked-notebook": (Status.INVALID_NOTEBOOK, "is a symbolic link"),
        "bad\\tname": (Status.INVALID_FOLDER, "is not a usable student id"),
        "output-cap-error-evalue": (Status.TOO_MUCH_OUTPUT, "output exceeded"),
        "output-cap-display-metadata": (Status.TOO_MUCH_OUTPUT, "output exceeded"),
        "output-cap-display-updates": (Status.TOO_MUCH_OUTPUT, "output exceeded"),
        "malformed-records": (Status.SUSPICIOUS, "publishes grader records itself"),  # and is graded in full:
    }
    assert by_student["malformed-records"].score == 11, by_student["malformed-records"].tests
    for student, (status, reason) in expected.items():
        result = by_student[student]
        assert result.status is status and reason in result.message, (student, result.status, result.message)
    assert set(by_student) == set(expected) | {"ada", "josé"}
    for result in first:
        if result.status in (Status.TOO_LARGE, Status.INVALID_FOLDER, Status.INVALID_NOTEBOOK):
            assert result.seconds < 30, (result.student_id, result.seconds)
    assert not any(r.status is Status.GRADER_ERROR for r in first)
    assert seconds < 600
    page = (out / "feedback" / "josé" / ASSIGNMENT / f"{ASSIGNMENT}.html").read_text(encoding="utf-8")
    assert f"data:image/png;base64,{PNG}" in page
    autograded = nbformat.read(out / "autograded" / "josé" / ASSIGNMENT / NOTEBOOK, as_version=4)
    answer = next(c for c in autograded.cells if c.get("id") == "pause-and-reason")
    assert answer.attachments["image.png"]["image/png"] == PNG


def test_hostile_class_resumes_without_reading_the_sparse_file_and_changes_nothing(hostile_class):
    first, again, out, _, resumed_seconds, first_tables = hostile_class
    assert [r.to_dict() | {"seconds": 0} for r in again] == [r.to_dict() | {"seconds": 0} for r in first]
    assert (out / "grades.csv").read_text(encoding="utf-8") == first_tables
    assert resumed_seconds < 60


# ---------------------------------------------------------------- one notebook cannot hold up the others


def test_inline_images_count_towards_markdown_limits_only_up_to_their_own_budget():
    """A cleaned answer carries its attachment inline (a data: image); that base64 text is not counted against the
    markdown limit, so sanitizing a sanitized notebook changes nothing, but only up to an image budget: a notebook
    of data: images is not parsed without bound."""
    import base64

    from grader.submission.sanitize import MAX_INLINE_IMAGE_CHARS, MAX_MARKDOWN_CHARS, sanitize_notebook

    image = base64.b64encode(b"\x89PNG\r\n\x1a\n" + os.urandom(300_000)).decode()  # 400 KB of base64
    answer = nbformat.v4.new_markdown_cell("My figure: ![a](attachment:f.png) <b>bold</b>")
    answer.attachments = {"f.png": {"image/png": image}}
    once = sanitize_notebook(nbformat.v4.new_notebook(cells=[answer]))
    assert image in once.cells[0].source and len(once.cells[0].source) > MAX_MARKDOWN_CHARS  # inlined, and long
    assert sanitize_notebook(once) == once
    huge = "x " + "![a](data:image/png;base64," + "A" * (MAX_INLINE_IMAGE_CHARS + 4) + ")"
    many = [nbformat.v4.new_markdown_cell("![a](data:image/png;base64," + "A" * (MAX_INLINE_IMAGE_CHARS // 2 - 100) + ")")
            for _ in range(6)]
    began = time.process_time()
    cleaned = sanitize_notebook(nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(huge), *many]))
    assert time.process_time() - began < 30
    assert cleaned.cells[0].source.startswith("```")  # over the image limit of a cell: text
    shown = [not c.source.startswith("```") for c in cleaned.cells[1:]]
    assert shown[:4] == [True] * 4 and not all(shown)  # the notebook's image budget runs out


def test_pathological_markdown_is_shown_as_text_in_bounded_time():
    """nbconvert's math patterns take time quadratic in a cell's length on `\\begin{a}` repeated (45 KB: 4 s;
    a 512 KiB cell: hours), and the grader's other notebooks wait meanwhile. Long cells become text, and a
    notebook's markdown is rendered up to a budget."""
    from grader.submission.sanitize import MAX_MARKDOWN_CHARS, clean_markdown, markdown_to_html

    huge = "\\begin{a}" * 50_000  # 450 KB in one cell
    began = time.process_time()
    assert clean_markdown(huge, {}).startswith("```") and "more characters" in markdown_to_html(huge, {})
    many = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("\\begin{a}" * (MAX_MARKDOWN_CHARS // 9))
                                           for _ in range(200)])  # 200 cells just under the per-cell limit
    cleaned = sanitize_notebook(many)
    assert time.process_time() - began < 15, "rendering learner markdown must stay bounded"
    assert sum(c.source.startswith("```") for c in cleaned.cells) >= 190  # past the budget: shown as text


def test_a_cell_is_not_charged_for_the_time_the_grader_itself_was_held_up():
    """A cell's time limit counts the kernel's time, not the grader's: another notebook's feedback holding the
    GIL for seconds (the watch cannot run) must not time out an honest cell."""
    from grader.kernel.run import _watch

    class Quiet:  # a client and kernel manager that never overflow and stay alive
        overflowed = False
        max_output_bytes = 1 << 20
        kc = type("KC", (), {"oversized": staticmethod(lambda: False), "session": None})()

        async def is_alive(self):
            return True

    async def scenario():
        cell = asyncio.ensure_future(asyncio.sleep(3.5))  # an honest cell: 3.5 s, 2 s of it with the grader stalled
        await asyncio.sleep(0.3)

        async def hold():
            time.sleep(2.0)  # the grader's own process, busy: no coroutine runs meanwhile

        asyncio.ensure_future(hold())
        return await _watch(cell, Quiet(), Quiet(), budget=1.5 + 0.9)

    assert asyncio.run(scenario()) is None


def test_a_cell_is_not_charged_for_the_time_the_machine_kept_it_from_a_core():
    """A cell's time limit counts the time it could run: at a deadline burst (or a loaded CI machine) an honest cell
    waits on the run queue, and that wait is not charged, up to WAIT_CAP times the limit; a cell that waits on
    nothing (sleeps or spins) is stopped at the limit, and one whose threads wait on each other at 1 + WAIT_CAP."""
    from grader.kernel.run import WAIT_CAP, _watch

    class Quiet:  # a client and kernel manager that never overflow and stay alive
        overflowed = False
        max_output_bytes = 1 << 20
        kc = type("KC", (), {"oversized": staticmethod(lambda: False), "session": None})()
        provisioner = None  # nothing to kill: the cell is a sleep

        async def is_alive(self):
            return True

    def waiting(fraction):  # a kernel kept from a core for this share of the clock since the cell began
        began = time.monotonic()
        return lambda: fraction * (time.monotonic() - began)

    async def scenario(seconds, waited):
        cell = asyncio.ensure_future(asyncio.sleep(seconds))
        began = time.monotonic()
        outcome = await _watch(cell, Quiet(), Quiet(), budget=1.0, waited=waited)
        return outcome and outcome[0], time.monotonic() - began

    # 2.5 s on the clock, 70% of it waiting for a core: 0.75 s of its own, within the limit
    assert asyncio.run(scenario(2.5, waiting(0.7)))[0] is None
    # the same cell with no wait counted is over the limit
    outcome, took = asyncio.run(scenario(2.5, lambda: 0.0))
    assert outcome == "timed_out" and took < 1.6
    # a kernel that only ever waits (threads of its own crowding each other out) ends at 1 + WAIT_CAP limits
    outcome, took = asyncio.run(scenario(30, waiting(1.0)))
    assert outcome == "timed_out" and 1 + WAIT_CAP <= took < 1 + WAIT_CAP + 0.6


def test_the_run_queue_wait_of_a_sandbox_is_read_from_its_threads(tmp_path):
    """RunQueue reads how long the threads of a sandbox's cgroup waited for a core: a process sharing one core with
    two others waits about two thirds of the time; alone on an idle core, hardly at all."""
    import subprocess
    import sys

    from grader.kernel.run import RunQueue
    from grader.sandbox import cgroup

    group = cgroup.create(f"test-runqueue-{os.getpid()}", 256)
    if group is None:
        pytest.skip("no memory cgroup here (root with cgroup v1 or v2 needed)")
    spin = "import os, time\nos.sched_setaffinity(0, {0})\nend = time.time() + 1.5\nwhile time.time() < end: pass"
    watched = subprocess.Popen([sys.executable, "-c", f"import os\nopen({str(group / 'cgroup.procs')!r}, 'w')"
                                f".write(str(os.getpid()))\n{spin}"])
    hogs = [subprocess.Popen([sys.executable, "-c", spin]) for _ in range(2)]
    try:
        time.sleep(0.3)
        waited = RunQueue(group)
        assert cgroup.threads(group), "the watched process is not in its cgroup"
        time.sleep(0.9)
        assert waited() > 0.3, f"waited only {waited():.2f} s sharing one core with two spinning processes"
    finally:
        for process in (watched, *hogs):
            process.kill()
            process.wait()
        cgroup.remove(group)


def test_a_generated_payload_is_written_as_its_rule_and_built_line_for_line(tmp_path):
    """``# %% repeat N: TEMPLATE`` in a scenario: the two half-megabyte attack cells are built at test time, the
    same lines the stored files held (22,000 BEGIN markers; 37,000 distinct numbered lines inside one block)."""
    markers = parse(ROOT / "tests" / "attacks" / ASSIGNMENT / "quadratic-hidden-markers.py").appended[-1][1]
    assert markers == "### BEGIN HIDDEN TESTS\n" * 22_000 + "pass"
    block = parse(ROOT / "tests" / "attacks" / ASSIGNMENT / "learner-hidden-block-redaction.py").appended[-1][1]
    lines = block.split("\n")
    assert lines[0] == "### BEGIN HIDDEN TESTS" and lines[-1] == "### END HIDDEN TESTS" and len(lines) == 37_002
    assert lines[1:-1] == [f"#{n:012d}" for n in range(37_000)] and len(block.encode()) <= 512 * 1024
    scenario = tmp_path / "s.py"
    scenario.write_text("# scenario: x\n# %% append quiz\nfirst\n# %% repeat 3: row {i} of 3\nlast\n")
    assert parse(scenario).appended == [("quiz", "first\nrow 0 of 3\nrow 1 of 3\nrow 2 of 3\nlast")]


def test_a_variant_scenario_is_its_original_with_its_own_cells_changed():
    """``# variant-of: FILE``: a scenario that differs from another by one cell states that cell only; every other
    answer comes from the original, the headers (what it must score) are its own."""
    folder = ROOT / "tests" / "corpus" / "local_mean_diagnosis"
    original = parse(folder / "wrong-global-jit-not-shard-map.py")
    variant = parse(folder / "wrong-global-jit-decorative-psum.py")
    assert variant.replace.keys() == original.replace.keys() and len(variant.replace) > 5
    changed = {gid for gid in original.replace if variant.replace[gid] != original.replace[gid]}
    assert changed == {"shard-map"} and "decoration" in variant.replace["shard-map"]
    assert variant.base == original.base and variant.description != original.description
    assert len((folder / "wrong-global-jit-decorative-psum.py").read_text().splitlines()) < 35
