"""Validate's named diagnoses (grader/service/validation.py): the grader's judges on visible records only.

Records are built as a test cell would publish them (``coursekit.record.encode``) from values computed here in
NumPy host arithmetic; the answers are the grader's own rubric messages, and nothing in them may depend on a
hidden record, the quiz's correctness, a hidden-test line or a hidden seed.
"""
from __future__ import annotations

import json
import re

import nbformat
import numpy as np
import pytest

from coursekit import data
from coursekit.record import encode
from grader import cells
from grader.cells import HIDDEN
from grader.layout import Course
from grader.service import validation
from grader.service.validation import NotShown, ShownEvidence, handle, visible_keys
from grader.submission.judge import Evidence, Mismatch
from grader.submission.rubric_loading import load_rubric

COURSE = Course.default()


def rec(key, value) -> dict:
    return {"key": key, "value": encode(value)}


def ask(assignment: str, tests: list[dict]) -> tuple[int, dict]:
    return handle(COURSE, json.dumps({"assignment": assignment, "tests": tests}).encode())


def host_lesson():
    x, y = data.lesson_batch()
    x, y, w = x.astype(np.float64), y.astype(np.float64), np.zeros(2)
    return x, y, w, float(np.mean((x @ w - y) ** 2)), 2 * x.T @ (x @ w - y) / len(y)


def by_id(answer: dict) -> dict[str, dict]:
    return {t["grade_id"]: t for t in answer["tests"]}


def hidden_record_keys(assignment: str) -> dict[str, set[str]]:
    """grade_id -> the literal record keys its hidden blocks record (from the instructor's source)."""
    found = {}
    for cell in nbformat.read(COURSE.source_notebook(assignment), as_version=4).cells:
        if cells.is_autograded_test(cell):
            keys = set()
            for block in HIDDEN.findall(cell.source):
                keys |= set(re.findall(r"record\(\s*[f]?[\"']([^\"'{]+)[\"']", block))
            found[cells.grade_id(cell)] = keys
    return found


def hidden_secrets(assignment: str) -> list[str]:
    """Lines of the hidden tests (longer than 12 characters, not in the learner's copy) and their seeds."""
    released = COURSE.release_notebook(assignment).read_text()
    lines, seeds = [], []
    for cell in nbformat.read(COURSE.source_notebook(assignment), as_version=4).cells:
        for block in HIDDEN.findall(cell.source):
            lines += [line.strip() for line in block.splitlines()
                      if len(line.strip()) > 12 and "HIDDEN TESTS" not in line and line.strip() not in released]
            seeds += [seed for seed in re.findall(r"seed=(\d+)", block) if seed not in released]
    return lines + seeds


# ---------------------------------------------------------------- named mistakes

def test_a_step_that_sums_per_device_means_is_named_four_times_the_global_gradient():
    x, y, w, loss, gradient = host_lesson()
    p = 4
    per_device = [2 * xs.T @ (xs @ w - ys) / len(ys) for xs, ys in zip(np.split(x, p), np.split(y, p))]
    summed = np.sum(per_device, axis=0)  # what the wrong step returns: one mean per device, added
    np.testing.assert_allclose(summed, p * gradient)  # the lesson's claim, in host arithmetic
    status, answer = ask("sharded_step", [{"grade_id": "test-loss-and-gradient", "records": [
        rec("lesson.loss", np.float32(loss)), rec("lesson.gradient", summed.astype(np.float32))]}])
    assert status == 200
    test = by_id(answer)["test-loss-and-gradient"]
    assert test["verdict"] == "fails" and test["points"] == 3.0
    assert test["message"].startswith("the gradient at w = 0: differs from the host NumPy reference: 4 times the "
                                      "global gradient: the per-device means were summed"), test["message"]
    assert "-5.25" not in test["message"]  # never the reference value


