"""Identifiers are data: a student id, assignment or notebook name outside the course's rule (grader/identifiers.py)
is refused at intake, ``invalid_folder`` with the rule in its message, and nothing of it reaches nbgrader's
gradebook: on the local path (``discover``, ``grade --gradebook``, whose copy also skips such ids left by an
older run) and on formgrader's Autograde button (``IntakeGuard``, before nbgrader's converter writes rows).
The Dask path discovers submissions with the same ``batch.outstanding``."""
from __future__ import annotations

import csv
import json
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from grader.classroom import batch

from grader import identifiers
from grader.layout import Course
from grader.results import NotebookResult, Status
from grader.results import TestResult as Outcome  # not collected as a test class

ROOT = Path(__file__).resolve().parent.parent
ASSIGNMENT = "sharded_step"

HOSTILE_IDS = [
    "<img src=x onerror=top.__pwned=1>",
    "<script>top.__pwned=2<\\script>",
    'x" onmouseover="top.__pwned=3',
    "x';top.__pwned=4;'",
    "javascript:top.__pwned=5",
    "x&#34;y",
    "name(1)",
    "*",
    "a+b",
    "-rf",
    ".hidden",
    " ada",
    "ada ",
    "ad\u202ea",          # right-to-left override
    "ad\u200ba",          # zero-width space
    "jose\u0301",         # not NFC (é as e + combining accent)
    "ada\u3164",          # a Hangul filler: a letter that renders as nothing (looks like "ada")
    "\u115f",             # an id that looks empty
    "x" * (identifiers.MAX_CHARS + 1),
    "",
]


def _scenario_students() -> list[str]:
    groups = {"sample": ROOT / "samples" / "scenarios", "corpus": ROOT / "tests" / "corpus",
              "attack": ROOT / "tests" / "attacks"}
    return [f"{group}-{path.stem}" for group, folder in groups.items() for path in folder.glob("*/*.py")
            if "# expect-status: invalid_folder" not in path.read_text()]  # an attack on the rule itself


def test_every_id_the_course_uses_follows_the_rule():
    roster = [row["id"] for row in csv.DictReader((ROOT / "samples" / "roster.csv").open())]
    used = roster + _scenario_students() + [p.name for p in (ROOT / "samples" / "submitted").iterdir()]
    used += ["josé", "Ann Lee", "ada.okafor@example.edu", "_tmp", "honest", "x" * identifiers.MAX_CHARS]
    used += Course.default().assignments() + [p.stem for p in (ROOT / "notebooks").glob("*/*.ipynb")]
    assert len(roster) == 4 and len(used) > 100
    assert [name for name in used if not identifiers.valid(name)] == []


@pytest.mark.parametrize("name", HOSTILE_IDS)
def test_hostile_ids_are_refused_with_the_rule(name):
    assert not identifiers.valid(name) and not batch.valid_id(name)
    message = identifiers.refusal("student id", name, name)
    assert identifiers.RULE in message and identifiers.problem(name) in message


@pytest.fixture()
def hostile_submissions(tmp_path):
    course = Course.default()
    submitted = tmp_path / "submitted"
    honest = ROOT / "samples" / "submitted" / "ada" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    for student in ["ada", *(n for n in HOSTILE_IDS if n and "/" not in n)]:
        (submitted / student / ASSIGNMENT).mkdir(parents=True)
        shutil.copy2(honest, submitted / student / ASSIGNMENT / f"{ASSIGNMENT}.ipynb")
    return course, submitted


def test_intake_refuses_hostile_student_folders_as_invalid_folder(hostile_submissions):
    course, submitted = hostile_submissions
    jobs, rejected = batch.discover(submitted, course, [ASSIGNMENT])
    assert [job.student_id for job in jobs] == ["ada"]
    refused = {r.student_id: r for r in rejected}
    assert len(refused) == len([n for n in HOSTILE_IDS if n and "/" not in n])
    for result in rejected:
        assert result.status is Status.INVALID_FOLDER and result.assignment_id == ASSIGNMENT
        assert "is not a usable student id" in result.message and identifiers.RULE in result.message
        assert result.score == 0 and all(not t.passed for t in result.tests)


