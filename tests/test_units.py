"""Small, fast checks of the grader's pieces."""
from __future__ import annotations

import json

import nbformat
import numpy as np
import pytest

from coursekit.record import MIME_TYPE, encode
from grader.submission import intake, restore, scan
from grader.submission.judge import Evidence, Mismatch, Rubric
from grader.submission.records import decode, records_of_cell


def _cell_with(*payloads):
    outputs = [{"output_type": "display_data", "metadata": {}, "data": {MIME_TYPE: p}} for p in payloads]
    return {"cell_type": "code", "outputs": outputs}


def test_float64_subclass_and_fake_arrays_are_rejected():
    class Sneaky(np.float64):
        pass

    class Fake:
        def __array__(self, dtype=None, copy=None):
            return np.zeros(2)

    assert encode(Sneaky(1.0))["kind"] == "rejected"
    assert encode(Fake())["kind"] == "rejected"
    assert encode(np.float32(1.5))["kind"] == "array"
    records, _ = records_of_cell(_cell_with({"key": "g", "value": encode(Fake())}))
    with pytest.raises(Mismatch, match="plain NumPy"):
        Evidence(records).close("g", [0.0, 0.0])


def test_duplicate_record_makes_key_unusable():
    good = {"key": "g", "value": encode(np.array([1.0, 2.0]))}
    records, broken = records_of_cell(_cell_with(good, good))
    assert "g" in broken and "g" not in records
    with pytest.raises(Mismatch, match="more than once"):
        Evidence(records, broken).close("g", [1.0, 2.0])


def test_malformed_payloads_never_pass():
    for value in [{"kind": "array", "dtype": "object", "shape": [1], "data": [1]},
                  {"kind": "array", "dtype": "float32", "shape": [3], "data": [1.0]},
                  {"kind": "array", "dtype": "float32", "shape": [1], "data": ["1"]}]:
        records, broken = records_of_cell(_cell_with({"key": "g", "value": value}))
        with pytest.raises(Mismatch):
            Evidence(records, broken).close("g", [1.0])


def test_close_checks_values_shape_and_nan():
    evidence = Evidence({"g": decode(encode(np.array([1.0, np.nan], dtype=np.float32)))})
    with pytest.raises(Mismatch, match="NaN"):
        evidence.close("g", [1.0, 2.0])
    evidence = Evidence({"g": decode(encode(np.array([1.0, 2.0], dtype=np.float32)))})
    evidence.close("g", [1.0, 2.0])
    with pytest.raises(Mismatch, match="shape"):
        evidence.close("g", [1.0, 2.0, 3.0])
    with pytest.raises(Mismatch, match="differs"):
        evidence.close("g", [1.0, 2.5])


def test_rubric_reports_failure_message_without_reference_values():
    rubric = Rubric()

    @rubric.test("t")
    def _(e):
        e.close("g", [123.456])

    passed, message = rubric.judge("t", Evidence({"g": decode(encode(np.array([1.0])))}))
    assert not passed and "123" not in message


def test_intake_rejects_non_json_and_non_notebooks(tmp_path):
    bad = tmp_path / "a.ipynb"
    bad.write_text("{not json")
    with pytest.raises(intake.InvalidSubmission, match="not valid JSON"):
        intake.read(bad)
    bad.write_text(json.dumps({"cells": "nope"}))
    with pytest.raises(intake.InvalidSubmission, match="not a Jupyter notebook"):
        intake.read(bad)


def test_rebuild_restores_edited_locked_cells_and_keeps_added_code(course):
    source = nbformat.read(course.source_notebook("sharded_step"), as_version=4)
    release = nbformat.read(course.release_notebook("sharded_step"), as_version=4)
    submitted = nbformat.read(course.release_notebook("sharded_step"), as_version=4)
    setup = next(c for c in submitted.cells if c.get("id") == "setup")
    setup.source = "devices = [1, 2, 3, 4]"
    submitted.cells.insert(submitted.cells.index(setup) + 1, nbformat.v4.new_code_cell("helper = 1"))
    rebuilt, tampering = restore.rebuild(source, release, submitted)
    assert any("setup was edited" in t for t in tampering)
    restored = next(c for c in rebuilt.cells if c.get("id") == "setup")
    assert "start_jax" in restored.source
    sources = [c.source for c in rebuilt.cells]
    assert sources[sources.index(restored.source) + 1] == "helper = 1"
    hidden = next(c for c in rebuilt.cells if c.get("id") == "test-loss-and-gradient")
    assert "BEGIN HIDDEN TESTS" in hidden.source


