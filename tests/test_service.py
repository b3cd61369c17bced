"""The grading service (``python -m grader serve``): Submit -> graded -> feedback the learner fetches.

The policy and the ledger are tested as functions; the exchange is read as hostile input (links, files, names
outside the id rule, another learner's name, FIFOs, oversized notebooks); the whole path runs with nbgrader's own
``release_assignment``, ``fetch_assignment``, ``submit`` and ``fetch_feedback``.
"""
from __future__ import annotations

import contextlib
import datetime
import getpass
import io
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import nbformat
import pytest

from grader.service import exchange
from grader.term.attempts import Attempt, Ledger, Policy, counting, decide
from test_workflow import ROOT, _env, _nbgrader, copy_course, hidden_lines

HOUR = 3600.0


# --- the attempts policy -----------------------------------------------------------------------------------

def test_the_limit_is_a_rolling_window_on_the_services_clock():
    policy = Policy(graded_per_window=3, window_hours=24)
    attempts = [Attempt(f"a{n}", 1000.0 + n * HOUR, True) for n in range(3)]
    assert decide(policy, attempts[:2], 1000.0 + 2 * HOUR).grade
    refused = decide(policy, attempts, 1000.0 + 3 * HOUR)
    assert not refused.grade and refused.used == 3
    assert refused.next_at == 1000.0 + 24 * HOUR  # when the oldest of the three leaves the window
    assert decide(policy, attempts, 1000.0 + 24 * HOUR + 1).grade
    # submissions that were not graded (over the limit, refused, the grader's own failure) cost nothing
    assert decide(policy, [*attempts[:2], Attempt("x", 1000.0, False, "grader_error")], 1000.0 + 3 * HOUR).grade
    assert decide(Policy(graded_per_window=None), attempts * 10, 1000.0).grade


def test_the_attempt_that_counts_is_the_last_or_the_best():
    attempts = [Attempt("a", 1.0, True, "graded", 9.0, 11.0), Attempt("b", 2.0, True, "graded", 5.0, 11.0),
                Attempt("c", 3.0, False, "over_limit")]
    assert counting(Policy(counts="last"), attempts).name == "b"
    assert counting(Policy(counts="best"), attempts).name == "a"
    assert counting(Policy(), [Attempt("c", 3.0, False, "over_limit")]) is None
    with pytest.raises(ValueError, match="best, last"):
        Policy(counts="first")
    with pytest.raises(ValueError):
        Policy(graded_per_window=0)


def test_the_ledger_survives_a_restart(tmp_path):
    ledger = Ledger(tmp_path)
    ledger.add("ada", "sharded_step", Attempt("ada+sharded_step+t+1", 5.0, True, "graded", 3.0, 11.0))
    ledger.add("ada", "sharded_step", Attempt("ada+sharded_step+t+2", 6.0, False, "over_limit"))
    path = next(tmp_path.rglob("*.jsonl"))
    with path.open("a") as out:
        out.write('{"name": "cut short by a cra')  # the service died mid-line
    again = Ledger(tmp_path)
    assert again.seen() == {"ada+sharded_step+t+1", "ada+sharded_step+t+2"}
    assert [a.score for a in again.attempts("ada", "sharded_step")] == [3.0, None]


# --- the exchange, read as hostile input -----------------------------------------------------------------------

def _inbound(tmp_path: Path) -> Path:
    inbound = tmp_path / "exchange" / "course" / "inbound"
    inbound.mkdir(parents=True)
    return inbound


def _submission(inbound: Path, student: str, assignment: str = "sharded_step", *, secret: str | None = None) -> Path:
    folder = inbound / f"{student}+{assignment}+2026-12-01 10:00:00.000000 UTC+{secrets.token_hex(4)}"
    folder.mkdir()
    (folder / f"{assignment}.ipynb").write_text("{}")
    (folder / "timestamp.txt").write_text("2026-12-01 10:00:00.000000 UTC")
    (folder / "submission_secret.txt").write_text(secret or secrets.token_hex(64))
    return folder


