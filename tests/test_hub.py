"""The class on a real JupyterHub (``python -m grader hub``, ``make hub``), in Debian's Chromium, on loopback.

The hub is started as ``make hub`` starts it, with its own class folders (``COURSE_HUB_SRV``, wiped first) on free
loopback ports. The instructor releases sharded_step with nbgrader's own command, as the instructor's Unix account;
ada and blake log in through the hub's login page (PAM, their own passwords), fetch it in the Assignment List, save
an answer (the graded samples: ada solved everything, blake is blank) and Submit; the hub's grading service grades
both; each fetches their own feedback and nothing of the other's; a kernel of ada's server runs as ada and gets
PermissionError on blake's home, the exchange's inbound, the course's source/, rubric and gradebook.db, the checkout's
source/ and on renaming the exchange's course folder; the instructor sees both submissions in formgrader.
The hub holds a second course (``--course``: its own root, groups, exchange folder and grading service): ada, a
learner of both, sees both courses' assignments, blake only his own; the first course's instructor is refused by the
second's formgrader, service and files, and the second's grader by the first's (``_two_courses``).
Screenshots: test-artifacts/browser/hub-*.png; the hub's log: test-artifacts/browser/hub.log.
"""
from __future__ import annotations

import csv
import http.cookiejar
import json
import os
import pwd
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from grader.term.attempts import Ledger, Policy, counting
from test_browser import ARTIFACTS, BROWSER, JUPYTER, ROOT, _free_port, _setup_browser, _stop

SRV = Path("/srv/jax-course-test")
COURSE, EXCHANGE = SRV / "course", SRV / "exchange"
ASSIGNMENT = "sharded_step"
LEARNERS = ("ada", "blake")
VENV_BIN = Path("/opt/jax-course/venv/bin")
MANUAL_CELL, MANUAL_POINTS = "pause-and-reason", 2.0  # sharded_step's free-text answer, graded by hand
AUTOGRADED = 11.0  # ada's sample: every test of sharded_step
FIRST_ID, SECOND_ID, SECOND_GRADER = "jax-distributed-training", "jax-second", "grader2"  # hub --course: a second
SECOND_ROOT = SRV / "courses" / SECOND_ID  # course, ada its one learner, grader2 its instructor

PROBE = f'''
import json, os
checks = {{}}
def attempt(label, action):
    try:
        action()
        checks[label] = "allowed"
    except OSError as error:
        checks[label] = type(error).__name__
attempt("other_home", lambda: os.listdir("/home/{{other}}"))
attempt("other_submission", lambda: [open(os.path.join(r, f)).read(1)
                                     for r, _, fs in os.walk("{EXCHANGE}/jax-distributed-training/inbound") for f in fs]
        or os.listdir("{EXCHANGE}/jax-distributed-training/inbound"))
attempt("inbound_listing", lambda: os.listdir("{EXCHANGE}/jax-distributed-training/inbound"))
attempt("course_source", lambda: open("{COURSE}/source/{ASSIGNMENT}/{ASSIGNMENT}.ipynb").read(1))
attempt("course_rubric", lambda: open("{COURSE}/source/{ASSIGNMENT}/rubric.py").read(1))
attempt("gradebook", lambda: open("{COURSE}/gradebook.db", "rb").read(1))
attempt("grading_output", lambda: os.listdir("{COURSE}/service"))
attempt("checkout_source", lambda: open("{ROOT}/source/{ASSIGNMENT}/{ASSIGNMENT}.ipynb").read(1))
attempt("checkout_tests", lambda: os.listdir("{ROOT}/tests"))
attempt("rename_course_folder", lambda: os.rename("{EXCHANGE}/jax-distributed-training", "{EXCHANGE}/mine"))
print("PROBE " + json.dumps({{"uid": os.getuid(), "euid": os.geteuid(), "checks": checks}}))
'''