def test_a_test_cell_of_an_earlier_release_is_restored_without_a_tampering_flag(course):
    """The instructor changed a test cell after a learner fetched: the learner's copy holds the earlier release's
    cell (its nbgrader checksum intact), which is restored from the course but is not tampering; the same cell
    edited by the learner (the checksum no longer matches) is."""
    from nbgrader.utils import compute_checksum

    source = nbformat.read(course.source_notebook("sharded_step"), as_version=4)
    release = nbformat.read(course.release_notebook("sharded_step"), as_version=4)
    earlier = nbformat.read(course.release_notebook("sharded_step"), as_version=4)
    test = next(c for c in earlier.cells if c.get("id") == "test-ten-steps")
    assert "loss's gradient at those weights" in test.source
    test.source = test.source.replace("loss's gradient at those weights", "weights it was given")
    test.metadata.nbgrader.checksum = compute_checksum(test)  # as nbgrader's generate wrote the earlier release
    rebuilt, tampering = restore.rebuild(source, release, earlier)
    assert tampering == []
    restored = next(c for c in rebuilt.cells if c.get("id") == "test-ten-steps")
    assert "loss's gradient at those weights" in restored.source
    test.source += "\nassert True  # edited by the learner"
    _, tampering = restore.rebuild(source, release, earlier)
    assert tampering == ["cell test-ten-steps was edited; restored from the course"]


def test_scan_flags_monkeypatching_and_leaves_honest_code_alone():
    flags = scan.flags_for("c", "import numpy as np\nnp.testing.assert_allclose = lambda *a, **k: None\n")
    assert flags and "monkeypatching" in flags[0]
    assert scan.flags_for("c", "import os\nos._exit(0)")
    assert scan.flags_for("c", "open('/work/main/source/x.ipynb')")
    assert scan.flags_for("c", "def loss(w, x, y):\n    return ((x @ w - y) ** 2).mean()\n") == []


def test_a_course_notebook_is_parsed_once_per_version_and_each_caller_gets_its_own_copy(tmp_path):
    import os
    import shutil

    from grader import cells
    from grader.layout import Course

    (tmp_path / "source" / "sharded_step").mkdir(parents=True)
    course = Course(tmp_path)
    shutil.copy(Course.default().source_notebook("sharded_step"), course.source_notebook("sharded_step"))
    first = course.read_source("sharded_step")
    assert first == nbformat.read(course.source_notebook("sharded_step"), as_version=4)
    first.cells[0].source = "changed by one submission"  # one caller's change reaches no other caller
    first.cells.append(cells.code_cell("x = 1"))
    second = course.read_source("sharded_step")
    assert second.cells[0].source != "changed by one submission" and len(second.cells) == len(first.cells) - 1
    edited = nbformat.read(course.source_notebook("sharded_step"), as_version=4)  # the instructor edits the file
    edited.cells[0].source = "the instructor's new introduction"
    nbformat.write(edited, course.source_notebook("sharded_step"))
    os.utime(course.source_notebook("sharded_step"), ns=(1, 1))  # even with an old modification time
    assert course.read_source("sharded_step").cells[0].source == "the instructor's new introduction"


def test_the_code_cells_the_grader_adds_are_valid_nbformat_cells():
    from grader import cells

    cell = cells.code_cell("print(1)\n", metadata={"grader": {"hidden_part_of": "test-x"}})
    nbformat.validate(nbformat.v4.new_notebook(cells=[cell]))
    assert cell.metadata.grader.hidden_part_of == "test-x" and cell.outputs == [] and cell.execution_count is None
    assert cells.code_cell("a").id != cells.code_cell("a").id


def test_a_key_carries_its_words_a_check_result_reads_back_typed_and_a_mistake_is_named_on_a_case():
    """grader.rubric's pieces (issue 59): a Key names its value in every message and fills a template; a typed answer
    of coursekit.checks is recorded as its plain number and read back as its member; a named mistake is a function
    of the case, with its words' fields filled."""
    import pickle

    from coursekit.checks import HostCopy, Kept
    from coursekit.record import Key
    from grader.rubric import Reference, mistake

    three = Key("hidden.{count}.mean", "the mean of {count} shard(s)")(count=3)
    assert three == "hidden.3.mean" and three.words == "the mean of 3 shard(s)"
    assert pickle.loads(pickle.dumps(three)).words == three.words
    assert encode(HostCopy.STATE_TO_HOST) == encode(1) and encode(np.asarray([Kept.KEPT]))["dtype"] == "int64"
    evidence = Evidence({"hidden.3.mean": decode(encode(2.5)), "copy": decode(encode(HostCopy.NONE)),
                         "kept": decode(encode(np.asarray([Kept.KEPT, Kept.CHANGED]))), "odd": decode(encode(7))})
    assert evidence.outcome("copy", HostCopy) is HostCopy.NONE and evidence.outcome("odd", HostCopy) is None
    assert evidence.outcomes("kept", Kept, 2) == [Kept.KEPT, Kept.CHANGED]
    by_four = mistake("it divides by {k}, not by the number of values ({n})",
                      lambda xs, **_: (np.sum(xs) / 4, {"k": 4}) if len(xs) != 4 else None)
    mean = Reference(np.mean, (by_four,))
    assert mean.named([1.0, 2.0, 3.0, 4.0], n=4) == []  # the case cannot show it
    with pytest.raises(Mismatch, match=r"^the mean of 3 shard\(s\): differs .*: it divides by 4, not by the number "
                                       r"of values \(3\)$"):
        evidence.check(three, mean, ([1.0, 2.0, 7.0],), n=3)  # the check's context fills the rest
