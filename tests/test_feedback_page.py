"""Feedback that shows the learner's work (issue 23, part 4).

Hidden parts of test cells run after the learner's last cell (``grader.submission.order``), so the feedback page
shows every output of the learner's cells and of each test's visible part, and withholds the hidden parts'; a test
judged in parts (``Evidence.part``) scores the parts that passed; the header says when hand grading is pending; long
code lines wrap. The last test grades a real submission and opens its page in Chromium (tests/browser/feedback.mjs).
"""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
from pathlib import Path

import nbformat
import numpy as np
import pytest

from grader import cells
from grader.cells import HIDDEN
from grader.kernel.run import Execution, replay_plan
from grader.layout import Course
from grader.nbgrader_adapter.manual_grades import ManualGrade
from grader.results import NotebookResult, Status, TestResult as Outcome
from grader.submission import feedback, order
from grader.submission.judge import Evidence, Mismatch, Mistake, Rubric
from grader.submission.rubric_loading import load_rubric
from grader.submission.records import decode
from grader.submission.sanitize import sanitize_notebook
from coursekit.record import encode

ROOT = Path(__file__).resolve().parent.parent
COURSE = Course.default()
SECRET = "hidden_seed_line = data.random_regression(seed=424242)"


def _source(assignment: str):
    return nbformat.read(COURSE.source_notebook(assignment), as_version=4)


# ---------------------------------------------------------------- hidden parts after the learner's last cell


@pytest.mark.parametrize("assignment", COURSE.assignments())
def test_no_hidden_source_runs_before_the_learners_last_cell(assignment):
    source = _source(assignment)
    split = order.split(source)
    tails = [i for i, c in enumerate(split.cells) if cells.hidden_part_of(c)]
    tests = [cells.grade_id(c) for c in source.cells if cells.is_autograded_test(c) and HIDDEN.search(str(c.source))]
    assert tests and [cells.hidden_part_of(split.cells[i]) for i in tails] == tests  # every one, in the course's order
    assert tails == list(range(len(split.cells) - len(tails), len(split.cells)))  # after every other cell
    for cell in split.cells[:tails[0]]:
        assert "BEGIN HIDDEN TESTS" not in str(cell.source) and "random_regression(seed=9" not in str(cell.source)
    assert len({c.get("id") for c in split.cells}) == len(split.cells)
    assert all(cells.test_of(split.cells[i]) == cells.hidden_part_of(split.cells[i]) for i in tails)  # reset before each
    # Line numbers stay the course's: line k of a hidden part is line k of its test cell.
    for i in tails:
        whole = next(c for c in source.cells if cells.grade_id(c) == cells.hidden_part_of(split.cells[i]))
        for k, line in enumerate(str(split.cells[i].source).split("\n")):
            assert line == "" or line == str(whole.source).split("\n")[k]
    assert not order.hidden_ran_last(source) and order.hidden_ran_last(order.rejoin(split))


def _ran(nb):
    """Pretend every cell ran: one stream output per cell, saying which part printed it."""
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.execution_count = 1
            text = f"from the hidden part of {cells.hidden_part_of(cell)}" if cells.hidden_part_of(cell) else "visible"
            cell.outputs = [nbformat.v4.new_output("stream", text=text)]
    return nb


def test_rejoin_gives_each_test_its_whole_source_and_both_parts_outputs():
    source = _source("sharded_step")
    joined = order.rejoin(_ran(order.split(source)))
    assert order.hidden_ran_last(joined) and len(joined.cells) == len(source.cells)
    for mine, theirs in zip(joined.cells, source.cells):
        assert mine.source == theirs.source
        if cells.is_autograded_test(mine) and HIDDEN.search(str(mine.source)):
            assert [o.text for o in mine.outputs] == ["visible", f"from the hidden part of {cells.grade_id(mine)}"]
            assert cells.visible_outputs(mine) == 1 and order.hidden_part_ran(mine)
        elif cells.is_autograded_test(mine):  # the quiz: no hidden part, every output shown
            assert [o.text for o in mine.outputs] == ["visible"] and cells.visible_outputs(mine) == 1
    assert order.rejoin(source) is source  # a notebook that was not split (the instructor's) is left alone


