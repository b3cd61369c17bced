"""Attacks on due dates, the LMS export and the class report, by a learner who controls every byte of their
submission folder (``timestamp.txt`` included) and their student id.

Each test performs one attack and states what must hold; the grader's modules are called as the commands call them.
"""
from __future__ import annotations

import csv
import datetime
import os
import warnings

import pytest
from traitlets.config import Config

from grader import results as recorded
from grader.nbgrader_adapter import db, late, lms
from grader.results import NotebookResult, Status
from grader.submission import timestamps

DUE = datetime.datetime(2026, 11, 20, 12, 0)
HOUR = datetime.timedelta(hours=1)


def _policy() -> late.PerDayPenalty:
    return late.plugin(Config({"AssignLatePenalties": {"plugin_class": late.PerDayPenalty}}))


# -- timestamp.txt: the time zone field is a file path for dateutil ---------------------------------------------------

# nbgrader's parse_utc hands the third word of the timestamp to dateutil's gettz, which treats it as a file name:
# an absolute path is opened (as root, on the grader's host), a relative one that leaves the zoneinfo folder raises
# DeprecatedTzKeyWarning as an exception (dateutil installs an "error" filter for it), which no caller catches.
HOSTILE_ZONES = ["../../../../etc/passwd", "../x", "/etc/passwd", "/etc/hostname", "/nonexistent/zone",
                 ":/proc/self/environ", "/proc/self/cmdline"]


@pytest.mark.parametrize("zone", HOSTILE_ZONES)
def test_a_hostile_time_zone_in_timestamp_txt_never_raises_and_opens_no_file(tmp_path, zone, monkeypatch):
    opened = []
    real_open = open

    def spy(file, *args, **kwargs):
        if isinstance(file, (str, os.PathLike)) and not str(file).startswith(str(tmp_path)):
            opened.append(str(file))
        return real_open(file, *args, **kwargs)

    (tmp_path / "timestamp.txt").write_text(f"2026-11-19 12:00:00.000000 {zone}")
    monkeypatch.setattr("builtins.open", spy)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the warning filter dateutil appends for itself still makes it an error
        when, note = timestamps.read(tmp_path, DUE + 2 * HOUR)  # raised DeprecatedTzKeyWarning: a grader_error
        stamped = db._submitted_at(tmp_path.parent, tmp_path.name, "")  # export_grades: the whole gradebook copy
    monkeypatch.undo()
    assert not [p for p in opened if zone.lstrip(":").split("/")[-1] in p], f"the grader opened {opened}"
    assert note and "timestamp.txt" in note, note  # not a time: said, and (below) never on time
    assert stamped is None


@pytest.mark.parametrize("zone", ["../../../../etc/passwd", "../x", "a/../../b"])
def test_a_zone_that_leaves_the_zoneinfo_folder_is_a_note_not_a_grader_error(tmp_path, zone):
    """dateutil raises DeprecatedTzKeyWarning (a Warning, not a ValueError) for such a zone: prepare() failed, the
    learner's notebook became a grader_error retried by every later run, and export_grades stopped for the class."""
    (tmp_path / "timestamp.txt").write_text(f"2026-11-19 12:00:00.000000 {zone}")
    with warnings.catch_warnings():  # the filters as the grader runs with them (dateutil appends its own "error")
        when, note = timestamps.read(tmp_path, DUE + 2 * HOUR)
        assert db._submitted_at(tmp_path.parent, tmp_path.name, "") is None
    assert "is not a date and time" in note


def test_whether_a_file_exists_on_the_graders_host_is_not_told_by_the_note(tmp_path):
    """An absolute path as the zone was an oracle: an existing regular file gave 'not a date and time', a missing
    one a valid time."""
    notes = []
    for zone in ("/etc/passwd", "/no/such/file"):
        (tmp_path / "timestamp.txt").write_text(f"2026-11-19 12:00:00.000000 {zone}")
        notes.append(timestamps.read(tmp_path, DUE)[1])
    assert notes[0] == notes[1].replace("/no/such/file", "/etc/passwd")


