"""A term of record: which attempt counts, hand grades that belong to the answer they graded, and the history.

The service decides and publishes for real (its ledger, its pages, nbgrader's own gradebook written through
``export_grades``, the late policy of the course's ``nbgrader_config.py``); only the kernels are stood in for
(``RecordingPool``): each attempt's result is written the way the pipeline writes it, with the points a test chooses,
so the arithmetic expected here is the policy's own, done by hand. The counting rule is also tried on generated
attempt sequences (Hypothesis).
"""
from __future__ import annotations

import contextlib
import csv
import dataclasses
import datetime
import getpass
import html
import io
import json
import os
import secrets
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from grader import cli
from grader import results as recorded
from grader.term import history
from grader.layout import Course
from grader.nbgrader_adapter import answers
from grader.nbgrader_adapter.manual_grades import refreshed
from grader.results import NotebookResult, Status
from grader.service import app
from grader.term.attempts import UNREADABLE, Attempt, Ledger, Policy, counting
from grader.submission import timestamps
from grader.term.gradebook import Gradebook
from grader.submission.pipeline import Settings
from test_service_attacks import RecordingPool

ROOT = Path(__file__).resolve().parents[1]
ASSIGNMENT = "sharded_step"
NOTEBOOK = f"{ASSIGNMENT}.ipynb"
WRITTEN = "pause-and-reason"  # the written answer, 2 points graded by hand
TESTS = {"test-loss-and-gradient": 3.0, "test-update": 2.0, "test-placement": 2.0, "test-ten-steps": 1.0,
         "test-transfer": 2.0, "test-quiz": 1.0}  # 11 autograded points


# --- the counting rule, on generated attempt sequences ---------------------------------------------------------------

def _value(attempt: Attempt | None) -> float:
    return -1.0 if attempt is None else attempt.value


_graded = st.builds(lambda score, share, content: Attempt("", 0.0, True, "graded", float(score), 11.0,
                                                          penalty=round(score * share / 10, 6), content=content),
                    st.integers(0, 11), st.integers(0, 10), st.sampled_from(["a", "b", "c", ""]))
_other = st.builds(lambda status: Attempt("", 0.0, False, status, None, None),
                   st.sampled_from(sorted(UNREADABLE | {"over_limit", "grader_error"})))


def _timed(attempts: list[Attempt]) -> list[Attempt]:
    for n, attempt in enumerate(attempts):
        attempt.arrived, attempt.name = float(n), f"a{n}"
    return attempts


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(_graded, _other), max_size=8), st.sampled_from(["best", "last"]),
       st.sampled_from(sorted(UNREADABLE | {"over_limit", "grader_error"})), st.integers(0, 10))
def test_an_identical_or_unreadable_attempt_never_lowers_the_counting_total(attempts, rule, status, more_late):
    policy = Policy(counts=rule)
    attempts = _timed(attempts)
    before = counting(policy, attempts)
    unreadable = _timed([*attempts, Attempt("", 0.0, False, status, None, None)])
    assert _value(counting(policy, unreadable)) == _value(before)
    graded = [a for a in attempts if a.graded]
    if graded:  # the same answers submitted again, later, so at least as late
        last = graded[-1]
        again = Attempt("", 0.0, True, "graded", last.score, 11.0, penalty=min(last.score, last.penalty + more_late),
                        content=last.content or "same-bytes")
        if not last.content:
            last.content = "same-bytes"
            before = counting(policy, attempts)
        after = counting(policy, _timed([*attempts, again]))
        assert _value(after) >= _value(before), (rule, attempts, after)


def test_best_counts_after_each_attempts_own_penalty_and_last_counts_an_identical_attempt_as_the_earlier():
    on_time = Attempt("a", 1.0, True, "graded", 11.0, 11.0, content="x")
    late_same = Attempt("b", 2.0, True, "graded", 11.0, 11.0, penalty=1.1, content="x")
    late_better = Attempt("c", 3.0, True, "graded", 11.0, 11.0, penalty=0.0, content="y")
    assert counting(Policy(counts="best"), [on_time, late_same]) is on_time
    assert counting(Policy(counts="last"), [on_time, late_same]) is on_time  # pressing Submit twice costs nothing
    assert counting(Policy(counts="last"), [on_time, late_same, late_better]) is late_better
    low = Attempt("d", 4.0, True, "graded", 12.0, 13.0, penalty=3.0, content="z")  # 9 after its penalty
    assert counting(Policy(counts="best"), [on_time, low]) is on_time
    assert Policy().counts == "best" and "after its own late penalty" in Policy().describe()