def test_a_stop_before_the_hidden_parts_runs_the_reached_cells_again_then_their_hidden_parts():
    split = order.split(_source("sharded_step"))
    quiz = next(i for i, c in enumerate(split.cells) if cells.grade_id(c) == "quiz")
    plan = replay_plan(split, Execution(split, stopped="timed_out", stopped_at_cell=quiz))
    tails = [i for i, c in enumerate(split.cells) if cells.hidden_part_of(c)]
    assert plan == [i for i, c in enumerate(split.cells[:quiz]) if c.cell_type == "code"] + tails
    first_test = next(i for i, c in enumerate(split.cells) if cells.is_autograded_test(c))
    assert replay_plan(split, Execution(split, stopped="kernel_died", stopped_at_cell=first_test - 1)) == []
    assert replay_plan(split, Execution(split, stopped="timed_out", stopped_at_cell=tails[1])) == []  # in a hidden part
    assert replay_plan(split, Execution(split)) == []


# ---------------------------------------------------------------- partial credit


def _evidence(**values) -> Evidence:
    return Evidence({key: decode(encode(np.asarray(value))) for key, value in values.items()})


def _two_part_rubric() -> Rubric:
    rubric = Rubric()

    @rubric.test("t")
    def _(e: Evidence):
        with e.part("the loss", points=1):
            e.close("loss", 4.875, what="the loss")
        with e.part("the gradient", points=2):
            e.close("gradient", [-5.25, -0.75], what="the gradient",
                    mistakes=[Mistake(np.array([-21.0, -3.0]), "4 times the global gradient")])

    return rubric


def test_a_part_that_fails_costs_its_points_only_and_judging_goes_on():
    rubric = _two_part_rubric()
    verdict = rubric.verdict("t", _evidence(loss=4.875, gradient=[-21.0, -3.0]), 3)
    assert (verdict.points, verdict.passed) == (1.0, False)
    assert "the gradient: differs from the host NumPy reference: 4 times the global gradient" in verdict.message
    assert "the loss passed (1 of 3 points)" in verdict.message
    verdict = rubric.verdict("t", _evidence(loss=19.5, gradient=[-5.25, -0.75]), 3)
    assert (verdict.points, verdict.passed) == (2.0, False) and verdict.message.startswith("the loss:")
    assert rubric.verdict("t", _evidence(loss=4.875, gradient=[-5.25, -0.75]), 3).points == 3.0
    both = rubric.verdict("t", _evidence(), 3)
    assert both.points == 0 and "the loss" in both.message and "the gradient" in both.message
    assert rubric.judge("t", _evidence(loss=4.875, gradient=[-21.0, -3.0]))[0] is False  # the old interface


def test_parts_that_do_not_add_up_to_the_cells_points_are_an_instructor_error():
    verdict = _two_part_rubric().verdict("t", _evidence(loss=4.875, gradient=[-5.25, -0.75]), 2)
    assert verdict.points == 0 and "instructor error" in verdict.message


class Unavailable(Exception):
    """What a Validate-only Evidence raises for records the learner's machine does not have."""


class LearnerEvidence(Evidence):
    def get(self, key, *, what=None):
        if key.startswith("hidden."):
            raise Unavailable(key)
        return super().get(key, what=what)


