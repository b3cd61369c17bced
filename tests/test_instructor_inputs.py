"""What reaches the instructor from a learner's files, outside any kernel: nothing active, nothing followed.

Each test tries an attack a second red team reproduced (``tests/attacks/notes/``): the learner controls every
name, id and file in their submission folder, and the instructor opens grades.csv in a spreadsheet, reads
``grader report`` in a terminal and presses formgrader's Autograde with their own rights.
"""
from __future__ import annotations

import csv
import json
import os
import threading
import types
from pathlib import Path

import pytest

from grader.submission import intake

from grader.nbgrader_adapter import plugins as nbgrader_plugins
from grader.classroom.batch import discover
from grader.term.gradebook import Gradebook
from grader.layout import Course
from grader.nbgrader_adapter.db import _submitted_at
from grader.submission.pipeline import Job, Settings, finish, prepare
from grader.classroom.report import table
from grader.results import Status

FORMULAS = ['=HYPERLINK(CONCAT("http:",CHAR(47),CHAR(47),"127.0.0.1:9"),"x")', "+cmd|' C calc'!A0", "@SUM(1+1)",
            "-2+3+cmd|' C calc'!A0"]
CONTROL = "\x1bc\x1b]0;owned\x07\x1b[8m"


def _controls(text: str) -> list[str]:
    return [c for c in text if not c.isprintable() and c != "\n"]


def test_grades_csv_never_holds_a_formula_a_spreadsheet_would_run(tmp_path):
    course = Course.default()
    submitted = tmp_path / "submitted"
    for name in FORMULAS:
        (submitted / name / "collectives").mkdir(parents=True)  # a 'missing' row each, no kernel
    (submitted / "bob" / "collectives").mkdir(parents=True)
    (submitted / "bob" / FORMULAS[1]).mkdir()  # an unknown assignment, named by the learner
    jobs, rejected = discover(submitted, course)
    settings = Settings(out=tmp_path / "out")
    for job in jobs:
        finish(prepare(job, course, settings), None, course, settings)
    book = Gradebook(settings.out)
    for result in rejected:
        book.save(result, None)
    book.write_tables(book.all_results())
    rows = list(csv.reader((settings.out / "grades.csv").open()))
    cells = [cell for row in rows[1:] for cell in row]
    # each formula is a refused student id (grader/identifiers.py), recorded once per assignment; bob's two rows
    assert len(rows) - 1 == len(FORMULAS) * len(course.assignments()) + 2
    assert [cell for cell in cells if cell[:1] in ("=", "+", "-", "@", "\t", "\r")] == []
    assert any(cell == "'" + FORMULAS[0] for cell in cells)  # kept readable, only quoted


def test_learner_ids_reach_no_file_and_no_terminal_with_control_characters(tmp_path):
    course = Course.default()
    nb = json.loads(Path(course.release_notebook("collectives")).read_text())
    nb["cells"][0]["id"] = nb["cells"][1]["id"] = CONTROL  # duplicated ids, quoted in the tampering notes
    nb["cells"].append({"cell_type": "code", "id": "x", "metadata": {"nbgrader": {"grade_id": "\x1b[2J" + CONTROL}},
                        "source": "pass", "outputs": [], "execution_count": None})
    folder = tmp_path / "submitted" / "alice" / "collectives"
    folder.mkdir(parents=True)
    (folder / "collectives.ipynb").write_text(json.dumps(nb))
    settings = Settings(out=tmp_path / "out")
    prepared = prepare(Job("alice", "collectives", folder), course, settings)
    result = prepared.result
    assert len(result.tampering) >= 2 and not _controls(" ".join(result.tampering)), result.tampering
    result.status = Status.TAMPERED
    result.message = "; ".join(result.tampering) + CONTROL  # even a message made elsewhere
    book = Gradebook(settings.out)
    book.save(result, prepared.sha256)
    book.write_tables(book.all_results())
    assert not _controls((settings.out / "grades.csv").read_text())
    assert not _controls(table(book.all_results()))