# --- hand grades keyed to the answer ---------------------------------------------------------------------------------

@pytest.fixture(autouse=True)
def _alembic_on_path(monkeypatch):
    """nbgrader's Gradebook runs ``alembic`` from PATH to set up a new database."""
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")


def _notebook(path: Path, answer: str) -> Path:
    """The sample learner's notebook with ``answer`` as the written answer."""
    data = json.loads((ROOT / "samples" / "submitted" / "ada" / ASSIGNMENT / NOTEBOOK).read_text())
    for cell in data["cells"]:
        if cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") == WRITTEN:
            cell["source"] = answer
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))
    return path


def _book(tmp_path: Path) -> str:
    from nbgrader.api import Gradebook as Book

    url = f"sqlite:///{tmp_path / 'gradebook.db'}"
    with Book(url) as book:
        book.add_assignment(ASSIGNMENT)
        book.add_notebook(ASSIGNMENT, ASSIGNMENT)
        book.add_grade_cell(WRITTEN, ASSIGNMENT, ASSIGNMENT, max_score=2.0, cell_type="markdown")
        book.add_solution_cell(WRITTEN, ASSIGNMENT, ASSIGNMENT)
        book.add_student("ada")
        with book.db.no_autoflush:
            book.add_submission(ASSIGNMENT, "ada")
    return url


def _hand(url: str, score: float | None, comment: str = "", student: str = "ada") -> tuple[float | None, str, bool]:
    """Grade the written answer as formgrader does (score and comment), or read it back (``score`` None)."""
    from nbgrader.api import Gradebook as Book

    with Book(url) as book:
        grade = book.find_grade(WRITTEN, ASSIGNMENT, ASSIGNMENT, student)
        note = book.find_comment(WRITTEN, ASSIGNMENT, ASSIGNMENT, student)
        if score is not None:
            grade.manual_score, grade.needs_manual_grade, note.manual_comment = score, False, comment
            book.db.commit()
        return grade.manual_score, note.manual_comment or "", grade.needs_manual_grade


def test_a_hand_grade_stays_with_its_answer_is_held_out_of_a_new_one_and_comes_back_with_the_old(tmp_path):
    from nbgrader.api import Gradebook as Book

    url, out = _book(tmp_path), tmp_path / "out"

    def publish(answer: str) -> list[answers.Change]:
        digests = answers.answer_digests(_notebook(tmp_path / "nb.ipynb", answer), [WRITTEN])
        with Book(url) as book:
            changes = answers.settle(book, out, "ada", ASSIGNMENT, NOTEBOOK, digests)
            book.db.commit()
        return changes

    assert publish("Each device averages its own rows.") == []  # a first answer, not graded yet
    _hand(url, 0.5, "half right")
    assert publish("Each device averages its own rows.  \n") == []  # unchanged (trailing spaces): the grade stays
    assert _hand(url, None) == (0.5, "half right", False)
    [held] = publish("A different answer.")
    assert (held.what, held.score, held.comment) == ("held_out", 0.5, "half right")
    assert _hand(url, None) == (None, "", True)  # to grade again, the old comment not shown on the new answer
    _hand(url, 2.0, "now right")
    [back] = publish("Each device averages its own rows.")  # the learner went back to the answer graded 0.5
    assert (back.what, back.score) == ("restored", 0.5) and _hand(url, None) == (0.5, "half right", False)
    [again] = publish("A different answer.")
    assert (again.what, again.score) == ("restored", 2.0) and _hand(url, None) == (2.0, "now right", False)


# --- a term on the service -------------------------------------------------------------------------------------------

def _result(points: float, submitted: datetime.datetime, status: Status = Status.GRADED, message: str = ""):
    """Every test passed but the first, which scores ``points`` - 8 of its 3 (so ``points`` in all)."""
    tests = [recorded.TestResult(grade_id, most - (11.0 - points if n == 0 else 0.0), most, True, "ok")
             for n, (grade_id, most) in enumerate(TESTS.items())] if status is Status.GRADED else []
    return NotebookResult(getpass.getuser(), ASSIGNMENT, NOTEBOOK, status, message, tests, manual_max_score=2.0,
                          submitted_at=timestamps.show(submitted))