def test_other_exceptions_leave_a_part_unchanged_so_a_subclass_can_reuse_it():
    e = LearnerEvidence({})
    with pytest.raises(Unavailable):
        with e.part("the loss", points=1):
            e.get("hidden.loss")
    with pytest.raises(KeyError):
        with e.part("the gradient", points=2):
            raise KeyError("an instructor's bug surfaces")
    with e.part("the update", points=1):
        raise Mismatch("the update: wrong")
    assert [p.failure for p in e.parts] == [None, None, "the update: wrong"]
    with pytest.raises(RuntimeError):
        with e.part("outer", points=1):
            with e.part("inner", points=1):
                pass


@pytest.mark.parametrize("assignment", COURSE.assignments())
def test_every_judge_in_parts_adds_up_to_its_cells_points(assignment):
    rubric = load_rubric(COURSE.rubric(assignment))
    parted = 0
    for cell in _source(assignment).cells:
        if cells.is_autograded_test(cell):
            e = Evidence({}, num_devices=4)
            verdict = rubric.verdict(cells.grade_id(cell), e, cells.points(cell))
            assert "instructor error" not in verdict.message, verdict.message
            if e.parts:
                parted += 1
                assert sum(p.points for p in e.parts) == cells.points(cell)
    if assignment == "sharded_step":
        assert parted >= 1  # the loss and the gradient


# ---------------------------------------------------------------- the page


def _graded_notebook():
    """A notebook as the grader leaves it: a learner cell printing, a test whose hidden part printed hidden source
    (as a learner thread would while it ran), then a learner cell after the test."""
    learner = nbformat.v4.new_code_cell("print(gradient)")
    test = nbformat.v4.new_code_cell(f"record('g', gradient)\n### BEGIN HIDDEN TESTS\n{SECRET}\n### END HIDDEN TESTS\n")
    test.metadata["nbgrader"] = {"grade_id": "test-g", "grade": True, "solution": False, "points": 3}
    later = nbformat.v4.new_code_cell("print('my own work after the test')")
    answer = nbformat.v4.new_markdown_cell("my answer")
    answer.metadata["nbgrader"] = {"grade_id": "pause-and-reason", "grade": True, "solution": True, "points": 4}
    nb = nbformat.v4.new_notebook(cells=[learner, test, later, answer])
    split = order.split(nb)
    split.cells[0].outputs = [nbformat.v4.new_output("stream", text="[-21.0, -3.0]\n")]
    split.cells[1].outputs = [nbformat.v4.new_output("stream", text="visible check output\n")]
    split.cells[2].outputs = [nbformat.v4.new_output("stream", text="printed after the test\n")]
    split.cells[-1].outputs = [nbformat.v4.new_output("stream", text="thread: " + SECRET[::-1] + SECRET.encode().hex()),
                               nbformat.v4.new_output("error", ename="ValueError", evalue=SECRET, traceback=[])]
    for cell in split.cells:
        if cell.cell_type == "code":
            cell.execution_count = 1
    return order.rejoin(split)


def _result(**kwargs) -> NotebookResult:
    result = NotebookResult("ada", "sharded_step", "sharded_step.ipynb", Status.GRADED, "1 of 2 tests passed",
                            manual_max_score=4.0, **kwargs)
    result.tests = [Outcome("test-g", 1.0, 3.0, False, "the gradient: 4 times the global gradient",
                               [{"what": "the loss", "points": 1.0, "passed": True},
                                {"what": "the gradient", "points": 2.0, "passed": False}]),
                    Outcome("test-h", 14.0, 14.0, True, "passed")]
    return result


@pytest.mark.parametrize("sanitized", [False, True])
def test_the_page_shows_the_learners_outputs_and_withholds_the_hidden_parts(sanitized):
    nb = _graded_notebook()
    page = feedback.render(_result(), sanitize_notebook(nb) if sanitized else nb)  # as written, and as regenerated
    assert "[-21.0, -3.0]" in page and "printed after the test" in page and "visible check output" in page
    assert SECRET not in page and SECRET[::-1] not in page and SECRET.encode().hex() not in page
    assert "424242" not in page and "BEGIN HIDDEN" not in page and feedback.WITHHELD not in page
    assert "1 / 3" in page and "class='result partial'" in page