def test_every_unusable_inbound_folder_is_named_with_its_reason(tmp_path):
    inbound = _inbound(tmp_path)
    me = getpass.getuser()
    good = _submission(inbound, me)
    _submission(inbound, "<img src=x onerror=alert(1)>")
    _submission(inbound, me, "no_such_assignment")
    (inbound / "just-a-file").write_text("x")
    (inbound / f"{me}+sharded_step+ts+link").symlink_to(good)
    (inbound / "two+parts").mkdir()
    someone_else = _submission(inbound, "victim")
    found = {a.name: a for a in exchange.arrivals(tmp_path / "exchange", "course", set(), ["sharded_step"])}
    assert found[good.name].problem is None and found[good.name].student_id == me
    problems = {name: a.problem for name, a in found.items() if a.problem}
    assert len(problems) == 6, problems
    assert any("not a usable student id" in p for p in problems.values())
    assert any("unknown assignment 'no_such_assignment'" in p for p in problems.values())
    assert problems[f"{me}+sharded_step+ts+link"].startswith("the submission is not a folder")
    assert problems["just-a-file"].startswith("the submission is not a folder")
    assert "student+assignment+timestamp" in problems["two+parts"]
    assert "belongs to the Unix account" in problems[someone_else.name]
    # without the owner check (one account for every learner) the other name is taken at its word
    lenient = exchange.arrivals(tmp_path / "exchange", "course", set(), ["sharded_step"], check_owner=False)
    assert next(a for a in lenient if a.name == someone_else.name).problem is None
    # what was decided once is not offered again
    assert not exchange.arrivals(tmp_path / "exchange", "course", set(found), ["sharded_step"])


def test_only_the_assignments_notebook_is_copied_and_never_through_a_link_a_fifo_or_a_hard_link(tmp_path):
    inbound = _inbound(tmp_path)
    folder = _submission(inbound, getpass.getuser())
    (folder / "extra.py").write_text("import os")
    arrival = exchange.arrivals(tmp_path / "exchange", "course", set(), ["sharded_step"])[0]

    def copied(dest: str, limit: int = 100) -> bool:
        with exchange.open_folder(arrival) as (opened, problem):
            assert problem is None
            return exchange.copy_notebook(opened, "sharded_step.ipynb", "t", tmp_path / dest, limit)

    assert copied("copy")
    assert sorted(p.name for p in (tmp_path / "copy").iterdir()) == ["sharded_step.ipynb", "timestamp.txt"]
    assert not copied("small", limit=1)  # over the limit
    (folder / "sharded_step.ipynb").unlink()
    os.mkfifo(folder / "sharded_step.ipynb")  # a reader that opened it would block forever
    assert not copied("fifo")
    (folder / "sharded_step.ipynb").unlink()
    (tmp_path / "secret.ipynb").write_text("the instructor's file")
    (folder / "sharded_step.ipynb").symlink_to(tmp_path / "secret.ipynb")
    assert not copied("link") and not (tmp_path / "link" / "sharded_step.ipynb").exists()
    (folder / "sharded_step.ipynb").unlink()
    os.link(tmp_path / "secret.ipynb", folder / "sharded_step.ipynb")  # a second name for someone's file
    assert not copied("hard") and not (tmp_path / "hard" / "sharded_step.ipynb").exists()
    (folder / "submission_secret.txt").write_text("not hex; " * 5)
    with exchange.open_folder(arrival) as (opened, _):
        assert exchange.secret(opened) is None


def test_feedback_goes_where_nbgraders_fetch_feedback_looks(tmp_path):
    from nbgrader.utils import notebook_hash

    secret = secrets.token_hex(64)
    exchange.prepare(tmp_path, "course")
    path = exchange.release(tmp_path, "course", secret, "sharded_step", "<p>page</p>")
    assert path.name == notebook_hash(secret=secret, notebook_id="sharded_step") + ".html"
    assert oct(path.stat().st_mode & 0o777) == "0o644" and path.read_text() == "<p>page</p>"


