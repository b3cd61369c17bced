"""Due dates and late penalties (grader/nbgrader_adapter/late.py, grader/submission/timestamps.py).

Expected values come from the policy's own arithmetic, done here by hand: points x percent per started day / 100.
No notebook is graded: results are written as the grader writes them (``Gradebook.save``) into a temporary folder,
and the course's configuration is a temporary ``nbgrader_config.py``.
"""
from __future__ import annotations

import contextlib
import csv
import datetime
import io
import json
import os
import sys
import textwrap
from pathlib import Path

import pytest
from traitlets.config import Config

from grader.layout import Course
from grader.nbgrader_adapter import late
from grader.nbgrader_adapter.manual_grades import refreshed
from grader import results as recorded
from grader.results import NotebookResult, Status
from grader.service import app
from grader.term.attempts import Policy
from grader.submission import timestamps
from grader.submission.feedback import render
from grader.term.gradebook import Gradebook
from grader.submission.pipeline import Settings
from test_service_attacks import RecordingPool

DUE = datetime.datetime(2026, 11, 20, 12, 0)
HOUR = datetime.timedelta(hours=1)


def _policy(**settings) -> late.PerDayPenalty:
    return late.plugin(Config({"AssignLatePenalties": {"plugin_class": late.PerDayPenalty},
                               "PerDayPenalty": settings}))


def _assess(policy, earned, after: datetime.timedelta | None):
    return late.assess(policy, "ada", earned, DUE, None if after is None else DUE + after)


# -- the policy ------------------------------------------------------------------------------------------------------

def test_25_hours_late_at_10_percent_a_day_takes_two_started_days_of_8_points():
    penalty = _assess(_policy(), 8.0, 25 * HOUR)
    assert penalty.points == pytest.approx(8.0 * 2 * 10 / 100)  # 1.6
    assert "1 day 1 hour after the due date (2026-11-20 12:00 UTC)" in penalty.message
    assert "20% of your earned points (1.6 of 8) is taken off" in penalty.message


def test_within_the_grace_nothing_is_taken_and_just_after_it_one_day_is():
    policy = _policy(grace_minutes=15.0)
    within = _assess(policy, 8.0, datetime.timedelta(minutes=14))
    assert within.points == 0 and "within the course's 15 minutes of grace" in within.message
    after = _assess(policy, 8.0, datetime.timedelta(minutes=16))
    assert after.points == pytest.approx(8.0 * 10 / 100)
    # the grace moves the whole schedule: 24 h 10 min late is still the first day after due date + 15 minutes
    assert _assess(policy, 8.0, 24 * HOUR + datetime.timedelta(minutes=10)).points == pytest.approx(0.8)


def test_the_penalty_is_capped_at_max_percent_and_never_more_than_the_points():
    assert _assess(_policy(), 11.0, 30 * 24 * HOUR).points == pytest.approx(11.0)
    assert _assess(_policy(max_percent=30.0), 11.0, 30 * 24 * HOUR).points == pytest.approx(11.0 * 30 / 100)
    assert _assess(_policy(percent_per_day=250.0), 4.0, 2 * HOUR).points == pytest.approx(4.0)


def test_on_time_and_unknown_times_take_nothing_and_say_so():
    on_time = _assess(_policy(), 8.0, -HOUR)
    assert on_time.points == 0 and on_time.message == "Submitted on time (due 2026-11-20 12:00 UTC)."
    unknown = late.assess(_policy(), "ada", 8.0, DUE, None, "timestamp.txt says 'yesterday'")
    assert unknown.points == 0 and "unknown (timestamp.txt says 'yesterday')" in unknown.message


def test_nbgraders_own_zero_and_none_methods():
    zero = _assess(_policy(penalty_method="zero"), 8.0, 2 * HOUR)
    assert zero.points == 8.0 and "100% of your earned points (8 of 8) are taken off" in zero.message
    none = _assess(_policy(penalty_method="none"), 8.0, 2 * HOUR)
    assert none.points == 0 and "takes no points off" in none.message
    stock = late.plugin(Config({"LateSubmissionPlugin": {"penalty_method": "zero"}}))  # nbgrader's default plugin
    assert type(stock).__name__ == "LateSubmissionPlugin"
    assert _assess(stock, 5.0, 2 * HOUR).points == 5.0


