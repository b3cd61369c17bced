"""The learner's JupyterLab, in a real browser (Debian's Chromium driven by playwright-core).

Starts JupyterLab from the project's environment on a free loopback port with a random token,
rooted at a temporary copy of the course, and runs tests/browser/lab.mjs against it: each student
notebook's setup cell reports four CPU devices, a TODO cell shows its instruction, nbgrader's
Validate button names the failing test cells; the solved notebook shows its figure; the formgrader
lists the three assignments. Screenshots go to test-artifacts/browser/.

tests/browser/setup.sh installs Chromium (apt-get) and playwright-core (npm) when they are missing;
where that is impossible (no root, no network, no Node.js) the test is skipped with its message.
"""
from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BROWSER = ROOT / "tests" / "browser"
ARTIFACTS = ROOT / "test-artifacts" / "browser"
JUPYTER = Path(sys.executable).parent / "jupyter"
UNAVAILABLE = 3  # setup.sh: something cannot be installed on this machine

# JupyterLab user settings for the run: no news or update check (no network here), nothing else changed.
LAB_SETTINGS = {
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {
        "fetchNews": "false", "checkForUpdates": False},
}


def _setup_browser() -> None:
    try:
        result = subprocess.run(["bash", str(BROWSER / "setup.sh")], capture_output=True, text=True, timeout=900)
    except subprocess.TimeoutExpired:
        pytest.skip("tests/browser/setup.sh took over 15 minutes to install Chromium and playwright-core")
    if result.returncode == UNAVAILABLE:
        reason = (result.stderr.strip().splitlines() or ["setup.sh gave no reason"])[-1]
        pytest.skip(f"browser test skipped: Chromium or playwright-core cannot be installed here: {reason}")
    assert result.returncode == 0, f"tests/browser/setup.sh failed:\n{result.stdout}\n{result.stderr}"


def _copy_course(dest: Path) -> None:
    ignore = shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__", "figures")
    for folder in ("notebooks", "source"):
        shutil.copytree(ROOT / folder, dest / folder, ignore=ignore)
    shutil.copy2(ROOT / "nbgrader_config.py", dest / "nbgrader_config.py")


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _ready(url: str, token: str) -> bool:
    request = urllib.request.Request(f"{url}/api/status", headers={"Authorization": f"token {token}"})
    try:
        with urllib.request.urlopen(request, timeout=2) as response:
            return response.status == 200
    except (urllib.error.URLError, OSError):
        return False


def _start_lab(course: Path, home: Path, token: str, log_path: Path) -> tuple[subprocess.Popen, str]:
    env = dict(os.environ,
               JUPYTER_CONFIG_DIR=str(home / "config"),      # no user config from ~/.jupyter
               JUPYTER_RUNTIME_DIR=str(home / "runtime"),
               JUPYTERLAB_SETTINGS_DIR=str(home / "lab-settings"),
               JUPYTERLAB_WORKSPACES_DIR=str(home / "lab-workspaces"),
               PYTHONUNBUFFERED="1",
               # nbgrader's gradebook (formgrader) runs `alembic` found on PATH
               PATH=f"{JUPYTER.parent}{os.pathsep}{os.environ.get('PATH', '')}")
    for name, settings in LAB_SETTINGS.items():
        path = home / "lab-settings" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(settings))
    for attempt in range(3):  # the free port can be taken between the check and the bind
        port = _free_port()
        url = f"http://127.0.0.1:{port}"
        log = log_path.open("a")
        process = subprocess.Popen(
            [str(JUPYTER), "lab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
             "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}",
             f"--ServerApp.root_dir={course}", *(["--allow-root"] if os.geteuid() == 0 else [])],
            cwd=course, env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True)
        log.close()
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and process.poll() is None:
            if _ready(url, token):
                return process, url
            time.sleep(0.3)
        _stop(process)
        if "already in use" not in log_path.read_text():
            break
    pytest.fail(f"JupyterLab did not start:\n{log_path.read_text()[-4000:]}")


def _stop(process: subprocess.Popen) -> None:
    """SIGTERM lets JupyterLab shut its kernels down; then the whole process group is killed."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            pass
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait()


def _run_browser(env: dict[str, str], timeout: float = 420) -> tuple[int, str]:
    """node lab.mjs in its own process group, so a timeout also ends the Chromium it started."""
    process = subprocess.Popen(["node", str(BROWSER / "lab.mjs")], cwd=ROOT, env=env, text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        output, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        output, _ = process.communicate()
        return -1, f"{output}\nlab.mjs timed out after {timeout:.0f} s"
    return process.returncode, output


def _fingerprint() -> dict[str, float]:
    """Modification times of the repository's course files (the test works on a copy)."""
    paths = [ROOT / "nbgrader_config.py", *(ROOT / "notebooks").rglob("*"), *(ROOT / "source").rglob("*")]
    return {str(p): p.stat().st_mtime for p in paths if p.is_file()}


@pytest.mark.slow
def test_learner_and_instructor_in_jupyterlab(tmp_path):
    if not JUPYTER.exists():
        pytest.skip(f"{JUPYTER} is missing: run `make test`, which installs the project's environment")
    _setup_browser()
    course = tmp_path / "course"
    _copy_course(course)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    for old in ARTIFACTS.glob("*.png"):
        old.unlink()
    before = _fingerprint()
    token = secrets.token_hex(24)
    log_path = ARTIFACTS / "jupyterlab.log"
    log_path.write_text("")
    process, url = _start_lab(course, tmp_path / "jupyter", token, log_path)
    try:
        returncode, output = _run_browser(dict(os.environ, LAB_URL=url, LAB_TOKEN=token, COURSE_DIR=str(course),
                                               ARTIFACTS_DIR=str(ARTIFACTS)))
        print(output)
        assert returncode == 0, (
            f"browser checks failed (screenshots in {ARTIFACTS}):\n{output}\n"
            f"--- JupyterLab log (end) ---\n{log_path.read_text()[-3000:]}")
    finally:
        _stop(process)
    assert _fingerprint() == before, "the browser test changed files of the repository's course"
