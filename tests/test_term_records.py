"""A term's records are safe: no course command deletes or regrades them, and a backup restores every one of them.

The term is lived through the real service, as in ``tests/test_term.py`` (only the kernels stood in): two graded
attempts, a hand grade, a regrade request answered. Then the course's own make targets are turned on its folder,
and the term is backed up, restored into a fresh folder and read back by the instructor's own commands.
"""
from __future__ import annotations

import datetime
import hashlib
import io
import json
import os
import sqlite3
import subprocess
import tarfile
from pathlib import Path

import pytest

from grader.term import history
from grader.layout import Course
from grader.nbgrader_adapter.manual_grades import refreshed
from grader.term import backup, guard, records
from test_term import Term, _command, _hand, _result

ROOT = Path(__file__).resolve().parents[1]
ASSIGNMENT = "sharded_step"


@pytest.fixture(autouse=True)
def _alembic_on_path(monkeypatch):
    """nbgrader's Gradebook runs ``alembic`` from PATH to set up a new database."""
    monkeypatch.setenv("PATH", f"{Path(os.sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")


def _lived(tmp_path: Path, monkeypatch) -> Term:
    """A term: two graded attempts, the written answer graded by hand, a regrade request answered "changed"."""
    now = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None, microsecond=0)
    term = Term(tmp_path, monkeypatch, now + datetime.timedelta(hours=1))
    term.submit("Each device averages its own rows.", _result(9.0, now))
    term.submit("The global mean divides by all 8 rows.", _result(10.0, now))
    _hand(term.url, 1.5, "right", term.student)
    refreshed(term.out, term.url, Course.default().root)
    appeal = term.appeal("test-loss-and-gradient", "My gradient matches the host's")
    _command(["appeals", "answer", appeal, "changed", "--points", "3", "--out", str(term.out), "--gradebook", term.url])
    term.service.close()
    return term