class Term:
    """One learner's term against the service: submit, let the stood-in kernel return a result, publish."""

    def __init__(self, tmp_path: Path, monkeypatch, due: datetime.datetime, counts: str = "best"):
        from nbgrader.api import Gradebook as Book

        monkeypatch.setattr(app, "Pool", RecordingPool)
        self.out, self.student = tmp_path / "out", getpass.getuser()
        self.url = f"sqlite:///{self.out / 'gradebook.db'}"
        self.out.mkdir()
        with Book(self.url) as book:  # `nbgrader db assignment add sharded_step --duedate=...`
            book.update_or_create_assignment(ASSIGNMENT, duedate=due)
        self.exchange = tmp_path / "exchange"
        options = app.Options(exchange=self.exchange, course_id="course", out=self.out, policy=Policy(5, counts=counts),
                              port=None, gradebook=self.url)
        self.service = app.Service(Course.default(), options, Settings(out=self.out))
        self.tmp = tmp_path

    def submit(self, answer: str, result: NotebookResult, *, unreadable: bool = False) -> str:
        """Submit a notebook with ``answer``; the kernel returns ``result``; the learner's fetched page."""
        claimed = timestamps.show(datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None))
        folder = self.exchange / "course" / "inbound" / f"{self.student}+{ASSIGNMENT}+{claimed}+{secrets.token_hex(4)}"
        folder.mkdir(parents=True)
        if unreadable:
            (folder / NOTEBOOK).write_text("this is not a notebook")
        else:
            _notebook(folder / NOTEBOOK, answer)
        (folder / "timestamp.txt").write_text(claimed)
        secret = secrets.token_hex(32)
        (folder / "submission_secret.txt").write_text(secret)
        with contextlib.redirect_stderr(io.StringIO()):
            assert self.service.scan() == 1
            task = self.service.pool.tasks.pop()
            attempt = Gradebook(task.settings.out)
            graded = task.job.folder / NOTEBOOK
            autograded = attempt.autograded_path(self.student, ASSIGNMENT, NOTEBOOK)
            autograded.parent.mkdir(parents=True, exist_ok=True)
            autograded.write_bytes(graded.read_bytes())
            attempt.save(result, "sha")
            task.done(result)
            self.service.bookkeeping.join()  # published into the gradebook
        pages = sorted((self.exchange / "course" / "feedback").glob("*.html"), key=lambda p: p.stat().st_mtime_ns)
        return html.unescape(pages[-1].read_text())  # the text as the learner reads it

    def pages(self) -> list[str]:
        """Every page released to the learner, oldest first, as text."""
        found = sorted((self.exchange / "course" / "feedback").glob("*.html"), key=lambda p: p.stat().st_mtime_ns)
        return [html.unescape(p.read_text()) for p in found]

    def appeal(self, test: str, reason: str) -> str:
        """Ask through the service's loopback route, as ``python -m grader appeal`` does; the request's id."""
        import threading

        from grader.service.routes import Server, handler

        server = Server(("127.0.0.1", 0), handler(self.service))
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            said = _command(["appeal", ASSIGNMENT, test, "--reason", reason, "--port", str(server.server_port)])
            listed = _command(["appeal", "--list", "--port", str(server.server_port)])
        finally:
            server.shutdown()
        assert "is recorded" in said and "not answered yet" in listed, (said, listed)
        return listed.split()[0]

    def row(self) -> dict:
        [row] = csv.DictReader((self.out / "grades.csv").open(encoding="utf-8"))
        return row