def test_a_correct_step_passes_its_visible_checks_and_says_more_is_graded_after_submitting():
    x, y, w, loss, gradient = host_lesson()
    new_w = w - 0.1 * gradient
    status, answer = ask("sharded_step", [
        {"grade_id": "test-loss-and-gradient", "records": [rec("lesson.loss", np.float32(loss)),
                                                           rec("lesson.gradient", gradient.astype(np.float32))]},
        {"grade_id": "test-update", "records": [rec("lesson.new_w", new_w.astype(np.float32)),
                                                rec("lesson.step_gradient", gradient.astype(np.float32))]}])
    assert status == 200
    assert {t["verdict"] for t in answer["tests"]} == {"visible_pass"}
    assert "graded after you submit" in answer["later"] and "passes all" not in json.dumps(answer)
    hidden = sum(bool(HIDDEN.search(c.source)) for c in nbformat.read(COURSE.source_notebook("sharded_step"),
                                                                       as_version=4).cells)
    assert answer["later"].startswith(f"{hidden} more cases (batches you have not seen")


def test_a_wrong_visible_value_is_reported_even_when_the_judge_then_reads_a_hidden_record():
    """test-transfer's judge is wrapped by keeps_inputs, which reads a hidden record while handling the failure."""
    x, y, w, _, _ = host_lesson()
    new_y = x @ np.array([-1.0, 3.0])
    start = np.array([0.2, -0.1])
    right = start - 0.05 * 2 * x.T @ (x @ start - new_y) / len(new_y)
    wrong = start - 0.1 * 2 * x.T @ (x @ start - new_y) / len(new_y)  # the lesson's learning rate
    records = [rec("transfer.sharded", right), rec("transfer.own_step", right), rec("transfer.host", wrong)]
    _, answer = ask("sharded_step", [{"grade_id": "test-transfer", "records": records}])
    test = by_id(answer)["test-transfer"]
    assert test["verdict"] == "fails" and "learning rate 0.1" in test["message"], test
    _, answer = ask("sharded_step", [{"grade_id": "test-transfer", "records": records[:2] + [
        rec("transfer.host", right)]}])
    assert by_id(answer)["test-transfer"]["verdict"] == "visible_pass"


def test_the_instructors_visible_assertion_is_quoted_when_the_cell_raised():
    error = {"ename": "AssertionError", "traceback": [
        "AssertionError: Not equal to tolerance rtol=1e-06\nACTUAL: array(19.5)\nDESIRED: array(4.875)",
        "Cell In[12], line 4"]}
    _, answer = ask("sharded_step", [{"grade_id": "test-loss-and-gradient", "records": [], "error": error}])
    message = by_id(answer)["test-loss-and-gradient"]["message"]
    assert "the initial loss should be 39/8 = 4.875" in message and "ACTUAL" not in message and "19.5" not in message



UNTILED = {"ename": "ValueError", "traceback": [
    "\x1b[31mValueError\x1b[39m: reduce_scatter operand scatter dimension size 8 must match shard count 4",
    "Cell In[31], line 1"]}


def test_a_cell_that_raised_is_said_in_the_lessons_terms_never_as_a_stopped_notebook():
    """An untiled psum_scatter: JAX raises while the test cell calls shard_gradient, nothing is recorded. Validate
    says the cell raised and that psum_scatter needs tiled=True; a class of the learner's own, named after
    anything, is never named, and the kernel's text never shown."""
    _, answer = ask("collectives", [{"grade_id": "test-reduce-scatter", "records": [], "error": UNTILED}])
    message = by_id(answer)["test-reduce-scatter"]["message"]
    assert "raised ValueError (psum_scatter over `data` needs `tiled=True` here" in message, message
    assert "notebook stopped" not in message and "shard count" not in message
    forged = {"ename": "Secret90303Error", "traceback": ["Secret90303Error: hidden line", "Cell In[3], line 1"]}
    _, answer = ask("collectives", [{"grade_id": "test-reduce-scatter", "records": [], "error": forged}])
    message = by_id(answer)["test-reduce-scatter"]["message"]
    assert "raised an exception before it could record it" in message and "Secret" not in message, message