def _as_instructor(*argv: str, course: Path = COURSE, user: str = "instructor") -> str:
    done = subprocess.run(["runuser", "-u", user, "--", "env", "-i", f"PATH={VENV_BIN}:/usr/bin:/bin",
                           f"HOME={pwd.getpwnam(user).pw_dir}", f"COURSE_ROOT={course}", "LANG=C.UTF-8", *argv],
                          cwd=course, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"{argv} as {user}:\n{done.stdout}\n{done.stderr}"
    return done.stdout + done.stderr


def _step(url: str, fixture: Path, step: str, user: str, log_path: Path = ARTIFACTS / "hub.log") -> dict:
    process = subprocess.run(["node", str(BROWSER / "hub.mjs"), step, user], cwd=ROOT, text=True, timeout=420,
                             env=dict(os.environ, HUB_URL=url, HUB_FIXTURE=str(fixture), ARTIFACTS_DIR=str(ARTIFACTS)),
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    print(process.stdout)
    log = log_path.read_text()[-4000:]
    assert process.returncode == 0, f"hub.mjs {step} {user}:\n{process.stdout[-4000:]}\n--- hub ---\n{log}"
    line = next(ln for ln in process.stdout.splitlines() if ln.startswith("HUB-RESULT "))
    return json.loads(line[len("HUB-RESULT "):])


def _fresh_learner(name: str) -> None:
    """A learner who has not fetched the assignment yet (the demo accounts are reused from run to run)."""
    home = Path(pwd.getpwnam(name).pw_dir)
    for leftover in (home / ASSIGNMENT, home / FIRST_ID, home / SECOND_ID,
                     home / ".local" / "share" / "jupyter" / "nbgrader_cache"):
        shutil.rmtree(leftover, ignore_errors=True)


def _wait_for(log: Path, text: str, process: subprocess.Popen, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while text not in log.read_text():
        assert process.poll() is None, f"the hub stopped:\n{log.read_text()[-4000:]}"
        assert time.monotonic() < deadline, f"no {text!r} in {timeout:.0f} s:\n{log.read_text()[-4000:]}"
        time.sleep(0.5)


def start_hub(srv: Path, log_path: Path, *options: str) -> tuple[subprocess.Popen, str, int]:
    """``python -m grader hub`` as ``make hub`` starts it, on class folders of its own (``srv``, wiped first) and free
    loopback ports; returns once JupyterHub and its grading service are running: (process, URL, service port)."""
    shutil.rmtree(srv, ignore_errors=True)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    port, service_port = _free_port(), _free_port()
    with log_path.open("w") as log:
        hub = subprocess.Popen([sys.executable, "-m", "grader", "hub", "--port", str(port), "--service-port",
                                str(service_port), *options], cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
                               env=dict(os.environ, COURSE_HUB_SRV=str(srv)), start_new_session=True)
    try:
        _wait_for(log_path, "JupyterHub is now running", hub, 900)
        _wait_for(log_path, "serve: watching", hub, 300)
    except BaseException:
        _stop(hub, signal.SIGINT, 60)
        raise
    return hub, f"{'https' if '--ssl-cert' in options else 'http'}://127.0.0.1:{port}", service_port


def hub_prerequisites() -> None:
    """Skip, saying why, where a hub cannot start: not root, no project environment, no npm for its proxy."""
    if os.geteuid() != 0:
        pytest.skip("the hub makes Unix accounts and runs each learner's server as that learner: run as root")
    if not JUPYTER.exists():
        pytest.skip(f"{JUPYTER} is missing: run `make test`, which installs the project's environment")
    if shutil.which("npm") is None:
        pytest.skip("npm is missing: JupyterHub's proxy (configurable-http-proxy) is installed with npm")


@pytest.mark.slow
def test_a_class_on_jupyterhub_in_the_browser(tmp_path):
    hub_prerequisites()
    _setup_browser()
    began = time.monotonic()
    log_path = ARTIFACTS / "hub.log"
    second = tmp_path / "second-roster.csv"  # the second course's roster: ada only (the course's own CSV)
    second.write_text("id,first_name,last_name,email,lms_user_id\nada,Ada,Lovelace,,\n", encoding="utf-8")
    hub, url, service_port = start_hub(SRV, log_path, "--workers", "2",
                                       "--course", f"{SECOND_ID}:{second}:{SECOND_GRADER}")
    try:
        ready = time.monotonic() - began
        placeholder = (COURSE / "class-report" / "index.html").read_text()  # formgrader's Class report link, before
        assert "python -m grader report --out . --html" in placeholder  # the first report: how to make one
        for name in LEARNERS:
            _fresh_learner(name)
        _as_instructor(str(VENV_BIN / "nbgrader"), "release_assignment", ASSIGNMENT, "--force")
        passwords = {}
        for line in (SRV / "hub" / "passwords.txt").read_text().splitlines():
            if ":" in line and not line.startswith("#"):
                name, word = line.split(":", 1)
                passwords[name] = word
        _two_courses(url, service_port, passwords, log_path, hub)
        fixture = {"passwords": passwords, "assignment": ASSIGNMENT, "students": list(LEARNERS),
                   "folder": f"{FIRST_ID}/{ASSIGNMENT}",  # two courses: each one's notebooks under ~/COURSE/
                   "other": {"ada": "blake", "blake": "ada"},
                   "answers": {name: json.loads((ROOT / "samples" / "submitted" / name / ASSIGNMENT /
                                                 f"{ASSIGNMENT}.ipynb").read_text()) for name in LEARNERS},
                   "manual": {"student": "ada", "cell": MANUAL_CELL, "points": MANUAL_POINTS},
                   "probe": {name: PROBE.replace("{other}", other) for name, other in (("ada", "blake"), ("blake", "ada"))}}
        fixture_path = SRV / "hub" / "fixture.json"  # holds passwords: in the root-only state folder
        fixture_path.write_text(json.dumps(fixture))

        # blake submits on time; then the instructor sets the due date (nbgrader's own command) and the course's
        # policy without grace, so ada, who submits next, is late: 10% of her earned points per started day.
        first = _step(url, fixture_path, "submit", "blake")
        with (COURSE / "nbgrader_config.py").open("a") as config:
            config.write("\nc.PerDayPenalty.grace_minutes = 0  # (the hub test: a deadline seconds ago counts)\n")
        # the next whole second: blake's submission (stamped to the microsecond) was before it even on a machine
        # quick enough to get here within the second it was stamped in; ada's Submit waits until it has passed
        due = (datetime.now(timezone.utc) + timedelta(seconds=1)).replace(microsecond=0)
        _as_instructor(str(VENV_BIN / "nbgrader"), "db", "assignment", "add", ASSIGNMENT,
                       f"--duedate={due:%Y-%m-%d %H:%M:%S} UTC")
        time.sleep(max(0.0, (due - datetime.now(timezone.utc)).total_seconds()) + 1.0)
        second = _step(url, fixture_path, "submit", "ada")
        assert first["submitted"] == 1 and second["submitted"] == 1

        pages = {name: _step(url, fixture_path, "feedback", name) for name in LEARNERS}
        assert f"{ASSIGNMENT} · ada" in pages["ada"]["text"] and "Autograded score: 11 / 11" in pages["ada"]["text"]
        assert "after the due date" in pages["ada"]["text"] and "10% of your earned points" in pages["ada"]["text"]
        assert "taken off" not in pages["blake"]["text"]
        assert f"{ASSIGNMENT} · blake" in pages["blake"]["text"] and "11 / 11;" not in pages["blake"]["text"]
        for name, other in (("ada", "blake"), ("blake", "ada")):
            assert f"· {other}" not in pages[name]["text"]
            for route, answer in pages[name]["theirs"].items():  # the other learner's server, files, hub record
                assert answer["status"] != 200 and not answer["content"], (name, route, answer)
        for name in LEARNERS:
            probe = json.loads(pages[name]["probe"].strip().splitlines()[-1][len("PROBE "):])
            assert probe["uid"] == probe["euid"] == pwd.getpwnam(name).pw_uid  # the kernel runs as the learner
            assert len(probe["checks"]) == 10 and set(probe["checks"].values()) == {"PermissionError"}, probe

        # The instructor grades ada's free-text answer in formgrader, then (as the instructor, in the course root)
        # reads the hand grades and penalties back and exports the class for Canvas.
        _step(url, fixture_path, "grade", "instructor")
        _as_instructor(str(VENV_BIN / "python"), "-m", "grader", "report", "--out", str(COURSE))
        _as_instructor(str(VENV_BIN / "python"), "-m", "grader", "export", "--out", str(COURSE),
                       "--canvas", str(COURSE / "canvas.csv"))
        late = round(0.10 * (AUTOGRADED + MANUAL_POINTS), 6)  # one started day at 10% of what she earned
        with (COURSE / "grades.csv").open(newline="") as handle:
            grades = {row["student_id"]: row for row in csv.DictReader(handle)}
        assert float(grades["ada"]["manual_score"]) == MANUAL_POINTS
        assert float(grades["ada"]["late_penalty"]) == pytest.approx(late)
        assert float(grades["ada"]["total_score"]) == pytest.approx(AUTOGRADED + MANUAL_POINTS - late)
        assert float(grades["blake"]["late_penalty"] or 0) == 0.0  # on time
        with (COURSE / "canvas.csv").open(newline="") as handle:
            canvas = {row["ID"]: row for row in csv.DictReader(handle)}
        assert float(canvas["40101"][ASSIGNMENT]) == pytest.approx(AUTOGRADED + MANUAL_POINTS - late)  # ada's LMS id
        assert canvas["40102"][ASSIGNMENT] == ""  # blake's free-text answer is not graded yet
        # formgrader lists both, with the course's columns: the same total as grades.csv and the export, after the
        # penalty; Autograde says the service grades (it would run the learner's code unsealed as the instructor)
        staff = _step(url, fixture_path, "formgrader", "instructor")
        assert all(name in staff["text"] for name in LEARNERS), staff["text"]
        cells = staff["cells"]
        assert cells["ada"]["total"] == f"{round(float(grades['ada']['total_score']), 2):g} / {AUTOGRADED + 2:g}"
        assert cells["ada"]["penalty"] == f"- {round(late, 2):g}" and cells["blake"]["penalty"] == "0"
        assert cells["blake"]["total"] == "after hand grading"
        assert staff["notice"] and {c["autograde"] for c in cells.values()} == {"graded at Submit"}
        # formgrader's Autograde runs as the instructor, who cannot seal kernels: it refuses and changes nothing
        # formgrader's Collect (nbgrader collect) refuses too, copying nothing: the service collected at Submit, and a
        # collected copy would mark the graded work "needs autograding"
        collect = [str(VENV_BIN / "nbgrader"), "collect", ASSIGNMENT]
        said = subprocess.run(["runuser", "-u", "instructor", "--", "env", "-i", f"PATH={VENV_BIN}:/usr/bin:/bin",
                               "HOME=/home/instructor", f"COURSE_ROOT={COURSE}", "LANG=C.UTF-8", *collect], cwd=COURSE,
                              capture_output=True, text=True, timeout=300)
        assert said.returncode != 0 and "the grading service collects and grades every submission" in said.stderr, said
        assert not list((COURSE / "submitted").glob(f"*/{ASSIGNMENT}"))
        # nbgrader's own collect, by hand: the submissions where Autograde reads
        _as_instructor(*collect, "--ExchangeFactory.collect=nbgrader.exchange.default.collect.ExchangeCollect")
        before = (COURSE / "grades.csv").read_bytes()
        refused = subprocess.run(["runuser", "-u", "instructor", "--", "env", "-i", f"PATH={VENV_BIN}:/usr/bin:/bin",
                                  "HOME=/home/instructor", f"COURSE_ROOT={COURSE}", "LANG=C.UTF-8",
                                  str(VENV_BIN / "nbgrader"), "autograde", ASSIGNMENT, "--student", "blake",
                                  "--force"], cwd=COURSE, capture_output=True, text=True, timeout=300)
        assert "would run learners' code unsealed as instructor" in refused.stdout + refused.stderr, refused.stderr[-3000:]
        assert (COURSE / "grades.csv").read_bytes() == before
        # nor removed: nbgrader deletes a failed (or, with --force, any) run's autograded folder, here the service's
        assert (COURSE / "autograded" / "blake" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").is_file()
        # formgrader's Release Feedback (nbgrader's release_feedback): ada's page, with her hand grade and the penalty
        # recomputed from it, replaces the one the service released at Submit; she fetches it again
        _as_instructor(str(VENV_BIN / "nbgrader"), "release_feedback", ASSIGNMENT, "--student", "ada")
        again = _step(url, fixture_path, "feedback", "ada")["text"]
        assert f"({late:g} of {AUTOGRADED + MANUAL_POINTS:g})" in again, again[:1500]
        log = log_path.read_text()
        assert "serve: ada/sharded_step: graded 11/11" in log and "serve: blake/sharded_step: graded" in log
        _a_term(url, fixture, fixture_path, log_path, hub)
        stop_leaves_nothing(hub, SRV, (*LEARNERS, "instructor", SECOND_GRADER))
    finally:
        _stop(hub, signal.SIGINT, 60)  # Ctrl-C, as at the terminal: the hub stops its proxy, service, servers
    print(f"hub ready {ready:.0f} s after `python -m grader hub`; whole test {time.monotonic() - began:.0f} s")


def _as(user: str, *argv: str) -> subprocess.CompletedProcess:
    """A command as ``user``, with the learners' environment and configuration, in their home."""
    home = pwd.getpwnam(user).pw_dir
    return subprocess.run(["runuser", "-u", user, "--", "env", "-i", f"PATH={VENV_BIN}:/usr/bin:/bin", f"HOME={home}",
                           f"JUPYTER_CONFIG_PATH={SRV / 'learner-config'}", "LANG=C.UTF-8", *argv], cwd=home,
                          capture_output=True, text=True, timeout=300)


ASK_SERVICE = ("import sys, urllib.error, urllib.request\ntry:\n    print(urllib.request.urlopen(sys.argv[1], "
               "timeout=60).status)\nexcept urllib.error.HTTPError as error:\n    print(error.code)")


def _hub_login(url: str, user: str, password: str, then: str) -> urllib.request.OpenerDirector:
    """A browser's session of ``user`` on the hub (its login form, its cookies), landed on ``then``."""
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))
    form = opener.open(f"{url}/hub/login", timeout=120).read().decode()
    xsrf = re.search(r'name="_xsrf" value="([^"]+)"', form)
    fields = {"username": user, "password": password, **({"_xsrf": xsrf.group(1)} if xsrf else {})}
    opener.open(f"{url}/hub/login?next={urllib.parse.quote(then)}", urllib.parse.urlencode(fields).encode(),
                timeout=300)
    return opener


def _two_courses(url: str, service_port: int, passwords: dict, log_path: Path, hub: subprocess.Popen) -> None:
    """The second course (``hub --course``): its grader releases sharded_step in it; ada (a learner of both) lists
    both courses' assignments, blake (of the first only) his course's alone and cannot enter the second's exchange
    folder; each course's grader is refused by the other's grading service (403) and files, and the first course's
    instructor by the second's formgrader (403), which its own grader opens on its own gradebook."""
    deadline = time.monotonic() + 300
    while log_path.read_text().count("serve: watching") < 2:  # both courses' services
        assert hub.poll() is None and time.monotonic() < deadline, log_path.read_text()[-4000:]
        time.sleep(0.5)
    _as_instructor(str(VENV_BIN / "nbgrader"), "release_assignment", ASSIGNMENT, "--force", course=SECOND_ROOT,
                   user=SECOND_GRADER)
    listed = {name: (lambda done: done.stdout + done.stderr)(_as(name, str(VENV_BIN / "nbgrader"), "list"))
              for name in LEARNERS}
    assert f"{FIRST_ID} {ASSIGNMENT}" in listed["ada"] and f"{SECOND_ID} {ASSIGNMENT}" in listed["ada"], listed
    assert f"{FIRST_ID} {ASSIGNMENT}" in listed["blake"] and SECOND_ID not in listed["blake"], listed
    exchange = EXCHANGE / SECOND_ID
    for user, path in (("blake", exchange), ("blake", exchange / "inbound" / "blake+sharded_step+1"),
                       ("instructor", exchange / "inbound"), ("instructor", SECOND_ROOT / "gradebook.db"),
                       ("instructor", SECOND_ROOT / "source"), (SECOND_GRADER, COURSE / "gradebook.db"),
                       (SECOND_GRADER, EXCHANGE / FIRST_ID / "inbound")):
        tried = _as(user, str(VENV_BIN / "python"), "-c", "import os, sys; p = sys.argv[1]; "
                    "os.mkdir(p) if p.endswith('+1') else (os.listdir(p) if os.path.isdir(p) else open(p, 'rb'))", path)
        assert "PermissionError" in tried.stderr, (user, path, tried.stdout, tried.stderr[-500:])
    answers = {(user, port): _as(user, str(VENV_BIN / "python"), "-c", ASK_SERVICE,
                                 f"http://127.0.0.1:{port}/duedates").stdout.strip()
               for user, port in (("ada", service_port + 1), ("blake", service_port + 1), ("ada", service_port),
                                  ("instructor", service_port + 1), (SECOND_GRADER, service_port))}
    assert answers == {("ada", service_port + 1): "200", ("blake", service_port + 1): "403", ("ada", service_port): "200",
                       ("instructor", service_port + 1): "403", (SECOND_GRADER, service_port): "403"}, answers
    theirs = f"/user/{SECOND_GRADER}/formgrader/api/assignments"
    grader = _hub_login(url, SECOND_GRADER, passwords[SECOND_GRADER], f"/hub/spawn?next={urllib.parse.quote(theirs)}")
    while True:  # the second course's grader: their server, on their course's gradebook
        try:
            assignments = json.loads(grader.open(f"{url}{theirs}", timeout=120).read())
            break
        except (urllib.error.HTTPError, ValueError):
            assert hub.poll() is None and time.monotonic() < deadline + 300, log_path.read_text()[-4000:]
            time.sleep(2)
    assert ASSIGNMENT in json.dumps(assignments), assignments
    instructor = _hub_login(url, "instructor", passwords["instructor"], "/hub/home")
    with pytest.raises(urllib.error.HTTPError) as refused:
        instructor.open(f"{url}{theirs}", timeout=120)
    assert refused.value.code == 403, refused.value


def _decisions(log_path: Path, name: str) -> int:
    return log_path.read_text().count(f"serve: {name}/{ASSIGNMENT}: ")


def _next_decision(log_path: Path, name: str, before: int, hub: subprocess.Popen) -> str:
    """The service's line for the learner's next submission, once it has decided it."""
    deadline = time.monotonic() + 240
    while _decisions(log_path, name) <= before:
        assert hub.poll() is None and time.monotonic() < deadline, log_path.read_text()[-4000:]
        time.sleep(0.5)
    return [ln for ln in log_path.read_text().splitlines() if f"serve: {name}/{ASSIGNMENT}: " in ln][-1]


def _row(name: str, table: str = "grades.csv", key: str = "student_id") -> dict:
    with (COURSE / table).open(newline="") as handle:
        return next(row for row in csv.DictReader(handle) if row[key] == name)


def _a_term(url: str, fixture: dict, fixture_path: Path, log_path: Path, hub: subprocess.Popen) -> None:
    """The rest of a term, on the same hub: blake's written answer graded by hand, then rewritten in a later (late)
    Submit that counts (the hand grade held out of it, everywhere); an upload that is not a notebook (not graded, no
    attempt used, blake told why); the same notebook once more (nothing changes); ada's regrade request from the
    Assignment List's page, answered "fixed" by the instructor, the test graded again as root, the answer in her
    next page; and formgrader's totals equal to grades.csv's and the Canvas file's, with the history explaining blake's."""
    def step(name: str, user: str, **changes) -> dict:
        fixture.update(changes)
        fixture_path.write_text(json.dumps(fixture))
        return _step(url, fixture_path, name, user)

    python = str(VENV_BIN / "python")
    step("grade", "instructor", manual={"student": "blake", "cell": MANUAL_CELL, "points": 0.5})
    _as_instructor(python, "-m", "grader", "report", "--out", str(COURSE))
    assert float(_row("blake")["manual_score"]) == 0.5

    # blake's whole notebook again, late: every test and a rewritten written answer. It counts (9.9 after the
    # penalty against 0), and his 0.5 belongs to the answer he replaced: held out, to be graded again.
    solved = json.loads(json.dumps(fixture["answers"]["ada"]))
    before = _decisions(log_path, "blake")
    step("resubmit", "blake", answers={**fixture["answers"], "blake": solved})
    assert " graded 11/11" in _next_decision(log_path, "blake", before, hub)
    page = step("feedback", "blake", pages={"blake": 2})["text"]
    assert "This attempt is the one that counts now: 11 / 11 autograded points - 1.1 for lateness" in page, page[:1500]
    assert f"Your written answer ({MANUAL_CELL}) is not the one your instructor graded by hand" in page
    _as_instructor(python, "-m", "grader", "report", "--out", str(COURSE))
    _as_instructor(python, "-m", "grader", "export", "--canvas", "canvas.csv")
    row = _row("blake")
    assert (row["score"], row["manual_score"], row["total_score"]) == ("11", "", ""), row  # 0.5 not carried over
    assert _row("40102", "canvas.csv", "ID")[ASSIGNMENT] == ""

    # an upload that is not a notebook: not graded, and none of blake's attempts is used (the
    # third, next, is graded)
    before = _decisions(log_path, "blake")
    step("resubmit", "blake", unreadable={"blake": "this is not a notebook"})
    assert " invalid_notebook " in _next_decision(log_path, "blake", before, hub)
    page = step("feedback", "blake", pages={"blake": 3})["text"]
    assert "could not be read as the assignment's notebook" in page and "uses none of your graded attempts" in page

    # the same notebook once more, later: graded, and the attempt that counts is still the one before
    before = _decisions(log_path, "blake")
    step("resubmit", "blake", unreadable={})
    assert " graded 11/11" in _next_decision(log_path, "blake", before, hub)
    page = step("feedback", "blake", pages={"blake": 4})["text"]
    assert "The one that counts now is your attempt of" in page, page[:1500]

    ledger = Ledger(COURSE / "service" / "ledger").attempts("blake", ASSIGNMENT)
    assert [(a.graded, a.status) for a in ledger] == [(True, "graded")] * 2 + [(False, "invalid_notebook"),
                                                                              (True, "graded")]
    assert counting(Policy(), ledger) is ledger[1]  # the rewritten answer's attempt, before its identical copy

    # ada asks about test-update from the Assignment List's "ask for a regrade" page (axe-core finds nothing there);
    # the instructor answers "fixed" and grades it again as root
    asked = step("appeal", "ada", appeal={"ada": {"test": "test-update",
                                                  "reason": "<b>my</b> update \x1b[31m is right"}})
    assert "Your request about test-update is recorded" in asked["said"], asked
    assert "&lt;b&gt;" not in asked["listed"] and asked["violations"] == [], asked
    listed = _as_instructor(python, "-m", "grader", "appeals")
    appeal_id = listed.split()[0]
    assert "test-update" in listed and "<b>my</b> update" in listed and "\x1b" not in listed, listed
    _as_instructor(python, "-m", "grader", "appeals", "answer", appeal_id, "fixed", "--note", "Corrected for everyone")
    regraded = subprocess.run([python, "-m", "grader", "grade", "--out", str(COURSE), "--test", "test-update",
                               "--why", f"appeal {appeal_id}"], cwd=COURSE, capture_output=True, text=True, timeout=600)
    assert regraded.returncode == 0 and "test-update graded again on 2 notebook(s)" in regraded.stdout, regraded
    page = step("feedback", "ada", expect={"ada": "Your regrade request about test-update"})["text"]
    assert "has been fixed" in page and "Corrected for everyone" in page, page[:2000]

    # the totals agree: formgrader's column, grades.csv and the Canvas file; blake's history says why
    step("grade", "instructor", manual={"student": "blake", "cell": MANUAL_CELL, "points": 1.5})
    _as_instructor(python, "-m", "grader", "report", "--out", str(COURSE))
    _as_instructor(python, "-m", "grader", "export", "--canvas", "canvas.csv")
    staff = step("formgrader", "instructor")
    assert staff["ours"] == [], staff["ours"]  # axe-core: the course's notice and columns in formgrader's page
    # axe-core: the hub's login page, as the course configures it (grader/hub/templates/login.html)
    assert [v for v in staff["login"] if v["impact"] in ("critical", "serious")] == [], staff["login"]
    for name, lms in (("ada", "40101"), ("blake", "40102")):
        total = float(_row(name)["total_score"])
        assert staff["cells"][name]["total"] == f"{round(total, 2):g} / 13", (name, staff["cells"])
        assert float(_row(lms, "canvas.csv", "ID")[ASSIGNMENT]) == pytest.approx(total)
    assert float(_row("blake")["total_score"]) == pytest.approx(11 + 1.5 - 0.1 * 12.5)
    told = _as_instructor(python, "-m", "grader", "history", "blake")
    assert "held_out" in told and "invalid_notebook" in told and "by instructor" in told, told
    assert f"counts now: {ASSIGNMENT}/{ASSIGNMENT}.ipynb: {11 + 1.5 - 0.1 * 12.5:g} of 13" in told, told


def stop_leaves_nothing(hub: subprocess.Popen, srv: Path, accounts: tuple[str, ...]) -> None:
    """Ctrl-C stops the hub (exit 0, within 60 s) and leaves nothing: no process of its tree (proxy, grading
    service, culler), of its session, of the class's accounts, or started for its class folders elsewhere (the
    grading service's Dask workers in Slurm jobs name its certificates there), and no scratch folder or mount of
    the grading kernels (``grader.sandbox.scratch`` marks each with its grader's pid)."""
    from grader.sandbox import scratch

    tree = _descendants(hub.pid)
    assert any(f"--exchange\0{srv}/exchange".encode() in _cmdline(pid) for pid in tree), "no grading service"
    for pid in _pids():
        if str(srv).encode() in _cmdline(pid):
            tree |= _descendants(pid)
    marks = [f for f in Path(tempfile.gettempdir()).iterdir() if f.name.startswith(scratch.PREFIXES)
             and (f / scratch.OWNER).exists() and int((f / scratch.OWNER).read_text().split()[0]) in tree]
    began = time.monotonic()
    hub.send_signal(signal.SIGINT)
    hub.wait(timeout=90)
    took = time.monotonic() - began
    uids = {pwd.getpwnam(name).pw_uid for name in accounts}
    deadline = time.monotonic() + 30  # a Slurm job's processes end within its KillWait after the hub cancelled it
    while (left := _processes_of(uids, tree, hub.pid)) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not left, [_cmdline(pid).replace(b"\0", b" ").decode(errors="replace")[:200] for pid in left]
    mounts = Path("/proc/mounts").read_text()
    assert not [f for f in marks if f.exists() or str(f) in mounts], marks
    assert hub.returncode == 0 and took < 60, (hub.returncode, took)
    print(f"the hub stopped in {took:.1f} s and left nothing ({len(marks)} scratch folders removed)")


def _processes_of(uids: set[int], tree: set[int], session: int) -> list[int]:
    """Running processes of these accounts, of this process tree or of this session (zombies are not running: this
    machine's PID 1 is no init and reaps no orphan)."""
    found = []
    for pid in _pids():
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
            if stat[stat.rindex(")") + 2] != "Z" and (pid in tree or os.getsid(pid) == session
                                                       or os.stat(f"/proc/{pid}").st_uid in uids):
                found.append(pid)
        except (OSError, ValueError):
            continue
    return found


def _pids() -> list[int]:
    """Every process of the machine, by pid (as /proc lists them now)."""
    return [int(name) for name in os.listdir("/proc") if name.isdigit()]


def _descendants(root: int) -> set[int]:
    parents = {}
    for pid in _pids():
        try:
            parents[pid] = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
    tree, grown = {root}, True
    while grown:
        more = {pid for pid, parent in parents.items() if parent in tree} - tree
        tree |= more
        grown = bool(more)
    return tree


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def test_a_second_hub_on_the_machine_keeps_the_accounts_passwords(tmp_path, monkeypatch):
    """Accounts are the machine's: a hub on another class folder (the tests', say) must not change the passwords a
    running class logs in with. No account is touched here: the account commands are recorded, not run."""
    from grader.hub import accounts

    ran = []
    monkeypatch.setattr(accounts, "_run", lambda *argv, stdin=None: ran.append((argv[0], stdin)))
    monkeypatch.setattr(accounts.os, "chmod", lambda *a, **k: None)
    machine = tmp_path / "etc" / "passwords.txt"
    wanted = [accounts.Account("root", ("jdt-test",))]
    first = accounts.ensure(wanted, (tmp_path / "class").mkdir() or tmp_path / "class" / "passwords.txt", machine)
    assert [c for c in ran if c[0] == "chpasswd"] == [("chpasswd", f"root:{first['root']}\n")]
    ran.clear()
    second = accounts.ensure(wanted, (tmp_path / "tests").mkdir() or tmp_path / "tests" / "passwords.txt", machine)
    assert second == first and not [c for c in ran if c[0] == "chpasswd"]
    assert accounts.read_passwords(tmp_path / "tests" / "passwords.txt") == first  # the class folder's copy


def _configured(tmp_path: Path, monkeypatch, argv: list[str], **settings_too):
    """JupyterHub's configuration (grader/hub/jupyterhub_config.py) as the hub would load it for ``hub ARGV`` (and
    the settings ``settings_too`` as well: the courses of ``hub --course``, say)."""
    from traitlets.config import Config

    from grader.cli import build_parser
    from grader.hub.start import _slurm_settings

    args = build_parser().parse_args(["hub", *argv])
    settings = {"ip": "127.0.0.1", "port": 1, "hub_port": 2, "proxy_api_port": 3, "service_port": 4, "workers": None,
                "venv": "/v", "course": "/c", "exchange": "/e", "course_id": "x", "state": "/s", "learner_config": "/l",
                "proxy": "/p", "instructor": "i", "groups": {"learners": "a", "graders": "b", "instructors": "c"},
                "spawner": args.spawner, "cull_idle": args.cull_idle, "slurm": _slurm_settings(args),
                "grading_jobs": args.grading_jobs, "lms": str(args.lms) if args.lms else None,
                "site_address": args.site_address,
                "public_tls": [str(args.ssl_cert), str(args.ssl_key)] if args.ssl_cert else None, **settings_too}
    (tmp_path / "settings.json").write_text(json.dumps(settings))
    monkeypatch.setenv("COURSE_HUB_SETTINGS", str(tmp_path / "settings.json"))
    config = Config()
    source = ROOT / "grader" / "hub" / "jupyterhub_config.py"
    exec(compile(source.read_text(), str(source), "exec"), {"get_config": lambda: config, "__file__": str(source)})
    return config


def test_the_hubs_configuration_follows_its_options(tmp_path, monkeypatch):
    """The options of ``python -m grader hub`` reach JupyterHub: the spawner, each server's Slurm job, the culler (and
    the activity it needs), the grading service's Slurm jobs and the address they reach it at."""
    local = _configured(tmp_path, monkeypatch, ["--cull-idle", "0"])
    assert local.JupyterHub.spawner_class == "localprocess"
    assert [service["name"] for service in local.JupyterHub.services] == ["grading"]
    assert "--slurm-workers" not in local.JupyterHub.services[0]["command"]
    assert "--lms" not in local.JupyterHub.services[0]["command"]
    lms = _configured(tmp_path, monkeypatch, ["--lms", "/srv/site/lms.toml"])
    assert lms.JupyterHub.services[0]["command"][-2:] == ["--lms", "/srv/site/lms.toml"]
    slurm = _configured(tmp_path, monkeypatch, ["--spawner", "slurm", "--slurm-memory", "2G", "--cull-idle", "600",
                                                "--grading-jobs", "2", "--grading-scheduler-host", "10.0.0.5"])
    assert slurm.JupyterHub.spawner_class == "grader.slurm.spawner.CourseSlurmSpawner"
    assert (slurm.SlurmSpawner.req_memory, slurm.SlurmSpawner.req_partition) == ("2G", "course")
    culler = next(s for s in slurm.JupyterHub.services if s["name"] == "idle-culler")
    assert "--timeout=600" in culler["command"] and slurm.JupyterHub.last_activity_interval == 100
    assert "--MappingKernelManager.cull_idle_timeout=300" in slurm.Spawner.args
    assert slurm.JupyterHub.services[0]["command"][-8:] == ["--slurm-workers", "2", "--tls-dir", "/s/grading-tls",
                                                            "--slurm-partition", "course", "--scheduler-host",
                                                            "10.0.0.5"]


def test_every_address_between_hosts_follows_the_site_address(tmp_path, monkeypatch):
    """``hub --site-address``: what servers on other hosts reach (the hub's API, the grading service over HTTPS with
    the course's CA, the grading jobs' scheduler) is on the site's address, and nothing on loopback is handed to
    them; without it, everything stays on this machine's loopback, over plain http."""
    here = _configured(tmp_path, monkeypatch, ["--spawner", "slurm", "--grading-jobs", "1"])
    assert here.JupyterHub.hub_bind_url == "http://127.0.0.1:2"
    assert here.Spawner.environment["COURSE_GRADING_URL"] == "http://127.0.0.1:4/"
    assert "COURSE_GRADING_CA" not in here.Spawner.environment and "--host" not in here.JupyterHub.services[0]["command"]
    assert here.JupyterHub.services[0]["command"][-1] == "127.0.0.1"  # the scheduler
    site = _configured(tmp_path, monkeypatch, ["--spawner", "slurm", "--grading-jobs", "1", "--site-address", "10.0.0.9"])
    assert site.JupyterHub.hub_bind_url == "https://10.0.0.9:2" and "internal_ssl" not in here.JupyterHub
    assert site.JupyterHub.internal_ssl and site.JupyterHub.trusted_alt_names == ["IP:10.0.0.9"]
    assert site.Spawner.environment["COURSE_GRADING_URL"] == "https://10.0.0.9:4/"
    assert site.Spawner.environment["COURSE_GRADING_CA"] == "/site-ca.pem"  # beside the state folder (/s)
    command = site.JupyterHub.services[0]["command"]
    assert command[command.index("--host"):command.index("--host") + 6] == [
        "--host", "10.0.0.9", "--tls-cert", "/s/site-tls/cluster.pem", "--tls-key", "/s/site-tls/cluster-key.pem"]
    assert command[-1] == "10.0.0.9"  # the grading jobs' scheduler, where the nodes reach it
    assert not [value for value in site.Spawner.environment.values() if "127.0.0.1" in value]


def test_learners_open_the_hub_over_https_unless_it_stays_on_loopback(tmp_path, monkeypatch):
    """``--ssl-cert``/``--ssl-key``: the proxy serves the site's certificate and learners open https://; a hub on an
    address other hosts reach without them refuses to start, saying what to give (passwords never cross in clear)."""
    from grader.hub.install import HubRefused
    from grader.hub.start import _public_url

    with pytest.raises(HubRefused, match="--ssl-cert FILE --ssl-key FILE"):
        _public_url("0.0.0.0", 8000, None)
    with pytest.raises(HubRefused, match="is not a file"):
        _public_url("10.0.0.9", 443, (tmp_path / "missing.pem", tmp_path / "missing.key"))
    assert _public_url("127.0.0.1", 8000, None) == "http://127.0.0.1:8000"
    (tmp_path / "site.pem").write_text("chain")
    (tmp_path / "site.key").write_text("key")
    assert _public_url("10.0.0.9", 443, (tmp_path / "site.pem", tmp_path / "site.key")) == "https://10.0.0.9:443"
    config = _configured(tmp_path, monkeypatch, ["--ssl-cert", str(tmp_path / "site.pem"), "--ssl-key",
                                                 str(tmp_path / "site.key")])
    assert (config.JupyterHub.ssl_cert, config.JupyterHub.ssl_key) == (str(tmp_path / "site.pem"),
                                                                       str(tmp_path / "site.key"))
    assert config.JupyterHub.bind_url == "https://127.0.0.1:1"


def test_each_server_gets_a_token_that_only_names_its_user_for_the_grading_service(tmp_path, monkeypatch):
    """The grading service tells who asks from the hub's word on ``COURSE_GRADING_TOKEN`` (grader.service.identity):
    each server start mints one for its user whose only scope is their name (whoever catches it opens nothing of
    theirs), and a hub that cannot mint one still starts the server (the service then goes by the connection)."""
    import logging
    import types

    config = _configured(tmp_path, monkeypatch, ["--cull-idle", "0"])
    minted = []

    def spawner(mint):
        user = types.SimpleNamespace(name="no-such-account-here", new_api_token=mint)
        return types.SimpleNamespace(user=user, environment=dict(config.Spawner.environment),
                                     log=logging.getLogger("test"))

    ada = spawner(lambda **kw: minted.append(kw) or "t0ken")
    config.Spawner.pre_spawn_hook(ada)
    assert ada.environment["COURSE_GRADING_TOKEN"] == "t0ken" and "COURSE_GRADING_URL" in ada.environment
    assert minted[0]["scopes"] == ["read:users:name!user"] and minted[0]["expires_in"] > 0
    broken = spawner(lambda **kw: 1 / 0)
    config.Spawner.pre_spawn_hook(broken)
    assert "COURSE_GRADING_TOKEN" not in broken.environment and "COURSE_GRADING_URL" in broken.environment
    assert "COURSE_GRADING_TOKEN" not in config.Spawner.environment  # one server's token is not every server's