def test_serve_once_stops_only_after_the_gradebook_has_what_was_graded(tmp_path):
    """``--once`` ends when the service is idle: a graded attempt whose page is still being written is not idle, and
    closing waits for the gradebook thread to publish what is queued (a daemon thread killed mid-publish left the
    result copied and grades.csv unwritten, on CI)."""
    import threading
    import time

    from grader.service.app import Service

    service = Service.__new__(Service)  # no kernels: only the bookkeeping under test
    service.lock, service.pending, service.finishing = threading.Lock(), {}, 1
    service.bookkeeping = __import__("queue").Queue()
    service.stopping, service.lms_due, service.lms = threading.Event(), threading.Event(), None  # no LMS
    service.pool = type("Pool", (), {"waiting": lambda self: 0, "close": lambda self: None})()
    assert not service.idle()  # a page on its way out: --once must not stop here
    service.finishing = 0
    assert service.idle()

    published = tmp_path / "grades.csv"

    def publish(items):
        time.sleep(1.0)  # as slow as nbgrader's first import of its database
        published.write_text(f"{len(items)} published")

    service.publish = publish
    service.books = threading.Thread(target=service._keep_books, daemon=True)
    service.books.start()
    service.bookkeeping.put(("folder", "result", "folder"))
    assert not service.idle()
    service.close()
    assert published.read_text() == "1 published"


# --- the whole path, with nbgrader's own exchange commands -------------------------------------------------

def _serve_once(course, *args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "grader", "serve", "--once", "--workers", "1", *args],
                          cwd=course.root, env=_env(course), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return done.stderr


def _fetched_pages(workspace: Path, assignment: str) -> list[str]:
    return sorted((p.read_text() for p in (workspace / assignment / "feedback").rglob(f"{assignment}.html")), key=len)


@pytest.mark.slow
def test_a_submission_is_graded_and_its_feedback_fetched_and_the_limit_holds(tmp_path):
    from grader.course.workspace import ensure_exchange, learner_lab

    course = copy_course(tmp_path / "course")
    ensure_exchange(course)
    instructor = _env(course)
    _, learner, workspace = learner_lab(course, workspace=tmp_path / "learner")
    workspace.mkdir()
    learner = {**learner, "JUPYTER_CONFIG_DIR": str(tmp_path / "no-user-config")}
    assignment = "sharded_step"
    _nbgrader(course.root, instructor, "generate_assignment", assignment, "--force")
    _nbgrader(course.root, instructor, "release_assignment", assignment, "--force")
    _nbgrader(workspace, learner, "fetch_assignment", assignment)
    # the learner's step sums the four per-device means (sample learner 'chen'): 4 times the gradient
    shutil.copy2(ROOT / "samples" / "submitted" / "chen" / assignment / f"{assignment}.ipynb",
                 workspace / assignment / f"{assignment}.ipynb")
    _nbgrader(workspace, learner, "submit", assignment)

    db = f"sqlite:///{course.root / 'gradebook.db'}"
    log = _serve_once(course, "--attempts", "1", "--gradebook", db)
    assert "feedback released" in log, log
    _nbgrader(workspace, learner, "fetch_feedback", assignment)
    [page] = _fetched_pages(workspace, assignment)
    assert "4 times the global gradient: the per-device means were summed" in page
    assert "attempt 1 of sharded_step" in page and "This attempt is the one that counts now" in page
    assert "Content-Security-Policy" in page and not [line for line in hidden_lines(course, assignment) if line in page]
    student = getpass.getuser()
    result = json.loads((course.root / "results" / student / assignment / f"{assignment}.json").read_text())
    assert result["status"] == "graded" and 0 < sum(t["points"] for t in result["tests"]) < 11
    assert f"{student},{assignment}," in (course.root / "grades.csv").read_text()
    from nbgrader.api import Gradebook

    with Gradebook(db) as book:  # formgrader shows the counting attempt's score
        assert book.find_submission(assignment, student).score == pytest.approx(result["score"])

    # a second submission within the day: kept, not graded, and the learner is told when the next one is
    _nbgrader(workspace, learner, "submit", assignment)
    log = _serve_once(course, "--attempts", "1")
    assert "over_limit" in log, log
    _nbgrader(workspace, learner, "fetch_feedback", assignment)
    pages = _fetched_pages(workspace, assignment)
    assert len(pages) == 2 and "Received, not graded now" in pages[0] and "You have used 1 of 1" in pages[0]
    # nbgrader's timestamp (microseconds) is said to the second on both pages
    assert all(re.search(r"\(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC\)", page) and not re.search(r":\d\d\.\d{6}", page)
               for page in pages), pages
    ledger = Ledger(course.root / "service" / "ledger").attempts(student, assignment)
    assert [a.status for a in ledger] == ["graded", "over_limit"]
    assert counting(Policy(), ledger) is ledger[0]
    # the gradebook still holds the graded attempt
    assert json.loads((course.root / "results" / student / assignment / f"{assignment}.json").read_text()) == result


