"""Every scenario ends with its stated status and loses exactly its targeted tests."""
from __future__ import annotations

import html
import re

import nbformat
import pytest

from conftest import HOST_CONTACTS, HOST_LISTENERS, all_cases
from grader.cells import HIDDEN
from test_xss import active_content, notebook_active_content

CASES = all_cases()


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_scenario_grades_as_stated(graded, case):
    if case.id not in graded:
        pytest.skip(f"{case.id} needs a capability this machine did not prove: {case.scenario.headers.get('requires')}")
    _, result = graded[case.id]
    allowed = case.scenario.expect_status.split()
    assert result.status.value in allowed, f"{case.id}: {result.status.value} ({result.message})"
    failed = {t.grade_id for t in result.tests if not t.passed}
    expected = set(case.scenario.expect_fail)
    messages = {t.grade_id: t.message for t in result.tests if not t.passed}
    assert failed == expected, f"{case.id}: lost {sorted(failed)}, expected {sorted(expected)}: {messages}"
    for text in case.scenario.expect_message:  # the feedback names the mistake
        assert any(text in message for message in messages.values()), f"{case.id}: no message says {text!r}: {messages}"
    for text in case.scenario.expect_no_message:  # ... and names no mistake that is not the cause
        assert not any(text in message for message in messages.values()), f"{case.id}: a message says {text!r}: {messages}"
    # A test judged in parts scores the points of the parts that passed (header `expect-points: GRADE_ID=POINTS ...`).
    partial = {gid: float(points) for gid, points in
               (item.split("=", 1) for item in case.scenario.headers.get("expect-points", "").split())}
    for test in result.tests:
        expected_points = partial.get(test.grade_id, test.max_points if test.passed else 0)
        assert test.points == expected_points, f"{case.id}: {test.grade_id} scored {test.points}, expected {expected_points}"


def test_no_submission_file_changed_during_grading(graded):
    unchanged, _ = graded["__meta__"]
    assert unchanged, "a submission changed another student's files"


def learner_text(graded, page) -> str:
    """What the learner of this feedback page wrote themselves (their own code may quote anything)."""
    student, assignment = page.parent.parent.name, page.parent.name
    for key, (case, _) in graded.items():
        if key != "__meta__" and (case.student, case.assignment) == (student, assignment):
            return "\n".join([*case.scenario.replace.values(), *(code for _, code in case.scenario.appended)])
    return ""


def test_feedback_does_not_leak_hidden_tests_or_references(graded, course):
    _, out = graded["__meta__"]
    pages = list((out / "feedback").rglob("*.html"))
    assert pages
    for page in pages:
        text, own = html.unescape(page.read_text()), learner_text(graded, page)
        for secret in ("BEGIN HIDDEN TESTS", "random_regression(seed=", "application/vnd.jax-course.record"):
            assert secret not in text or secret in own, f"{page}: {secret}"


def hidden_secrets(course) -> tuple[set[str], set[str]]:
    """Every line of hidden test source a learner never sees (over 12 characters), the hidden cases' module
    (``rubric_cases.py``, handed to the kernel with the hidden parts) included, and the hidden seeds."""
    lines, seeds = set(), set()
    for assignment in course.assignments():
        released = nbformat.read(course.release_notebook(assignment), as_version=4)
        visible = {line.strip() for cell in released.cells for line in cell.source.splitlines()}
        blocks = [block for cell in nbformat.read(course.source_notebook(assignment), as_version=4).cells
                  for block in HIDDEN.findall(cell.source)]
        cases = course.hidden_cases(assignment)
        for block in blocks:
            lines |= {line.strip() for line in block.splitlines() if len(line.strip()) > 12} - visible
            seeds |= set(re.findall(r"seed=(\d+)", block))
        lines |= {line.strip() for line in (cases or "").splitlines() if len(line.strip()) > 12  # the module's code
                  and not line.strip().startswith(('"""', "#", "from ", "import "))} - visible
        seeds |= set(re.findall(r"\b(9[01]\d{3})\b", cases or ""))  # the cases' base seeds (90301 + size, ...)
    return lines, seeds


