"""``grade --student ID``: regrade one learner (a late or appealed submission), every other result untouched."""
from __future__ import annotations

import csv
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from grader import identifiers

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "samples" / "submitted"
ASSIGNMENT = "sharded_step"


def _grade(submissions: Path, out: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "grader", "grade", "--submissions", str(submissions),
                           "--out", str(out), "--workers", "2", *extra],
                          capture_output=True, text=True, cwd=ROOT, timeout=900)


def _files(out: Path) -> dict[Path, tuple[bytes, int]]:
    """Every file of the grading output: its bytes and its modification time (ns)."""
    return {p.relative_to(out): (p.read_bytes(), p.stat().st_mtime_ns) for p in out.rglob("*") if p.is_file()}


def _rows(out: Path) -> dict[str, dict]:
    return {row["student_id"]: row for row in csv.DictReader((out / "grades.csv").open(encoding="utf-8"))}


def _learners(submissions: Path) -> list[str]:
    return sorted(p.name for p in submissions.iterdir() if p.is_dir())


def test_unknown_or_unusable_student_is_refused_before_anything_runs(tmp_path):
    out = tmp_path / "out"
    unknown = _grade(SAMPLES, out, "--student", "ada", "--student", "zed")
    assert unknown.returncode == 2, unknown.stderr
    assert "'zed'" in unknown.stderr and "no such learner" in unknown.stderr, unknown.stderr
    assert "'ada'" not in unknown.stderr.split("no such learner")[0], "ada has a folder and is not unknown"
    for learner in _learners(SAMPLES):  # the learners that do exist are named
        assert learner in unknown.stderr, (learner, unknown.stderr)
    assert not out.exists(), "nothing may run (or be written) before every id is checked"

    bad = "ada<script>"
    refused = _grade(SAMPLES, out, "--student", bad)
    assert refused.returncode == 2, refused.stderr
    assert identifiers.problem(bad) in refused.stderr and "not a usable student id" in refused.stderr, refused.stderr
    assert not out.exists()


@pytest.fixture(scope="module")
def graded_once(tmp_path_factory):
    """The sample class's sharded_step graded once, with scores in an nbgrader database."""
    base = tmp_path_factory.mktemp("regrade")
    submitted, out = base / "submitted", base / "out"
    shutil.copytree(SAMPLES, submitted)
    db_url = f"sqlite:///{base / 'gradebook.db'}"
    first = _grade(submitted, out, "--assignment", ASSIGNMENT, "--gradebook", db_url)
    assert first.returncode == 0, first.stderr
    return submitted, out, db_url


def test_regrade_one_learner_leaves_every_other_result_untouched(graded_once):
    from nbgrader.api import Gradebook

    submitted, out, db_url = graded_once
    learners = _learners(submitted)
    assert "ada" in learners and len(learners) >= 3
    before_rows = _rows(out)
    assert sorted(before_rows) == learners
    before_json = {r["student_id"]: r for r in json.loads((out / "results.json").read_text())}
    # ada's late submission: chen's notebook, whose grade the first run already knows (9/11, not ada's 11/11)
    expected = before_rows["chen"]
    assert expected["score"] != before_rows["ada"]["score"], "the change must change ada's score"
    notebook = submitted / "ada" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    notebook.write_bytes((submitted / "chen" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").read_bytes())
    # a hand edit of blake's row in nbgrader's database: a rewrite of blake's row would undo it
    blake_test = before_json["blake"]["tests"][0]["grade_id"]
    with Gradebook(db_url) as book:
        book.find_grade(blake_test, ASSIGNMENT, ASSIGNMENT, "blake").auto_score = 0.25
        book.db.commit()
        others_db = {s: book.find_submission(ASSIGNMENT, s).score for s in learners if s != "ada"}
    before = _files(out)

    again = _grade(submitted, out, "--assignment", ASSIGNMENT, "--student", "ada", "--force", "--gradebook", db_url)
    assert again.returncode == 0, again.stderr

    assert f"1/1 ada/{ASSIGNMENT}" in again.stderr, "only ada's notebook is graded: " + again.stderr
    for other in learners:
        if other != "ada":
            assert f"{other}/{ASSIGNMENT}" not in again.stderr, f"{other} was graded again: {again.stderr}"
    after = _files(out)
    assert set(after) == set(before), "files appeared or vanished: " + str(set(after) ^ set(before))
    for path, (data, mtime) in before.items():
        if path.parts[0] in ("results", "autograded", "feedback") and path.parts[1] != "ada":
            assert after[path][0] == data, f"{path} changed"
            assert after[path][1] == mtime, f"{path} was rewritten"
    assert after[Path("results", "ada", ASSIGNMENT, f"{ASSIGNMENT}.json")][1] > \
        before[Path("results", "ada", ASSIGNMENT, f"{ASSIGNMENT}.json")][1], "ada's result was not rewritten"

    rows = _rows(out)
    assert sorted(rows) == learners, "grades.csv lists every learner"
    for other in learners:
        if other != "ada":
            assert rows[other] == before_rows[other], f"{other}'s row in grades.csv changed"
    for column in ("score", "max_score", "status", "message", "total_score"):
        assert rows["ada"][column] == expected[column], (column, rows["ada"], expected)
    results = {r["student_id"]: r for r in json.loads((out / "results.json").read_text())}
    assert sorted(results) == learners
    for other in learners:
        if other != "ada":
            assert results[other] == before_json[other], f"{other}'s entry in results.json changed"

    with Gradebook(db_url) as book:
        assert book.find_submission(ASSIGNMENT, "ada").score == float(expected["score"])
        assert book.find_grade(blake_test, ASSIGNMENT, ASSIGNMENT, "blake").auto_score == 0.25, \
            "blake's row in nbgrader's database was rewritten"
        for other, score in others_db.items():
            assert book.find_submission(ASSIGNMENT, other).score == score, other


def test_student_reaches_the_cluster_path_through_the_same_discovery(graded_once, tmp_path):
    from grader.classroom.cluster import grade_all_on_cluster
    from grader.layout import Course
    from grader.submission.pipeline import Settings

    submitted, out, _ = graded_once
    copy = tmp_path / "out"
    shutil.copytree(out, copy)
    settings = Settings(out=copy)
    # nothing of dana's changed: every result is kept, so no scheduler is ever contacted (none listens on port 9)
    before = _files(copy / "results")
    results = grade_all_on_cluster(submitted, Course.default(), settings, "tcp://127.0.0.1:9", insecure=True,
                                   only=[ASSIGNMENT], students=["dana"])
    assert sorted(r.student_id for r in results) == _learners(submitted)
    assert _files(copy / "results") == before
    with pytest.raises(ValueError, match="no such learner") as raised:
        grade_all_on_cluster(submitted, Course.default(), settings, "tcp://127.0.0.1:9", insecure=True,
                             only=[ASSIGNMENT], students=["zed"])
    for learner in _learners(submitted):
        assert learner in str(raised.value)
