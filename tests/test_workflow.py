"""The nbgrader workflow around the grader: the learner's workspace, the instructor's entry point,
formgrader and stock nbgrader commands on the project's grader, manual grades.

Each test works on a temporary copy of the course (COURSE_ROOT), never on the repository's own.
"""
from __future__ import annotations

import http.client
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import nbformat
import pytest

from grader.layout import Course

ROOT = Path(__file__).resolve().parent.parent


def copy_course(dest: Path) -> Course:
    ignore = shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__", "figures")
    for folder in ("notebooks", "source", "lab"):
        shutil.copytree(ROOT / folder, dest / folder, ignore=ignore)
    shutil.copy2(ROOT / "nbgrader_config.py", dest / "nbgrader_config.py")
    return Course(dest)


def _learner_edit(path: Path) -> str:
    """Solve nothing, but change the notebook the way a learner's save does; return the new text."""
    nb = nbformat.read(path, as_version=4)
    nb.cells.append(nbformat.v4.new_markdown_cell("my own notes " + secrets.token_hex(4)))
    nbformat.write(nb, path)
    return path.read_text()


def test_regenerating_the_course_keeps_the_learners_workspace(tmp_path):
    from grader.course.generate import generate
    from grader.course.workspace import seed

    course = copy_course(tmp_path / "course")
    created = seed(course)
    assert sorted(p.name for p in created) == sorted(course.assignments())
    mine = course.root / "workspace" / "sharded_step"
    work = _learner_edit(mine / "sharded_step.ipynb")
    (mine / ".ipynb_checkpoints").mkdir()
    (mine / ".ipynb_checkpoints" / "sharded_step-checkpoint.ipynb").write_text(work)
    (mine / "figures").mkdir()
    (mine / "figures" / "loss.svg").write_text("<svg/>")
    released_before = course.release_notebook("sharded_step").stat().st_mtime_ns

    generate(course, ["sharded_step"])          # what `make generate` and `make demo` run first
    assert course.release_notebook("sharded_step").stat().st_mtime_ns != released_before  # it did regenerate
    assert seed(course) == []                   # `make lab` again: nothing replaced
    assert (mine / "sharded_step.ipynb").read_text() == work
    assert (mine / ".ipynb_checkpoints" / "sharded_step-checkpoint.ipynb").read_text() == work
    assert (mine / "figures" / "loss.svg").read_text() == "<svg/>"
    assert not list(mine.glob("rubric*.py")) and not list(mine.rglob("*solution*"))


def test_a_learners_fresh_copy_says_what_its_kernel_reports_so_it_opens_unchanged(tmp_path):
    """JupyterLab writes the kernel's language_info into a notebook it opens unless the notebook holds exactly that
    already; the released notebooks name the language only, so a fresh copy showed as changed at once and asked to
    be saved when closed. The learner's copies (``seed``; the exchange's, ``release_here``; the hub's release
    folder) hold what a real kernel of this environment says in its kernel_info reply."""
    from jupyter_client.manager import start_new_kernel

    from grader.course.workspace import seed

    course = copy_course(tmp_path / "course")
    assert nbformat.read(course.release_notebook("sharded_step"), as_version=4).metadata.language_info == {"name": "python"}
    seed(course)
    copied = nbformat.read(course.root / "workspace" / "sharded_step" / "sharded_step.ipynb", as_version=4)
    manager, client = start_new_kernel(kernel_name="python3")
    try:
        reported = client.kernel_info(reply=True, timeout=60)["content"]["language_info"]
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)
    assert copied.metadata.language_info == reported


def test_workspace_is_ignored_by_git_and_seeded_without_rubrics():
    ignored = subprocess.run(["git", "check-ignore", "-q", "workspace/sharded_step/sharded_step.ipynb"], cwd=ROOT)
    assert ignored.returncode == 0, "workspace/ must be git-ignored"


# --- the two Jupyter servers ------------------------------------------------------------------

