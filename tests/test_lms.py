"""Grades to the LMS (grader/nbgrader_adapter/lms.py, ``python -m grader export``).

Expected cells are computed here from the results written and the roster: autograded points, plus hand grades,
less the late penalty (percent per started day, by hand), never read back from grades.csv.
"""
from __future__ import annotations

import contextlib
import csv
import datetime
import io
import os
import sys
from pathlib import Path

import pytest

from grader import cli
from grader import results as recorded
from grader.results import NotebookResult, Status
from grader.submission import timestamps
from grader.term.gradebook import Gradebook
from test_late import _course as late_course

ROOT = Path(__file__).resolve().parents[1]
DUE = datetime.datetime(2026, 11, 20, 12, 0)


def _result(student, assignment, points, *, late_hours=None):
    tests = [recorded.TestResult(f"t{i}", p, 5.0, p == 5.0, "") for i, p in enumerate(points)]
    when = None if late_hours is None else timestamps.show(DUE + datetime.timedelta(hours=late_hours))
    return NotebookResult(student, assignment, f"{assignment}.ipynb", Status.GRADED, "", tests, submitted_at=when)


@pytest.fixture
def graded(tmp_path, monkeypatch):
    """A course root with a due date for sharded_step (10 % a day) and a class graded into OUT."""
    root = late_course(tmp_path, due=DUE)
    monkeypatch.setenv("COURSE_ROOT", str(root))  # Course.default(): its nbgrader_config.py holds the policy
    out = tmp_path / "out"
    for result in (_result("ada", "sharded_step", [5.0, 3.0], late_hours=30),  # 8 points, 2 started days late
                   _result("ada", "collectives", [5.0, 5.0, 1.0]),
                   _result("blake", "sharded_step", [2.5], late_hours=-1),
                   _result("eve", "sharded_step", [4.0], late_hours=-2)):  # graded, not on the roster
        Gradebook(out).save(result, "sha")
    roster = tmp_path / "roster.csv"
    roster.write_text("id,first_name,last_name,email,lms_user_id\n"
                      "ada,Ada,Okafor,ada@example.edu,40101\n"
                      "blake,=HYPERLINK(\"http://evil\"),@Lindqvist,blake@example.edu,40102\n"
                      "chen,Chen,Wei,chen@example.edu,40103\n")
    return out, roster


def _export(*argv) -> tuple[int, str, str]:
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr), pytest.raises(SystemExit) as done:
        cli.main(["export", *argv])
    return done.value.code, stdout.getvalue(), stderr.getvalue()


def test_canvas_columns_rows_and_totals_after_penalties(graded, tmp_path):
    out, roster = graded
    code, said, problems = _export("--out", str(out), "--roster", str(roster), "--canvas", str(tmp_path / "c.csv"),
                                   "--canvas-id", "sharded_step=777")
    rows = list(csv.reader((tmp_path / "c.csv").open(encoding="utf-8")))
    assert rows[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "sharded_step (777)", "collectives"]
    assert rows[1] == ["    Points Possible", "", "", "", "", f"{2 * 5.0:g}", f"{3 * 5.0:g}"]
    by_id = {row[1]: row for row in rows[2:]}
    assert set(by_id) == {"40101", "40102", "40103"}
    ada = 8.0 - 8.0 * 2 * 10 / 100  # 30 hours late: two started days at 10 %
    assert float(by_id["40101"][5]) == pytest.approx(ada) and float(by_id["40101"][6]) == 11.0
    assert by_id["40101"][0] == "Okafor, Ada"
    assert float(by_id["40102"][5]) == 2.5 and by_id["40102"][6] == ""  # blake: on time; no collectives submission
    assert by_id["40103"][5:] == ["", ""]  # chen: on the roster, nothing submitted: empty cells, not 0
    # names that start like a formula are shown, never run
    assert by_id["40102"][0] == "'@Lindqvist, =HYPERLINK(\"http://evil\")"
    # eve was graded but is not on the roster: named, and the command fails
    assert code == 1 and "'eve'" in problems and "not on the roster" in problems
    assert "3 learners x 2 assignments" in said


def test_moodle_columns(graded, tmp_path):
    out, roster = graded
    code, _, _ = _export("--out", str(out), "--roster", str(roster), "--moodle", str(tmp_path / "m.csv"))
    rows = list(csv.reader((tmp_path / "m.csv").open(encoding="utf-8")))
    assert rows[0] == ["First name", "Last name", "ID number", "Email address", "sharded_step", "collectives"]
    assert rows[1][:4] == ["Ada", "Okafor", "40101", "ada@example.edu"]
    assert float(rows[1][4]) == pytest.approx(8.0 * 0.8)
    assert rows[2][0].startswith("'=") and rows[2][1].startswith("'@")
    assert code == 1


def test_the_roster_comes_from_nbgraders_gradebook(graded, tmp_path, monkeypatch):
    """``nbgrader db student import`` of the course's own roster (samples/roster.csv) fills lms_user_id."""
    from nbgrader.api import Gradebook as Book

    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    out, _ = graded
    url = f"sqlite:///{tmp_path / 'gradebook.db'}"
    with Book(url) as book:
        for row in csv.DictReader((ROOT / "samples" / "roster.csv").open()):  # what nbgrader's importer does
            book.update_or_create_student(row.pop("id"), **row)
    code, _, problems = _export("--out", str(out), "--gradebook", url, "--canvas", str(tmp_path / "c.csv"))
    rows = list(csv.reader((tmp_path / "c.csv").open(encoding="utf-8")))
    expected = {row["lms_user_id"] for row in csv.DictReader((ROOT / "samples" / "roster.csv").open())}
    assert {row[1] for row in rows[2:]} == expected and all(expected)
    assert code == 1 and "'eve'" in problems


def test_a_roster_without_an_id_column_is_refused_by_name(graded, tmp_path):
    out, _ = graded
    bad = tmp_path / "bad.csv"
    bad.write_text("name,email\nAda,ada@example.edu\n")
    code, _, problems = _export("--out", str(out), "--roster", str(bad), "--canvas", str(tmp_path / "c.csv"))
    assert code == 2 and "has no 'id' column" in problems
    assert not (tmp_path / "c.csv").exists()