# --- the same path in a real browser ---------------------------------------------------------------------------

@pytest.mark.slow
def test_submit_and_fetch_feedback_in_jupyterlab(tmp_path, monkeypatch):
    """Fetch, Submit, refresh, Fetch Feedback in the learner's Assignment List, with the service running: the page
    has the score and the named mistake and no hidden test; a second Submit over the limit is told so. Before
    Submit, the list shows each assignment's due date as this learner's own: the class's, the learner's extension
    (python -m grader extend), or none; submitted after the class's due date within the extension: on time."""
    from test_browser import ARTIFACTS, JUPYTER, _free_port, _run_browser, _setup_browser
    from test_workflow import Server

    from grader.course.workspace import learner_lab, one_machine

    if not JUPYTER.exists():
        pytest.skip(f"{JUPYTER} is missing: run `make test`, which installs the project's environment")
    _setup_browser()
    course = copy_course(tmp_path / "course")
    argv, env, cwd = learner_lab(course)  # creates the course's exchange
    one_machine(course)  # what `make lab` does first, as the tutorial says: the workspace's copies, the release
    assignment = "sharded_step"
    wrong = nbformat.read(ROOT / "samples" / "submitted" / "chen" / assignment / f"{assignment}.ipynb", as_version=4)
    fixture = {"assignment": assignment, "hidden_lines": hidden_lines(course, assignment),
               "solutions": {c.metadata["nbgrader"]["grade_id"]: c.source for c in wrong.cells
                             if c.metadata.get("nbgrader", {}).get("solution")},
               "mistake": "4 times the global gradient: the per-device means were summed"}
    # the instructor's due dates: the class's two hours ago and collectives' in three days (nbgrader's gradebook, as
    # `nbgrader db assignment add A --duedate=...` writes them), this learner's own until tomorrow (python -m grader
    # extend, run here), none for the third
    from nbgrader.api import Gradebook as Book

    from grader import cli
    from grader.service.accommodations import shown

    now = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None, second=0, microsecond=0)
    due, mine, later = (now + datetime.timedelta(hours=h) for h in (-2, 24, 72))
    for name in ("PATH", "COURSE_ROOT"):  # nbgrader's `alembic`; the course `extend` reads
        monkeypatch.setenv(name, _env(course)[name])
    with Book(f"sqlite:///{course.root / 'gradebook.db'}") as book:
        book.update_or_create_student(getpass.getuser())
        book.update_or_create_assignment(assignment, duedate=due)
        book.update_or_create_assignment("collectives", duedate=later)
    with pytest.raises(SystemExit) as extended, contextlib.redirect_stdout(io.StringIO()):
        cli.main(["extend", getpass.getuser(), assignment, "--until", f"{mine:%Y-%m-%d %H:%M} UTC", "--why",
                  "a medical note", "--out", str(course.root)])
    assert extended.value.code == 0
    fixture["due"] = {assignment: f"Extended for you until {shown(mine)} (the class's due date: {shown(due)})",
                      "collectives": f"Due {shown(later)}", "local_mean_diagnosis": "No due date"}
    (tmp_path / "fixture.json").write_text(json.dumps(fixture))
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    service_log = (ARTIFACTS / "submit-service.log").open("w")
    port = _free_port()
    # the service's own temporary folder (its kernels' scratch folders, nothing else), short: a kernel's socket path
    # must stay within the 107 bytes of a Unix socket address
    scratch = Path(tempfile.mkdtemp(prefix="svc-", dir="/tmp"))
    service = subprocess.Popen([sys.executable, "-m", "grader", "serve", "--attempts", "1", "--workers", "1",
                                "--port", str(port)], cwd=course.root, env={**_env(course), "TMPDIR": str(scratch)},
                               stdout=service_log, stderr=subprocess.STDOUT, start_new_session=True)
    learner = None
    try:
        learner = Server(argv, dict(env, COURSE_GRADING_URL=f"http://127.0.0.1:{port}/"), cwd,
                         tmp_path / "learner-home", ARTIFACTS / "submit-learner.log")
        returncode, output = _run_browser(dict(os.environ, LEARNER_URL=learner.url, LEARNER_TOKEN=learner.token,
                                               SUBMIT_FIXTURE=str(tmp_path / "fixture.json"),
                                               ARTIFACTS_DIR=str(ARTIFACTS)), script="submit.mjs", timeout=600)
        print(output)
        assert returncode == 0, (f"{output}\n--- service ---\n{(ARTIFACTS / 'submit-service.log').read_text()[-3000:]}"
                                 f"\n--- learner ---\n{learner.log.read_text()[-2000:]}")
    finally:
        if learner is not None:
            learner.stop()
        service.terminate()  # SIGTERM, as a hub stops its managed service
        try:
            stopped = service.wait(timeout=10)
        except subprocess.TimeoutExpired:
            service.kill()
            stopped = "still running 10 s after SIGTERM"
        service_log.close()
    # a clean stop: in time, and nothing of it left: no scratch folder, no mount, no process of its session
    assert stopped == 0, f"{stopped}\n{(ARTIFACTS / 'submit-service.log').read_text()[-2000:]}"
    assert list(scratch.iterdir()) == [], sorted(scratch.iterdir())
    assert not [line for line in Path("/proc/self/mountinfo").read_text().splitlines() if str(scratch) in line]
    assert not _session_processes(service.pid)
    shutil.rmtree(scratch)
    result = json.loads(next(ln for ln in output.splitlines() if ln.startswith("SUBMIT-RESULT "))[len("SUBMIT-RESULT "):])
    assert result["second"]["folders"] == 2
    # the page the learner opened is the one the service released for that submission, byte for byte
    released = sorted((course.root / "exchange" / "jax-distributed-training" / "feedback").glob("*.html"))
    opened = (course.root / "workspace" / result["first"]["file"]).read_bytes()
    assert opened in [p.read_bytes() for p in released]
    print(f"Submit -> feedback listed {result['first']['listed']:.1f} s, fetched {result['first']['fetched']:.1f} s")