@pytest.mark.parametrize("assignment", ["sharded_step", "local_mean_diagnosis", "collectives"])
def test_validate_never_passes_a_test_whose_visible_values_were_not_recorded(assignment):
    """Every test whose cell records visible values fails Validate when none were recorded: a judge that reads a
    hidden record first would stop there and say the visible checks pass (test-ten-steps did)."""
    rubric = load_rubric(COURSE.rubric(assignment))
    known, _ = validation.test_cells(COURSE, assignment)
    for gid, cell in known.items():
        if (cell.keys or cell.patterns) and not set(cell.keys) <= rubric.after_submit:
            said, message, _ = validation.verdict(rubric, cell, [], None)
            assert said == "fails" and "not checked" in message, (gid, said, message)

# ---------------------------------------------------------------- nothing beyond the visible checks

@pytest.mark.parametrize("assignment", ["sharded_step", "collectives"])
def test_the_quizs_correctness_is_graded_after_submitting_never_by_validate(assignment):
    answers = []
    for answer in (1, 2, 3):
        status, said = ask(assignment, [{"grade_id": "test-quiz", "records": [rec("quiz.answer", answer)]}])
        assert status == 200
        answers.append(said)
    assert answers[0] == answers[1] == answers[2], "Validate's answer tells right from wrong quiz answers"
    quiz = by_id(answers[0])["test-quiz"]
    assert quiz["verdict"] == "after_submit" and "graded after you submit" in quiz["message"]
    assert "quiz's correctness" in answers[0]["later"]


@pytest.mark.parametrize("assignment", ["sharded_step", "local_mean_diagnosis", "collectives"])
def test_records_under_hidden_keys_change_nothing(assignment):
    """A crafted request adds every hidden key of every test, with right-looking or absurd values: the answer is
    the one without them."""
    hidden = hidden_record_keys(assignment)
    assert any(hidden.values())
    x, y, w, loss, gradient = host_lesson()
    plain = [{"grade_id": gid, "records": []} for gid in hidden]
    if assignment == "sharded_step":
        plain[0]["records"] = [rec("lesson.loss", np.float32(loss)), rec("lesson.gradient", gradient)]
    baseline = ask(assignment, plain)
    for value in (np.float32(loss), gradient, np.zeros((3,)), "make_train_step was not called", 1):
        crafted = [dict(t, records=t["records"] + [rec(key, value) for key in sorted(hidden[t["grade_id"]])]
                        + [rec("program.step", value), rec("hidden.anything", value)]) for t in plain]
        assert ask(assignment, crafted) == baseline


@pytest.mark.parametrize("assignment", ["sharded_step", "local_mean_diagnosis", "collectives"])
def test_no_hidden_test_line_or_seed_appears_in_any_answer(assignment):
    secrets = hidden_secrets(assignment)
    assert secrets
    hidden = hidden_record_keys(assignment)
    x, y, w, loss, gradient = host_lesson()
    error = {"ename": "AssertionError", "traceback": [f"Cell In[3], line {n}" for n in (1,)]}
    requests = [
        [{"grade_id": gid, "records": []} for gid in hidden],
        [{"grade_id": gid, "records": [], "error": dict(error, traceback=[f"Cell In[3], line {n}"])}
         for n, gid in enumerate(hidden, start=1)],
        [{"grade_id": gid, "records": [rec(k, v) for k in sorted(hidden[gid])]} for gid in hidden
         for v in (gradient,)],
    ]
    for tests in requests:
        status, answer = ask(assignment, tests)
        text = json.dumps(answer)
        assert status == 200
        leaked = [secret for secret in secrets if secret in text]
        assert not leaked, f"{assignment}: the answer quotes hidden tests: {leaked[:3]}"


