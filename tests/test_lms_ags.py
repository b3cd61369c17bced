"""Grades passed back to the LMS over LTI 1.3 Assignment and Grade Services, against a platform on loopback.

The LMS is ``tests/lms_platform.py``: ``lti1p3platform`` (a platform-side LTI 1.3 implementation written by others)
checks the tool's signed token requests and bearer tokens and handles line items and scores; where it falls short of
the specification, the routes there check the specification's published messages (the score's fields and media type,
the line items container as an array, the assertion's claims). The tool is ``grader.lms`` with pylti1p3.

The grades come from the term's history, as the grading service writes it: ``history.record_totals`` with the rows
``manual_grades.refreshed`` makes, or (the last test) the real service with stood-in kernels (``tests/test_term.py``).
"""
from __future__ import annotations

import contextlib
import csv
import datetime
import io
import json
import time
from pathlib import Path

import jwt
import pytest
import requests
from jwcrypto.jwk import JWK

from grader.lms import ags, commands, config as lms_config, keys, outbox
from grader.lms.sync import sync_due, sync_once
from grader.term import history
from lms_platform import CLIENT_ID, COURSE, ISSUER, SCORE_TYPE, Platform

IDS = {"ada": "lms-user-ada-7f3", "bo": "lms-user-bo-19c"}


@pytest.fixture(autouse=True)
def _loopback_direct(monkeypatch):
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")


@pytest.fixture
def lms(tmp_path):
    """The platform, started, with the tool's public key set (as ``lms keys`` prints it) registered."""
    platform = Platform(keys.jwks(tmp_path / "keys")).start()
    yield platform
    with contextlib.suppress(Exception):
        platform.stop()


def _config(tmp_path: Path, lms: Platform, key_folder: str = "keys", users: dict | None = None) -> Path:
    with (tmp_path / "lms-users.csv").open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["id", "first_name", "lms_user_id"])
        writer.writerows([[student, student.title(), lms_id] for student, lms_id in (users or IDS).items()])
    path = tmp_path / "lms.toml"
    path.write_text(f'''issuer = "{ISSUER}"
client_id = "{CLIENT_ID}"
deployment_id = "1"
auth_token_url = "{lms.url}/token"
key_set_url = "{lms.url}/jwks"
lineitems_url = "{lms.url}{COURSE}"
key_folder = "{key_folder}"
users = "lms-users.csv"
feedback_url = "https://hub.example.test/hub/user-redirect/lab/tree/{{assignment}}/feedback"
''')
    return path


def _total(out: Path, student: str, assignment: str, autograded: float | None, by_hand: float | None,
           penalty: float = 0.0, notebook: str | None = None, manual_max: float = 2.0, most: float = 13.0) -> None:
    """A notebook's total as ``manual_grades.refreshed`` records it (``total`` None while a hand grade is missing)."""
    total = None if autograded is None or (by_hand is None and manual_max) else \
        round(autograded + (by_hand or 0.0) - penalty, 6)
    history.record_totals(out, [{"student": student, "assignment": assignment, "notebook": notebook or assignment,
                                 "autograded": autograded, "by_hand": by_hand, "manual_max": manual_max,
                                 "penalty": penalty, "total": total, "max": most, "status": "graded"}])


def _run(action: str, path: Path, out: Path, *more: str) -> tuple[int, str]:
    import argparse

    parser = argparse.ArgumentParser()
    commands.add_commands(parser.add_subparsers())
    args = parser.parse_args(["lms", action, "--config", str(path), "--out", str(out), *more])
    said = io.StringIO()
    with contextlib.redirect_stdout(said), contextlib.redirect_stderr(said):
        code = args.run(args)
    return code, said.getvalue()


def _posts(out: Path, student: str, assignment: str) -> list[dict]:
    return [e for e in history.read(out, student, assignment) if e["event"] == "lms_post"]