def _gradebook_students(db: Path) -> set[str]:
    with sqlite3.connect(db) as connection:
        return {row[0] for row in connection.execute("SELECT id FROM student")} | {
            row[0] for row in connection.execute("SELECT student_id FROM submitted_assignment")}


def test_gradebook_copy_writes_no_hostile_id_even_from_an_older_run(tmp_path, hostile_submissions):
    """``grade --gradebook`` copies ``book.all_results()``: results an older grader stored for an id the rule now
    refuses (status ``graded``, a score) must not reach gradebook.db either."""
    from grader.nbgrader_adapter.db import export_grades

    course, submitted = hostile_submissions
    _, rejected = batch.discover(submitted, course, [ASSIGNMENT])
    tests = [Outcome(t.grade_id, t.max_points, t.max_points, True, "") for t in rejected[0].tests]
    older = [NotebookResult(name, ASSIGNMENT, f"{ASSIGNMENT}.ipynb", Status.GRADED, "", tests=tests)
             for name in ("<img src=x onerror=top.__pwned=1>", "x\" y='z'")]
    honest = NotebookResult("ada", ASSIGNMENT, f"{ASSIGNMENT}.ipynb", Status.GRADED, "", tests=tests)
    db = tmp_path / "gradebook.db"
    written = export_grades(f"sqlite:///{db}", course, [*rejected, *older, honest], submitted)
    assert written == 1
    assert _gradebook_students(db) == {"ada"}


FORMGRADER_AUTOGRADE = """
import json, sys
from traitlets.config.loader import PyFileConfigLoader
from nbgrader.apps import NbGraderAPI
from nbgrader.coursedir import CourseDirectory

config = PyFileConfigLoader("nbgrader_config.py", path=".").load_config()
if sys.argv[2] == "stock-exporter":  # the control: nbgrader's own exporter class, no IntakeGuard
    from nbconvert.exporters import NotebookExporter
    config.Autograde.exporter_class = NotebookExporter
api = NbGraderAPI(coursedir=CourseDirectory(config=config), config=config)
result = api.autograde("sharded_step", sys.argv[1])
print(json.dumps({"success": result["success"], "log": result.get("log", "") + result.get("error", "")}))
"""