# -- timestamps ------------------------------------------------------------------------------------------------------

def test_nbgraders_timestamp_is_read_and_bad_ones_are_named_not_raised(tmp_path):
    (tmp_path / "timestamp.txt").write_text("2026-11-21 13:30:00.123456 UTC\n")
    assert timestamps.read(tmp_path) == ("2026-11-21 13:30:00.123456 UTC", "")
    read_at = DUE + 30 * HOUR  # an unusable time counts as the moment the grader read it, never as on time
    for text, said in (("next tuesday-ish", "is not a date and time"), ("1970-01-01 00:00:00 UTC", "before 2000"),
                       ("9999-01-01 00:00:00 UTC", "later than the time it was read")):
        (tmp_path / "timestamp.txt").write_text(text)
        when, note = timestamps.read(tmp_path, read_at)
        assert when == timestamps.show(read_at) and said in note and "the time it was graded counts" in note, note
    (tmp_path / "timestamp.txt").unlink()
    assert timestamps.read(tmp_path, read_at)[0] == timestamps.show(read_at)


def test_the_service_records_the_later_of_the_learners_time_and_its_own():
    arrived = datetime.datetime(2026, 11, 21, 9, 0, tzinfo=datetime.timezone.utc).timestamp()
    assert timestamps.later_of("2026-11-20 08:00:00.000000 UTC", arrived)[0] == "2026-11-21 09:00:00.000000 UTC"
    assert timestamps.later_of("2026-11-21 09:30:00.000000 UTC", arrived)[0] == "2026-11-21 09:30:00.000000 UTC"
    when, note = timestamps.later_of("garbage", arrived)
    assert when == "2026-11-21 09:00:00.000000 UTC" and "is not a date and time" in note


# -- grades.csv, results.json, the report, the feedback page, hand grades ---------------------------------------------

def _course(tmp_path: Path, extra: str = "", *, due: datetime.datetime | None = None) -> Path:
    """A course root whose nbgrader_config.py declares the policy and a due date (``due``, default DUE) for
    sharded_step, as an instructor would."""
    due = due or DUE
    root = tmp_path / "course"
    root.mkdir()
    (root / "nbgrader_config.py").write_text(textwrap.dedent(f"""
        from grader.nbgrader_adapter.late import PerDayPenalty
        c = get_config()
        c.AssignLatePenalties.plugin_class = PerDayPenalty
        c.Deadlines.duedates = {{"sharded_step": "{due:%Y-%m-%d %H:%M:%S} UTC"}}
    """) + extra)
    return root


def _result(student: str, points: list[float], submitted: datetime.datetime | None, manual_max: float = 0.0):
    tests = [recorded.TestResult(f"test-{i}", p, 4.0, p == 4.0, "ok") for i, p in enumerate(points)]
    return NotebookResult(student, "sharded_step", "sharded_step.ipynb", Status.GRADED, "", tests,
                          manual_max_score=manual_max,
                          submitted_at=None if submitted is None else timestamps.show(submitted))


def _grade(out: Path, *results: NotebookResult) -> None:
    for result in results:
        Gradebook(out).save(result, "sha")


def _rows(out: Path) -> dict[str, dict]:
    return {row["student_id"]: row for row in csv.DictReader((out / "grades.csv").open(encoding="utf-8"))}