def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _get(url: str, token: str) -> tuple[int, bytes]:
    request = urllib.request.Request(url, headers={"Authorization": f"token {token}"})
    try:
        with urllib.request.urlopen(request, timeout=90) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()
    except (urllib.error.URLError, OSError, http.client.HTTPException):  # not (yet) our server on that port
        return 0, b""


class Server:
    def __init__(self, argv, env, cwd, home: Path, log: Path):
        self.token = secrets.token_hex(16)
        env = dict(env, JUPYTER_CONFIG_DIR=str(home / "config"), JUPYTER_RUNTIME_DIR=str(home / "runtime"),
                   JUPYTER_DATA_DIR=str(home / "data"), JUPYTERLAB_SETTINGS_DIR=str(home / "settings"),
                   JUPYTERLAB_WORKSPACES_DIR=str(home / "workspaces"))
        self.log = log
        # A port found free can be taken before the server binds it (a kernel of another test's, on a busy machine):
        # the server then exits (no port retries), and starts again on another port.
        for _ in range(3):
            port = _free_port()
            self.url = f"http://127.0.0.1:{port}"
            with log.open("w") as out:
                self.process = subprocess.Popen(
                    [*argv, "--no-browser", "--ip=127.0.0.1", f"--port={port}", "--ServerApp.port_retries=0",
                     f"--IdentityProvider.token={self.token}"], env=env, cwd=cwd, stdout=out,
                    stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
            deadline = time.monotonic() + 120
            while self.get("/api/status")[0] != 200 and self.process.poll() is None and time.monotonic() < deadline:
                time.sleep(0.3)
            if self.process.poll() is None and self.get("/api/status")[0] == 200:
                return
            taken = "already in use" in log.read_text()
            self.stop()
            if not taken:
                break
        pytest.fail(f"JupyterLab did not start:\n{log.read_text()[-3000:]}")

    def get(self, path: str) -> tuple[int, bytes]:
        return _get(self.url + path, self.token)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                pass
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.process.wait()


def test_learner_server_reaches_only_the_workspace_and_instructor_server_has_formgrader(tmp_path):
    from grader.course.workspace import instructor_lab, learner_lab, seed

    course = copy_course(tmp_path / "course")
    seed(course)
    learner = Server(*learner_lab(course), tmp_path / "learner-home", tmp_path / "learner.log")
    try:
        status, body = learner.get("/api/contents/")
        assert status == 200
        listed = {item["name"] for item in json.loads(body)["content"]}
        assert listed == set(course.assignments())
        assert learner.get("/api/contents/sharded_step/sharded_step.ipynb")[0] == 200
        for hidden in ("../source/sharded_step/rubric.py", "../source/sharded_step/sharded_step.ipynb",
                       "..%2Fsource%2Fsharded_step%2Frubric.py", "../nbgrader_config.py"):
            assert learner.get(f"/api/contents/{hidden}")[0] in (400, 403, 404), hidden
        assert learner.get("/formgrader")[0] == 404
        assert learner.get("/formgrader/api/assignments")[0] == 404
    finally:
        learner.stop()
    released = {p: p.read_bytes() for p in course.release.rglob("*") if p.is_file()}
    instructor = Server(*instructor_lab(course), tmp_path / "instructor-home", tmp_path / "instructor.log")
    # formgrader's Autograde needs the assignments in gradebook.db; the instructor's start records them
    # (a fresh clone has a release folder but no gradebook), without touching notebooks/
    import sqlite3

    with sqlite3.connect(course.root / "gradebook.db") as connection:
        assert {n for (n,) in connection.execute("SELECT name FROM assignment")} == set(course.assignments())
    assert {p: p.read_bytes() for p in course.release.rglob("*") if p.is_file()} == released
    try:
        status, body = instructor.get("/formgrader/api/assignments")
        assert status == 200, instructor.log.read_text()[-2000:]
        assert {a["name"] for a in json.loads(body)} == set(course.assignments())
        assert instructor.get("/api/contents/source/sharded_step/rubric.py")[0] == 200
        # formgrader's MathJax (lab/instructor/templates/formgrade/mathjax.html.j2) from this server, offline
        for asset in (MATHJAX, "/static/jupyter_server_mathjax/config/TeX-AMS-MML_HTMLorMML-full.js",
                      "/static/jupyter_server_mathjax/extensions/Safe.js"):
            status, body = instructor.get(asset)
            assert status == 200 and b"MathJax" in body, asset
        # every formgrader page links the class report (report --html), which the server then serves
        from grader.classroom import class_data, class_page

        status, body = instructor.get("/formgrader/manage_assignments")
        assert status == 200 and b"/files/class-report/index.html" in body and b"Class report" in body
        class_page.write(class_data.summarize([]), course.root)
        status, body = instructor.get("/files/class-report/index.html")
        assert status == 200 and b"<h1>Class report</h1>" in body
    finally:
        instructor.stop()


MATHJAX = "/static/jupyter_server_mathjax/MathJax.js"


def test_formgrader_pages_load_mathjax_from_the_instructors_server(tmp_path):
    """nbgrader 0.9's formgrade page calls nbconvert's mathjax() macro, whose default is a CDN; the course's
    template folder (named in nbgrader_config.py) replaces the macro with the local copy."""
    import re

    from nbconvert.exporters import HTMLExporter
    from nbgrader.server_extensions.formgrader.formgrader import FormgradeExtension
    from traitlets.config.loader import PyFileConfigLoader

    course = copy_course(tmp_path / "course")
    config = FormgradeExtension.build_extra_config(FormgradeExtension())  # what formgrader sets itself
    config.merge(PyFileConfigLoader("nbgrader_config.py", path=str(course.root)).load_config())
    resources = {"base_url": "", "index": 0, "total": 1, "notebook_id": "n", "assignment_id": "a",
                 "submission_id": "s", "student": "x", "last_name": "", "first_name": "", "notebook_path": "p"}
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("the predictions $Xw$")])
    page, _ = HTMLExporter(config=config).from_notebook_node(nb, resources=resources)
    scripts = re.findall(r'<script src="([^"]+)"', page)
    assert f"../../../{MATHJAX.lstrip('/')}?config=TeX-AMS-MML_HTMLorMML-full,Safe" in scripts
    # the submission page is {base}/formgrader/submissions/{id}/: ../../../ is the server's base URL
    assert not re.findall(r"https?://[^\s\"'<>]+", page), "formgrader's page loads something from outside"