def _command(argv: list[str]) -> str:
    """``python -m grader ARGV`` in this process; its standard output (a failure shows its standard error)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), pytest.raises(SystemExit) as done:
        cli.main(argv)
    assert done.value.code == 0, err.getvalue()
    return out.getvalue()


def test_a_term_hand_grade_resubmissions_late_and_unreadable_then_export_gradebook_and_history_agree(
        tmp_path, monkeypatch):
    from nbgrader.api import Gradebook as Book

    now = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None, microsecond=0)
    due = now + datetime.timedelta(hours=1)
    term = Term(tmp_path, monkeypatch, due)
    first = "Each device averages its own rows, so the mean of means is off."
    second = "The global mean divides by all 8 rows; each device must divide by 8, not 2."

    # 1. on time, 9 of 11 autograded; the written answer is graded 0.5 of 2 in formgrader
    page = term.submit(first, _result(9.0, now))
    assert "This attempt is the one that counts now: 9 / 11 autograded points" in page
    _hand(term.url, 0.5, "half right", term.student)
    refreshed(term.out, term.url, Course.default().root)
    assert term.row()["total_score"] == "9.5"

    # 2. on time, 10 of 11 with a rewritten answer: it counts (the best), and its answer is to be graded again
    page = term.submit(second, _result(10.0, now))
    assert "This attempt is the one that counts now: 10 / 11 autograded points" in page
    assert f"Your written answer ({WRITTEN}) is not the one your instructor graded by hand" in page
    # how to ask, when a test lost points
    assert f"python -m grader appeal {ASSIGNMENT} test-loss-and-gradient --reason" in page
    assert '"ask for a regrade" beside this submission' in page  # ... and where, in the Assignment List
    assert _hand(term.url, None, student=term.student) == (None, "", True)
    assert term.row()["total_score"] == "" and term.row()["manual_score"] == ""  # 0.5 is not carried over

    # 3. the same notebook again, 16 minutes after the due date: graded, penalised, and the on-time attempt still counts
    monkeypatch.setattr(app.time, "time", lambda: (due - datetime.datetime(1970, 1, 1)).total_seconds() + 16 * 60)
    page = term.submit(second, _result(10.0, due + datetime.timedelta(minutes=16)))
    assert "Submitted 16 minutes after the due date" in page and "10% of your earned points" in page
    assert "The one that counts now is your attempt of" in page
    assert "10 autograded + the 2 points graded by hand, not graded yet (of 13 points)" in page

    # 4. an upload that is not a notebook: not graded, no attempt used, the counting attempt unchanged
    page = term.submit("", _result(0.0, now, Status.INVALID_NOTEBOOK, "the file is not a notebook's JSON"),
                       unreadable=True)
    assert "could not be read as the assignment's notebook (invalid notebook: the file is not a notebook's JSON)" in page
    assert "uses none of your graded attempts" in page
    ledger = Ledger(term.out / "service" / "ledger").attempts(term.student, ASSIGNMENT)
    assert [(a.graded, a.status) for a in ledger] == [(True, "graded")] * 3 + [(False, "invalid_notebook")]
    assert counting(Policy(), ledger) is ledger[1]

    # 5. the rewritten answer graded 1.5; an appeal of the first test, answered "changed" (3 of 3): the total is
    #    whole again, equal in grades.csv, the export and formgrader, and the answer reaches the learner's feedback
    _hand(term.url, 1.5, "right", term.student)
    refreshed(term.out, term.url, Course.default().root)
    assert term.row()["total_score"] == "11.5" and term.row()["late_penalty"] == "0"
    appeal_id = term.appeal("test-loss-and-gradient", "My gradient matches the host's: \x1b[31mplease look\n<b>again</b>")
    listing = _command(["appeals", "--out", str(term.out)])
    assert "\x1b" not in listing, "a terminal escape in the reason reached the instructor's terminal"
    assert 'the reason: learner wrote: "My gradient matches the host\'s: [31mplease look\\n<b>again</b>"' in listing
    assert "test-loss-and-gradient  2/3" in listing and "1 open regrade request(s)" in listing
    assert "answered" in _command(["appeals", "answer", appeal_id, "changed", "--points", "3", "--note",
                                   "<i>fair</i>", "--out", str(term.out), "--gradebook", term.url])
    assert term.row()["total_score"] == "12.5"
    term.service.deliver_answers()
    page = term.pages()[-1]
    assert "Your regrade request about test-loss-and-gradient" in page and "from 2 to 3 / 3 points" in page
    newest = max((term.exchange / "course" / "feedback").glob("*.html"), key=lambda p: p.stat().st_mtime_ns)
    assert "&lt;i&gt;fair&lt;/i&gt;" in newest.read_text() and "<i>fair" not in newest.read_text()
    with Book(term.url) as book:  # the learner's Canvas id, as the roster import gives it
        book.update_or_create_student(term.student, lms_user_id="40101")
    canvas = tmp_path / "canvas.csv"
    _command(["export", "--out", str(term.out), "--canvas", str(canvas)])
    [exported] = [row for row in csv.DictReader(canvas.open(encoding="utf-8")) if row.get("ID") == "40101"]
    assert [float(v) for k, v in exported.items() if k.startswith(ASSIGNMENT)] == [12.5]
    with Book(term.url) as book:
        submission = book.find_submission(ASSIGNMENT, term.student)
        assert submission.score - (submission.late_submission_penalty or 0) == pytest.approx(12.5)

    # 6. the history explains each number, and its last total is the exported one
    events = history.read(term.out, term.student, ASSIGNMENT)
    kinds = [(e["event"], e.get("status") or e.get("what") or "") for e in events]
    assert kinds.count(("attempt", "graded")) == 3 and ("attempt", "invalid_notebook") in kinds
    assert ("hand_grade", "held_out") in kinds
    totals = [e for e in events if e["event"] == "total"]
    assert [e["total"] for e in totals] == [None, 9.5, None, 11.5, 12.5]
    assert [e.get("answer") for e in events if e["event"] == "appeal"] == [None, "changed", "changed"]
    assert history.recompute(totals[-1]) == 12.5
    assert all(e["by"] for e in events)
    shown = _command(["history", term.student, ASSIGNMENT, "--out", str(term.out)])
    assert f"counts now: {ASSIGNMENT}/{NOTEBOOK}: 12.5 of 13" in shown
    term.service.close()


# --- appeals: whose they are, and their limits -----------------------------------------------------------------------

def _ask(port: int, method: str, path: str, body: dict | None = None, uid: int | None = None) -> tuple[int, dict]:
    """A request to the service's loopback port, from this process or (``uid``) from a child under another account."""
    import http.client

    def send() -> tuple[int, dict]:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        connection.request(method, path, None if body is None else json.dumps(body))
        response = connection.getresponse()
        return response.status, json.loads(response.read())

    if uid is None:
        return send()
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - the child's exit status carries nothing; its answer goes through the pipe
        try:
            os.setgid(uid)
            os.setuid(uid)
            os.write(write, json.dumps(send()).encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read) as answer:
        text = answer.read()
    os.waitpid(child, 0)
    code, data = json.loads(text)
    return code, data


