"""Accommodations (``python -m grader extend``): a learner's own due date and extra graded attempts, through the real
grading service (kernels stood in, as in ``tests/test_term.py``): the late penalty, the attempts limit, the page,
nbgrader's gradebook and the history follow them; what cannot be granted is refused and nothing is written."""
from __future__ import annotations

import contextlib
import csv
import dataclasses
import datetime
import io
import json
import os
from pathlib import Path

import pytest

from grader import cli
from grader.service import accommodations
from grader.term.attempts import Policy
from grader.term import history
from test_term import ASSIGNMENT, Term, _result


@pytest.fixture(autouse=True)
def _alembic_on_path(monkeypatch):
    monkeypatch.setenv("PATH", f"{Path(os.sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")


def _term(folder: Path, monkeypatch, due: datetime.datetime) -> Term:
    from nbgrader.api import Gradebook as Book

    folder.mkdir()
    term = Term(folder, monkeypatch, due)
    with Book(term.url) as book:  # enrolled, as the roster import makes every learner
        book.update_or_create_student(term.student)
    return term


def _extend(term: Term, *argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), pytest.raises(SystemExit) as done:
        cli.main(["extend", *argv, "--out", str(term.out), "--gradebook", term.url])
    return done.value.code, out.getvalue(), err.getvalue()


def _penalty(term: Term) -> str:
    [row] = csv.DictReader((term.out / "grades.csv").open(encoding="utf-8"))
    return row["late_penalty"]


def _shown(term: Term) -> str:
    """The line the learner's Assignment List shows under the assignment (``GET /duedates``, as that learner)."""
    return accommodations.mine(term.service, os.geteuid())[1]["assignments"][ASSIGNMENT]["said"]


def test_an_extension_spares_the_penalty_the_class_pays_and_gives_back_one_taken(tmp_path, monkeypatch):
    now = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None, microsecond=0)
    due = now - datetime.timedelta(hours=2)  # the class's due date passed two hours ago
    with_one, without = _term(tmp_path / "a", monkeypatch, due), _term(tmp_path / "b", monkeypatch, due)

    code, said, _ = _extend(with_one, with_one.student, ASSIGNMENT, "--hours", "5", "--why", "a medical note")
    assert code == 0 and "extension 5:00:00" in said, said
    # before Submit, each one's Assignment List line (the service's GET /duedates for them): their own due date
    day, own = accommodations.shown, due + datetime.timedelta(hours=5)
    assert _shown(with_one) == f"Extended for you until {day(own)} (the class's due date: {day(due)})"
    assert _shown(without) == f"Due {day(due)}"
    page = with_one.submit("my answer", _result(10.0, now))
    assert "after the due date" not in page and _penalty(with_one) == "0"
    page = without.submit("my answer", _result(10.0, now))
    assert "Submitted 2 hours after the due date" in page and float(_penalty(without)) > 0

    # granted after the late submission: the penalty is given back, and the history says why the total changed
    code, said, _ = _extend(without, without.student, ASSIGNMENT, "--until",
                            f"{now + datetime.timedelta(days=1):%Y-%m-%d %H:%M:%S} UTC")
    assert code == 0 and _penalty(without) == "0", said
    events = history.read(without.out, without.student, ASSIGNMENT)
    assert [e["event"] for e in events].count("accommodation") == 1
    totals = [e for e in events if e["event"] == "total"]
    assert totals[-2]["penalty"] > 0 and not totals[-1]["penalty"] and totals[-1]["autograded"] == 10.0, totals
    shown = io.StringIO()
    with contextlib.redirect_stdout(shown):
        history.show(with_one.out, with_one.student, ASSIGNMENT)
    assert "accommodation" in shown.getvalue() and 'a medical note' in shown.getvalue()
    from nbgrader.api import Gradebook as Book

    with Book(without.url) as book:  # nbgrader's own field, as formgrader shows it
        assert book.find_submission(ASSIGNMENT, without.student).extension > datetime.timedelta(hours=20)
    with_one.service.close()
    without.service.close()


def _submit_over_limit(term: Term, answer: str) -> str:
    """A submission the service decides not to grade (no kernel task): the page the learner fetches."""
    import html
    import secrets

    from grader.submission import timestamps
    from test_term import NOTEBOOK, _notebook

    claimed = timestamps.show(datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None))
    folder = term.exchange / "course" / "inbound" / f"{term.student}+{ASSIGNMENT}+{claimed}+{secrets.token_hex(4)}"
    _notebook(folder / NOTEBOOK, answer)
    (folder / "timestamp.txt").write_text(claimed)
    (folder / "submission_secret.txt").write_text(secrets.token_hex(32))
    with contextlib.redirect_stderr(io.StringIO()):
        assert term.service.scan() == 1 and not term.service.pool.tasks
    return html.unescape(term.pages()[-1]) if term.pages() else ""