def test_a_notebook_graded_before_hidden_parts_ran_last_keeps_the_old_rule():
    nb = _graded_notebook()
    nb.metadata.pop(cells.GRADER)
    page = feedback.render(_result(), nb)
    assert feedback.WITHHELD in page and "printed after the test" not in page and "visible check output" not in page


def test_the_header_says_what_is_still_to_be_graded_by_hand():
    nb = _graded_notebook()
    page = feedback.render(_result(), nb)
    assert "Autograded score: <b>15 / 17</b>; <b>4 points (the written answer) still to be graded by hand</b>" in page
    assert "Status: <b>autograded, hand grading pending</b>" in page and "Status: <b>graded</b>" not in page
    pending = [ManualGrade("pause-and-reason", None, 4.0, "")]
    assert "still to be graded by hand" in feedback.render(_result(), nb, manual=pending)
    done = feedback.render(_result(), nb, manual=[ManualGrade("pause-and-reason", 3.0, 4.0, "good")])
    assert "Status: <b>graded</b>" in done and "still to be graded" not in done
    assert "Autograded score: <b>15 / 17</b>; graded by hand: <b>3 / 4</b>; total: <b>18 / 21</b>." in done
    nothing_by_hand = _result()
    nothing_by_hand.manual_max_score = 0.0
    assert "Status: <b>graded</b>" in feedback.render(nothing_by_hand, nb)


def test_partial_points_reach_results_json_and_grades_csv(tmp_path):
    import csv

    from grader.term.gradebook import Gradebook

    book = Gradebook(tmp_path)
    book.save(_result(), "0" * 64)
    book.write_tables(book.all_results(), {})
    stored = json.loads((tmp_path / "results.json").read_text())
    row = next(csv.DictReader((tmp_path / "grades.csv").open()))
    assert row["score"] == "15" and row["max_score"] == "17"
    tests = stored[0]["tests"]
    assert tests[0]["points"] == 1.0 and tests[0]["parts"][0] == {"what": "the loss", "points": 1.0, "passed": True}
    assert NotebookResult.from_dict(NotebookResult.to_dict(_result())).tests[0].points == 1.0


# ---------------------------------------------------------------- in Chromium