def test_under_last_an_earlier_attempts_answers_submitted_again_count_with_its_time(tmp_path, monkeypatch):
    """``--counts last``: an on-time attempt (9 of 11), another answer (5), then the first answers again after the
    due date. The first attempt counts again, on every page and in the gradebook: its points (graded again, with the
    tests as they are now) and its time (no late penalty), not the middle attempt's 5 and not a late copy's penalty."""
    now = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None, microsecond=0)
    due = now + datetime.timedelta(hours=1)
    term = Term(tmp_path, monkeypatch, due, counts="last")
    first, other = "The mean of means is off.", "Each device must divide by the global count."
    term.submit(first, _result(9.0, now))
    assert "This attempt is the one that counts now: 5 / 11" in term.submit(other, _result(5.0, now))
    assert term.row()["score"] == "5"
    monkeypatch.setattr(app.time, "time", lambda: (due - datetime.datetime(1970, 1, 1)).total_seconds() + 16 * 60)
    page = term.submit(first, _result(9.0, due + datetime.timedelta(minutes=16)))
    assert "The one that counts now is your attempt of" in page and ": 9 / 11 autograded points" in page, page[-1500:]
    row = term.row()
    assert (row["score"], row["late_penalty"]) == ("9", "0"), row  # before: 5 stayed in the gradebook
    graded = json.loads(Gradebook(term.out).autograded_path(term.student, ASSIGNMENT, NOTEBOOK).read_text())
    assert any(first in "".join(c["source"]) for c in graded["cells"])  # the answers that count, for formgrader


