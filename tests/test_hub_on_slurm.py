"""The class on a hub whose learners' servers are Slurm jobs (``python -m grader hub --spawner slurm``), and attacks by
one learner on another there.

One hub for the module, with its own class folders (``COURSE_HUB_SRV``, wiped first), started as a site starts it:
``make hub ARGS="--spawner slurm --site-address 10.77.0.1 --ssl-cert ... --ssl-key ... --roster canvas.csv"``, on
the one-machine Slurm of ``python -m grader slurm up --separate-hosts`` (the ``slurm`` fixture: a controller and two
nodes, each a host of its own in its own network namespace, reaching the head only at 10.77.0.1). Learners open the
hub over HTTPS with a certificate of the test's own CA, which every client here trusts alone; the hub's API, the
proxy and the servers on the nodes verify each other with JupyterHub's internal TLS, and the grading service answers
the nodes over HTTPS too. The class comes from a Canvas roster, with no course password: the test sets the learners'
own logins, as a site's directory holds them. In order:

* the class in Debian's Chromium: chen and dana log in through the hub's login page, each server a Slurm job under
  that learner's account (``squeue``, and ``/proc`` as the test reads them), fetch, save an answer and Submit in the
  Assignment List; the grading service grades both; each fetches their own feedback and nothing of the other's; a
  kernel in each job runs as its learner and gets PermissionError on the other's home, the course and the exchange;
  the instructor, whose server is a job too, sees both submissions in formgrader;
* the attacks (no browser): the victim (ada) acts through the hub's REST APIs with her own password, as her browser
  would; the attacker (blake) runs Python as his Unix account, which is what a learner's kernel can do;
* the idle culler: a kernel nobody uses stops after half the timeout, the idle server (its Slurm job) after it;
* the stop (Ctrl-C): no process of the hub or of a learner, no Slurm job, no mount or scratch folder of its grading
  service is left.
"""
from __future__ import annotations

import json
import os
import pwd
import secrets
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

import test_hub
from grader.slurm import hosts
from test_browser import ROOT, _setup_browser
from test_hub import (VENV_BIN, _as_instructor, _fresh_learner, _step, _stop, hub_prerequisites, start_hub,
                      stop_leaves_nothing)

SRV = Path("/srv/jax-course-slurm")
LEARNERS = ("ada", "blake", "chen", "dana")  # enrolled from a Canvas roster
ARTIFACTS = ROOT / "test-artifacts" / "hub-on-slurm"
CULL_IDLE = 60  # seconds: the hub's --cull-idle (kernels at half of it)

pytestmark = pytest.mark.slow


def _site_logins(names) -> dict[str, str]:
    """Each learner's password as the site's directory holds it: the machine's where it has one (set again, so the
    account and the file agree), a new one, kept there, where not."""
    from grader.hub import accounts

    known = accounts.read_passwords(accounts.MACHINE_PASSWORDS)
    logins = {name: known.get(name) or secrets.token_urlsafe(12) for name in names}
    subprocess.run(["chpasswd"], input="".join(f"{n}:{w}\n" for n, w in logins.items()), text=True, check=True)
    accounts.write_passwords(accounts.MACHINE_PASSWORDS, {**known, **logins})
    return logins


def _site_certificate(folder: Path) -> tuple[Path, Path, Path, str]:
    """The site's certificate for the hub's public address (127.0.0.1 here), from a CA of the test's own: (the chain
    the proxy serves, its key, the CA, the CA's key's SHA-256 as Chromium pins it)."""
    import base64
    import hashlib

    from cryptography import x509
    from cryptography.hazmat.primitives import serialization

    from grader.classroom.certs import make_certificates

    made = make_certificates(folder, ["127.0.0.1", "localhost"], force=True)
    chain = folder / "site-chain.pem"
    chain.write_bytes(made.cluster_cert.read_bytes() + made.ca.read_bytes())
    key = x509.load_pem_x509_certificate(made.ca.read_bytes()).public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return chain, made.cluster_key, made.ca, base64.b64encode(hashlib.sha256(key).digest()).decode()