@pytest.mark.slow
def test_a_graded_feedback_page_in_chromium(tmp_path, course):
    """Grade a right loss with a 4x gradient for real, then open its page: the learner's printed gradient and the
    figure are visible, no code line is clipped, no hidden source is anywhere, the header says hand grading is
    pending."""
    from conftest import CORPUS_LIMITS
    from test_browser import _setup_browser  # shared installer (skips where impossible)
    from test_scenarios import hidden_secrets

    from grader.classroom.batch import grade_all
    from grader.course.variants import parse, write_submission
    from grader.service import pages
    from grader.submission.pipeline import Settings

    _setup_browser()
    scenario = parse(ROOT / "tests" / "corpus" / "sharded_step" / "wrong-gradient-summed-local-means-loss-right.py")
    long_comment = " ".join(["a comment that makes this code line far wider than the page"] * 6)
    scenario.appended.append(("train-step", f"print('a long line ' + 'x' * 400)  # {long_comment}"))
    write_submission(course, "sharded_step", scenario, tmp_path / "submitted", "ada")
    [result] = grade_all(tmp_path / "submitted", course, Settings(out=tmp_path / "out", limits=CORPUS_LIMITS))
    assert [t.points for t in result.tests if t.grade_id == "test-loss-and-gradient"] == [1.0]
    page = next((tmp_path / "out" / "feedback").rglob("*.html"))
    lines, seeds = hidden_secrets(course)
    assert "¶" not in page.read_text()  # no heading-link mark after every heading of the lesson
    # the service's own pages: one for a submission over the limit, and the banner it puts on a graded attempt's page
    over_limit = tmp_path / "over-limit.html"
    over_limit.write_text(pages.page("Received, not graded now", ["Your submission of sharded_step is saved. You have "
                                     "used 3 of 3 graded attempts in the last 24 hours.", "The course's rule: ..."]))
    banner = tmp_path / "banner.html"
    banner.write_text(pages.with_banner(page.read_text(), ["Attempt 2 of sharded_step, graded: 7 / 11 points."]))
    manifest = tmp_path / "manifest.json"
    manifest.write_text(json.dumps({"file": str(page), "secrets": sorted(lines) + [f"seed={s}" for s in seeds],
                                    "printed": "my gradient at w = 0: [-21.0, -3.0]",
                                    "pending": "still to be graded by hand", "more": [str(over_limit), str(banner)]}))
    process = subprocess.Popen(["node", str(ROOT / "tests" / "browser" / "feedback.mjs"), str(manifest)], cwd=ROOT,
                               text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        out, err = process.communicate(timeout=180)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        pytest.fail("feedback.mjs timed out")
    assert process.returncode == 0, f"feedback.mjs failed:\n{out}\n{err}"
    seen = json.loads(out.strip().splitlines()[-1])
    assert seen["printed_visible"], seen
    assert seen["figures"] >= 1 and seen["figures_loaded"] >= 1, seen
    assert seen["code_blocks"] > 20 and seen["clipped"] == [], seen
    assert seen["secrets_found"] == [], seen
    assert seen["pending_in_header"], seen
    assert re.search(r"a long line x{400}", seen["long_line_text"] or ""), seen  # the printed line, wrapped
    assert [v for v in seen["axe"] if v["impact"] in ("critical", "serious")] == [], seen["axe"]
    assert len(seen["more_axe"]) == 2, seen["more_axe"]
    for other, violations in seen["more_axe"].items():
        assert [v for v in violations if v["impact"] in ("critical", "serious")] == [], (other, violations)


def test_a_hidden_block_inside_an_indented_block_moves_the_whole_cell_last():
    test = nbformat.v4.new_code_cell("for k in range(2):\n    record(f'v{k}', k)\n    ### BEGIN HIDDEN TESTS\n"
                                     f"    {SECRET}\n    ### END HIDDEN TESTS\n")
    test.metadata["nbgrader"] = {"grade_id": "test-g", "grade": True, "solution": False, "points": 1}
    split = order.split(nbformat.v4.new_notebook(cells=[test]))
    assert split.cells[0].source == "" and split.cells[1].source == test.source
    assert order.rejoin(split).cells[0].source == test.source


def test_judge_without_the_cells_points_checks_nothing_against_them():
    rubric = _two_part_rubric()
    assert rubric.judge("t", _evidence(loss=4.875, gradient=[-5.25, -0.75])) == (True, "passed")
    assert rubric.verdict("t", _evidence(loss=4.875, gradient=[-21.0, -3.0])).points == 1.0


def test_the_receipt_cells_advice_for_the_learners_own_run_is_not_on_the_page():
    """keep_receipt finds no saved notebook in the grader's run and says "Save the notebook (Ctrl+S) and run this
    cell again": advice for the learner's own run, noise on the page (one line in its place)."""
    nb = _graded_notebook()
    receipt = nbformat.v4.new_code_cell("receipt = keep_receipt('sharded_step', outputs={})", execution_count=1,
                                        metadata={"nbgrader": {"grade_id": feedback.RECEIPT_CELL, "locked": True}})
    receipt.outputs = [nbformat.v4.new_output("stream", text="Could not read your saved notebook ... Save the "
                                                             "notebook (Ctrl+S) and run this cell again.\n")]
    nb.cells.insert(0, receipt)
    page = feedback.render(_result(), nb)
    assert "Ctrl+S" not in page and feedback.RECEIPT_NOTE in page and "[-21.0, -3.0]" in page