def test_each_assignment_is_a_line_item_and_each_change_of_a_total_is_posted_once(tmp_path, lms):
    out, path = tmp_path / "out", _config(tmp_path, lms)
    _total(out, "ada", "sharded_step", 11.0, 1.5)
    _total(out, "ada", "shard_means", 5.0, None, manual_max=2.0, most=8.0)  # a hand grade still to come
    _total(out, "bo", "sharded_step", 9.0, 2.0, penalty=1.0)
    _total(out, "bo", "shard_means", 4.0, 0.0, notebook="part1", manual_max=0.0, most=4.0)  # two notebooks
    _total(out, "bo", "shard_means", 3.0, None, notebook="part2", manual_max=0.0, most=4.0)
    code, said = _run("status", path, out)
    assert code == 1 and said.count("pending: not posted yet") == 4, said

    code, said = _run("sync", path, out)
    assert code == 0 and "4 posted, 0 refused, 0 pending" in said, said
    assert lms.gradebook() == {
        ("sharded_step", IDS["ada"]): (12.5, "FullyGraded"),
        ("shard_means", IDS["ada"]): (5.0, "PendingManual"),  # the autograded part, marked pending: not final
        ("sharded_step", IDS["bo"]): (10.0, "FullyGraded"),  # 9 + 2 - 1 late, as grades.csv has it
        ("shard_means", IDS["bo"]): (7.0, "FullyGraded")}
    items = {i["resourceId"]: i for i in lms.lineitems.values()}
    assert {a: (i["scoreMaximum"], i["tag"], i["label"]) for a, i in items.items()} == {
        "sharded_step": (13.0, "grader", "sharded_step"), "shard_means": (8.0, "grader", "shard_means")}
    ada = lms.results[(items["sharded_step"]["id"], IDS["ada"])]
    assert ada["activityProgress"] == "Completed" and "11 autograded + 1.5 by hand" in ada["comment"]
    assert ada["comment"].endswith("Feedback: https://hub.example.test/hub/user-redirect/lab/tree/sharded_step/feedback")
    pending = lms.results[(items["shard_means"]["id"], IDS["ada"])]
    assert pending["activityProgress"] == "Submitted" and pending["scoreMaximum"] == 8.0
    [post] = _posts(out, "ada", "sharded_step")  # each post a line of the grade's history
    assert (post["outcome"], post["status"], post["lineitem"], post["score"]["scoreGiven"]) == (
        "posted", 200, items["sharded_step"]["id"], 12.5)
    assert "lms_post" in history.describe(post) and "posted to the LMS: 12.5/13 FullyGraded" in history.describe(post)
    assert _run("status", path, out) == (0, "4 of 4 grade(s) in the LMS; 0 pending\n")

    received = len(lms.received)
    assert _run("sync", path, out)[0] == 0 and len(lms.received) == received  # idempotent: nothing posted twice
    _total(out, "ada", "shard_means", 5.0, 1.0, manual_max=2.0, most=8.0)  # the hand grade arrives
    assert _run("sync", path, out)[1].startswith("posted ada/shard_means: 6/8 FullyGraded")
    assert lms.gradebook()[("shard_means", IDS["ada"])] == (6.0, "FullyGraded")
    assert len(lms.received) == received + 1