@pytest.fixture(scope="module")
def hub(slurm, tmp_path_factory):
    hub_prerequisites()
    requests = pytest.importorskip("requests")
    pytest.importorskip("websocket")
    log_path = ARTIFACTS / "hub.log"
    chain, key, ca, pin = _site_certificate(tmp_path_factory.mktemp("site-tls"))
    # every client of the test trusts the site's CA, as a site's browsers and machines do: requests, websockets,
    # Node's fetch and Chromium (which trusts that CA alone besides the system's: tests/browser/common.mjs)
    trusted = {"REQUESTS_CA_BUNDLE": str(ca), "NODE_EXTRA_CA_CERTS": str(ca), "CHROMIUM_TRUSTED_SPKI": pin}
    saved = {name: os.environ.get(name) for name in trusted}
    os.environ.update(trusted)
    roster = chain.parent / "canvas-gradebook.csv"  # the class as Canvas exports it: no password comes with it
    roster.write_text("Student,ID,SIS User ID,SIS Login ID,Section\n    Points Possible,,,,\n" + "".join(
        f'"{name.title()}, Learner",{40101 + n},S{n},{name},A\n' for n, name in enumerate(LEARNERS)))
    process, url, service_port = start_hub(SRV, log_path, "--workers", "1", "--spawner", "slurm", "--cull-idle",
                                           str(CULL_IDLE), "--grading-jobs", "1", "--site-address", hosts.HEAD,
                                           "--ssl-cert", str(chain), "--ssl-key", str(key), "--roster", str(roster))
    assert url.startswith("https://")
    try:
        passwords = {}
        for line in (SRV / "hub" / "passwords.txt").read_text().splitlines():
            if ":" in line and not line.startswith("#"):
                name, word = line.split(":", 1)
                passwords[name] = word
        assert set(passwords) == {"instructor"}, "a learner enrolled from the LMS's roster got a course password"
        # the learners' own logins, as the site's directory holds them (the course gives them none): here the
        # machine's, which the other hubs of this machine use too (grader.hub.accounts.MACHINE_PASSWORDS)
        passwords.update(_site_logins(LEARNERS))
        yield Hub(url, passwords, requests, service_port, process, log_path)
    finally:
        _stop(process, signal.SIGINT, 60)  # Ctrl-C: the hub stops its proxy, service and servers
        for name, value in saved.items():
            os.environ.pop(name, None) if value is None else os.environ.__setitem__(name, value)


class Hub:
    def __init__(self, url: str, passwords: dict[str, str], requests, service_port: int, process, log_path: Path):
        self.url, self.passwords, self.requests, self.service_port = url, passwords, requests, service_port
        self.process, self.log_path = process, log_path
        self.tokens: dict[str, str] = {}

    def login(self, user: str) -> str:
        """Log in through the hub's login page (PAM), start the user's server, return an API token of theirs."""
        session = self.requests.Session()
        session.get(f"{self.url}/hub/login")
        xsrf = session.cookies.get("_xsrf")
        answer = session.post(f"{self.url}/hub/login?next=", allow_redirects=False,
                              data={"username": user, "password": self.passwords[user], "_xsrf": xsrf})
        assert answer.status_code in (302, 303), f"login as {user}: {answer.status_code}"
        session.headers["X-XSRFToken"] = session.cookies.get("_xsrf") or xsrf
        answer = session.post(f"{self.url}/hub/api/users/{user}/tokens", json={"expires_in": 3600})
        assert answer.status_code in (200, 201), answer.text
        token = answer.json()["token"]
        headers = {"Authorization": f"token {token}"}
        self.requests.post(f"{self.url}/hub/api/users/{user}/server", headers=headers)
        deadline = time.monotonic() + 240
        while not self.requests.get(f"{self.url}/hub/api/users/{user}", headers=headers).json().get(
                "servers", {}).get("", {}).get("ready"):
            assert time.monotonic() < deadline, f"{user}'s server did not start"
            time.sleep(0.5)
        return token

    def kernel(self, user: str, token: str) -> str:
        answer = self.requests.post(f"{self.url}/user/{user}/api/kernels", json={"name": "python3"},
                                    headers={"Authorization": f"token {token}"})
        assert answer.status_code == 201, answer.text
        return answer.json()["id"]

    def channels(self, user: str, token: str, kernel: str):
        import websocket

        ws_url = self.url.replace("https://", "wss://") + f"/user/{user}/api/kernels/{kernel}/channels"
        return websocket.create_connection(ws_url, header=[f"Authorization: token {token}"], timeout=60,
                                           sslopt={"ca_certs": os.environ["REQUESTS_CA_BUNDLE"]})


