"""Nobody stuck at the start of a lab (issue 56, item 6): a kernel's channels cannot be taken by another process.

In the hub's load benchmark, under a start-up burst, one learner's kernel now and then never answered its server:
jupyter_server "Nudge"d it, closed the websocket after twice ``kernel_info_timeout`` (60 s: the handshake's
kernel_info wait, then the nudge), and every reopening ended the same way (3 x 120 s). Over TCP the server picks a
kernel's five ports (bind to port 0, close) seconds before the kernel binds them; under a burst another process can
take one in between. ipykernel 7.4 then raises, but when the port was IOPub's its process stays alive and serves
nothing, so jupyter_client's restarter (which only polls the process) never restarts it. The learner's configuration
(``lab/learner/jupyter_lab_config.py``) puts the kernels on Unix sockets in the runtime folder, named after the
kernel: nothing to take.

The kernel here is ipykernel behind a wrapper that, on TCP, takes its IOPub port first (what the burst did);
``kernel_info_timeout`` is 4 s so that the old configuration's stall shows in 3 x 8 s, not 3 x 120 s.
"""
from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from pathlib import Path

import pytest
from test_workflow import _free_port, _get

ROOT = Path(__file__).resolve().parent.parent
LEARNER_CONFIG = ROOT / "lab" / "learner"
KERNEL_INFO_TIMEOUT = 4

TAKES_IOPUB = '''import json, socket, sys
info = json.load(open(sys.argv[sys.argv.index("-f") + 1]))
held = []
if info["transport"] == "tcp":  # another process bound the IOPub port between the server's choice and the kernel's bind
    held.append(socket.socket())
    held[0].bind((info["ip"], info["iopub_port"]))
    held[0].listen()
from ipykernel.kernelapp import launch_new_instance
launch_new_instance()
'''


@pytest.fixture
def jupyter_dirs():
    """Jupyter's folders for one server, under a short path (a Unix socket's path holds at most 107 bytes)."""
    top = Path(tempfile.mkdtemp(prefix="kb", dir="/tmp"))
    spec = top / "data" / "kernels" / "python3"
    spec.mkdir(parents=True)
    (top / "takes_iopub.py").write_text(TAKES_IOPUB)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, str(top / "takes_iopub.py"), "-f", "{connection_file}"],
        "display_name": "Python 3 (ipykernel)", "language": "python",
        "metadata": {"supported_encryption": ["curve"]}}))
    (top / "work").mkdir()
    yield top
    shutil.rmtree(top, ignore_errors=True)


def test_a_kernel_whose_iopub_port_was_taken_stays_alive_and_never_answers(jupyter_dirs, monkeypatch):
    """The premise, on jupyter_client's own TCP kernel manager: the bind fails, the process stays (so no restart)."""
    from jupyter_client.manager import KernelManager

    monkeypatch.setenv("JUPYTER_PATH", str(jupyter_dirs / "data"))
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(jupyter_dirs / "rt"))
    manager, said = KernelManager(kernel_name="python3", transport="tcp"), jupyter_dirs / "kernel.log"
    with said.open("w") as out:
        manager.start_kernel(stdout=out, stderr=out)
    try:
        deadline = time.monotonic() + 60
        while "Address already in use" not in said.read_text():
            assert manager.is_alive() and time.monotonic() < deadline, said.read_text()[-2000:]
            time.sleep(0.1)
        time.sleep(1.0)
        assert manager.is_alive(), "the kernel exited: its restarter would start it again, and nobody would be stuck"
    finally:
        manager.shutdown_kernel(now=True)


def test_the_learners_server_reaches_a_kernel_even_where_a_port_would_have_been_taken(jupyter_dirs):
    """One learner's server with the course's learner configuration, driven as benchmarks/hub_learner.py does: start a
    kernel, open its websocket, run a cell; a websocket the server closes is opened again, at most twice."""
    import websocket

    token, port = secrets.token_hex(16), _free_port()
    env = dict(os.environ, JUPYTER_CONFIG_PATH=str(LEARNER_CONFIG), JUPYTER_PATH=str(jupyter_dirs / "data"),
               JUPYTER_DATA_DIR=str(jupyter_dirs / "data"), JUPYTER_CONFIG_DIR=str(jupyter_dirs / "config"),
               JUPYTER_RUNTIME_DIR=str(jupyter_dirs / "rt"))
    log = jupyter_dirs / "server.log"
    with log.open("w") as out:
        server = subprocess.Popen(
            [str(Path(sys.executable).parent / "jupyter-lab"), "--no-browser", "--ip=127.0.0.1", f"--port={port}",
             "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}",
             f"--ServerApp.root_dir={jupyter_dirs / 'work'}",
             f"--MappingKernelManager.kernel_info_timeout={KERNEL_INFO_TIMEOUT}",
             *(["--allow-root"] if os.geteuid() == 0 else [])],
            cwd=jupyter_dirs / "work", env=env, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while _get(f"{url}/api/status", token)[0] != 200:
            assert server.poll() is None and time.monotonic() < deadline, log.read_text()[-3000:]
            time.sleep(0.2)
        request = urllib.request.Request(f"{url}/api/kernels", data=b'{"name": "python3"}', method="POST",
                                         headers={"Authorization": f"token {token}",
                                                  "Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=60) as answer:
            kernel = json.loads(answer.read())["id"]
        connection = json.loads(next((jupyter_dirs / "rt").glob(f"kernel-{kernel}.json")).read_text())
        socket_url = f"ws://127.0.0.1:{port}/api/kernels/{kernel}/channels"
        closed, reply = 0, None
        ws = websocket.create_connection(socket_url, header=[f"Authorization: token {token}"], timeout=60)
        try:
            while reply is None:
                msg_id = uuid.uuid4().hex
                ws.send(json.dumps({"header": {"msg_id": msg_id, "msg_type": "execute_request", "username": "learner",
                                               "session": msg_id, "version": "5.3"}, "parent_header": {},
                                    "metadata": {}, "channel": "shell",
                                    "content": {"code": "6 * 7", "silent": False}}))
                try:
                    while reply is None:
                        message = json.loads(ws.recv())
                        if message.get("msg_type") == "execute_reply" and \
                                message["parent_header"].get("msg_id") == msg_id:
                            reply = message["content"]
                except websocket.WebSocketConnectionClosedException:
                    closed += 1
                    ws.close()
                    assert closed < 3, (
                        f"the server closed the kernel's websocket {closed} times ({connection['transport']} "
                        f"transport): the kernel never answered (jupyter_server's Nudge), as in the load benchmark")
                    ws = websocket.create_connection(socket_url, header=[f"Authorization: token {token}"],
                                                     timeout=60)
        finally:
            ws.close()
        assert reply["status"] == "ok", reply
        assert connection["transport"] == "ipc", connection  # no port for another process to take
    finally:
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(server.pid, sig)
                server.wait(timeout=20)
                break
            except ProcessLookupError:
                break
            except subprocess.TimeoutExpired:
                continue


@pytest.mark.parametrize("runtime, transport", [("/home/learner/.local/share/jupyter/runtime", "ipc"),
                                                ("/" + "deep/" * 12 + "runtime", None)])
def test_kernels_stay_on_tcp_where_a_unix_socket_path_would_not_fit(monkeypatch, runtime, transport):
    from traitlets.config import Config

    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", runtime)
    config, path = Config(), LEARNER_CONFIG / "jupyter_lab_config.py"
    exec(compile(path.read_text(), str(path), "exec"), {"get_config": lambda: config, "__file__": str(path)})
    assert config.KernelManager.get("transport") == transport