def test_with_the_lms_down_a_grade_waits_backs_off_and_arrives_exactly_once_newest_only(tmp_path, lms):
    out, path = tmp_path / "out", _config(tmp_path, lms)
    _total(out, "ada", "sharded_step", 9.0, None)
    config = lms_config.load(path)
    assert sync_once(out, config).posted == ["ada/sharded_step: 9/13 PendingManual"]
    lms.stop()
    _total(out, "ada", "sharded_step", 9.0, 1.0)  # a hand grade...
    _total(out, "ada", "sharded_step", 10.0, 1.0)  # ...then a regrade, both while the LMS is down
    now = time.time()
    done = sync_once(out, config, now=now)
    assert done.posted == [] and "ConnectionError" in done.deferred[0], done
    state = json.loads((out / "lms" / "state.json").read_text())["platform"]
    assert state["attempts"] == 1 and state["next_try"] == pytest.approx(now + outbox.FIRST_DELAY)
    code, said = _run("status", path, out)
    assert code == 1 and "pending: the LMS failed 1 time(s) since" in said and "next try at" in said, said
    assert sync_due(out, config).skipped  # the service's loop waits the back-off out: no second attempt yet
    assert json.loads((out / "lms" / "state.json").read_text())["platform"]["attempts"] == 1
    assert sync_once(out, config, now=now + 31).deferred and outbox.load_state(out)["platform"]["attempts"] == 2
    assert outbox.load_state(out)["platform"]["next_try"] == pytest.approx(now + 31 + 2 * outbox.FIRST_DELAY)

    lms.start()  # back, on the same address
    before = len(lms.received)
    done = sync_once(out, config, now=now + 200)
    assert done.posted == ["ada/sharded_step: 11/13 FullyGraded"] and not done.deferred
    assert [s["scoreGiven"] for _, s in lms.received[before:]] == [11.0]  # the newest only: 10 was never posted
    assert lms.gradebook()[("sharded_step", IDS["ada"])] == (11.0, "FullyGraded")
    assert "platform" not in outbox.load_state(out)
    for _ in range(2):
        assert sync_once(out, config).posted == [] and len(lms.received) == before + 1  # exactly once
    assert [p["score"]["scoreGiven"] for p in _posts(out, "ada", "sharded_step")] == [9.0, 11.0]


def test_an_older_total_is_never_applied_after_a_newer_one(tmp_path, lms):
    """A sync that read the history before a newer total was written (another process, a crash) posts late: the
    score's timestamp is its total's, so the LMS keeps the newer grade; the tool records the refusal."""
    out, path = tmp_path / "out", _config(tmp_path, lms)
    config = lms_config.load(path)
    _total(out, "ada", "sharded_step", 9.0, 1.0)
    [older] = outbox.grades(out)
    _total(out, "ada", "sharded_step", 11.0, 1.0)
    [newer] = outbox.grades(out)
    assert newer.timestamp > older.timestamp and newer.timestamp.startswith(older.timestamp[:10])
    assert sync_once(out, config).posted == ["ada/sharded_step: 12/13 FullyGraded"]

    from grader.lms.sync import score

    client = ags.Client(config)
    with pytest.raises(ags.Refused) as refused:
        client.post(config.lineitems_url + "/1", score(older, IDS["ada"], config))
    assert refused.value.status == 409  # lti1p3platform's "oldtimestamp"
    assert lms.gradebook()[("sharded_step", IDS["ada"])] == (12.0, "FullyGraded")
    assert sync_once(out, config).posted == []  # and the tool itself never goes back to the older one


def test_a_learner_without_an_lms_user_id_is_reported_and_never_posted(tmp_path, lms):
    out, path = tmp_path / "out", _config(tmp_path, lms, users={"ada": IDS["ada"]})
    _total(out, "ada", "sharded_step", 11.0, 2.0)
    _total(out, "cy", "sharded_step", 7.0, 2.0)
    code, said = _run("sync", path, out)
    assert code == 1 and "pending cy/sharded_step: 9/13 FullyGraded: no LMS user id" in said, said
    assert [s["userId"] for _, s in lms.received] == [IDS["ada"]]
    assert _posts(out, "cy", "sharded_step") == []
    code, said = _run("status", path, out)
    assert code == 1 and "cy  sharded_step  9/13 FullyGraded  pending: no LMS user id" in said