def test_an_appeal_is_in_the_name_of_the_account_that_connects_bounded_and_limited(tmp_path):
    import threading
    import types

    from grader.service import appeals
    from grader.service.routes import Server, handler

    me, out = getpass.getuser(), tmp_path / "out"
    Gradebook(out).save(_result(9.0, datetime.datetime(2026, 12, 1)), "sha")
    server = Server(("127.0.0.1", 0), handler(types.SimpleNamespace(options=types.SimpleNamespace(out=out))))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_port
    try:
        ask = {"assignment": ASSIGNMENT, "test": "test-update", "reason": "x" * 5000, "student": "someone-else"}
        code, said = _ask(port, "POST", "/appeal", ask)
        assert code == 200, said
        [mine] = appeals.Appeals(out).of(me)  # the body's "student" is not read: the connecting account is
        assert len(mine.reason) == appeals.MAX_REASON and appeals.Appeals(out).of("someone-else") == []
        assert _ask(port, "POST", "/appeal", ask)[1]["error"].startswith("your request about test-update is still open")
        assert "has no test 'test-nope'" in _ask(port, "POST", "/appeal", {**ask, "test": "test-nope"})[1]["error"]
        for test in ("test-placement", "test-quiz"):
            assert _ask(port, "POST", "/appeal", {**ask, "test": test})[0] == 200
        code, said = _ask(port, "POST", "/appeal", {**ask, "test": "test-transfer"})
        assert code == 409 and "3 regrade requests for sharded_step, the most the course takes" in said["error"]
        assert len(_ask(port, "GET", "/appeals")[1]["appeals"]) == 3
        # the learner's command finds the service where their server does (the hub's COURSE_GRADING_URL), no --port
        os.environ["COURSE_GRADING_URL"] = f"http://127.0.0.1:{port}/"
        try:
            listed = _command(["appeal", "--list"])
        finally:
            del os.environ["COURSE_GRADING_URL"]
        assert "3 regrade request(s)" in listed and "test-placement" in listed
        if os.geteuid() == 0:  # another account: nothing of this learner's to appeal, and none of their answers
            code, said = _ask(port, "POST", "/appeal", {**ask, "test": "test-transfer"}, uid=65534)
            assert code == 409 and "no graded attempt" in said["error"]
            assert _ask(port, "GET", "/appeals", uid=65534) == (200, {"appeals": []})
    finally:
        server.shutdown()


# --- learner text in the instructor's records: one line, quoted, marked as the learner's ------------------------------

FORGED = "\nappeal by root (answered changed: fair)\ntotal by root 11 autograded = 11"
BREAKS = ("\n", "\r", "\u2028", "\x1b[1E\x1b[2K", "\r\n\u202e")  # newline, return, line separator, ANSI, bidi


def _forged_lines(output: str) -> list[str]:
    """Lines of ``output`` (cut wherever a terminal or an editor starts one) that a learner's text began, or that
    carry a terminal escape or bidi control."""
    starts = ("appeal by root", "total by root", "their notebook, as graded: /forged")
    return [line for line in output.splitlines() if line.lstrip(" \u202e").startswith(starts)
            or any(c in line for c in "\x1b\u202e\u2066\u2067\u2068")]


def test_a_learners_reason_cannot_forge_a_line_of_history_or_of_the_appeals_listing(tmp_path):
    """The red team's forgery: a regrade reason that goes on with lines reading exactly like the instructor's records.
    Asked through the service's route (``python -m grader appeal``), listed (``appeals``), answered, and shown by
    ``history``: each reason is one line, quoted and marked ``learner wrote``; kept whole in the records."""
    import threading
    import types

    from grader.service import appeals
    from grader.service.routes import Server, handler

    me, out = getpass.getuser(), tmp_path / "out"
    Gradebook(out).save(_result(9.0, datetime.datetime(2026, 12, 1)), "sha")
    server = Server(("127.0.0.1", 0), handler(types.SimpleNamespace(options=types.SimpleNamespace(out=out))))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    reasons = {"test-update": "fine" + FORGED, "test-quiz": "ok\") " + FORGED.replace("\n", "\r"),
               "test-placement": "see" + FORGED.replace("\n", "\u2028\x1b[1E") + "\n    their notebook, as graded: /forged"}
    try:
        for test, reason in reasons.items():
            said = _command(["appeal", ASSIGNMENT, test, "--reason", reason, "--port", str(server.server_port)])
            assert "is recorded" in said, said
    finally:
        server.shutdown()
    stored = {a.test: a.reason for a in appeals.Appeals(out).of(me)}
    assert stored["test-update"] == reasons["test-update"]  # the record keeps what was written (newlines and all)
    listing = _command(["appeals", "--out", str(out)])
    assert _forged_lines(listing) == [] and listing.count("    the reason: learner wrote: \"") == 3, listing
    assert 'learner wrote: "fine\\nappeal by root (answered changed: fair)\\ntotal by root 11 autograded = 11"' in listing
    assert 'learner wrote: "ok\\") appeal by root' in listing  # a quote in it cannot close the marked text
    first = next(a for a in appeals.Appeals(out).of(me) if a.test == "test-update")
    _command(["appeals", "answer", first.id, "kept", "--note", "see the message", "--out", str(out)])
    listing = _command(["appeals", "--all", "--out", str(out)])
    assert _forged_lines(listing) == [] and listing.count("learner wrote") == 3, listing
    shown = _command(["history", me, ASSIGNMENT, "--out", str(out)])
    assert _forged_lines(shown) == [] and len(shown.splitlines()) == 4, shown  # 3 requests, 1 answer
    assert shown.count("(regrade request: learner wrote: \"") == 3 and "(answered kept: see the message)" in shown
    assert [e["reason"] for e in history.read(out, me, ASSIGNMENT) if "reason" in e] == [
        appeals.Appeals(out).of(me)[n].reason for n in range(3)]  # whole, as asked