def test_feedback_shows_no_hidden_source_and_no_script(graded, course):
    """Whatever an attack printed, re-displayed or raised (tests/attacks/*/leak-*, xss-*)."""
    _, out = graded["__meta__"]
    lines, seeds = hidden_secrets(course)
    assert len(lines) > 50 and len(seeds) > 10  # (the cases drawn per learner have no fixed seed to list)
    for page in (out / "feedback").rglob("*.html"):
        raw = page.read_text()
        text = html.unescape(raw)
        own = learner_text(graded, page)
        leaked = [line for line in lines if line in text and line not in own]
        leaked += [f"seed {seed}" for seed in seeds if re.search(rf"(?<![\d.]){seed}(?!\d)", text)]
        assert not leaked, f"{page}: {leaked[:3]}"
        assert "<script" not in raw.lower() and active_content(raw, allowed={"meta", "style", "math"}) == [], page


def test_autograded_notebooks_carry_no_active_content(graded):
    _, out = graded["__meta__"]
    notebooks = list((out / "autograded").rglob("*.ipynb"))
    assert notebooks
    for path in notebooks:
        assert notebook_active_content(nbformat.read(path, as_version=4)) == [], path


def test_grades_csv_has_every_case(graded):
    import csv

    _, out = graded["__meta__"]
    rows = list(csv.DictReader((out / "grades.csv").open()))
    assert {"student_id", "assignment_id", "notebook", "score", "max_score", "manual_score",
            "manual_max_score", "status", "message"} <= set(rows[0])
    students = {(c.student, c.assignment) for key, (c, _) in graded.items() if key != "__meta__"}
    assert students <= {(r["student_id"], r["assignment_id"]) for r in rows}


def test_no_kernel_reached_the_hosts_loopback(graded):
    """net-host-listener and the IOPub sniffer try; a sealed kernel has no route to the host."""
    assert "attack/sharded_step/net-host-listener" in graded
    assert HOST_CONTACTS == [], f"kernels reached {HOST_LISTENERS}: {HOST_CONTACTS}"


def test_a_jitted_step_is_only_exported_and_python_around_it_also_runs_in_the_kernel(graded):
    """Each fact computed once, where it counts (docs/explanation/evidence.md): the hidden tests call a jitted step in
    the kernel on an unseen batch only when it is Python around its program; a jitted step is only exported, and the
    grader runs that very program on inputs of its own."""
    import nbformat

    from coursekit.record import MIME_TYPE

    _, out = graded["__meta__"]

    def recorded(case_id: str) -> set[str]:
        case, _ = graded[case_id]
        nb = nbformat.read(out / "autograded" / case.student / case.assignment / f"{case.assignment}.ipynb", 4)
        return {o["data"][MIME_TYPE]["key"] for c in nb.cells for o in c.get("outputs", [])
                if MIME_TYPE in o.get("data", {})}

    kernel_values = {"hidden.loss", "hidden.gradient", "hidden.new_w", "hidden.step_gradient"}
    jitted = recorded("sample/sharded_step/ada")  # make_train_step returns jax.jit(step, ...)
    assert {"program.step", "program.step_0.37", "program.placed", "hidden.placed.loss"} <= jitted
    assert not kernel_values & jitted
    wrapped = recorded("corpus/sharded_step/wrong-numpy-outputs")  # NumPy results of a jitted program: Python around it
    assert kernel_values | {"program.step", "program.step_0.37"} <= wrapped


@pytest.mark.parametrize("assignment", ["sharded_step", "local_mean_diagnosis", "collectives"])
def test_the_courses_own_rubrics_pass_the_authors_lint(graded, graded_settings, course, assignment):
    """``python -m grader lint --strict`` on each lesson (docs/how-to/author-a-lesson.md): every test judged, every
    record read, words for every key, visible values first, the solution at full marks, and every named mistake a
    judge passes expected by a scenario of this suite (which ``test_scenario_grades_as_stated`` grades). It judges the
    batch's own run of the solution (the sample learner ada's notebook is the solution, byte for byte), so nothing
    runs again here."""
    from grader.authoring.lint import lint

    before = graded_settings.identical.reused
    report = lint(course, assignment, runs=(graded_settings.identical, graded_settings.judged))
    assert report.failures(strict=True) == [], "\n".join(map(str, report.failures(strict=True)))
    assert report.tests >= 6 and report.mistakes >= 10
    assert graded_settings.identical.reused == before + 1, "the lint ran the solution again instead of reading its run"
