"""Attacks on the grading service (``python -m grader serve``) by a learner on the shared server.

Each test performs one attack and fails while the hole it names exists. The service is built with a pool that
records tasks instead of grading them (no kernel starts), so the tests are cheap; the one that needs a separate
process for the service (descriptor exhaustion) is marked slow.
"""
from __future__ import annotations

import contextlib
import getpass
import io
import json
import os
import pwd
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import types
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from grader.layout import Course
from grader.service import app, exchange, routes
from grader.term import attempts
from grader.term.attempts import Policy
from grader.submission.pipeline import Settings
from test_service import _submission

ROOT = Path(__file__).resolve().parents[1]


class RecordingPool:
    """Stands in for the warm kernels: a submission handed to the pool is recorded, not graded."""

    def __init__(self, course, settings, workers):
        self.tasks = []

    def submit(self, task):
        self.tasks.append(task)

    def waiting(self) -> int:
        return 0

    def close(self) -> None:
        pass


def _service(tmp_path: Path, monkeypatch, **options) -> app.Service:
    monkeypatch.setattr(app, "Pool", RecordingPool)
    opts = app.Options(exchange=tmp_path / "exchange", course_id="course", out=tmp_path / "out",
                       policy=options.pop("policy", Policy()), port=None, **options)
    return app.Service(Course.default(), opts, Settings(out=tmp_path / "out"))


def _inbound(tmp_path: Path) -> Path:
    return tmp_path / "exchange" / "course" / "inbound"


def _quiet_scan(service: app.Service) -> int:
    with contextlib.redirect_stderr(io.StringIO()):
        return service.scan()


# --- the inbound folder is checked once and then read by its path ------------------------------------------------

def test_a_folder_swapped_for_a_link_after_it_was_checked_is_not_read_through_the_link(tmp_path, monkeypatch):
    """``arrivals`` lstats the folder (a real folder, the learner's own), then ``secret`` and ``copy_notebook`` open
    ``folder/submission_secret.txt`` and ``folder/sharded_step.ipynb`` by path, where only the last component is
    opened with O_NOFOLLOW. A learner who swaps their folder for a symlink between those reads (inotify on their own
    submission_secret.txt tells them when the service read it; a blind renameat2(RENAME_EXCHANGE) loop wins about
    one graded attempt in three, and the lost tries are refused at no cost) makes the service, as root, copy any
    ``sharded_step.ipynb`` on the machine (another learner's home, the instructor's source with the solutions),
    grade it under the learner's name and release its feedback to them."""
    service = _service(tmp_path, monkeypatch)
    private = tmp_path / "home" / "victim" / "sharded_step"
    private.mkdir(parents=True)
    (private / "sharded_step.ipynb").write_text('{"victim": "private work"}')
    os.chmod(private / "sharded_step.ipynb", 0o600)
    mine = _submission(_inbound(tmp_path), getpass.getuser())
    read_secret = exchange.secret

    def secret_then_swap(arrival):
        found = read_secret(arrival)
        if arrival.folder == mine and not mine.is_symlink():  # the attacker's move, right after the secret was read
            os.rename(mine, tmp_path / "parked")
            os.symlink(private, mine)
        return found

    monkeypatch.setattr(exchange, "secret", secret_then_swap)
    _quiet_scan(service)
    copied = [task.job.folder / "sharded_step.ipynb" for task in service.pool.tasks]
    stolen = [path for path in copied if path.is_file() and "private work" in path.read_text()]
    assert not stolen, f"the service copied another account's notebook through a swapped link: {stolen}"


# --- /validate: a judging slot is taken before the body is read ------------------------------------------------