def _make(target: str, grading: Path) -> subprocess.CompletedProcess:
    """``make TARGET GRADING=DIR`` in the checkout, as an instructor types it."""
    return subprocess.run(["make", "--no-print-directory", "-s", target, f"GRADING={grading}"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)


def _read_back(out: Path, student: str) -> dict:
    """What an instructor reads of a term: grades.csv, the history (as printed), the appeals, the hand grades in
    nbgrader's database, every feedback page and result, byte for byte."""
    with sqlite3.connect(out / "gradebook.db") as db:
        hand = db.execute("SELECT manual_score FROM grade WHERE manual_score IS NOT NULL ORDER BY id").fetchall()
    pages = {str(p.relative_to(out)): hashlib.sha256(p.read_bytes()).hexdigest()
             for folder in ("feedback", "results", "hand-grades", "appeals", "service") for p in (out / folder).rglob("*")
             if p.is_file()}
    return {"grades": (out / "grades.csv").read_text(), "hand": hand, "files": pages,
            "history": [{k: v for k, v in e.items()} for e in history.read(out, student, ASSIGNMENT)],
            "shown": _command(["history", student, ASSIGNMENT, "--out", str(out)]).replace(str(out), "OUT"),
            "appeals": _command(["appeals", "--all", "--out", str(out)]).replace(str(out), "OUT")}


def test_a_terms_folder_is_refused_by_every_demo_target_and_restored_whole_from_its_backup(tmp_path, monkeypatch):
    term = _lived(tmp_path, monkeypatch)
    before = _read_back(term.out, term.student)
    assert before["hand"] == [(1.5,)] and before["grades"].endswith(",12.5\n"), before  # 11 autograded + 1.5 by hand

    # 1. not marked yet: its learner is not one of the demo's, so the demo's targets refuse it all the same
    for target in ("demo", "clean-grading"):
        done = _make(target, term.out)
        assert done.returncode != 0 and "learners who are not the demo's" in done.stderr, (target, done.stderr)
    _command(["term", "init", "--out", str(term.out), "--name", "fall-2026"])
    for target in ("demo", "clean-grading"):  # 2. marked: refused, saying how to keep a copy
        done = _make(target, term.out)
        assert done.returncode != 0 and "'fall-2026'" in done.stderr and "term backup" in done.stderr, done.stderr
    assert _read_back(term.out, term.student) == before  # nothing was touched

    # 3. backed up, restored onto a fresh machine's folder: every total, history line, hand grade and page identical
    archive = tmp_path / "fall-2026.tar.gz"
    said = _command(["term", "backup", "--out", str(term.out), "--to", str(archive)])
    assert f"wrote {archive}" in said
    fresh = tmp_path / "elsewhere" / "course"
    _command(["term", "restore", "--out", str(fresh), "--from", str(archive)])
    assert _read_back(fresh, term.student) == before
    assert guard.marked(fresh)["term"] == "fall-2026"  # still a term's folder: the demo refuses it there too
    assert records.files(fresh) == records.files(term.out)

    # 4. restore never replaces a term's records, and a changed archive is refused before anything is written
    refused = subprocess.run([os.sys.executable, "-m", "grader", "term", "restore", "--out", str(term.out), "--from",
                              str(archive)], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert refused.returncode == 2 and "already holds grading records" in refused.stderr, refused.stderr
    forged = tmp_path / "forged.tar.gz"
    with tarfile.open(archive) as old, tarfile.open(forged, "w:gz") as new:
        for member in old.getmembers():
            data = old.extractfile(member).read()
            if member.name == "grades.csv":
                data = data.replace(b",12.5", b",13.0")
            member.size = len(data)
            new.addfile(member, io.BytesIO(data))
    with pytest.raises(backup.BackupFailed, match="grades.csv is not the file that was backed up"):
        backup.restore(forged, tmp_path / "third")
    assert not (tmp_path / "third" / "grades.csv").exists()


def test_the_demos_clean_removes_only_what_grading_makes_again(tmp_path):
    out = tmp_path / "demo"
    for name in ("autograded/ada/x.ipynb", "feedback/ada/x.html", "results/ada/x.json", "class-report/index.html",
                 "history/ada/sharded_step.jsonl", "hand-grades/ada/x.json", "appeals/ada.jsonl",
                 "service/ledger/ada/x.jsonl", "grades.csv", "gradebook.db"):
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        (out / name).write_text("x")
    done = _make("clean-grading", out)
    assert done.returncode == 0, done.stderr
    left = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())
    assert left == ["appeals/ada.jsonl", "gradebook.db", "hand-grades/ada/x.json", "history/ada/sharded_step.jsonl",
                    "service/ledger/ada/x.jsonl"]


def test_make_samples_refuses_a_learner_no_scenario_makes(tmp_path):
    (tmp_path / "ada" / ASSIGNMENT).mkdir(parents=True)
    guard.check(tmp_path, "samples", {"ada"})
    (tmp_path / "erin" / ASSIGNMENT).mkdir(parents=True)  # collected into samples/ by an older configuration
    with pytest.raises(guard.TermRefused, match="erin"):
        guard.check(tmp_path, "samples", {"ada"})
    config = (ROOT / "nbgrader_config.py").read_text()
    assert 'submitted_directory = "submitted"' in config  # collect writes real work outside samples/


def test_a_backup_taken_while_the_service_writes_is_consistent(tmp_path, monkeypatch):
    """The service appends a history line and then replaces the result it explains; a backup copying in between
    would hold a history that names a result the archive lacks. Here the write lands in the middle of the first copy."""
    out = tmp_path / "out"
    (out / "history" / "ada").mkdir(parents=True)
    (out / "results" / "ada").mkdir(parents=True)
    line, result = out / "history" / "ada" / "a.jsonl", out / "results" / "ada" / "a.json"

    def grade(n: int) -> None:
        with line.open("a") as handle:
            handle.write(json.dumps({"n": n}) + "\n")
        result.write_text(json.dumps({"n": n}))

    grade(1)
    copied = []
    real_copy = backup.shutil.copy2

    def copy_then_grade(source, target, **kw):
        made = real_copy(source, target, **kw)
        copied.append(source)
        if len(copied) == 1:
            grade(2)  # the service writes while the backup copies
        return made

    monkeypatch.setattr(backup.shutil, "copy2", copy_then_grade)
    archive = tmp_path / "b.tar.gz"
    backup.backup(out, archive)
    with tarfile.open(archive) as tar:
        lines = tar.extractfile("history/ada/a.jsonl").read().decode().splitlines()
        kept = json.loads(tar.extractfile("results/ada/a.json").read())
    assert json.loads(lines[-1])["n"] == kept["n"] == 2, (lines, kept)
    assert len(copied) > 2  # it copied again after the change