def test_grades_csv_results_json_and_the_page_carry_the_penalty_from_nbgrader_config(tmp_path):
    root, out = _course(tmp_path, "c.PerDayPenalty.percent_per_day = 20\n"), tmp_path / "out"
    _grade(out, _result("ada", [4.0, 3.0, 1.5], DUE + 27 * HOUR),  # 8.5 points, 2 started days late
           _result("blake", [4.0, 4.0, 0.0], DUE - HOUR),  # on time
           _result("chen", [2.0], None))  # no timestamp.txt
    _, _, penalties = refreshed(out, None, root)
    rows = _rows(out)
    taken = 8.5 * 2 * 20 / 100  # 3.4: the 20 % of nbgrader_config.py, not the default 10 %
    assert float(rows["ada"]["late_penalty"]) == pytest.approx(taken)
    assert float(rows["ada"]["total_score"]) == pytest.approx(8.5 - taken)
    assert rows["blake"]["late_penalty"] == "0" and float(rows["blake"]["total_score"]) == 8.0
    assert rows["chen"]["late_penalty"] == "0" and "unknown" in penalties[("chen", "sharded_step",
                                                                           "sharded_step.ipynb")].message
    by_student = {row["student_id"]: row for row in json.loads((out / "results.json").read_text())}
    assert by_student["ada"]["late_penalty"] == pytest.approx(taken)
    assert by_student["ada"]["late"]["seconds_late"] == 27 * 3600
    assert by_student["ada"]["total_score"] == pytest.approx(8.5 - taken)
    page = Gradebook(out).feedback_path("ada", "sharded_step", "sharded_step.ipynb").read_text()
    assert ("Submitted 1 day 3 hours after the due date (2026-11-20 12:00 UTC): 40% of your earned points "
            "(3.4 of 8.5) is taken off.") in page
    assert "Total after the penalty: <b>5.1 / 12</b>" in page
    # formgrader's Manage Submissions shows the same penalty and total (the course's two columns)
    from grader.nbgrader_adapter.formgrader_totals import totals

    assert totals(out, "sharded_step") == {s: {"penalty": float(r["late_penalty"]), "total": float(r["total_score"]),
                                               "max": float(r["max_score"])} for s, r in rows.items()}
    _grade(out, _result("dana", [4.0], DUE, manual_max=2.0))  # a written answer not graded yet: no total
    refreshed(out, None, root)
    assert totals(out, "sharded_step")["dana"] == {"penalty": 0.0, "total": None, "max": 6.0}
    assert totals(out, "collectives") == {} and totals(tmp_path / "nowhere", "sharded_step") == {}


def test_without_a_due_date_nothing_is_late(tmp_path):
    root, out = tmp_path / "bare", tmp_path / "out"
    root.mkdir()
    _grade(out, _result("ada", [4.0], DUE + 400 * HOUR))
    assert refreshed(out, None, root)[2] == {}
    assert _rows(out)["ada"]["late_penalty"] == "" and _rows(out)["ada"]["total_score"] == "4"


def test_a_bad_due_date_is_named(tmp_path):
    root = _course(tmp_path, 'c.Deadlines.duedates = {"sharded_step": "the end of term"}\n')
    _grade(tmp_path / "out", _result("ada", [4.0], DUE))
    with pytest.raises(ValueError, match="the due date of sharded_step, 'the end of term', is not a date"):
        refreshed(tmp_path / "out", None, root)


@pytest.fixture(autouse=True)
def _alembic_on_path(monkeypatch):
    """nbgrader's Gradebook runs ``alembic`` from PATH to set up a new database."""
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")


def _gradebook(tmp_path: Path, due: datetime.datetime, extension: datetime.timedelta | None = None) -> str:
    from nbgrader.api import Gradebook as Book

    url = f"sqlite:///{tmp_path / 'gradebook.db'}"
    with Book(url) as book:
        book.add_assignment("sharded_step", duedate=due)
        book.add_notebook("sharded_step", "sharded_step")
        book.add_grade_cell("written-answer", "sharded_step", "sharded_step", max_score=2.0, cell_type="markdown")
        book.add_source_cell("written-answer", "sharded_step", "sharded_step", cell_type="markdown", locked=False,
                             source="", checksum=None)
        book.add_student("ada")
        with book.db.no_autoflush:  # as grader/nbgrader_adapter/db.py writes submissions (no SAWarning)
            submission = book.add_submission("sharded_step", "ada", timestamp=due + 27 * HOUR)
        if extension:  # what `nbgrader` and formgrader keep as the learner's extension
            submission.extension = extension
            book.db.commit()
    return url