def test_extra_attempts_raise_only_that_learners_limit(tmp_path, monkeypatch):
    now = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None, microsecond=0)
    term = _term(tmp_path / "a", monkeypatch, now + datetime.timedelta(days=1))
    term.service.options = dataclasses.replace(term.service.options, policy=Policy(1))
    term.submit("first", _result(8.0, now))
    page = _submit_over_limit(term, "second")
    assert "You have used 1 of 1 graded attempts" in page  # over the class's limit: not graded
    code, said, _ = _extend(term, term.student, ASSIGNMENT, "--attempts", "1", "--why", "exam clash")
    assert code == 0 and "1 extra graded attempt" in said
    page = term.submit("third", _result(10.0, now))
    assert "of 2. The course's rule" in page and "This attempt is the one that counts now: 10 / 11" in page
    term.service.close()


def test_what_cannot_be_granted_is_refused_and_nothing_is_written(tmp_path, monkeypatch):
    term = _term(tmp_path / "a", monkeypatch, datetime.datetime(2026, 12, 1, 12))
    for argv, said in (((term.student, "no_such_assignment", "--hours", "2"), "not an assignment"),
                       (("no-such-learner", ASSIGNMENT, "--hours", "2"), "not a learner"),
                       ((term.student, ASSIGNMENT, "--until", "next tuesday"), "not a date"),
                       ((term.student, ASSIGNMENT, "--until", "2026-11-01 00:00 UTC"), "before the class's due date"),
                       ((term.student, ASSIGNMENT), "say what to grant")):
        code, _, err = _extend(term, *argv)
        assert code == 2 and said in err, (argv, err)
    assert not history.read(term.out, term.student, ASSIGNMENT)
    assert not (term.out / "service" / "accommodations.json").exists()
    term.service.close()


def test_each_learner_is_shown_their_own_due_dates_and_never_anothers(tmp_path, monkeypatch):
    """``GET /duedates`` (what the learner's Assignment List shows, through their server): two learners of one
    gradebook, one with an extension; each is answered with their own dates, whoever's name or token they send.
    Who asks comes from the connection (this machine's loopback) or the hub's word on the token (a server on another
    host), as for regrade requests (tests/test_service_attacks.py's fake hub: ``own``, ``victim``)."""
    from nbgrader.api import Gradebook as Book

    from grader.service import identity, routes
    from test_service_attacks import _appeals_service, _call, _victim_name

    term, other = _term(tmp_path / "a", monkeypatch, datetime.datetime(2026, 12, 20, 17)), _victim_name()
    with Book(term.url) as book:  # nbgrader's own extension field, as `extend --until 2026-12-22 09:30 UTC` writes it
        book.update_or_create_student(other)
        with book.db.no_autoflush:
            book.update_or_create_submission(ASSIGNMENT, term.student, extension=datetime.timedelta(days=1, hours=16.5))
    mine = "Extended for you until Tue 2026-12-22 09:30 UTC (the class's due date: Sun 2026-12-20 17:00 UTC)"
    theirs = "Due Sun 2026-12-20 17:00 UTC"
    with _appeals_service(tmp_path, monkeypatch) as (server, _, serve):
        server.RequestHandlerClass = routes.handler(term.service)  # the real service's routes and gradebook
        serve()
        port = server.server_address[1]
        code, said = _call(port, "GET", "/duedates")  # this machine: the connecting account, no token needed
        assert code == 200 and said["student"] == term.student, said
        assert said["assignments"][ASSIGNMENT] == {"class_due": "2026-12-20T17:00:00Z", "due": "2026-12-22T09:30:00Z",
                                                   "extended": True, "said": mine}
        assert {a["said"] for name, a in said["assignments"].items() if name != ASSIGNMENT} == {"No due date"}
        assert _call(port, "GET", "/duedates", "victim")[0] == 403  # another's token from my connection: refused
        assert _call(port, "GET", f"/duedates?student={other}")[0] == 404  # no route takes a name
        # learners' servers on another host: known by the hub's word on their token alone
        monkeypatch.setattr(identity, "accepted", lambda connection: "host 10.0.0.5")
        code, said = _call(port, "GET", "/duedates", "victim")
        assert code == 200 and said["student"] == other and said["assignments"][ASSIGNMENT]["said"] == theirs, said
        assert "2026-12-22" not in json.dumps(said) and not said["assignments"][ASSIGNMENT]["extended"]
        assert _call(port, "GET", "/duedates", "own")[1]["assignments"][ASSIGNMENT]["said"] == mine
        for token in (None, "forged", "service"):
            assert _call(port, "GET", "/duedates", token)[0] == 403, token
    term.service.close()