def test_the_platform_refuses_a_forged_token_and_the_grade_stays_pending(tmp_path, lms):
    out = tmp_path / "out"
    _total(out, "ada", "sharded_step", 11.0, 2.0)
    forged = _config(tmp_path, lms, key_folder="other-keys")  # a key the LMS was never given
    code, said = _run("sync", forged, out)
    assert code == 1 and "the token endpoint refused the tool (HTTP 401)" in said, said
    assert lms.received == [] and lms.lineitems == {}
    assert "token endpoint refused" in _run("status", forged, out)[1]

    # a bearer token signed with another key, otherwise what the platform issues, is refused by the scores route
    other = JWK.generate(kty="RSA", size=2048).export_to_pem(private_key=True, password=None)
    token = jwt.encode({"sub": CLIENT_ID, "iss": ISSUER, "scopes": " ".join(ags.SCOPES), "exp": int(time.time()) + 60},
                       other, algorithm="RS256")
    lms.lineitems[f"{lms.url}{COURSE}/1"] = {"id": f"{lms.url}{COURSE}/1", "resourceId": "x", "label": "x",
                                             "scoreMaximum": 1}
    answer = requests.post(f"{lms.url}{COURSE}/1/scores", headers={"Authorization": f"Bearer {token}",
                           "Content-Type": SCORE_TYPE}, timeout=5,
                           data=json.dumps({"userId": "u", "scoreGiven": 1, "scoreMaximum": 1, "timestamp":
                                            "2026-01-01T00:00:00.000+00:00", "activityProgress": "Completed",
                                            "gradingProgress": "FullyGraded"}))
    assert answer.status_code == 401 and lms.received == []

    good = _config(tmp_path, lms)  # the registered key: the same grade goes through
    assert _run("sync", good, out)[0] == 0 and lms.gradebook() == {("sharded_step", IDS["ada"]): (13.0, "FullyGraded")}


def test_the_lms_file_is_checked_and_the_key_is_made_once_for_the_owner_only(tmp_path, lms):
    out = tmp_path / "out"
    path = _config(tmp_path, lms)
    path.write_text(path.read_text().replace(f'client_id = "{CLIENT_ID}"\n', ""))
    assert _run("status", path, out) == (2, f"lms status: {path}: missing client_id (the LMS's registration of the "
                                            "tool gives them)\n")
    path.write_text(path.read_text().replace("http://127.0.0.1", "http://lms.example.test", 1) + 'client_id = "x"\n')
    code, said = _run("sync", path, out)
    assert code == 2 and "an LMS is reached over https" in said
    code, said = _run("keys", _config(tmp_path, lms), out)
    jwks = json.loads(said[:said.rindex("}") + 1])
    assert jwks == keys.jwks(tmp_path / "keys") and jwks["keys"][0]["kid"] and "d" not in jwks["keys"][0]
    key = tmp_path / "keys" / keys.PRIVATE
    assert key.stat().st_mode & 0o777 == 0o600 and (tmp_path / "keys").stat().st_mode & 0o777 == 0o700
    key.chmod(0o644)
    code, said = _run("keys", _config(tmp_path, lms), out)
    assert code == 2 and "is open to others" in said


def test_a_term_on_the_service_submit_hand_grade_and_appeal_each_reach_the_lms(tmp_path, monkeypatch, lms):
    """The real service (stood-in kernels): each change of the counting total is the LMS's score, as grades.csv has it."""
    import os
    import sys

    from grader.layout import Course
    from grader.nbgrader_adapter.manual_grades import refreshed
    from test_term import Term, _command, _hand, _result

    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    now = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None, microsecond=0)
    term = Term(tmp_path, monkeypatch, now + datetime.timedelta(hours=1))
    path = _config(tmp_path, lms, users={term.student: "lms-user-term"})
    config = lms_config.load(path)

    def lms_total():
        sync_once(term.out, config, term.url)
        return lms.gradebook()[("sharded_step", "lms-user-term")]

    term.submit("Each device averages its own rows.", _result(9.0, now))
    assert term.row()["total_score"] == "" and lms_total() == (9.0, "PendingManual")
    _hand(term.url, 1.5, "right", term.student)
    refreshed(term.out, term.url, Course.default().root)
    assert lms_total() == (float(term.row()["total_score"]), "FullyGraded") == (10.5, "FullyGraded")
    appeal = term.appeal("test-loss-and-gradient", "My gradient matches the host's")
    _command(["appeals", "answer", appeal, "changed", "--points", "3", "--out", str(term.out), "--gradebook", term.url])
    term.service.close()
    assert lms_total() == (float(term.row()["total_score"]), "FullyGraded") != (10.5, "FullyGraded")
    posts = _posts(term.out, term.student, "sharded_step")
    assert [p["grade"]["gradingProgress"] for p in posts] == ["PendingManual", "FullyGraded", "FullyGraded"]
    assert _run("status", path, term.out, "--gradebook", term.url)[0] == 0