def _request(ws, user: str, channel: str, msg_type: str, content: dict, reply: str, timeout: float) -> dict | None:
    """Send one message on a kernel's websocket; its reply's content, or None when none came within ``timeout``."""
    import websocket

    msg_id = uuid.uuid4().hex
    ws.send(json.dumps({"header": {"msg_id": msg_id, "msg_type": msg_type, "username": user, "session": msg_id,
                                   "version": "5.3"}, "parent_header": {}, "metadata": {}, "channel": channel,
                        "content": content}))
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:  # short reads: the server's pings would restart a long one for ever
        ws.settimeout(min(2.0, max(0.1, deadline - time.monotonic())))
        try:
            message = json.loads(ws.recv())
        except websocket.WebSocketTimeoutException:
            continue
        if message.get("msg_type") == reply and message.get("parent_header", {}).get("msg_id") == msg_id:
            return message["content"]
    return None


def _as(user: str, code: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """Python as ``user``'s Unix account (what that learner's kernel can run), in the learners' environment."""
    return subprocess.run(["runuser", "-u", user, "--", "env", "-i", f"PATH={VENV_BIN}:/usr/bin:/bin",
                           f"HOME={pwd.getpwnam(user).pw_dir}", "LANG=C.UTF-8", str(VENV_BIN / "python"), "-c", code, *args],
                          cwd="/", capture_output=True, text=True, timeout=timeout)


def _processes() -> set[str]:
    return set(filter(str.isdigit, os.listdir("/proc")))


# A DAP client (the Debug Adapter Protocol debugpy speaks): every debugpy adapter the victim's processes run, as the
# victim's /proc/PID/cmdline shows it to every account, is asked to attach and evaluate an expression.
DAP_CLIENT = r'''
import json, os, socket, sys, time
victim, expression, before = sys.argv[1], sys.argv[2], set(sys.argv[3].split())
uid = __import__("pwd").getpwnam(victim).pw_uid
ports = []
for pid in filter(str.isdigit, os.listdir("/proc")):
    try:
        if pid in before or os.stat(f"/proc/{pid}").st_uid != uid:
            continue
        argv = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
    except OSError:
        continue
    if any(b"debugpy" in a for a in argv) and b"--port" in argv:
        ports.append(int(argv[argv.index(b"--port") + 1]))
found = {"adapters": ports, "results": []}
for port in ports:
    try:
        sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    except OSError as error:
        found["results"].append(repr(error)); continue
    buffer, seq = b"", 0
    def send(command, arguments=None):
        global seq
        seq += 1
        body = json.dumps({"seq": seq, "type": "request", "command": command, "arguments": arguments or {}}).encode()
        sock.sendall(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        return seq
    def wait(wanted, timeout=10.0):
        global buffer
        deadline = time.time() + timeout
        while time.time() < deadline:
            if b"\r\n\r\n" in buffer:
                head, rest = buffer.split(b"\r\n\r\n", 1)
                size = int(head.split(b":")[1])
                if len(rest) >= size:
                    buffer, message = rest[size:], json.loads(rest[:size])
                    if message.get("type") == "response" and message.get("request_seq") == wanted:
                        return message
                    continue
            sock.settimeout(max(0.1, deadline - time.time()))
            try:
                chunk = sock.recv(65536)
            except socket.timeout:
                return None
            if not chunk:
                return None
            buffer += chunk
    wait(send("initialize", {"clientID": "x", "adapterID": "python", "pathFormat": "path"}))
    attach = send("attach", {"justMyCode": False})
    wait(send("configurationDone"))
    wait(attach)
    answer = wait(send("evaluate", {"expression": expression, "context": "repl"}))
    found["results"].append(answer)
print("DAP " + json.dumps(found))
'''


# -- the class on Slurm, in the browser --------------------------------------------------------------------------------
CLASS = ("chen", "dana")
ASSIGNMENT = "sharded_step"


def _jobs() -> dict[str, tuple[str, str]]:
    """Running Slurm jobs by account, as ``squeue`` lists them: (job id, node)."""
    listed = subprocess.run(["squeue", "-h", "-t", "RUNNING", "-o", "%u %i %N"], capture_output=True, text=True)
    return {user: (job, node) for user, job, node in (line.split() for line in listed.stdout.splitlines())}


def _owned_by(user: str, word: str) -> list[int]:
    """Processes of ``user``'s account whose command line has ``word``."""
    uid, found = pwd.getpwnam(user).pw_uid, []
    for pid in _processes():
        try:
            if os.stat(f"/proc/{pid}").st_uid == uid and word.encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                found.append(int(pid))
        except OSError:
            continue
    return found


def _proxy_target(hub: Hub, user: str) -> str:
    """Where the hub's proxy sends ``user``'s server's requests (the hub's record of the server's URL)."""
    token = hub.login("instructor") if "instructor" not in hub.tokens else hub.tokens["instructor"]
    hub.tokens["instructor"] = token
    answer = hub.requests.get(f"{hub.url}/hub/api/proxy", headers={"Authorization": f"token {token}"})
    assert answer.status_code == 200, answer.text
    return next(route["target"] for path, route in answer.json().items() if path.startswith(f"/user/{user}/"))


def test_a_class_on_slurm_in_the_browser(hub, slurm):
    import certifi

    # the login page is HTTPS with the site's certificate: a client that does not trust the site's CA refuses it,
    # and nothing answers in clear on the hub's port
    with pytest.raises(hub.requests.exceptions.SSLError):
        hub.requests.get(f"{hub.url}/hub/login", verify=certifi.where(), timeout=30)
    with pytest.raises(hub.requests.exceptions.ConnectionError):
        hub.requests.get(hub.url.replace("https://", "http://") + "/hub/login", timeout=30)
    _setup_browser()
    course = SRV / "course"
    for name in CLASS:
        _fresh_learner(name)
    _as_instructor(str(VENV_BIN / "nbgrader"), "release_assignment", ASSIGNMENT, "--force", course=course)
    others = {CLASS[0]: CLASS[1], CLASS[1]: CLASS[0]}
    probe = test_hub.PROBE.replace(str(test_hub.SRV), str(SRV))  # the same probe, on this hub's folders
    fixture = {"passwords": hub.passwords, "assignment": ASSIGNMENT, "students": list(CLASS), "other": others,
               "answers": {name: json.loads((ROOT / "samples" / "submitted" / name / ASSIGNMENT /
                                             f"{ASSIGNMENT}.ipynb").read_text()) for name in CLASS},
               "probe": {name: probe.replace("{other}", other) for name, other in others.items()}}
    fixture_path = SRV / "hub" / "fixture.json"  # holds passwords: in the root-only state folder
    fixture_path.write_text(json.dumps(fixture))
    placed = {}
    for name in CLASS:
        assert _step(hub.url, fixture_path, "submit", name, hub.log_path)["submitted"] == 1
        # the learner's server is a Slurm job under the learner's account, and its processes are in that job
        job, node = _jobs()[name]
        servers = _owned_by(name, "jupyterhub-singleuser")
        assert servers, f"no server process of {name}'s: {_jobs()}"
        for pid in servers:
            assert f"/job_{job}/" in Path(f"/proc/{pid}/cgroup").read_text(), (name, job, pid)
        placed[name] = node
    # Slurm spreads the jobs (least-loaded node first): with the service's grading job, they use both nodes, each a
    # host of its own that reaches the head only at its site address; the hub reaches each server at its node's
    assert set(placed.values()) | {_jobs()["root"][1]} == set(slurm.nodes), (placed, _jobs())
    addresses = {h.name: h.address for h in hosts.hosts()}
    for name, node in placed.items():
        assert f"{addresses[node]}:" in _proxy_target(hub, name), (name, node)

    pages = {name: _step(hub.url, fixture_path, "feedback", name, hub.log_path) for name in CLASS}
    for name, other in others.items():
        text = pages[name]["text"]
        assert f"{ASSIGNMENT} · {name}" in text and "Autograded score:" in text and f"· {other}" not in text, text[:800]
        for route, answer in pages[name]["theirs"].items():  # the other learner's server, files, hub record
            assert answer["status"] != 200 and not answer["content"], (name, route, answer)
        checked = json.loads(pages[name]["probe"].strip().splitlines()[-1][len("PROBE "):])
        assert checked["uid"] == checked["euid"] == pwd.getpwnam(name).pw_uid  # the kernel runs as the learner
        assert len(checked["checks"]) == 10 and set(checked["checks"].values()) == {"PermissionError"}, checked
    # a regrade request from a node's server, over HTTPS to the service on the head's site address, in its name
    first = CLASS[0]
    fixture["appeal"] = {first: {"test": "test-update", "reason": "my update is right"}}
    fixture_path.write_text(json.dumps(fixture))
    asked = _step(hub.url, fixture_path, "appeal", first, hub.log_path)
    assert "Your request about test-update is recorded" in asked["said"], asked
    listed = _as_instructor(str(VENV_BIN / "python"), "-m", "grader", "appeals", course=course)
    assert first in listed and "test-update" in listed and "my update is right" in listed, listed
    log = hub.log_path.read_text()
    assert all(f"serve: {name}/{ASSIGNMENT}: graded" in log for name in CLASS)
    assert "root" in _jobs(), _jobs()  # graded on the service's Dask worker, a Slurm job of root's

    staff = _step(hub.url, fixture_path, "formgrader", "instructor", hub.log_path)
    assert all(name in staff["text"] for name in CLASS), staff["text"]
    assert "instructor" in _jobs()  # the instructor's server is a Slurm job too


def test_another_learner_cannot_attach_to_a_kernels_debugger(hub):
    """JupyterLab's debugger (the bug icon) makes the kernel start debugpy, whose adapter listens on a loopback TCP
    port with no authentication of clients; once the learner turns the debugger off (a DAP ``disconnect``), any
    account on the machine can attach and evaluate Python as that learner. The learner's server must not start it."""
    victim, attacker = "ada", "blake"
    secret = secrets.token_hex(16)
    home = Path(pwd.getpwnam(victim).pw_dir)
    (home / ".attack-secret").write_text(secret)
    shutil.chown(home / ".attack-secret", victim, victim)
    os.chmod(home / ".attack-secret", 0o600)
    before = _processes()  # adapters of other sessions of the victim's are not this test's
    token = hub.login(victim)
    kernel = hub.kernel(victim, token)
    ws = hub.channels(victim, token, kernel)
    try:
        assert _request(ws, victim, "shell", "kernel_info_request", {}, "kernel_info_reply", 120) is not None
        # What JupyterLab's debugger sends when the learner switches it on, then off.
        dap = {"type": "request", "seq": 1, "command": "initialize",
               "arguments": {"clientID": "jupyterlab", "adapterID": "python", "pathFormat": "path",
                             "linesStartAt1": True, "columnsStartAt1": True}}
        started = _request(ws, victim, "control", "debug_request", dap, "debug_reply", 30)
        for seq, command in ((2, "attach"), (3, "configurationDone"), (4, "disconnect")):
            if started is None:
                break
            _request(ws, victim, "control", "debug_request", {"type": "request", "seq": seq, "command": command,
                                                               "arguments": {}}, "debug_reply", 30)
        # The kernel still answers its own learner.
        ran = _request(ws, victim, "shell", "execute_request", {"code": "1", "silent": True}, "execute_reply", 60)
        assert ran is not None and ran["status"] == "ok"
    finally:
        ws.close()
    done = _as(attacker, DAP_CLIENT, victim, f"open({str(home / '.attack-secret')!r}).read()",
               " ".join(before))
    found = json.loads(next(ln for ln in done.stdout.splitlines() if ln.startswith("DAP "))[4:])
    assert secret not in done.stdout, f"{attacker} read {victim}'s file through her kernel's debugger: {found}"
    assert not found["adapters"], f"{victim}'s kernel runs a debugpy adapter on loopback TCP: {found}"


# Run as root in a private mount namespace whose /tmp is a fresh tmpfs (the machine's own lock folder, used by every
# grader here, is never touched): blake makes the lock folder first, with every lock file a link to a root-owned
# file; then the hub sets up its folders and, unless it refused, the grading service leases a sandbox uid.
def _as_learner(user: str, *argv: str) -> subprocess.CompletedProcess:
    """A command as the learner, in their home, with their server's environment (nbgrader reads the hub's config)."""
    home = pwd.getpwnam(user).pw_dir
    return subprocess.run(["runuser", "-u", user, "--", "env", "-i", f"PATH={VENV_BIN}:/usr/bin:/bin", f"HOME={home}",
                           "LANG=C.UTF-8", f"JUPYTER_CONFIG_PATH={SRV / 'learner-config'}", *argv],
                          cwd=home, capture_output=True, text=True, timeout=300)


def test_another_learner_cannot_read_feedback_pages(hub):
    """The service releases each page into the exchange's feedback folder under the hash of the submission's secret
    (nbgrader's name). The names hide nothing if learners can list the folder: every page names its learner (the
    title) and shows their score and outputs. ada submits and fetches her feedback; blake lists the folder and reads
    what he finds."""
    victim, attacker, assignment = "ada", "blake", "sharded_step"
    course = SRV / "course"
    release = subprocess.run(["runuser", "-u", "instructor", "--", "env", "-i", f"PATH={VENV_BIN}:/usr/bin:/bin",
                              "HOME=/home/instructor", f"COURSE_ROOT={course}", "LANG=C.UTF-8",
                              str(VENV_BIN / "nbgrader"), "release_assignment", assignment, "--force"],
                             cwd=course, capture_output=True, text=True, timeout=300)
    assert release.returncode == 0, release.stderr[-3000:]
    home = Path(pwd.getpwnam(victim).pw_dir)
    shutil.rmtree(home / assignment, ignore_errors=True)
    shutil.rmtree(home / ".local" / "share" / "jupyter" / "nbgrader_cache", ignore_errors=True)
    fetched = _as_learner(victim, "nbgrader", "fetch_assignment", assignment)
    assert fetched.returncode == 0, fetched.stderr[-3000:]
    shutil.copy(ROOT / "samples" / "submitted" / victim / assignment / f"{assignment}.ipynb", home / assignment)
    shutil.chown(home / assignment / f"{assignment}.ipynb", victim, victim)
    submitted = _as_learner(victim, "nbgrader", "submit", assignment)
    assert submitted.returncode == 0, submitted.stderr[-3000:]
    log = ARTIFACTS / "hub.log"
    deadline = time.monotonic() + 300
    while f"serve: {victim}/{assignment}: graded" not in log.read_text():
        assert time.monotonic() < deadline, log.read_text()[-3000:]
        time.sleep(0.5)
    mine = _as_learner(victim, "nbgrader", "fetch_feedback", assignment)  # the page still reaches its learner
    assert mine.returncode == 0, mine.stderr[-3000:]
    pages = list((home / assignment / "feedback").rglob("*.html"))
    assert pages and f"{assignment} · {victim}" in pages[0].read_text(), (mine.stdout, mine.stderr)

    feedback = SRV / "exchange" / "jax-distributed-training" / "feedback"
    done = _as(attacker, "import json, os, sys\n"
                         "found = {}\n"
                         "try:\n"
                         "    for name in os.listdir(sys.argv[1]):\n"
                         "        found[name] = open(os.path.join(sys.argv[1], name)).read()\n"
                         "except OSError as error:\n"
                         "    found['error'] = type(error).__name__\n"
                         "print('FEEDBACK ' + json.dumps(found))\n", str(feedback))
    found = json.loads(next(ln for ln in done.stdout.splitlines() if ln.startswith("FEEDBACK "))[9:])
    read = [name for name, text in found.items() if f"{assignment} · {victim}" in text]
    assert not read, f"{attacker} listed the feedback folder and read {victim}'s page: {read}"
    assert found == {"error": "PermissionError"}, found


HOLD = """
import socket, sys, time
held = []
for _ in range(int(sys.argv[2])):
    try:
        held.append(socket.create_connection((sys.argv[3], int(sys.argv[1])), timeout=5))
    except OSError:
        pass
print("HELD", len(held), flush=True)
time.sleep(30)
"""
STATUS = """
import ssl, sys, urllib.request
try:
    context = ssl.create_default_context(cafile=sys.argv[3])
    with urllib.request.urlopen(f"https://{sys.argv[2]}:{sys.argv[1]}/status", timeout=5, context=context) as answer:
        print("STATUS", answer.status)
except Exception as error:
    print("STATUS", type(error).__name__)
"""


def test_one_learner_cannot_shut_the_others_out_of_validate(hub):
    """The grading service's port (Validate's diagnoses, /status; here on the head's site address, over TLS) closes
    connections beyond 32 open at once.
    A learner who opens 40 and sends nothing (reconnecting as the service cuts them) leaves every other learner
    none: ada's request is closed unanswered."""
    from grader.service import routes

    attacker = subprocess.Popen(["runuser", "-u", "blake", "--", str(VENV_BIN / "python"), "-c", HOLD,
                                 str(hub.service_port), str(routes.CONNECTIONS_AT_ONCE + 8), hosts.HEAD],
                                cwd="/", stdout=subprocess.PIPE, text=True, start_new_session=True)
    try:
        line = attacker.stdout.readline()
        assert line.startswith("HELD"), line
        answer = _as("ada", STATUS, str(hub.service_port), hosts.HEAD, str(SRV / "site-ca.pem"), timeout=30).stdout
        assert "STATUS 200" in answer, f"blake's idle connections shut ada out of the grading service: {answer}"
    finally:
        os.killpg(attacker.pid, 9)
        attacker.wait()


def test_the_load_benchmarks_learner_session_runs_on_the_slurm_hub(hub):
    """``benchmarks/hub_load.py`` plays N of these sessions at once (docs/explanation/capacity.md); one here keeps it
    working: log in, the server (a Slurm job) started, fetch, the solved notebook's cells in a kernel over its
    websocket, Validate, Submit, the feedback fetched, the server stopped. Its times are not judged here."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import hub_learner

    solved = ROOT / "samples" / "submitted" / "ada" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    measured = {}
    session = hub_learner.run(hub.url, "ada", hub.passwords["ada"], ASSIGNMENT, solved,
                              lambda who: measured.setdefault(who, hub_learner.memory_mb(who)))
    assert session.failed is None, session.failed
    cells = [c for c in json.loads(solved.read_text())["cells"] if c["cell_type"] == "code"]
    assert len(session.cells) == len(cells) and session.validate and session.feedback and measured["ada"] > 50
    assert session.validated and "need the course's grading service" not in session.validated, session.validated
    deadline = time.monotonic() + 60
    while "ada" in _jobs() and time.monotonic() < deadline:  # scancel's job ends within seconds
        time.sleep(0.5)
    assert "ada" not in _jobs()  # the session left: its server's job ended

# -- the idle culler, then the stop ----------------------------------------------------------------------------------
def test_the_idle_culler_stops_an_idle_kernel_then_the_idle_server(hub):
    """jupyterhub-idle-culler, as the hub's service, with the test hub's --cull-idle: a kernel nobody uses stops after
    half of it (the server's own culling), the idle server, its Slurm job with it, after it. Watched from outside the
    server (its processes, the hub's record, squeue): a request through the proxy would be activity."""
    user = "ada"
    token = hub.login(user)
    kernel = hub.kernel(user, token)
    began = time.monotonic()
    headers = {"Authorization": f"token {token}"}
    kernel_gone = server_gone = None
    while server_gone is None:
        elapsed = time.monotonic() - began
        assert elapsed < CULL_IDLE + 90, (kernel_gone, hub.log_path.read_text()[-3000:])
        if kernel_gone is None and not _owned_by(user, kernel):
            kernel_gone = elapsed
        record = hub.requests.get(f"{hub.url}/hub/api/users/{user}", headers=headers).json()
        if not record.get("servers") and user not in _jobs() and not _owned_by(user, "jupyterhub-singleuser"):
            server_gone = elapsed
        time.sleep(1)
    assert kernel_gone is not None and CULL_IDLE / 2 - 2 <= kernel_gone < server_gone, (kernel_gone, server_gone)
    assert server_gone >= CULL_IDLE - 2, server_gone
    assert f"Culling server {user}" in hub.log_path.read_text()


def test_the_stop_leaves_nothing_behind(hub):
    """Ctrl-C with a learner's server running: the hub stops its proxy, its services (grading, culler) and every
    server (their Slurm jobs); nothing of it is left (``test_hub.stop_leaves_nothing``), and no job."""
    hub.login("blake")  # a server running at the stop
    stop_leaves_nothing(hub.process, SRV, ("ada", "blake", *CLASS, "instructor"))
    assert not subprocess.run(["squeue", "-h"], capture_output=True, text=True).stdout.strip()
