"""A real class's roster (``grader.hub.roster``): the LMS's exports read as they come, hostile rows refused, and the
roster applied again mid-term without touching anyone's work. Real Unix accounts, made and removed by the test."""
from __future__ import annotations

import csv
import grp
import os
import pwd
import secrets
import subprocess
from pathlib import Path

import pytest

from grader.hub import accounts, roster
from grader.hub.install import HubRefused, Paths
from grader.hub.start import enrol

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="makes and deactivates Unix accounts")


def _shadow(name: str) -> tuple[str, str]:
    """(the password field, the expiry day) of ``name`` in /etc/shadow."""
    for line in Path("/etc/shadow").read_text().splitlines():
        fields = line.split(":")
        if fields[0] == name:
            return fields[1], fields[7]
    raise KeyError(name)


def _active(name: str) -> bool:
    return name in accounts.members(accounts.LEARNERS) and _shadow(name)[1] in ("", "-1")


def _write(path: Path, rows: list[list[str]]) -> Path:
    with path.open("w", newline="", encoding="utf-8") as handle:
        csv.writer(handle).writerows(rows)
    return path


@pytest.fixture
def names():
    """Three learner accounts of this test's own (removed afterwards, homes and all)."""
    tag = secrets.token_hex(3)
    made = [f"rq{tag}{n}" for n in range(1, 4)]
    yield made
    for name in made:
        subprocess.run(["userdel", "--remove", name], capture_output=True)


def test_a_roster_from_canvas_then_moodle_then_the_course_adds_deactivates_and_restores_learners(tmp_path, names):
    first, second, third = names
    state = tmp_path / "state" / "roster.json"
    canvas = _write(tmp_path / "canvas.csv", [
        ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "sharded_step (1234)"],
        ["    Points Possible", "", "", "", "", "13"],
        ["Okafor, Ada", "40101", "S1", first, "A", "12"],
        ["<img src=x onerror=alert(1)>", "40102", "S2", second, "A", ""],
        ["Student, Test", "40199", "", "", "A", ""],
        ["Test Student", "40198", "", "teststudent", "A", ""],
        ["Evil, Root", "40103", "S3", "root", "A", ""],
        ["Shell, Bobby", "40104", "S4", "x; rm -rf /", "A", ""],
        ["Twice, Ada", "40105", "S5", first.upper(), "A", ""]])
    read = roster.read(canvas)
    assert read.format == "canvas"
    assert [e.account for e in read.enrolled] == [first, second]
    assert [e.lms_user_id for e in read.enrolled] == ["40101", "40102"]
    assert read.enrolled[1].first_name == "<img src=x onerror=alert(1)>"  # kept as text, never markup
    why = dict(read.refused)
    assert sorted(why) == [7, 8, 9]  # Canvas's test student (both spellings) and its points row are no learners
    assert "not one of this class's learners" in why[7] and "root" in why[7]
    assert "not an account name" in why[8] and "on line 3 too" in why[9], read.refused
    applied = roster.apply(read, state)
    assert sorted(applied.added) == [first, second] and not applied.deactivated
    for name in (first, second):
        assert _active(name) and _shadow(name)[0].startswith(("!", "*")), "a real learner has no course password"
        assert os.stat(pwd.getpwnam(name).pw_dir).st_mode & 0o777 == 0o700
    work = Path(pwd.getpwnam(first).pw_dir) / "sharded_step.ipynb"
    work.write_text("her work")

    # mid-term, from Moodle's export: the first learner dropped, a late enrolment added
    moodle = _write(tmp_path / "moodle.csv", [
        ["First name", "Last name", "ID number", "Institution", "Department", "Email address", "Username"],
        ["Blake", "Lindqvist", "40102", "", "", f"{second}@example.edu", second],
        ["Chen", "Wei", "40103", "", "", f"{third}@example.edu", ""]])  # no Username column value: the e-mail's
    read = roster.read(moodle, set(roster.load_state(state)))
    assert read.format == "moodle" and [e.account for e in read.enrolled] == [second, third]
    applied = roster.apply(read, state)
    assert applied.added == [third] and applied.kept == [second] and applied.deactivated == [first]
    assert not _active(first) and _shadow(first)[1] == "1"  # out of the group and expired: no login of any kind
    assert work.read_text() == "her work" and pwd.getpwnam(first)  # her account, home and work kept

    # back on the roster (the course's own CSV): active again, her work as it was; the others dropped
    course = _write(tmp_path / "course.csv", [["id", "first_name", "last_name", "email", "lms_user_id"],
                                              [first, "Ada", "Okafor", "ada@example.edu", "40101"]])
    applied = roster.apply(roster.read(course, set(roster.load_state(state))), state)
    assert applied.reactivated == [first] and sorted(applied.deactivated) == sorted([second, third])
    assert _active(first) and work.read_text() == "her work"
    assert not _active(second) and not _active(third)


def test_a_learner_dropped_from_the_hubs_course_keeps_a_login_for_another_course_of_the_hub(tmp_path, names):
    """Two courses on one hub (``hub --course``): dropping a learner of both from the hub's own course's roster takes
    them out of its group only; their account stays open for the other course (and is expired once they learn in
    none)."""
    first, second = names[:2]
    other = f"jdt-{first}-learners"  # a further course's learners' group, of this test's own
    state = tmp_path / "state" / "roster.json"
    course = [["id", "first_name", "last_name", "email", "lms_user_id"]]
    roster.apply(roster.read(_write(tmp_path / "both.csv", course + [[first], [second]])), state)
    subprocess.run(["groupadd", other], check=True, capture_output=True)
    try:
        subprocess.run(["usermod", "--append", "--groups", other, first], check=True, capture_output=True)
        assert roster.learner_elsewhere(first) and not roster.learner_elsewhere(second)
        dropped = roster.apply(roster.read(_write(tmp_path / "none.csv", course + [[names[2]]]),
                                           set(roster.load_state(state))), state)
        assert sorted(dropped.deactivated) == sorted([first, second])
        assert first not in accounts.members(accounts.LEARNERS) and _shadow(first)[1] in ("", "-1")  # still open
        assert _shadow(second)[1] == "1"  # a learner of no other course: expired, as before
    finally:
        subprocess.run(["groupdel", other], capture_output=True)


def test_the_hubs_roster_option_enrols_and_refuses_what_it_cannot_read(tmp_path, names):
    paths = Paths(opt=tmp_path / "opt", srv=tmp_path / "srv")
    said = []
    with pytest.raises(HubRefused, match="is not Canvas's Gradebook export"):
        enrol(_write(tmp_path / "bad.csv", [["name", "mail"], ["Ada", "a@x"]]), paths, said.append)
    with pytest.raises(HubRefused, match="enrols no learner"):
        enrol(_write(tmp_path / "none.csv", [["id"], ["root"]]), paths, said.append)
    learners, course_csv = enrol(_write(tmp_path / "ok.csv", [["id", "first_name", "lms_user_id"],
                                                              [names[0], "=cmd|' /C calc'!A0", "7"]]), paths, said.append)
    assert learners == [names[0]] and any("roster line 2" in line and "root" in line for line in said)
    rows = list(csv.DictReader(course_csv.open(encoding="utf-8")))
    assert rows == [{"id": names[0], "first_name": "=cmd|' /C calc'!A0", "last_name": "", "email": "",
                     "lms_user_id": "7"}]
    assert oct((paths.state / "roster.json").stat().st_mode & 0o777) == "0o600"
    assert grp.getgrnam(accounts.LEARNERS)