def test_nbgraders_own_timestamps_still_read(tmp_path):
    for text, expected in (("2026-11-19 12:00:00.123456 UTC", "2026-11-19 12:00:00.123456 UTC"),
                           ("2026-11-19 13:00:00.000000 CET", "2026-11-19 12:00:00.000000 UTC"),
                           ("2026-11-19 12:00:00.000000 Europe/Berlin", "2026-11-19 11:00:00.000000 UTC"),
                           ("2026-11-19 12:00:00.000000 +3600", "2026-11-19 11:00:00.000000 UTC"),
                           ("2026-11-19T12:00:00+00:00", "2026-11-19 12:00:00.000000 UTC")):
        (tmp_path / "timestamp.txt").write_text(text)
        assert timestamps.read(tmp_path, DUE) == (expected, ""), text


# -- an unusable time never counts as on time -------------------------------------------------------------------------

UNUSABLE = [None, "", "garbage", "3026-01-01 00:00:00.000000 UTC", "1970-01-01 00:00:00.000000 UTC", "nan",
            "99999999999", "2026-11-19 12:00:00.000000 ../x", "\ufeff2026-11-19 12:00:00.000000 UTC"]


@pytest.mark.parametrize("text", UNUSABLE)
def test_a_late_learner_who_breaks_timestamp_txt_is_penalised_as_of_the_grading(tmp_path, text):
    """A learner 30 hours late writes a future, absurd or unreadable time (or deletes timestamp.txt) to get 'time
    unknown: no late penalty was decided'. Backdating on the collect path is the learner's word, as documented;
    an unusable time must not be a second, silent way out: it counts as the latest time known, when the grader
    read the folder."""
    if text is not None:
        (tmp_path / "timestamp.txt").write_text(text)
    graded_at = DUE + 30 * HOUR
    when, note = timestamps.read(tmp_path, graded_at)
    assert when == timestamps.show(graded_at), (when, note)
    assert note and "the time it was graded counts" in note
    result = NotebookResult("mallory", "sharded_step", "sharded_step.ipynb", Status.GRADED, "",
                            [recorded.TestResult("t", 8.0, 8.0, True, "")], submitted_at=when, submitted_note=note)
    submitted = timestamps.parse(result.submitted_at, datetime.datetime.max)
    penalty = late.assess(_policy(), "mallory", 8.0, DUE, submitted, result.submitted_note)
    assert penalty.points == pytest.approx(8.0 * 2 * 10 / 100), penalty.message
    assert "timestamp.txt" in penalty.message  # the page says why the grading time counted


# -- the Canvas export: a row Canvas can only match by a name the learner chose ---------------------------------------

def test_a_learner_made_id_equal_to_a_classmates_name_gets_no_canvas_row(tmp_path):
    """Canvas's import matches a row by Student name when its ID is empty. `grade --gradebook` creates a gradebook
    student for every graded id, and the export's roster is the gradebook's: a learner who submits a blank notebook
    as 'Ann Lee' gets a row 'Student: Ann Lee, ID: (empty), 0', which Canvas matches to the real Ann Lee."""
    results = [NotebookResult("ann", "sharded_step", "sharded_step.ipynb", Status.GRADED, "",
                              [recorded.TestResult("t", 8.0, 8.0, True, "")]),
               NotebookResult("Ann Lee", "sharded_step", "sharded_step.ipynb", Status.GRADED, "",
                              [recorded.TestResult("t", 0.0, 8.0, False, "")])]
    roster = [lms.Learner("ann", "Ann", "Lee", "ann@example.edu", "40101"), lms.Learner("Ann Lee")]
    export = lms.collect(results, {}, {}, roster)
    lms.write_canvas(export, tmp_path / "c.csv")
    rows = list(csv.reader((tmp_path / "c.csv").open(encoding="utf-8")))[2:]
    assert all(row[1] for row in rows), f"a row with no ID, matched by its name: {rows}"
    assert [row[:2] for row in rows] == [["Lee, Ann", "40101"]]
    assert any("Ann Lee" in said and "not exported" in said for said in lms.problems(export))