def test_two_slow_validate_clients_do_not_lock_every_learner_out(monkeypatch):
    """The handler acquires one of the two judging slots and only then reads ``Content-Length`` bytes of body,
    each read waiting up to the 10 s socket timeout. Two connections that announce a large body and send one byte
    every few seconds hold both slots indefinitely; every other learner's Validate waits 5 s and gets 503."""

    from grader.service import validation

    monkeypatch.setattr(validation, "handle", lambda course, body: (200, {"ok": True}))
    fake = types.SimpleNamespace(course=Course.default(), status=lambda: {})
    server = routes.Server(("127.0.0.1", 0), routes.handler(fake))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    slow = []
    stop = threading.Event()
    try:
        for _ in range(routes.VALIDATE_AT_ONCE):
            client = socket.create_connection(("127.0.0.1", port))
            client.sendall(b"POST /validate HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n{"
                           % (routes.MAX_REQUEST_BYTES // 2))
            slow.append(client)

        def trickle():
            while not stop.wait(3):
                for client in slow:
                    with contextlib.suppress(OSError):
                        client.sendall(b" ")

        threading.Thread(target=trickle, daemon=True).start()
        time.sleep(0.5)
        request = urllib.request.Request(f"http://127.0.0.1:{port}/validate", data=b"{}")
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                code = response.status
        except urllib.error.HTTPError as error:
            code = error.code
        assert code == 200, f"an honest Validate got {code} while two slow clients held the judging slots"
    finally:
        stop.set()
        for client in slow:
            client.close()
        server.shutdown()


# --- idle connections exhaust the service's descriptors --------------------------------------------------------

_SERVICE_CHILD = textwrap.dedent("""
    import resource, sys, threading, time
    from pathlib import Path
    resource.setrlimit(resource.RLIMIT_NOFILE, ({limit}, {limit}))
    sys.path.insert(0, {tests!r})
    from http.server import ThreadingHTTPServer
    from grader.layout import Course
    from grader.service import app, routes
    from grader.term.attempts import Policy
    from grader.submission.pipeline import Settings
    from test_service_attacks import RecordingPool
    app.Pool = RecordingPool
    tmp = Path({tmp!r})
    options = app.Options(exchange=tmp / "exchange", course_id="course", out=tmp / "out", policy=Policy(), port=None)
    service = app.Service(Course.default(), options, Settings(out=tmp / "out"))
    server = routes.Server(("127.0.0.1", 0), routes.handler(service))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    print(server.server_address[1], flush=True)
    while not service.pool.tasks:
        service.scan()
        time.sleep(0.25)
    print("GRADED", flush=True)
""")


@pytest.mark.slow
def test_idle_connections_do_not_exhaust_the_services_descriptors_and_stop_grading(tmp_path):
    """``ThreadingHTTPServer`` accepts every connection (a thread and a descriptor each, no cap), and the 10 s
    timeout is per read, so a client that sends one header byte every few seconds stays forever. A learner who holds
    as many connections as the service's descriptor limit (1024 by default; 256 here, to keep the test small) leaves
    it none: ``os.scandir`` of the inbound folder fails, ``arrivals`` returns nothing (the OSError is swallowed, no
    log), and no learner's submission is graded until the attacker lets go."""
    limit = 256
    child = _SERVICE_CHILD.format(limit=limit, tests=str(ROOT / "tests"), tmp=str(tmp_path))
    env = dict(os.environ, PYTHONPATH=f"{ROOT}{os.pathsep}{ROOT / 'tests'}")
    service = subprocess.Popen([sys.executable, "-c", child], stdout=subprocess.PIPE, text=True, cwd=ROOT, env=env)
    held: list[socket.socket] = []

    def keep_alive():
        for client in list(held):
            try:
                client.sendall(b"X")
            except OSError:
                held.remove(client)
                client.close()

    try:
        port = int(service.stdout.readline())
        started = last = time.monotonic()
        while len(held) < limit + 20 and time.monotonic() - started < 60:
            with contextlib.suppress(OSError):
                client = socket.create_connection(("127.0.0.1", port), timeout=2)
                client.sendall(b"GET /status HTTP/1.1\r\nX-Pad: ")
                held.append(client)
            time.sleep(0.01)
            if time.monotonic() - last > 2:
                keep_alive()
                last = time.monotonic()
        _submission(_inbound(tmp_path), getpass.getuser())
        waited = time.monotonic()
        while time.monotonic() - waited < 15 and service.poll() is None:
            keep_alive()
            time.sleep(2)
        graded = service.poll() is not None
        assert graded, (f"{len(held)} idle loopback connections left the service no descriptor: an honest submission "
                        "was not graded within 15 s")
    finally:
        for client in held:
            client.close()
        service.kill()
        service.wait(timeout=30)


# --- the ledger: another learner's name, and a write per junk folder ---------------------------------------------

def test_a_folder_another_account_owns_is_not_written_into_the_named_learners_ledger(tmp_path, monkeypatch):
    """A folder named ``victim+sharded_step+...`` that the attacker's account owns is refused (right), but the
    refusal is recorded in the victim's own ledger file: anyone can grow another learner's ledger without bound,
    and the victim's next graded page says "attempt 1001 of sharded_step" after 1000 such folders."""
    service = _service(tmp_path, monkeypatch)
    victim = "victim"  # no Unix account of that name owns the folders below
    for _ in range(3):
        _submission(_inbound(tmp_path), victim)
    _quiet_scan(service)
    assert service.ledger.attempts(victim, "sharded_step") == [], (
        "refusals of folders the victim does not own were recorded in the victim's ledger")


def test_junk_folders_cost_linear_ledger_writes(tmp_path, monkeypatch):
    """Each refused folder rewrites its (student, assignment) ledger file in full, in the scan loop that grades
    everyone: N junk folders under one name write O(N^2) bytes (measured: 400 folders, 63 MB, 2.2 s; 10,000 folders
    would take the loop tens of minutes, during which no submission is decided)."""
    service = _service(tmp_path, monkeypatch)
    written = [0]
    append = attempts._append

    def counted(path, row):
        written[0] += len(json.dumps(row))
        append(path, row)

    monkeypatch.setattr(attempts, "_append", counted)
    inbound = _inbound(tmp_path)
    folders = 300
    for n in range(folders):
        (inbound / f"{getpass.getuser()}+no_such_assignment+t+{n:06d}").mkdir()
    _quiet_scan(service)
    assert written[0] < folders * 2000, (f"{folders} junk folders made the service write {written[0]:,} bytes of "
                                         "ledger: every refusal rewrites the whole file")


# --- a folder that never finishes arriving ----------------------------------------------------------------------

def test_a_folder_dated_in_the_future_without_a_secret_is_decided_after_the_grace_period(tmp_path, monkeypatch):
    """A folder without ``submission_secret.txt`` is taken for one still being copied while its mtime is under
    ``SUBMIT_GRACE_S`` old; ``age`` clamps a future mtime to 0, so ``touch -d 2036-01-01`` keeps the folder
    "arriving" forever: it is re-read on every scan (each such folder costs every scan an lstat and an open, for
    ever), and ``serve --once`` never returns."""
    monkeypatch.setattr(app, "SUBMIT_GRACE_S", 1.0)
    service = _service(tmp_path, monkeypatch)
    folder = _submission(_inbound(tmp_path), getpass.getuser())
    (folder / "submission_secret.txt").unlink()
    future = time.time() + 10 * 365 * 86400
    os.utime(folder, (future, future))
    _quiet_scan(service)
    time.sleep(2.0)
    _quiet_scan(service)
    assert folder.name in service.known, "the folder is still taken for one being written, past the grace period"
    assert not service.still_arriving(), "serve --once would wait for this folder forever"


# --- the exchange's own folders are trusted without a check -----------------------------------------------------

@pytest.mark.skipif(os.geteuid() != 0, reason="the attack is on a service running as root")
def test_a_feedback_link_in_a_course_folder_a_learner_owns_is_not_followed(tmp_path, monkeypatch):
    """The exchange root is world-writable (1777, as nbgrader asks), so a learner can create ``{exchange}/{course}``
    before the instructor does (or own it after a clean-up). The service never checks who owns the course folder or
    whether ``feedback`` is a link: ``ensure_feedback_dir`` runs ``chmod 0755`` through the link and ``release``
    writes pages into its target, as root, anywhere on the machine."""
    private = tmp_path / "root-only"
    private.mkdir()
    os.chmod(private, 0o700)
    course = tmp_path / "exchange" / "course"
    (course / "inbound").mkdir(parents=True)
    os.chmod(course / "inbound", 0o733)
    os.chown(course, 65534, 65534)  # the learner's folder (nobody's, here)
    (course / "feedback").symlink_to(private)
    try:
        service = _service(tmp_path, monkeypatch)
        _submission(course / "inbound", "nobody")  # refused: root owns it; its page is released
        _quiet_scan(service)
    except Exception:  # noqa: BLE001 - refusing to run on such an exchange is a fix too
        pass
    assert oct(private.stat().st_mode & 0o777) == "0o700", "the service chmodded a folder through a link"
    assert not list(private.iterdir()), "the service wrote a page through a link, outside the exchange"


def test_a_folder_the_service_cannot_decide_does_not_stop_the_others_and_is_tried_again(tmp_path, monkeypatch):
    """A failure while deciding one folder (a full disk, a file that vanished mid-copy) is said in the log and the
    scan goes on: every other learner's submission is still taken. The folder is tried again on the next scans, its
    place among the learner's pending attempts given back meanwhile (a full disk cost no attempt), and taken once the
    disk has room; one that keeps failing is left for the instructor's collect after ``DECIDE_TRIES`` scans."""
    service = _service(tmp_path, monkeypatch, policy=Policy(1, 24.0))
    first = _submission(_inbound(tmp_path), getpass.getuser(), "sharded_step")
    second = _submission(_inbound(tmp_path), getpass.getuser(), "collectives")
    copy, full = exchange.copy_notebook, {"disk": True}

    def failing(opened, *args):
        if opened.folder == first and full["disk"]:
            raise OSError(28, "No space left on device")
        return copy(opened, *args)

    monkeypatch.setattr(exchange, "copy_notebook", failing)
    log = io.StringIO()
    with contextlib.redirect_stderr(log):
        service.scan()
    assert "No space left on device" in log.getvalue() and f"tried again next (1 of {app.DECIDE_TRIES})" in log.getvalue()
    assert len(service.pool.tasks) == 1 and second.name in service.known and first.name not in service.known
    assert not any(service.pending.get((getpass.getuser(), "sharded_step"), []))  # no attempt taken by the failure
    full["disk"] = False
    _quiet_scan(service)  # room again: taken, within the one attempt the policy allows
    assert len(service.pool.tasks) == 2 and first.name in service.known

    stuck = _submission(_inbound(tmp_path), getpass.getuser(), "local_mean_diagnosis")
    monkeypatch.setattr(exchange, "copy_notebook", lambda *a: (_ for _ in ()).throw(OSError(5, "I/O error")))
    for _ in range(app.DECIDE_TRIES - 1):
        _quiet_scan(service)
        assert stuck.name not in service.known
    with contextlib.redirect_stderr(log):
        service.scan()
    assert stuck.name in service.known and "left in the exchange for the instructor's own collect" in log.getvalue()


LEARNER_UIDS = (61901, 61902)  # two accounts of their own (no name needed): the victim and the attacker
PLAIN_PYTHON = shutil.which("python3", path="/usr/bin:/bin") or sys.executable  # one every account may run

RENAME = """
import os, sys
inbound, victim = sys.argv[1], sys.argv[2]
try:
    os.rename(os.path.join(inbound, victim), os.path.join(inbound, "moved-away"))
    os.mkdir(os.path.join(inbound, victim))  # and a folder of the attacker's own under the victim's name
    print("REPLACED")
except OSError as error:
    print("REFUSED", type(error).__name__)
"""


def test_a_learner_cannot_replace_another_learners_submission_folder(tmp_path):
    """Learners may create folders in ``inbound`` but not list it; one who learns another's folder name (it is the
    learner's id, the assignment, a time and a random string) could, without the sticky bit, rename it away and
    put a folder of their own under that name: the grader would then grade the attacker's notebook as the victim's.
    Each learner runs as an account of their own here, as on the hub."""
    if os.geteuid() != 0:
        pytest.skip("needs root, to act as two accounts")
    base = Path(tempfile.mkdtemp(dir="/tmp"))
    try:
        os.chmod(base, 0o755)
        exchange.prepare(base / "exchange", "course")
        inbound = base / "exchange" / "course" / "inbound"
        victim, attacker = LEARNER_UIDS
        name = "ada+sharded_step+2026-12-06 12:00:00.000000 UTC+AbCdEfGh"
        made = subprocess.run([PLAIN_PYTHON, "-c", "import os, sys; os.mkdir(sys.argv[1])", str(inbound / name)],
                              user=victim, capture_output=True, text=True, timeout=60)
        assert made.returncode == 0, made.stderr
        done = subprocess.run([PLAIN_PYTHON, "-c", RENAME, str(inbound), name], user=attacker,
                              capture_output=True, text=True, timeout=60)
        assert "REFUSED PermissionError" in done.stdout, done.stdout + done.stderr
        assert os.stat(inbound / name).st_uid == victim and not (inbound / "moved-away").exists()
        assert os.stat(inbound).st_mode & stat.S_ISVTX  # the sticky bit is why
        # the learners themselves still submit: the victim may replace a folder of their own
        own = subprocess.run([PLAIN_PYTHON, "-c", RENAME, str(inbound), name], user=victim,
                             capture_output=True, text=True, timeout=60)
        assert "REPLACED" in own.stdout, own.stdout + own.stderr
    finally:
        shutil.rmtree(base, ignore_errors=True)


# --- a flood of folders from one account ------------------------------------------------------------------------

FLOODER, LEARNER = "daemon", "nobody"  # accounts every Debian machine has; the learner's name sorts after the flood's
FLOOD = 20_000


def _flood(inbound: Path) -> None:
    uid = pwd.getpwnam(FLOODER).pw_uid
    for n in range(FLOOD):  # empty: each waits out SUBMIT_GRACE_S for a secret that never comes, then is refused
        folder = inbound / f"{FLOODER}+sharded_step+2026-12-01 10:00:00.000000 UTC+{n:05d}"
        folder.mkdir()
        os.chown(folder, uid, -1)


@pytest.mark.skipif(os.geteuid() != 0, reason="two accounts own the folders: chown needs root")
def test_a_flood_of_folders_from_one_account_neither_holds_back_another_nor_grows_a_scan(tmp_path, monkeypatch):
    """20,000 empty folders from one account: every scan looked at (and ``lstat``-ed) all of them, four times a
    second, and a learner whose name sorts after the flooder's waited behind them. Now each scan looks at no more
    than ``MAX_PER_SCAN`` folders, in turns across accounts, and a folder is ``lstat``-ed once."""
    service = _service(tmp_path, monkeypatch)
    inbound = _inbound(tmp_path)
    _flood(inbound)
    looked, lstats, take, lstat = [0], [0], service.take, os.lstat
    monkeypatch.setattr(service, "take", lambda arrival, now: looked.append(arrival.name) or take(arrival, now))
    monkeypatch.setattr(exchange.os, "lstat", lambda path, *a, **k: (
        lstats.append(path) if str(path).startswith(str(inbound)) else None) or lstat(path, *a, **k))
    for turn in range(3):
        mine = _submission(inbound, LEARNER)
        os.chown(mine, pwd.getpwnam(LEARNER).pw_uid, -1)
        looked[:], lstats[:] = [], []
        _quiet_scan(service)
        assert [task.job.student_id for task in service.pool.tasks] == [LEARNER] * (turn + 1)  # in the first scan
        assert len(looked) <= app.MAX_PER_SCAN, f"one scan looked at {len(looked)} folders"
        if turn:
            assert lstats == [mine], f"{len(lstats)} folders lstat-ed again"
        monkeypatch.setattr(app, "SUBMIT_GRACE_S", 0.0)  # from now on the flood's folders are refused, in turns
    assert service.decided[FLOODER] > 0


SERVE_UNDER_FLOOD = textwrap.dedent('''
    import sys
    from pathlib import Path
    from grader.layout import Course
    from grader.service import app, commands
    from grader.term.attempts import Policy
    from grader.submission.pipeline import Settings
    class Pool:  # no kernels: the loop, the refusals and the stop are what is measured
        def __init__(self, *args): pass
        def submit(self, task): pass
        def waiting(self): return 0
        def close(self): pass
    app.Pool, app.SUBMIT_GRACE_S = Pool, 0.5
    tmp = Path(sys.argv[1])
    options = app.Options(exchange=tmp / "exchange", course_id="course", out=tmp / "out", port=None,
                          policy=Policy())
    sys.exit(commands.serve(Course.default(), options, Settings(out=tmp / "out")))
''')


@pytest.mark.skipif(os.geteuid() != 0, reason="two accounts own the folders: chown needs root")
def test_ctrl_c_stops_the_service_within_ten_seconds_under_a_flood(tmp_path):
    """The service's loop with 20,000 waiting folders from one account: Ctrl-C (SIGINT) stops it, exit status 0,
    within 10 s, while it refuses them."""
    exchange.prepare(tmp_path / "exchange", "course")  # as the service makes it
    _flood(_inbound(tmp_path))
    err = tmp_path / "serve.err"
    with err.open("w") as stream:
        service = subprocess.Popen([sys.executable, "-c", SERVE_UNDER_FLOOD, str(tmp_path)], cwd=ROOT,
                                   stderr=stream, stdout=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while err.read_text().count("refused") < 50:  # well into the flood
            assert service.poll() is None and time.monotonic() < deadline, err.read_text()[-2000:]
            time.sleep(0.2)
        began = time.monotonic()
        service.send_signal(signal.SIGINT)
        status = service.wait(timeout=30)
        took = time.monotonic() - began
    finally:
        service.kill()
    assert status == 0 and took <= 10, (status, took, err.read_text()[-2000:])


# --- whose a request is: the connection's own account, never a later look at the socket table ---------------------

def _send_and_close(port: int, count: int, token: str, uid: int | None) -> None:
    """The attack: ``count`` requests (regrade requests and readings of answers, with ``token``), each connection
    closed as soon as its request is sent; from account ``uid`` (a child process) where given."""
    body = b'{"assignment": "sharded_step", "test": "test-update", "reason": "in someone else\'s name"}'
    auth = b"Authorization: token %s\r\n" % token.encode() if token else b""

    def flood() -> None:
        for n in range(count):
            client = socket.create_connection(("127.0.0.1", port), timeout=10)
            if n % 2:
                client.sendall(b"GET /appeals HTTP/1.1\r\nHost: x\r\n" + auth + b"\r\n")
            else:
                client.sendall(b"POST /appeal HTTP/1.1\r\nHost: x\r\n" + auth
                               + b"Content-Length: %d\r\n\r\n" % len(body) + body)
            client.close()  # at once: the service finds an orphaned socket, which the kernel lists as root's

    if uid is None:
        return flood()
    child = os.fork()
    if child == 0:  # pragma: no cover - the child's exit status says whether it sent everything
        status = 1
        try:
            os.setgid(uid)
            os.setuid(uid)
            flood()
            status = 0
        finally:
            os._exit(status)
    assert os.waitstatus_to_exitcode(os.waitpid(child, 0)[1]) == 0, "the attacker's flood failed"


def _wait_until_orphaned(port: int, within_s: float = 5.0) -> None:
    """Until every client end of a connection to ``port`` is an orphan in FIN_WAIT2, which the kernel lists as
    root's (a FIN is acknowledged within a retransmission, about 0.2 s): what the attacker waits for."""
    waited = time.monotonic()
    while time.monotonic() - waited < within_s:
        with open("/proc/net/tcp", encoding="ascii") as table:
            states = [line.split()[3] for line in table if line.split()[2].endswith(f":{port:04X}")]
        if all(state == "05" for state in states):
            return
        time.sleep(0.05)


def _other_account() -> int | None:
    """The attacker's account: another one than root's where the test runs as root (nobody), else the test's own."""
    if os.geteuid() != 0:
        return None
    try:
        return pwd.getpwnam("nobody").pw_uid
    except KeyError:
        pytest.skip("no account 'nobody' to attack from")


def _victim_name() -> str:
    return "root" if os.geteuid() != 0 else "nobody"


@contextlib.contextmanager
def _appeals_service(tmp_path: Path, monkeypatch, tls=None):
    """The service's routes, not yet serving, whose ``appeals`` record the account each request was attributed to
    (``asked``), and a fake JupyterHub whose ``/hub/api/user`` knows three tokens: ``own`` (this process's account),
    ``victim`` (another account) and ``service`` (a service's, no user's)."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from grader.service import appeals

    asked: list[tuple[str, int | None]] = []
    monkeypatch.setattr(appeals, "request", lambda out, uid, body: (asked.append(("request", uid)) or
                                                                     (200, {"id": "a1", "said": "recorded"})))
    monkeypatch.setattr(appeals, "mine", lambda out, uid: (asked.append(("mine", uid)) or (200, {"appeals": []})))
    models = {"own": {"kind": "user", "name": pwd.getpwuid(os.geteuid()).pw_name},
              "victim": {"kind": "user", "name": _victim_name()}, "service": {"kind": "service", "name": "grading"}}

    class FakeHub(BaseHTTPRequestHandler):
        def do_GET(self):
            said = (self.headers.get("Authorization") or "").split()
            model = models.get(said[1]) if len(said) == 2 and self.path.endswith("/user") else None
            body = json.dumps(model or {"status": 403, "message": "not a token"}).encode()
            self.send_response(200 if model else 403)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    hub = ThreadingHTTPServer(("127.0.0.1", 0), FakeHub)
    threading.Thread(target=hub.serve_forever, daemon=True).start()
    monkeypatch.setenv("JUPYTERHUB_API_URL", f"http://127.0.0.1:{hub.server_address[1]}/hub/api")
    monkeypatch.setenv("JUPYTERHUB_API_TOKEN", "the-grading-services-own-token")
    fake = types.SimpleNamespace(course=Course.default(), status=lambda: {},
                                 options=types.SimpleNamespace(out=tmp_path))
    server = routes.Server(("127.0.0.1", 0), routes.handler(fake), tls=tls)
    serving: list[threading.Thread] = []

    def serve() -> None:
        serving.append(threading.Thread(target=server.serve_forever, daemon=True))
        serving[-1].start()

    try:
        yield server, asked, serve
    finally:
        if serving:
            server.shutdown()
        server.server_close()
        hub.shutdown()


def _call(port: int, method: str, path: str, token: str | None = None) -> tuple[int, dict]:
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method,
                                     data=b'{"assignment": "sharded_step", "test": "t", "reason": "r"}'
                                     if method == "POST" else None,
                                     headers={"Authorization": f"token {token}"} if token else {})
    try:
        with urllib.request.urlopen(request, timeout=20) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_requests_sent_and_closed_at_once_are_never_attributed_to_root(tmp_path, monkeypatch):
    """The routes read the peer's account from ``/proc/net/tcp`` when they handle the request. A client that sends
    its request and closes at once leaves an orphaned socket, listed as uid 0: its regrade request (``POST
    /appeal``), its reading of answers (``GET /appeals``) and its connection count went to root. Here the attacker's
    requests wait in the listen queue until they are closed (what a flood does to some of them: 3 of 8 before), and
    carry another learner's token too; none of them may be attributed to any account but the attacker's own."""
    attacker = _other_account()
    with _appeals_service(tmp_path, monkeypatch) as (server, asked, serve):
        port = server.server_address[1]
        _send_and_close(port, 4, "victim", attacker)
        _wait_until_orphaned(port)
        serve()
        assert _call(port, "GET", "/status") == (200, {})  # accepted after the four: the queue is in order
        waited = time.monotonic()
        while server.owners and time.monotonic() - waited < 10:  # each connection's thread has finished
            time.sleep(0.05)
        # and a live flood, answered while it arrives
        _send_and_close(port, 12, "", attacker)
        waited = time.monotonic()
        while server.owners and time.monotonic() - waited < 10:
            time.sleep(0.05)
        theirs = os.geteuid() if attacker is None else attacker
        wrong = [(route, uid) for route, uid in asked if uid != theirs]
        assert not wrong, (f"requests sent and closed at once were attributed to other accounts than the sender's "
                           f"(uid {theirs}): {wrong}")
        assert _call(port, "GET", "/appeals") == (200, {"appeals": []}) and asked[-1] == ("mine", os.geteuid())


def test_a_request_with_no_token_or_another_accounts_is_not_taken_in_anyone_elses_name(tmp_path, monkeypatch):
    """Under JupyterHub the service asks the hub whose the token a request carries is. A learner who sends another
    learner's token (read from a shared notebook, or a leaked one), a service's token, or a forged one, is refused
    and nothing is recorded; a learner with no token is taken as the account that connected, never as another."""
    with _appeals_service(tmp_path, monkeypatch) as (server, asked, serve):
        serve()
        port, me = server.server_address[1], os.geteuid()
        for token in ("victim", "service", "forged"):
            for method, path in (("POST", "/appeal"), ("GET", "/appeals")):
                code, said = _call(port, method, path, token)
                assert code == 403 and "error" in said, (token, path, code, said)
        assert asked == [], f"a request with another account's, a service's or a forged token was taken: {asked}"
        assert _call(port, "POST", "/appeal", "own")[0] == 200 and _call(port, "GET", "/appeals")[0] == 200
        assert asked == [("request", me), ("mine", me)]


def test_a_server_on_another_host_is_known_by_the_hubs_word_on_its_token(tmp_path, monkeypatch):
    """Learners' servers on other hosts (their own network namespaces) have no entry in this machine's socket table:
    their account is the token's user, as the hub says; without a valid token they are refused, not guessed."""
    from grader.service import identity

    with _appeals_service(tmp_path, monkeypatch):
        hub = identity.hub()
        remote = "host 10.0.0.5"
        assert identity.account(remote, {"Authorization": "token own"}, hub) == (os.geteuid(), 0, "")
        victim = pwd.getpwnam(_victim_name()).pw_uid
        assert identity.account(remote, {"Authorization": "token victim"}, hub)[0] == victim
        for headers in ({}, {"Authorization": "token forged"}, {"Authorization": "token service"}):
            uid, code, why = identity.account(remote, headers, hub)
            assert (uid, code) == (None, 403) and why, headers
        # a socket gone at accept, on this machine: refused whatever it carries (a stolen token, sent so)
        assert identity.account(identity.UNKNOWN, {"Authorization": "token own"}, hub)[:2] == (None, 403)
        assert identity.account(identity.UNKNOWN, {}, None)[:2] == (None, 403)
