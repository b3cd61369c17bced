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

import fcntl
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
    """Install Chromium and playwright-core once: the workers of a parallel run take turns (apt-get and npm would
    trip over each other's locks), and whoever comes second finds them installed."""
    try:
        with (BROWSER / ".setup.lock").open("w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
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
    for _attempt in range(3):  # the free port can be taken between the check and the bind
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


def _stop(process: subprocess.Popen, how: int = signal.SIGTERM, patience: float = 20) -> None:
    """SIGTERM lets JupyterLab shut its kernels down (SIGINT, Ctrl-C, a hub its servers); then the whole process
    group is killed."""
    if process.poll() is None:
        process.send_signal(how)
        try:
            process.wait(timeout=patience)
        except subprocess.TimeoutExpired:
            pass
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait()


def _run_browser(env: dict[str, str], timeout: float = 420, script: str = "lab.mjs") -> tuple[int, str]:
    """node SCRIPT in its own process group, so a timeout also ends the Chromium it started."""
    process = subprocess.Popen(["node", str(BROWSER / script)], cwd=ROOT, env=env, text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        output, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        output, _ = process.communicate()
        return -1, f"{output}\n{script} timed out after {timeout:.0f} s"
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


# ---------------------------------------------------------------- the whole loop (tests/browser/loop.mjs)

GRADEBOOK_SCORES = """
import json, sys
from nbgrader.api import Gradebook, MissingEntry

db, assignment, student = sys.argv[1:]
with Gradebook(db) as book:
    try:
        notebook = book.find_submission_notebook(assignment, assignment, student)
    except MissingEntry:
        print(json.dumps({"submission": None, "grades": {}}))
        raise SystemExit
    comments = {c.name: c.manual_comment for c in notebook.comments}
    grades = {g.name: {"auto_score": g.auto_score, "manual_score": g.manual_score, "score": g.score,
                       "max_score": g.max_score, "needs_manual_grade": g.needs_manual_grade,
                       "comment": comments.get(g.name)} for g in notebook.grades}
    submission = book.find_submission(assignment, student)
    print(json.dumps({"submission": {"score": submission.score, "max_score": submission.max_score},
                      "grades": grades}))
"""
LEARNER_ANSWER = ("Summing the $p$ local means of $N/p$ rows each makes the gradient $p$ times too large, "
                  "$$\\nabla L = \\frac{2}{N} X^\\mathsf{T}(Xw - y),$$ yet such a step still points downhill, "
                  "so a falling loss is weak evidence; the first update checked against the host reference "
                  "(loss 4.875, gradient [-5.25, -0.75]) is strong evidence.")


def _tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.slow
def test_the_whole_loop_in_jupyterlab_and_formgrader(tmp_path):
    """Fetch, solve, Validate, Submit in the learner's Assignment List; Release, Collect, Autograde, hand grade,
    Generate and Release Feedback in formgrader; Fetch Feedback; the stock buttons again; then regenerate the
    course. Slow part: one Validate run and two runs of the course's grader (Autograde) on 2 cores."""
    import getpass

    import nbformat

    from grader.course.workspace import instructor_lab, learner_lab
    from test_workflow import Server, copy_course, hidden_lines

    if not JUPYTER.exists():
        pytest.skip(f"{JUPYTER} is missing: run `make test`, which installs the project's environment")
    _setup_browser()
    began = time.monotonic()
    course = copy_course(tmp_path / "course")
    workspace = course.root / "workspace"   # where `make lab` puts it; nothing is seeded: the learner fetches
    workspace.mkdir()
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    for old in ARTIFACTS.glob("loop-*.png"):
        old.unlink()
    assignment, student = "sharded_step", getpass.getuser()
    solved = nbformat.read(ROOT / "samples" / "submitted" / "ada" / assignment / f"{assignment}.ipynb", as_version=4)
    by_id = {c.metadata.get("nbgrader", {}).get("grade_id"): c.source for c in solved.cells}
    script = tmp_path / "gradebook_scores.py"
    script.write_text(GRADEBOOK_SCORES)
    fixture = {
        "assignment": assignment, "student": student,
        "solutions": {"train-step": by_id["train-step"], "transfer": by_id["transfer"],
                      "pause-and-reason": LEARNER_ANSWER},
        "typed": {"grade_id": "quiz", "source": by_id["quiz"].strip()},
        "manual": {"grade_id": "pause-and-reason", "points": 2, "comment": "Clear reasoning " + secrets.token_hex(3)},
        "hidden_lines": hidden_lines(course, assignment),
        "gradebook_command": [sys.executable, str(script), f"sqlite:///{course.root / 'gradebook.db'}", assignment,
                              student],
    }
    (tmp_path / "fixture.json").write_text(json.dumps(fixture))
    servers = []
    try:
        for who, (argv, env, cwd) in (("learner", learner_lab(course)), ("instructor", instructor_lab(course))):
            home = tmp_path / f"{who}-home"
            for name, settings in LAB_SETTINGS.items():
                (home / "settings" / name).parent.mkdir(parents=True, exist_ok=True)
                (home / "settings" / name).write_text(json.dumps(settings))
            servers.append(Server(argv, env, cwd, home, ARTIFACTS / f"loop-{who}.log"))
        learner, instructor = servers
        returncode, output = _run_browser(dict(
            os.environ, LEARNER_URL=learner.url, LEARNER_TOKEN=learner.token, INSTRUCTOR_URL=instructor.url,
            INSTRUCTOR_TOKEN=instructor.token, COURSE_DIR=str(course.root), LOOP_FIXTURE=str(tmp_path / "fixture.json"),
            ARTIFACTS_DIR=str(ARTIFACTS)), script="loop.mjs", timeout=900)
        print(output)
        assert returncode == 0, (
            f"browser loop failed (screenshots in {ARTIFACTS}):\n{output}\n"
            f"--- learner log (end) ---\n{learner.log.read_text()[-2000:]}\n"
            f"--- instructor log (end) ---\n{instructor.log.read_text()[-3000:]}")
    finally:
        for server in servers:
            server.stop()
    loop = json.loads(next(ln for ln in output.splitlines() if ln.startswith("LOOP-RESULT "))[len("LOOP-RESULT "):])

    # On disk: the course's grader graded the collected submission; every autograded test passed.
    result = json.loads((course.root / "results" / student / assignment / f"{assignment}.json").read_text())
    assert result["status"] == "graded" and all(t["passed"] for t in result["tests"]), result
    book = loop["gradebook"]
    manual = book["grades"]["pause-and-reason"]
    assert manual["manual_score"] == 2 and manual["comment"] == fixture["manual"]["comment"]
    assert book["submission"]["score"] == result["score"] + 2 == loop["feedback"]["total"]
    assert loop["feedback"]["auto"] == result["score"] == loop["feedback"]["autoMax"]
    # The feedback the learner fetched and the one the stock button wrote again: totals, math, no hidden test.
    fetched = (workspace / loop["feedback"]["file"]).read_text()
    regenerated = (course.root / "feedback" / student / assignment / f"{assignment}.html").read_text()
    for page in (fetched, regenerated):
        assert f"total: <b>{result['score'] + 2:g} / " in page and fixture["manual"]["comment"] in page
        assert "<math" in page and "$N/p$" not in page
        assert not [line for line in fixture["hidden_lines"] if line in page] and "HIDDEN TESTS" not in page

    # Regenerating the course (what `make generate` runs) leaves the learner's workspace byte for byte.
    mine = _tree(workspace)
    assert f"{assignment}/{assignment}.ipynb" in mine
    released = (course.root / "notebooks" / assignment / f"{assignment}.ipynb").stat().st_mtime_ns
    done = subprocess.run([sys.executable, "-m", "grader", "generate"], cwd=course.root, capture_output=True,
                          text=True, timeout=600, env=dict(os.environ, COURSE_ROOT=str(course.root)))
    assert done.returncode == 0, done.stderr
    assert (course.root / "notebooks" / assignment / f"{assignment}.ipynb").stat().st_mtime_ns != released
    assert _tree(workspace) == mine
    print(f"loop timings (s): {loop['timings']}; whole test {time.monotonic() - began:.0f} s")