def test_the_submission_time_is_read_like_a_learner_file(tmp_path):
    for student in ("fifo", "zero", "huge", "plain"):
        (tmp_path / student / "collectives").mkdir(parents=True)
    os.mkfifo(tmp_path / "fifo" / "collectives" / "timestamp.txt")
    (tmp_path / "zero" / "collectives" / "timestamp.txt").symlink_to("/dev/zero")
    (tmp_path / "huge" / "collectives" / "timestamp.txt").write_text("2026-11-30 10:00:00 UTC" + " " * 10_000)
    (tmp_path / "plain" / "collectives" / "timestamp.txt").write_text("2026-11-30 10:00:00.000000 UTC\n")
    answers = {}
    worker = threading.Thread(target=lambda: answers.update(
        {s: _submitted_at(tmp_path, s, "collectives") for s in ("fifo", "zero", "huge", "plain")}), daemon=True)
    worker.start()
    worker.join(10)
    assert not worker.is_alive(), "reading a FIFO blocked the gradebook export"
    assert answers["fifo"] is None and answers["zero"] is None and answers["huge"] is None
    assert answers["plain"] is not None and answers["plain"].year == 2026


@pytest.mark.parametrize("kind", ["link-to-solution", "fifo", "sparse-huge", "regular"])
def test_formgraders_autograde_never_follows_or_reads_past_the_submitted_notebook(tmp_path, monkeypatch, kind):
    """A submitted notebook linking to the instructor's solution used to be copied through the link (full marks);
    a FIFO blocked the copy and a sparse file was written out in full."""
    course = Course.default()
    submitted = tmp_path / "submitted" / "mallory" / "collectives"
    submitted.mkdir(parents=True)
    notebook = submitted / "collectives.ipynb"
    if kind == "link-to-solution":
        notebook.symlink_to(course.source_notebook("collectives"))
    elif kind == "fifo":
        os.mkfifo(notebook)
    elif kind == "sparse-huge":
        with open(notebook, "wb") as handle:
            handle.truncate(1 << 40)
    else:
        notebook.write_bytes(course.release_notebook("collectives").read_bytes())
    (submitted / "extra.bin").write_bytes(b"x" * 1000)
    (submitted / "folder-link").symlink_to("/")
    seen = {}

    def fake_run(command, **kwargs):  # what `python -m grader grade --submissions TMP` is given
        folder = Path(command[command.index("--submissions") + 1]) / "mallory" / "collectives"
        staged = folder / "collectives.ipynb"
        seen["names"] = sorted(p.name for p in folder.iterdir())
        seen["link"] = staged.is_symlink()
        seen["bytes"] = os.lstat(staged).st_blocks * 512 if os.path.lexists(staged) else None
        try:
            seen["read"] = intake.read(staged)
        except intake.InvalidSubmission as refused:
            seen["read"] = refused.status
        return types.SimpleNamespace(returncode=1, stderr="stopped by the test")

    monkeypatch.setattr(nbgrader_plugins, "subprocess", types.SimpleNamespace(run=fake_run))
    autograde = nbgrader_plugins.ProjectAutograde(course_root=str(tmp_path / "out"))
    resources = {"nbgrader": {"student": "mallory", "assignment": "collectives", "notebook": "collectives",
                              "db_url": "sqlite:///" + str(tmp_path / "gb.db")}, "metadata": {"path": str(submitted)}}
    with pytest.raises(nbgrader_plugins.NotGradedByProject):
        autograde.preprocess(None, resources)
    assert seen["names"] == ["collectives.ipynb"]  # nothing else of the folder, and no link to a folder
    assert seen["bytes"] is not None and seen["bytes"] < 64 << 20  # never written out in full
    if kind == "regular":
        assert not isinstance(seen["read"], str)  # read as the learner's notebook
    else:
        assert isinstance(seen["read"], str), seen["read"]  # refused by intake, as `grade` refuses it
        assert kind != "link-to-solution" or seen["link"]