# --- formgrader's buttons and stock nbgrader commands on the project's grader ---------------------

FORMGRADER = """
import json, sys
from traitlets.config.loader import PyFileConfigLoader
from nbgrader.apps import NbGraderAPI
from nbgrader.coursedir import CourseDirectory

# what formgrader's handlers do: the API built from the course's nbgrader_config.py
config = PyFileConfigLoader("nbgrader_config.py", path=".").load_config()
api = NbGraderAPI(coursedir=CourseDirectory(config=config), config=config)
action, assignment, student = sys.argv[1:]
result = getattr(api, action)(assignment, student)
print(json.dumps({"success": result["success"], "error": result.get("error", ""), "log": result.get("log", "")}))
"""


def _env(course: Course) -> dict[str, str]:
    return {**os.environ, "COURSE_ROOT": str(course.root),
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}


def formgrader_button(course: Course, action: str, assignment: str, student: str) -> dict:
    done = subprocess.run([sys.executable, "-c", FORMGRADER, action, assignment, student], cwd=course.root,
                          env=_env(course), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def project_grade(course: Course, submissions: Path, *extra: str) -> None:
    done = subprocess.run([sys.executable, "-m", "grader", "grade", "--submissions", str(submissions),
                           "--out", str(course.root), "--workers", "1", *extra], cwd=course.root,
                          env=_env(course), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr


def hidden_lines(course: Course, assignment: str) -> list[str]:
    lines, inside = [], False
    for cell in nbformat.read(course.source_notebook(assignment), as_version=4).cells:
        for line in cell.source.splitlines():
            if "### BEGIN HIDDEN TESTS" in line:
                inside = True
            elif "### END HIDDEN TESTS" in line:
                inside = False
            elif inside and len(line.strip()) > 12:
                lines.append(line.strip())
    released = course.release_notebook(assignment).read_text()
    lines = [line for line in lines if line not in released]  # also in the learner's own copy: not secret
    assert lines, "the lesson has hidden tests"
    return lines


def _db_score(course: Course, assignment: str, student: str) -> float:
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course.root / 'gradebook.db'}") as book:
        return book.find_submission(assignment, student).score


@pytest.fixture(scope="module")
def graded_course(tmp_path_factory):
    """A course copy whose sample learner 'dana' (prints the lesson's numbers instead of computing them)
    was graded by the project's grader into the course's own gradebook.db."""
    course = copy_course(tmp_path_factory.mktemp("graded") / "course")
    submitted = course.root / "submitted"
    shutil.copytree(ROOT / "samples" / "submitted" / "dana" / "sharded_step", submitted / "dana" / "sharded_step",
                    ignore=shutil.ignore_patterns("figures", ".ipynb_checkpoints"))
    project_grade(course, submitted, "--gradebook", f"sqlite:///{course.root / 'gradebook.db'}")
    return course


def test_formgrader_autograde_and_feedback_keep_the_projects_scores_and_hide_hidden_tests(graded_course):
    import csv

    course = graded_course
    rows = list(csv.DictReader((course.root / "grades.csv").open()))
    project_score = float(rows[0]["score"])
    assert project_score < float(rows[0]["max_score"])  # hard-coded numbers do not pass the hidden tests
    assert _db_score(course, "sharded_step", "dana") == project_score
    results = (course.root / "results.json").read_text()
    result_file = course.root / "results" / "dana" / "sharded_step" / "sharded_step.json"
    graded_at = result_file.stat().st_mtime_ns

    pressed = formgrader_button(course, "autograde", "sharded_step", "dana")
    assert pressed["success"], pressed
    assert result_file.stat().st_mtime_ns != graded_at  # the button ran the course's grader again
    assert "graded dana/sharded_step with the course's grader" in pressed["log"]
    assert _db_score(course, "sharded_step", "dana") == project_score
    assert (course.root / "results.json").read_text() == results
    autograded = course.root / "autograded" / "dana" / "sharded_step" / "sharded_step.ipynb"
    assert autograded.exists()
    # formgrader's view of the notebook holds the learner's cells and the course's, not the grader's own parameters
    assert "figures_dir = None" not in autograded.read_text() and "injected-parameters" not in autograded.read_text()

    pressed = formgrader_button(course, "generate_feedback", "sharded_step", "dana")
    assert pressed["success"], pressed
    page = (course.root / "feedback" / "dana" / "sharded_step" / "sharded_step.html").read_text()
    assert "Content-Security-Policy" in page and f"{project_score:g} / " in page
    leaked = [line for line in hidden_lines(course, "sharded_step") if line in page]
    assert not leaked
    assert _db_score(course, "sharded_step", "dana") == project_score


def test_stock_generate_feedback_force_shows_no_hidden_test(graded_course):
    course = graded_course
    done = subprocess.run([str(Path(sys.executable).parent / "nbgrader"), "generate_feedback", "sharded_step",
                           "--force"], cwd=course.root, env=_env(course), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    page = (course.root / "feedback" / "dana" / "sharded_step" / "sharded_step.html").read_text()
    assert "Content-Security-Policy" in page
    assert not [line for line in hidden_lines(course, "sharded_step") if line in page]


def test_nbgrader_export_and_the_graders_csv_do_not_overwrite_each_other(graded_course):
    course = graded_course
    before = (course.root / "grades.csv").read_bytes()
    done = subprocess.run([str(Path(sys.executable).parent / "nbgrader"), "export"], cwd=course.root,
                          env=_env(course), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert (course.root / "grades.csv").read_bytes() == before
    exported = (course.root / "nbgrader_grades.csv").read_text()
    assert "dana" in exported and exported.splitlines()[0] != before.decode().splitlines()[0]


def _grade_by_hand(course: Course, assignment: str, student: str, comment: str) -> tuple[float, list[str]]:
    """What formgrader's grade and comment fields store (its /formgrader/api/grade and /comment handlers):
    full marks and a comment on every cell the course's grader does not score. Returns the points given."""
    from nbgrader.api import Gradebook

    result = json.loads((course.root / "results" / student / assignment / f"{assignment}.json").read_text())
    autograded = {t["grade_id"] for t in result["tests"]}
    given, names = 0.0, []
    with Gradebook(f"sqlite:///{course.root / 'gradebook.db'}") as book:
        submitted = book.find_submission_notebook(assignment, assignment, student)
        for grade in submitted.grades:
            if grade.name in autograded:
                continue
            grade.manual_score = grade.max_score
            grade.needs_manual_grade = False
            given += grade.max_score
            names.append(grade.name)
        for item in submitted.comments:
            if item.name in names:
                item.manual_comment = comment
        book.db.commit()
    assert names, "the lesson has a free-text answer graded by hand"
    return given, names


def test_grades_entered_in_formgrader_reach_grades_csv_report_and_feedback(graded_course):
    import csv

    course = graded_course
    result_files = {p: p.stat().st_mtime_ns for p in (course.root / "results").rglob("*.json")}
    comment = "Clear reasoning " + secrets.token_hex(3)
    given, _ = _grade_by_hand(course, "sharded_step", "dana", comment)

    done = subprocess.run([sys.executable, "-m", "grader", "report", "--out", str(course.root)], cwd=course.root,
                          env=_env(course), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    row = next(csv.DictReader((course.root / "grades.csv").open()))
    assert float(row["manual_score"]) == given == float(row["manual_max_score"])
    assert float(row["total_score"]) == float(row["score"]) + given
    assert f"{given:g}/{given:g}" in done.stdout

    page = (course.root / "feedback" / "dana" / "sharded_step" / "sharded_step.html").read_text()
    assert comment in page and "more points are graded by hand" not in page
    total = float(row["score"]) + given
    assert f"total: <b>{total:g} / " in page
    pressed = formgrader_button(course, "generate_feedback", "sharded_step", "dana")
    assert pressed["success"], pressed
    page = (course.root / "feedback" / "dana" / "sharded_step" / "sharded_step.html").read_text()
    assert comment in page and f"total: <b>{total:g} / " in page
    assert {p: p.stat().st_mtime_ns for p in (course.root / "results").rglob("*.json")} == result_files  # no regrade


def test_hand_grades_and_comments_in_feedback_are_inert_text():
    from grader.submission import feedback
    from grader.nbgrader_adapter.manual_grades import ManualGrade
    from grader.results import NotebookResult, Status

    nb = nbformat.v4.new_notebook()
    page = feedback.render(NotebookResult("s", "a", "a.ipynb", Status.GRADED, ""), nb,
                           manual=[ManualGrade("why", 1.0, 2.0, "<script>alert(1)</script><img src=x onerror=f()>")])
    assert "<script>alert" not in page and "<img" not in page and "&lt;script&gt;" in page
    assert feedback.CSP in page


# --- the exchange: release -> fetch -> submit -> collect -> grade -> feedback -> fetch feedback -----

def _nbgrader(cwd: Path, env: dict, *args: str) -> str:
    done = subprocess.run([str(Path(sys.executable).parent / "nbgrader"), *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"nbgrader {' '.join(args)}:\n{done.stdout}\n{done.stderr}"
    return done.stdout + done.stderr


def test_the_course_local_exchange_carries_a_learners_work_and_feedback(tmp_path):
    import getpass

    from grader.course.workspace import ensure_exchange, learner_lab

    course = copy_course(tmp_path / "course")
    ensure_exchange(course)
    instructor = _env(course)
    _, learner, workspace = learner_lab(course, workspace=tmp_path / "learner")  # the learner's server settings
    workspace.mkdir()
    learner = {**learner, "JUPYTER_CONFIG_DIR": str(tmp_path / "no-user-config")}

    _nbgrader(course.root, instructor, "generate_assignment", "sharded_step", "--force")  # formgrader's Generate
    _nbgrader(course.root, instructor, "release_assignment", "sharded_step", "--force")
    assert "sharded_step" in _nbgrader(workspace, learner, "list")
    _nbgrader(workspace, learner, "fetch_assignment", "sharded_step")
    fetched = workspace / "sharded_step" / "sharded_step.ipynb"
    assert nbformat.read(fetched, as_version=4).cells  # the student notebook, not the source
    assert "BEGIN SOLUTION" not in fetched.read_text() and not list((workspace / "sharded_step").glob("rubric*.py"))
    # the learner solves it (the instructor's solution, as the sample learner 'ada' did) and submits
    shutil.copy2(ROOT / "samples" / "submitted" / "ada" / "sharded_step" / "sharded_step.ipynb", fetched)
    _nbgrader(workspace, learner, "submit", "sharded_step")

    _nbgrader(course.root, instructor, "collect", "sharded_step")
    student = getpass.getuser()
    collected = course.root / "submitted" / student / "sharded_step" / "sharded_step.ipynb"
    assert collected.read_bytes() == fetched.read_bytes()
    graded = _nbgrader(course.root, instructor, "autograde", "sharded_step", "--student", student, "--force")
    assert "Warning" not in graded, graded  # nothing a user would read as a failed write
    result = json.loads((course.root / "results" / student / "sharded_step" / "sharded_step.json").read_text())
    assert result["status"] == "graded" and all(t["passed"] for t in result["tests"])
    _nbgrader(course.root, instructor, "generate_feedback", "sharded_step", "--student", student, "--force")
    _nbgrader(course.root, instructor, "release_feedback", "sharded_step", "--student", student)

    _nbgrader(workspace, learner, "fetch_feedback", "sharded_step")
    pages = list((workspace / "sharded_step" / "feedback").rglob("sharded_step.html"))
    assert len(pages) == 1
    page = pages[0].read_text()
    assert "Content-Security-Policy" in page and not [ln for ln in hidden_lines(course, "sharded_step") if ln in page]


# --- exact, quiet output ------------------------------------------------------------------------

def test_execute_names_the_cell_that_failed(tmp_path):
    from grader.course.execute import ExecutionFailed, execute

    nb = nbformat.v4.new_notebook(metadata={"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                           "language": "python"}})
    nb.cells = [nbformat.v4.new_code_cell("x = 1", metadata={"tags": ["parameters"]}),
                nbformat.v4.new_code_cell("y = x + 1", metadata={"nbgrader": {"grade_id": "before"}}),
                nbformat.v4.new_code_cell("raise ValueError('boom')", metadata={"nbgrader": {"grade_id": "fails"}}),
                nbformat.v4.new_code_cell("z = 3", metadata={"nbgrader": {"grade_id": "after"}})]
    source = tmp_path / "n.ipynb"
    nbformat.write(nb, source)
    with pytest.raises(ExecutionFailed) as failed:
        execute(source, tmp_path / "out.ipynb", parameters={"x": 2}, progress=False)
    assert failed.value.cell == "fails" and "ValueError: boom" in str(failed.value)


def test_a_missing_accelerator_backend_is_one_message_that_names_the_fix():
    import importlib.util

    if importlib.util.find_spec("jax_cuda12_plugin") or importlib.util.find_spec("jax_rocm60_plugin"):
        pytest.skip("this environment has a GPU build of JAX")
    done = subprocess.run([sys.executable, "-m", "grader", "execute", str(ROOT / "notebooks" / "sharded_step" /
                                                                          "sharded_step.ipynb"),
                           "-p", "platform", "gpu", "--quiet"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert "jax[cuda12]" in done.stderr and "-p platform cpu" in done.stderr



def test_execute_starts_kernels_without_the_tcp_warning(tmp_path):
    nb = nbformat.v4.new_notebook(metadata={"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                           "language": "python"}})
    nb.cells = [nbformat.v4.new_code_cell("print(6 * 7)")]
    source = tmp_path / "n.ipynb"
    nbformat.write(nb, source)
    done = subprocess.run([sys.executable, "-m", "grader", "execute", str(source), "--out", str(tmp_path / "out"),
                           "--quiet"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "42" in (tmp_path / "out" / "n.ipynb").read_text()
    assert "without encryption" not in done.stdout + done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["n.ipynb", "out"]  # no socket files left beside it


# --- the demo class -----------------------------------------------------------------------------

def test_demo_class_looks_like_a_real_class():
    import csv

    from nbgrader.utils import parse_utc

    roster = {row["id"]: row for row in csv.DictReader((ROOT / "samples" / "roster.csv").open())}
    folders = sorted(p for p in (ROOT / "samples" / "submitted").glob("*/*") if p.is_dir())
    assert folders
    for folder in folders:
        student = folder.parent.name
        assert roster[student]["first_name"] and roster[student]["last_name"], student
        parse_utc((folder / "timestamp.txt").read_text().strip())
        for notebook in folder.glob("*.ipynb"):
            text = notebook.read_text()
            assert "BEGIN SOLUTION" not in text and "END SOLUTION" not in text, notebook
            assert "BEGIN HIDDEN TESTS" not in text, notebook


def test_demo_gradebook_has_names_and_submission_times(graded_course):
    from nbgrader.api import Gradebook
    from nbgrader.utils import parse_utc

    course = graded_course
    _nbgrader(course.root, _env(course), "db", "student", "import", str(ROOT / "samples" / "roster.csv"))
    stamp = parse_utc((ROOT / "samples" / "submitted" / "dana" / "sharded_step" / "timestamp.txt").read_text().strip())
    with Gradebook(f"sqlite:///{course.root / 'gradebook.db'}") as book:
        student = book.find_student("dana")
        assert (student.first_name, student.last_name) == ("Dana", "Moreau")
        assert book.find_submission("sharded_step", "dana").timestamp == stamp.replace(tzinfo=None)


# --- CI for the course's maintainers ------------------------------------------------------------

def test_ci_workflow_is_valid_and_runs_the_same_commands_as_ci_run():
    import yaml

    workflow = ROOT / ".github" / "workflows" / "ci.yml"
    checker = Path(sys.executable).parent / "check-jsonschema"
    # check-jsonschema's own vendored copy of SchemaStore's GitHub workflow schema: no network needed
    done = subprocess.run([str(checker), "--builtin-schema", "vendor.github-workflows", str(workflow)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    jobs = yaml.safe_load(workflow.read_text())["jobs"]
    runs = {job: [step.get("run", "") for step in spec["steps"]] for job, spec in jobs.items()}
    assert any(".ci/run test" in run for run in runs["test"])
    assert jobs["notebooks"]["strategy"]["matrix"]["devices"] == [2, 4, 8]
    assert any(".ci/run notebooks ${{ matrix.devices }}" in run for run in runs["notebooks"])
    uploads = [step["with"]["path"] for step in jobs["notebooks"]["steps"] if "upload-artifact" in step.get("uses", "")]
    assert uploads == ["ci-out/devices-${{ matrix.devices }}/"]
    script = (ROOT / ".ci" / "run").read_text()
    assert 'out="$PWD/ci-out/devices-$devices"' in script and "make test" in script
    assert "-p num_devices \"$devices\" -p figures_dir \"$out/figures\"" in script


def test_ci_run_rejects_unknown_commands():
    done = subprocess.run(["bash", str(ROOT / ".ci" / "run"), "nonsense"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "usage" in done.stderr
