"""Learner-chosen values in formgrader's pages are text, never script, in a real browser.

gradebook.db is seeded directly with nbgrader's own Gradebook API (the course's intake now refuses such ids, but a
gradebook written by an older grader or by a stock ``nbgrader autograde`` can still hold them) with a student id,
an assignment id, a notebook name and student names that are markup, plus the autograded notebook formgrader's
manual-grading page renders. The instructor's server is started as ``python -m grader instructor`` starts it
(``grader.course.workspace.instructor_lab``) and every formgrader page that shows one of those values is opened in Debian's
Chromium (tests/browser/formgrader_xss.mjs, set up like tests/test_browser.py): submissions lists, manual grading
(the formgrade page, and its page for a missing autograded file), the gradebook's assignment, notebook and submission
lists, the students' pages, the assignment list. No payload
runs, each page shows the hostile values as text, the pages report no Content-Security-Policy violation (no inline
script is needed), and JupyterLab itself starts under the policy.

Teeth: the same gradebook on a server without the course's pieces (nbgrader's own templates, no escaping
environment, no policy) runs payloads on several pages; and nbgrader's own templates with only the policy run
none (the policy alone is a second line).
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import urllib.parse
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent


def js(tag: str) -> str:
    return f"top.__pwned=(top.__pwned||'')+'{tag};';top.document.title='pwned'"


# No '/' (they are folder and file names too), no '?' or '#' (they are URL path parts).
STUDENT = f"""s"><img src=x onerror="{js('student')}">'"""
ASSIGNMENT = f"a<img src=x onerror={js('assignment')}>"
NOTEBOOK = f"n<svg onload={js('notebook')}>"
FIRST, LAST = f"<img src=x onerror={js('first')}>", f"<b onmouseover={js('last')}>L</b>"
COURSE_ASSIGNMENT = "sharded_step"


def seed(course_root: Path) -> tuple[str, str]:
    """Hostile rows in the course's gradebook.db and the autograded notebook; the ids of a submitted notebook with
    an autograded file and of one without (formgrader's "file not found" page)."""
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course_root / 'gradebook.db'}") as book:
        book.add_assignment(ASSIGNMENT)
        book.add_notebook(NOTEBOOK, ASSIGNMENT)
        book.add_student(STUDENT, first_name=FIRST, last_name=LAST)
        book.add_submission(ASSIGNMENT, STUDENT)
        book.add_submission(COURSE_ASSIGNMENT, STUDENT)  # also listed among a real assignment's submissions
        submitted = book.find_submission_notebook(NOTEBOOK, ASSIGNMENT, STUDENT).id
        missing = book.find_submission_notebook(COURSE_ASSIGNMENT, COURSE_ASSIGNMENT, STUDENT).id  # not autograded
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("an answer, $x$")])
    for folder, name in ((course_root / "autograded" / STUDENT / ASSIGNMENT, NOTEBOOK),
                         (course_root / "submitted" / STUDENT / ASSIGNMENT, NOTEBOOK),
                         (course_root / "source" / ASSIGNMENT, NOTEBOOK),  # formgrader lists source assignments
                         (course_root / "submitted" / STUDENT / COURSE_ASSIGNMENT, COURSE_ASSIGNMENT)):
        folder.mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, folder / f"{name}.ipynb")
    return submitted, missing


def pages(submission: tuple[str, str]) -> list[dict]:
    q = lambda value: urllib.parse.quote(value, safe="")  # noqa: E731
    a, n, s = q(ASSIGNMENT), q(NOTEBOOK), q(STUDENT)
    submission, missing = submission
    return [
        {"name": "submissions list", "path": f"/formgrader/manage_submissions/{a}", "expect": [ASSIGNMENT]},
        {"name": "submissions list (course assignment)", "path": f"/formgrader/manage_submissions/{COURSE_ASSIGNMENT}",
         "expect": [STUDENT, f"{LAST}, {FIRST}"]},
        {"name": "gradebook assignments", "path": "/formgrader/gradebook", "expect": [ASSIGNMENT]},
        {"name": "gradebook notebooks", "path": f"/formgrader/gradebook/{a}", "expect": [ASSIGNMENT, NOTEBOOK]},
        {"name": "gradebook submissions", "path": f"/formgrader/gradebook/{a}/{n}", "expect": [ASSIGNMENT, NOTEBOOK]},
        {"name": "manual grading", "path": f"/formgrader/submissions/{submission}/",
         "expect": [ASSIGNMENT, NOTEBOOK, f"{LAST}, {FIRST}"]},
        {"name": "manual grading, file not found", "path": f"/formgrader/submissions/{missing}/", "status": 404,
         "expect": [f"{STUDENT}/{COURSE_ASSIGNMENT}", f"{LAST}, {FIRST}"]},
        {"name": "students", "path": "/formgrader/manage_students", "expect": [STUDENT]},
        {"name": "student's assignments", "path": f"/formgrader/manage_students/{s}", "expect": [STUDENT, ASSIGNMENT]},
        {"name": "student's notebooks", "path": f"/formgrader/manage_students/{s}/{a}",
         "expect": [ASSIGNMENT, NOTEBOOK]},
        {"name": "assignments", "path": "/formgrader/manage_assignments", "expect": [ASSIGNMENT]},
    ]


