"""One learner's session on the hub, as their browser would drive it: ``benchmarks/hub_load.py`` runs N of these at once.

Log in through the hub's login form (PAM), start the server and wait until it is ready, fetch the assignment in the
Assignment List (nbgrader's handler), put the solved notebook in place (the learner's work), start a kernel and run
the notebook's code cells one by one over its websocket (each cell timed from its ``execute_request`` to its reply),
Validate (the course's handler), Submit, and ask the Assignment List until the feedback can be fetched, then fetch
it, and leave (the server stopped, as the culler would). Each step's seconds go into the ``Session``; a failed step is
recorded with its error and ends the session.
"""
from __future__ import annotations

import json
import os
import pwd
import shutil
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import requests
import websocket

COURSE = "jax-distributed-training"


@dataclass
class Session:
    name: str
    server_start: float | None = None
    cells: list[float] = field(default_factory=list)
    validate: float | None = None
    validated: str = ""  # Validate's answer (its dialog's JSON)
    feedback: float | None = None
    reconnects: int = 0  # websockets the server closed under load, opened again as JupyterLab does
    memory_mb: float | None = None
    failed: str | None = None


def run(url: str, name: str, password: str, assignment: str, solved: Path, lesson_done) -> Session:
    """The whole session; ``lesson_done(name)`` is called once the cells ran (the driver reads memory then)."""
    session = Session(name)
    try:
        http = _login(url, name, password)
        started = time.monotonic()
        http.post(f"{url}/hub/api/users/{name}/server")
        _until(lambda: http.get(f"{url}/hub/api/users/{name}").json().get("servers", {}).get("", {}).get("ready"),
               600, "the server did not become ready")
        session.server_start = time.monotonic() - started
        server = f"{url}/user/{name}"
        form = {"course_id": COURSE, "assignment_id": assignment}
        _ok(http.post(f"{server}/assignments/fetch", data=form), "fetch")
        home = Path(pwd.getpwnam(name).pw_dir)
        target = home / assignment / f"{assignment}.ipynb"
        shutil.copy(solved, target)  # the learner's work: the solved notebook
        shutil.chown(target, name, name)
        session.cells = _run_cells(http, url, name, solved, session)
        lesson_done(name)
        began = time.monotonic()
        validated = http.post(f"{server}/assignments/validate", data={"path": f"{assignment}/{assignment}.ipynb"})
        _ok(validated, "validate")
        session.validate, session.validated = time.monotonic() - began, validated.text[:4000]
        began = time.monotonic()
        _ok(http.post(f"{server}/assignments/submit", data=form), "submit")

        def feedback_ready() -> bool:
            listed = http.get(f"{server}/assignments", params={"course_id": COURSE}).json()
            entries = listed.get("value", []) if isinstance(listed, dict) else []
            return any(e.get("status") == "submitted" and e.get("assignment_id") == assignment
                       and any(s.get("has_exchange_feedback") for s in e.get("submissions", [])) for e in entries)

        _until(feedback_ready, 900, "no feedback")
        _ok(http.post(f"{server}/assignments/fetch_feedback", data=form), "fetch_feedback")
        session.feedback = time.monotonic() - began
        http.delete(f"{url}/hub/api/users/{name}/server")
    except Exception as error:  # noqa: BLE001 - one learner's failure is a result, not the benchmark's end
        session.failed = f"{type(error).__name__}: {error}"[:300]
    return session


def _login(url: str, name: str, password: str) -> requests.Session:
    http = requests.Session()
    http.get(f"{url}/hub/login")
    xsrf = http.cookies.get("_xsrf")
    answer = http.post(f"{url}/hub/login?next=", allow_redirects=False,
                       data={"username": name, "password": password, "_xsrf": xsrf})
    if answer.status_code not in (302, 303):
        raise RuntimeError(f"login: HTTP {answer.status_code}")
    http.headers["X-XSRFToken"] = http.cookies.get("_xsrf") or xsrf
    token = http.post(f"{url}/hub/api/users/{name}/tokens", json={"expires_in": 7200}).json()["token"]
    http.headers.update({"Authorization": f"token {token}"})
    return http


def _run_cells(http: requests.Session, url: str, name: str, notebook: Path, session: Session) -> list[float]:
    """Each code cell in turn, timed from its request to its reply. Where the server closes the websocket (a kernel
    slow to answer its first request under a start-up burst), it is opened again, as JupyterLab does, and the cell
    sent again, at most twice per cell; the cell's time includes the wait."""
    kernel = http.post(f"{url}/user/{name}/api/kernels", json={"name": "python3"}).json()["id"]
    socket_url = url.replace("https://", "wss://").replace("http://", "ws://") + \
        f"/user/{name}/api/kernels/{kernel}/channels"
    verify = http.verify if isinstance(http.verify, str) else os.environ.get("REQUESTS_CA_BUNDLE")  # the site's CA

    def connect():
        return websocket.create_connection(socket_url, header=[f"Authorization: {http.headers['Authorization']}"],
                                           timeout=600, sslopt={"ca_certs": verify} if verify else None)

    ws, took = connect(), []
    try:
        cells = [c for c in json.loads(notebook.read_text())["cells"] if c["cell_type"] == "code"]
        for cell in cells:
            began = time.monotonic()
            for attempt in range(3):
                try:
                    reply = _execute(ws, name, "".join(cell["source"]))
                    break
                except websocket.WebSocketConnectionClosedException:
                    if attempt == 2:
                        raise
                    session.reconnects += 1
                    ws.close()
                    ws = connect()
            took.append(time.monotonic() - began)
            if reply.get("status") != "ok":
                raise RuntimeError(f"cell {len(took)}: {reply.get('ename')}")
    finally:
        ws.close()
    return took


def _execute(ws, name: str, code: str) -> dict:
    msg_id = uuid.uuid4().hex
    ws.send(json.dumps({"header": {"msg_id": msg_id, "msg_type": "execute_request", "username": name,
                                   "session": msg_id, "version": "5.3"}, "parent_header": {}, "metadata": {},
                        "channel": "shell", "content": {"code": code, "silent": False}}))
    while True:
        message = json.loads(ws.recv())
        if message.get("msg_type") == "execute_reply" and message["parent_header"].get("msg_id") == msg_id:
            return message["content"]


def _ok(answer: requests.Response, what: str) -> None:
    if answer.status_code >= 400:
        raise RuntimeError(f"{what}: HTTP {answer.status_code} {answer.text[:200]}")


def _until(ready, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        if time.monotonic() > deadline:
            raise TimeoutError(what)
        time.sleep(1.0)


def memory_mb(user: str) -> float:
    """Proportional set size of every process of ``user``'s account (resident size where PSS is not reported)."""
    uid, total = pwd.getpwnam(user).pw_uid, 0
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if os.stat(f"/proc/{pid}").st_uid != uid:
                continue
            total += _kib(Path(f"/proc/{pid}/smaps_rollup"), "Pss:") or _kib(Path(f"/proc/{pid}/status"), "VmRSS:")
        except OSError:
            continue
    return total / 1024


def _kib(path: Path, key: str) -> int:
    try:
        for line in path.read_text().splitlines():
            if line.startswith(key):
                return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0