@pytest.mark.slow
def test_formgrader_autograde_refuses_a_hostile_id_before_nbgrader_writes_it(tmp_path):
    """formgrader's Autograde button (nbgrader's API, as its handler calls it) on a collected submission whose
    student id is markup: the run fails with the rule, grades.csv has the row as invalid_folder, gradebook.db has
    neither the student nor a submission. The control (nbgrader's own exporter in IntakeGuard's place) shows
    that without the guard nbgrader itself creates both rows before any course step runs."""
    from grader.course.generate import generate
    from test_workflow import _env, copy_course

    course = copy_course(tmp_path / "course")
    db = course.root / "gradebook.db"
    generate(course, [ASSIGNMENT], release=tmp_path / "release", db_url=f"sqlite:///{db}")
    hostile = "<img src=x onerror=top.__pwned=1>"
    folder = course.root / "submitted" / hostile / ASSIGNMENT  # nbgrader_config.py: collected work, never samples/
    folder.mkdir(parents=True)
    shutil.copy2(ROOT / "samples" / "submitted" / "ada" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", folder)

    def press(mode: str) -> dict:
        done = subprocess.run([sys.executable, "-c", FORMGRADER_AUTOGRADE, hostile, mode], cwd=course.root,
                              env=_env(course), capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout.strip().splitlines()[-1])

    pressed = press("course")
    assert not pressed["success"]
    assert "is not a usable student id" in pressed["log"] and identifiers.RULE in pressed["log"], pressed["log"]
    assert _gradebook_students(db) == set()
    rows = list(csv.DictReader((course.root / "grades.csv").open(encoding="utf-8")))
    assert [(r["student_id"], r["status"]) for r in rows] == [(hostile, "invalid_folder")]
    assert identifiers.RULE in rows[0]["message"] and rows[0]["score"] in ("", "0", "0.0")
    assert not (course.root / "autograded" / hostile).exists()

    control = press("stock-exporter")  # the course's own Autograde step still refuses to grade it...
    assert not control["success"] and "is not a usable student id" in control["log"], control["log"]
    assert hostile in _gradebook_students(db)  # ...but nbgrader has already stored the id: the guard is needed


def test_the_feedback_page_and_the_report_show_hostile_ids_as_text():
    """Ids an older run stored still reach the course's own pages: the feedback page escapes them (its policy runs
    no script either), the console report escapes control characters."""
    import html

    import nbformat

    from grader.submission import feedback

    from grader.classroom import report

    student, assignment = "<img src=x onerror=top.__pwned=1>", '"><script>top.__pwned=2</script>'
    result = NotebookResult(student, assignment, f"{assignment}.ipynb", Status.GRADED, "",
                            tests=[Outcome('x"><b onmouseover=top.__pwned=3>', 1.0, 1.0, True, "")])
    page = feedback.render(result, nbformat.v4.new_notebook())
    assert "<img" not in page and "<script" not in page and "<b " not in page
    assert html.escape(student) in page and html.escape(assignment) in page
    table = report.table([NotebookResult("ada\x1b[2J\x07", ASSIGNMENT, f"{ASSIGNMENT}.ipynb", Status.GRADED, "")])
    assert "\x1b" not in table and "\x07" not in table and "ada\\x1b[2J\\x07" in table


def test_intake_guard_leaves_out_stray_notebooks_and_refuses_hostile_students(tmp_path):
    """IntakeGuard on nbgrader's work list (as the Autograde converter holds it before writing any row): a stray
    notebook whose name breaks the rule is left out of an honest submission, which stays; a hostile student's
    submission is taken out and recorded as invalid_folder; with nothing left, the run fails with the rule."""
    from traitlets.config import Configurable

    from grader.nbgrader_adapter.plugins import IntakeGuard, NotGradedByProject
    from test_workflow import copy_course

    course = copy_course(tmp_path / "course")
    submitted = tmp_path / "submitted"

    class Converter(Configurable):  # the two things IntakeGuard reads of nbgrader's converter
        def _format_source(self, assignment_id, student_id, escape=False):
            return str(submitted / student_id / assignment_id)

    hostile = "<img src=x onerror=top.__pwned=1>"
    honest_folder, hostile_folder = str(submitted / "ada" / ASSIGNMENT), str(submitted / hostile / ASSIGNMENT)
    converter = Converter()
    converter.assignments = {
        honest_folder: [f"{honest_folder}/{ASSIGNMENT}.ipynb", f"{honest_folder}/Untitled (1) <b>.ipynb"],
        hostile_folder: [f"{hostile_folder}/{ASSIGNMENT}.ipynb"]}
    IntakeGuard(parent=converter, course_root=str(course.root))
    assert converter.assignments == {honest_folder: [f"{honest_folder}/{ASSIGNMENT}.ipynb"]}
    rows = list(csv.DictReader((course.root / "grades.csv").open(encoding="utf-8")))
    assert [(r["student_id"], r["status"]) for r in rows] == [(hostile, "invalid_folder")]

    converter.assignments = {hostile_folder: [f"{hostile_folder}/{ASSIGNMENT}.ipynb"]}
    with pytest.raises(NotGradedByProject, match="is not a usable student id"):
        IntakeGuard(parent=converter, course_root=str(course.root))
    assert converter.assignments == {}