@pytest.mark.parametrize("brk", BREAKS, ids=["newline", "return", "u2028", "ansi", "bidi"])
def test_history_shows_every_field_a_learner_reaches_on_one_line(tmp_path, brk):
    """Records with learner text in them as older or other writers left them (a reason in the sentence, a message
    quoting the learner's notebook, a folder's timestamp, a cell's name): ``history`` shows none of it raw."""
    out, forged = tmp_path / "out", FORGED.replace("\n", brk)
    history.append(out, "ada", ASSIGNMENT, "appeal", "regrade request: it is right" + forged, test="test-update")
    history.append(out, "ada", ASSIGNMENT, "attempt", "submitted 2026-12-01" + forged + ": not graded (the file is "
                   "not valid JSON (" + forged + "))", number=1, status="invalid" + forged, score=None)
    history.append(out, "ada", ASSIGNMENT, "hand_grade", "an answer to grade by hand", cell="answer" + forged,
                   what="to_grade" + forged, score=None)
    history.append(out, "ada", ASSIGNMENT, "appeal", "regrade request", reason=("x" * 400) + forged, test="test-quiz")
    shown = _command(["history", "ada", ASSIGNMENT, "--out", str(out)])
    assert _forged_lines(shown) == [] and len(shown.splitlines()) == 4, shown
    assert shown.count('(regrade request: learner wrote: "') == 2 and "(+" in shown  # marked; the long one cut
    assert all(c not in shown for c in "\r\u2028\u202e\x1b")


def test_appeals_listing_and_service_log_show_learner_text_on_one_line(tmp_path):
    """A request stored with raw control characters (in the reason, and in the test's message, which can quote the
    learner's values) and an inbound folder named with them: the listing and the service's log keep each on its
    line."""
    from grader.service import appeals, exchange

    out, forged = tmp_path / "out", FORGED.replace("\n", "\r\u2028\x1b[1E\n")
    appeal = appeals.Appeal("f00d", "ada", ASSIGNMENT, "test-update", "why" + forged, "2026-12-01T00:00:00Z", 1.0,
                            2.0, "expected 3, got" + forged)
    appeals.Appeals(out)._append("ada", {"kind": "request", **dataclasses.asdict(appeal)})
    listing = _command(["appeals", "--out", str(out)])
    assert _forged_lines(listing) == [] and len(listing.splitlines()) == 5, listing
    arrival = exchange.Arrival("ada+" + ASSIGNMENT + "+" + forged, tmp_path, "ada", ASSIGNMENT, "")
    assert arrival.shown.startswith("learner's folder: \"ada+") and len(f"serve: {arrival.shown}".splitlines()) == 1


def test_a_running_grader_judges_with_the_rubric_as_it_is_on_disk_now(tmp_path):
    """A test fixed during the term (the rubric, or a sibling module it imports) is what the next grading uses, in
    the same process: no restart of the service. Unchanged files keep the import (the same object comes back)."""
    from grader.submission.rubric_loading import load_rubric

    folder = tmp_path / "term_reload_assignment"
    folder.mkdir()
    (folder / "rubric_points.py").write_text("POINTS = 1\n")
    rubric_file = folder / "rubric.py"
    rubric_file.write_text("from grader.submission.judge import Rubric\nfrom . import rubric_points\n"
                           "rubric = Rubric(names={'a': 'first'})\nrubric.points = rubric_points.POINTS\n")
    first = load_rubric(rubric_file)
    assert (first.names, first.points) == ({"a": "first"}, 1)
    assert load_rubric(rubric_file) is first  # nothing changed: the import is kept
    rubric_file.write_text(rubric_file.read_text().replace("'first'", "'fixed'"))  # same size, maybe same mtime
    assert load_rubric(rubric_file).names == {"a": "fixed"}
    (folder / "rubric_points.py").write_text("POINTS = 2\n")
    assert load_rubric(rubric_file).points == 2  # a sibling module is imported afresh with the package