def test_visible_keys_never_match_a_hidden_key():
    for assignment in COURSE.assignments():
        known, _ = validation.test_cells(COURSE, assignment)
        for gid, keys in hidden_record_keys(assignment).items():
            shown = [key for key in keys if known[gid].records(key)]
            assert not shown, f"{assignment}/{gid}: hidden keys taken for visible ones: {shown}"
    keys, patterns = visible_keys('record(f"lowered.{name}", text)\nrecord("a.b", 1)')
    assert keys == {"a.b"} and patterns[0].fullmatch("lowered.gather")
    assert not patterns[0].fullmatch("lowered.x.y") and not patterns[0].fullmatch("hidden.lowered.gather")


# ---------------------------------------------------------------- bounded requests

@pytest.mark.parametrize("body, status", [
    (b"x" * (validation.MAX_BODY_BYTES + 1), 413),
    (b"not json", 400),
    (b"[" * 100_000 + b"]" * 100_000, 400),
    (json.dumps({"assignment": "sharded_step", "tests": [{"grade_id": f"t{i}"} for i in range(1000)]}).encode(), 413),
    (json.dumps({"assignment": "sharded_step", "tests": [{"grade_id": "test-quiz", "records": [
        {"key": f"k{i}", "value": {"kind": "scalar", "value": 1}} for i in range(1000)]}]}).encode(), 413),
    (json.dumps({"assignment": "../source/sharded_step", "tests": []}).encode(), 404),
    (json.dumps({"assignment": "sharded_step", "tests": "all"}).encode(), 400),
    (json.dumps({"assignment": "sharded_step", "tests": [{"grade_id": "test-quiz", "error": "boom"}]}).encode(), 400),
])
def test_malformed_or_oversized_requests_are_refused_without_echo(body, status):
    got, answer = handle(COURSE, body)
    assert got == status and set(answer) == {"error"}
    assert "sharded_step" not in answer["error"] and len(answer["error"]) < 100


def test_malformed_records_fail_the_test_they_belong_to_and_nothing_else():
    huge = {"key": "lesson.loss", "value": {"kind": "array", "dtype": "float64", "shape": [10 ** 9], "data": []}}
    _, answer = ask("sharded_step", [
        {"grade_id": "test-loss-and-gradient", "records": [huge, huge]},
        {"grade_id": "test-quiz", "records": [rec("quiz.answer", 2)]},
        {"grade_id": "no-such-test", "records": []}])
    tests = by_id(answer)
    assert set(tests) == {"test-loss-and-gradient", "test-quiz"}
    assert tests["test-loss-and-gradient"]["verdict"] == "fails"
    assert "recorded more than once or malformed" in tests["test-loss-and-gradient"]["message"]


# ---------------------------------------------------------------- the Evidence of Validate

def test_shown_evidence_stops_at_hidden_records_programs_and_after_submit_keys():
    rubric = load_rubric(COURSE.rubric("sharded_step"))
    records = {"lesson.loss": encode_recorded(4.875), "hidden.loss": encode_recorded(4.875),
               "quiz.answer": encode_recorded(2)}
    visible = {"lesson.loss", "quiz.answer"}.__contains__
    for read, why in [(lambda e: e.has("hidden.loss"), "hidden"), (lambda e: e.get("quiz.answer"), "after_submit"),
                      (lambda e: e.program("program.step"), "program")]:
        e = ShownEvidence(records, [], visible=visible, after_submit=rubric.after_submit)
        assert e.number("lesson.loss") == 4.875
        with pytest.raises(NotShown) as stopped:
            read(e)
        assert stopped.value.why == why and not isinstance(stopped.value, Mismatch)
        with pytest.raises(NotShown):  # after the first NotShown, nothing more is judged
            e.get("lesson.loss")
    assert "hidden.loss" not in ShownEvidence(records, [], visible=visible)._records


def encode_recorded(value):
    from grader.submission.records import decode
    return decode(encode(value))


def test_not_shown_passes_through_a_part_unchanged():
    if not hasattr(Evidence, "part"):
        pytest.skip("this judge.py has no Evidence.part")
    e = Evidence({})
    with pytest.raises(NotShown):
        with e.part("the loss", points=1):
            raise NotShown("hidden", "hidden.loss")
    assert e.parts[0].failure is None
