"""The command line contract: grade, resume after a kill, identical regrades."""
from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

from grader.course.variants import parse, write_submission

ROOT = Path(__file__).resolve().parent.parent


def _grade(submissions: Path, out: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "grader", "grade", "--submissions", str(submissions),
                           "--out", str(out), "--workers", "1", *extra],
                          capture_output=True, text=True, cwd=ROOT, timeout=900)


def test_kill_then_resume_keeps_finished_grades_and_regrade_is_identical(tmp_path, course):
    submitted = tmp_path / "submitted"
    for student in ("s1", "s2", "s3"):
        scenario = parse(ROOT / "samples" / "scenarios" / "sharded_step" / ("ada.py" if student != "s2" else "chen.py"))
        write_submission(course, "sharded_step", scenario, submitted, student)
    out = tmp_path / "out"
    process = subprocess.Popen([sys.executable, "-m", "grader", "grade", "--submissions", str(submitted),
                                "--out", str(out), "--workers", "1"], cwd=ROOT,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 300
    while not list((out / "results").glob("*/*/*.json")) and time.monotonic() < deadline:
        time.sleep(0.2)
    import os

    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    finished = {p: p.read_text() for p in (out / "results").glob("*/*/*.json")}
    assert 1 <= len(finished) < 3
    resumed = _grade(submitted, out)
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stderr.count("kept from earlier run") == len(finished)
    for path, text in finished.items():
        assert path.read_text() == text
    first = (out / "grades.csv").read_text()
    assert _grade(submitted, out, "--force").returncode == 0
    assert (out / "grades.csv").read_text() == first
    # summed local means: only the gradient fails, and the loss keeps its 1 of the test's 3 points (partial credit)
    assert "s2,sharded_step,sharded_step.ipynb,9,11" in first
    assert "s1,sharded_step,sharded_step.ipynb,11,11" in first


def test_scores_reach_nbgrader_gradebook(tmp_path):
    import csv

    from nbgrader.api import Gradebook

    db_url = f"sqlite:///{tmp_path / 'gradebook.db'}"
    done = _grade(ROOT / "samples" / "submitted", tmp_path / "out", "--assignment", "sharded_step",
                  "--gradebook", db_url)
    assert done.returncode == 0, done.stderr
    rows = list(csv.DictReader((tmp_path / "out" / "grades.csv").open()))
    assert len(rows) == 4
    with Gradebook(db_url) as book:
        for row in rows:
            submission = book.find_submission("sharded_step", row["student_id"])
            assert submission.score == float(row["score"])
            assert submission.max_score == float(row["max_score"]) + float(row["manual_max_score"])
            assert submission.needs_manual_grade  # the free-response answer waits for the instructor