def _session_processes(sid: int) -> list[int]:
    """Processes still in session ``sid`` (the service's, started with start_new_session)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[3]) == sid and fields[0] != "Z":
            found.append(int(stat.parent.name))
    return found


# --- the loopback HTTP routes ------------------------------------------------------------------------------

def test_the_http_routes_bound_what_they_read_and_survive_a_failing_request(monkeypatch):
    import threading
    import types
    import urllib.error
    import urllib.request
    from grader.layout import Course
    from grader.service import routes, validation

    fake = types.SimpleNamespace(course=Course.default(), status=lambda: {"grading": 0, "waiting": 0})
    server = routes.Server(("127.0.0.1", 0), routes.handler(fake))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"

    def call(path: str, body: bytes | None = None, headers: dict | None = None) -> tuple[int, dict]:
        request = urllib.request.Request(url + path, data=body, headers=headers or {})
        try:
            with urllib.request.urlopen(request, timeout=20) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read())

    try:
        assert call("/status") == (200, {"grading": 0, "waiting": 0})
        assert call("/nothing")[0] == 404 and call("/nothing", b"{}")[0] == 404
        code, said = call("/validate", b"x", {"Content-Length": str(routes.MAX_REQUEST_BYTES + 1)})
        assert code == 413 and "bytes" in said["error"]
        monkeypatch.setattr(validation, "handle", lambda course, body: 1 / 0)
        assert call("/validate", b"{}") == (500, {"error": "the grading service failed on this request "
                                                            "(ZeroDivisionError)"})
        monkeypatch.setattr(validation, "handle", lambda course, body: (200, {"echo": len(body)}))
        assert call("/validate", b"{}" * 10) == (200, {"echo": 20})  # the service is still there
    finally:
        server.shutdown()


def test_the_learners_validate_asks_where_the_service_listens():
    from grader import cli
    from grader.learner import report
    from grader.service import app, routes, validation

    assert report.DEFAULT_PORT == app.DEFAULT_PORT == cli.DEFAULT_SERVICE_PORT
    assert routes.MAX_REQUEST_BYTES == validation.MAX_BODY_BYTES