def _browse(server, manifest: Path, timeout: float = 300) -> dict:
    process = subprocess.Popen(["node", str(ROOT / "tests" / "browser" / "formgrader_xss.mjs"), str(manifest)],
                               cwd=ROOT, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               env=dict(os.environ, SERVER_URL=server.url, SERVER_TOKEN=server.token),
                               start_new_session=True)
    try:
        out, err = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        pytest.fail("formgrader_xss.mjs timed out")
    assert process.returncode == 0, f"formgrader_xss.mjs failed:\n{out}\n{err}"
    return json.loads(out.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def hostile_course(tmp_path_factory):
    from grader.course.workspace import register_assignments
    from test_browser import _setup_browser
    from test_workflow import copy_course

    _setup_browser()
    course = copy_course(tmp_path_factory.mktemp("formgrader-xss") / "course")
    register_assignments(course)  # what `python -m grader instructor` does first
    return course, seed(course.root)


def _serve_and_browse(tmp_path, course, submission: str, env_config: Path | None, extra_pages=()) -> dict:
    from grader.course.workspace import _jupyter_env, instructor_lab
    from test_workflow import Server

    argv, env, cwd = instructor_lab(course)
    if env_config is not True:  # a server without the course's instructor configuration
        env = _jupyter_env(env_config)
    manifest = tmp_path / "manifest.json"
    manifest.write_text(json.dumps({"pages": [*pages(submission), *extra_pages]}))
    server = Server(argv, env, cwd, tmp_path / "home", tmp_path / "server.log")
    try:
        report = _browse(server, manifest)
    finally:
        server.stop()
    print(json.dumps(report, indent=1))
    return report


@pytest.mark.slow
def test_hostile_ids_run_no_script_in_formgrader(tmp_path, hostile_course):
    course, submission = hostile_course
    lab = {"name": "jupyterlab", "path": "/lab", "ready": ".jp-LabShell", "expect": []}
    report = _serve_and_browse(tmp_path, course, submission, True, [lab])
    assert report["jupyterlab"]["ready"] and not report["jupyterlab"]["ran"], report["jupyterlab"]
    assert report["manual grading"]["math"] >= 1, "MathJax (which evaluates its configuration) no longer typesets"
    expected_status = {page["name"]: page.get("status", 200) for page in pages(submission)} | {"jupyterlab": 200}
    for name, found in report.items():
        assert found["status"] == expected_status[name], (name, found)
        assert found["ran"] == [] and found["present"] == [], f"{name}: a payload ran or left markup: {found}"
        assert found["missing"] == [], f"{name}: the hostile values are not shown as text: {found['missing']}"
        refused = [v for v in found["violations"] if "script" in v]  # (MathJax probes a font at about:blank)
        assert refused == [], f"{name}: the page needs script the policy forbids: {refused}"


@pytest.mark.slow
def test_stock_formgrader_runs_the_payloads(tmp_path, hostile_course):
    """The control: the course's templates, escaping environment and policy taken away (nbgrader 0.9 as shipped)."""
    course, submission = hostile_course
    stock = tmp_path / "stock"
    shutil.copytree(course.root, stock, ignore=shutil.ignore_patterns("templates", "static", "jupyter_server_config.py"))
    from grader.layout import Course

    report = _serve_and_browse(tmp_path, Course(stock), submission, None)
    ran = {name for name, found in report.items() if found["ran"]}
    assert all(found["present"] for name, found in report.items() if name in ran), report
    assert {"submissions list", "gradebook notebooks", "gradebook submissions", "manual grading",
            "student's assignments", "student's notebooks"} <= ran, report


@pytest.mark.slow
def test_the_policy_alone_stops_the_stock_pages_payloads(tmp_path, hostile_course):
    """Defence in depth: nbgrader's own templates (which print the payloads as markup), with only the course's
    Content-Security-Policy: nothing runs, and the browser reports the inline code it refused."""
    course, submission = hostile_course
    stock = tmp_path / "stock"
    shutil.copytree(course.root, stock, ignore=shutil.ignore_patterns("templates", "static", "jupyter_server_config.py"))
    config = tmp_path / "policy-only"
    config.mkdir()
    (config / "jupyter_server_config.py").write_text(
        "from grader.nbgrader_adapter.formgrader_guard import content_security_policy\n"
        "c.ServerApp.tornado_settings.update({'headers': {'Content-Security-Policy': content_security_policy()}})\n")
    from grader.layout import Course

    report = _serve_and_browse(tmp_path, Course(stock), submission, config)
    for name, found in report.items():
        assert found["ran"] == [], f"{name}: a payload ran under the policy: {found['ran']}"
    assert sum(bool(found["violations"]) for found in report.values()) >= 6, report
