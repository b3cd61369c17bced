"""What a newcomer meets when starting a lab: `make lab ARGS=...` reaches JupyterLab, and no news prompt.

Each test runs the real `make lab` / `make instructor` on a temporary copy of the course (COURSE_ROOT), with
Jupyter's own folders in tmp_path (so no personal setting hides or fakes the course's), and reads the
notification settings the way the JupyterLab page does: from the server's settings API.
"""
from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from test_workflow import _free_port, _get  # the same loopback helpers as the other server tests

ROOT = Path(__file__).resolve().parent.parent
NOTIFICATION = "@jupyterlab/apputils-extension:notification"
STOCK_SCHEMA = ROOT / ".venv" / "share" / "jupyter" / "lab" / "schemas" / "@jupyterlab" / "apputils-extension" / \
    "notification.json"


def _copy_course(dest: Path) -> Path:
    ignore = shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__", "figures")
    for folder in ("notebooks", "source", "lab"):
        shutil.copytree(ROOT / folder, dest / folder, ignore=ignore)
    shutil.copy2(ROOT / "nbgrader_config.py", dest / "nbgrader_config.py")
    return dest


def _stop(process: subprocess.Popen) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            break
        try:
            process.wait(timeout=20)
            break
        except subprocess.TimeoutExpired:
            continue


@pytest.mark.parametrize("target", ["lab", "instructor"])
def test_make_target_passes_server_options_and_jupyterlab_asks_no_news(tmp_path, target):
    # The stock default asks ("none": the "Would you like to get notified about official Jupyter news?" prompt).
    stock = json.loads(STOCK_SCHEMA.read_text())["properties"]
    assert stock["fetchNews"]["default"] == "none" and stock["checkForUpdates"]["default"] is True

    course = _copy_course(tmp_path / "course")
    home = tmp_path / "home"
    token, port = secrets.token_hex(16), _free_port()
    args = f"--no-browser --ip=127.0.0.1 --port={port} --ServerApp.port_retries=0 --IdentityProvider.token={token}"
    env = dict(os.environ, COURSE_ROOT=str(course), JUPYTER_CONFIG_DIR=str(home / "config"),
               JUPYTER_RUNTIME_DIR=str(home / "runtime"), JUPYTER_DATA_DIR=str(home / "data"),
               JUPYTERLAB_SETTINGS_DIR=str(home / "settings"), JUPYTERLAB_WORKSPACES_DIR=str(home / "workspaces"))
    log = tmp_path / f"{target}.log"
    with log.open("w") as out:
        # -o: never reinstall .venv from inside a test; the command itself is the Makefile's.
        process = subprocess.Popen(["make", "-o", ".venv/.installed-stamp", target, f"ARGS={args}"], cwd=ROOT,
                                   env=env, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                   start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while _get(f"{url}/api/status", token)[0] != 200:
            assert process.poll() is None, f"make {target} ARGS=... stopped:\n{log.read_text()[-3000:]}"
            assert time.monotonic() < deadline, f"make {target} did not serve on --port={port}:\n{log.read_text()[-3000:]}"
            time.sleep(0.5)
        status, body = _get(f"{url}/lab/api/settings/{NOTIFICATION}", token)
        assert status == 200, body[:500]
        served = json.loads(body)
        defaults = {name: spec.get("default") for name, spec in served["schema"]["properties"].items()}
        user = served.get("settings") or {}
        fetch_news, check_updates = user.get("fetchNews", defaults["fetchNews"]), \
            user.get("checkForUpdates", defaults["checkForUpdates"])
        assert fetch_news == "false", f"make {target}: JupyterLab's fetchNews is {fetch_news!r}; 'none' asks the newcomer"
        assert check_updates is False, f"make {target}: JupyterLab still checks for updates online"
        # A notebook's kernel, as the page starts and talks to it (REST, then the kernel's websocket): it runs code,
        # and the terminal shows no "Kernel is running over TCP without encryption" warning (CurveZMQ keys).
        assert _run_in_kernel(url, token, "print(6 * 7)") == "42\n"
        time.sleep(1)
        assert "without encryption" not in log.read_text(), log.read_text()[-3000:]
        if target == "lab":
            _submits_from_the_assignment_list(url, token, course)
    finally:
        _stop(process)


def _submits_from_the_assignment_list(url: str, token: str, course: Path) -> None:
    """The tutorial's one-machine path, through the Assignment List's own API (what its page calls): the three
    assignments are listed as downloaded, and Submit puts the learner's copy in the exchange's inbound folder."""
    course_id = "jax-distributed-training"
    status, body = _get(f"{url}/assignments?course_id={course_id}", token)
    assert status == 200, body[:500]
    listed = {a["assignment_id"]: a["status"] for a in json.loads(body)["value"]}
    assert listed == {a: "fetched" for a in ("collectives", "local_mean_diagnosis", "sharded_step")}, listed
    request = urllib.request.Request(f"{url}/assignments/submit", method="POST",
                                     data=json.dumps({"course_id": course_id, "assignment_id": "sharded_step"}).encode(),
                                     headers={"Authorization": f"token {token}", "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=120) as response:
        answer = json.loads(response.read())
    assert answer.get("success") is True, answer
    inbound = list((course / "exchange" / course_id / "inbound").iterdir())
    assert len(inbound) == 1 and "+sharded_step+" in inbound[0].name, inbound
    assert (inbound[0] / "sharded_step.ipynb").is_file()


def _run_in_kernel(url: str, token: str, code: str) -> str:
    """Start a kernel through the server's REST API, run ``code`` over its websocket, return what it printed."""
    import asyncio
    import uuid

    from tornado.httpclient import HTTPRequest
    from tornado.websocket import websocket_connect

    request = urllib.request.Request(f"{url}/api/kernels", data=b"{}", method="POST",
                                     headers={"Authorization": f"token {token}", "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=120) as response:
        kernel = json.loads(response.read())["id"]

    async def run() -> str:
        socket_url = url.replace("http://", "ws://") + f"/api/kernels/{kernel}/channels"
        connection = await websocket_connect(HTTPRequest(socket_url, headers={"Authorization": f"token {token}"}))
        msg_id = uuid.uuid4().hex
        await connection.write_message(json.dumps({
            "header": {"msg_id": msg_id, "msg_type": "execute_request", "username": "test", "session": uuid.uuid4().hex,
                       "version": "5.3", "date": ""},
            "parent_header": {}, "metadata": {}, "channel": "shell",
            "content": {"code": code, "silent": False, "store_history": False, "user_expressions": {},
                        "allow_stdin": False}}))
        printed = ""
        while True:
            message = json.loads(await asyncio.wait_for(connection.read_message(), timeout=120))
            if message.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            if message["msg_type"] == "stream":
                printed += message["content"]["text"]
            elif message["msg_type"] == "status" and message["content"]["execution_state"] == "idle":
                connection.close()
                return printed

    return asyncio.run(run())