def test_a_hand_grade_recomputes_the_penalty_and_formgrader_sees_it(tmp_path):
    """The penalty is a share of every earned point: a hand grade that arrives later changes it."""
    from nbgrader.api import Gradebook as Book

    root, out = _course(tmp_path), tmp_path / "out"
    url = _gradebook(tmp_path, DUE - 48 * HOUR)  # the gradebook's due date wins over nbgrader_config.py's
    _grade(out, _result("ada", [4.0, 2.0], DUE + 27 * HOUR - 48 * HOUR, manual_max=2.0))
    refreshed(out, url, root)
    assert float(_rows(out)["ada"]["late_penalty"]) == pytest.approx(6.0 * 2 * 10 / 100)  # autograded so far
    assert _rows(out)["ada"]["total_score"] == ""  # hand grading pending
    with Book(url) as book:
        grade = book.find_grade("written-answer", "sharded_step", "sharded_step", "ada")
        grade.manual_score = 1.5
        book.db.commit()
    refreshed(out, url, root)
    earned = 6.0 + 1.5
    assert float(_rows(out)["ada"]["late_penalty"]) == pytest.approx(earned * 0.2)
    assert float(_rows(out)["ada"]["total_score"]) == pytest.approx(earned * 0.8)
    with Book(url) as book:
        assert book.find_submission_notebook("sharded_step", "sharded_step", "ada").late_submission_penalty \
            == pytest.approx(earned * 0.2)


def test_an_extension_in_the_gradebook_moves_the_learners_due_date(tmp_path):
    root, out = _course(tmp_path), tmp_path / "out"
    url = _gradebook(tmp_path, DUE, extension=datetime.timedelta(hours=30))
    _grade(out, _result("ada", [4.0], DUE + 27 * HOUR))
    _, _, penalties = refreshed(out, url, root)
    assert penalties[("ada", "sharded_step", "sharded_step.ipynb")].points == 0


def test_the_report_table_shows_the_penalty():
    from grader.classroom.report import table
    from grader.results import LatePenalty

    result = _result("ada", [4.0], DUE)
    shown = table([result], {}, {("ada", "sharded_step", "sharded_step.ipynb"): LatePenalty(0.4, 4.0, 10.0, "x", "y")})
    assert shown.splitlines()[0].split() == ["student", "notebook", "points", "manual", "late", "status", "message"]
    assert "-0.4" in shown.splitlines()[2]


def test_the_penalty_sentence_is_escaped_on_the_page():
    from grader.results import LatePenalty

    result = _result("ada", [4.0], DUE)
    page = render(result, None, late=LatePenalty(0.4, 4.0, 10.0, "x", "<script>alert(1)</script>"))
    assert "<script>alert" not in page and "&lt;script&gt;" in page


# -- the grading service: a backdated timestamp.txt gains nothing -----------------------------------------------------

def test_a_backdated_timestamp_arriving_after_the_due_date_is_late(tmp_path, monkeypatch):
    """The learner writes a time two hours before the due date into timestamp.txt (and the folder's name, which
    nbgrader's submit makes from the same time) and submits an hour after the due date. The attempt the service
    grades must carry its own arrival time, so the penalty of an hour late applies."""
    import getpass
    import secrets

    monkeypatch.setattr(app, "Pool", RecordingPool)
    now = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None, microsecond=0)
    due, claimed = now - HOUR, timestamps.show(now - 3 * HOUR)
    inbound = tmp_path / "exchange" / "course" / "inbound"
    opts = app.Options(exchange=tmp_path / "exchange", course_id="course", out=tmp_path / "out", policy=Policy(),
                       port=None)
    service = app.Service(Course.default(), opts, Settings(out=tmp_path / "out"))
    folder = inbound / f"{getpass.getuser()}+sharded_step+{claimed}+{secrets.token_hex(4)}"
    folder.mkdir()
    (folder / "sharded_step.ipynb").write_text("{}")
    (folder / "timestamp.txt").write_text(claimed)
    (folder / "submission_secret.txt").write_text(secrets.token_hex(64))
    with contextlib.redirect_stderr(io.StringIO()):
        assert service.scan() == 1
    graded = service.pool.tasks[0].job.folder
    recorded, note = timestamps.read(graded)
    assert recorded is not None and note == ""
    assert timestamps.parse(recorded) >= due + 0.9 * HOUR, f"the learner's backdated time was kept: {recorded}"
    penalty = late.assess(_policy(), getpass.getuser(), 10.0, due, timestamps.parse(recorded))
    assert penalty.points == pytest.approx(10.0 * 10 / 100), penalty.message
    service.close()
