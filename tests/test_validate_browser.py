"""Validate's dialog in the learner's JupyterLab, in a real browser (Debian's Chromium, tests/browser/validate.mjs).

The learner's JupyterLab runs with ``python -m grader lab``'s settings (grader/course/workspace.py learner_lab:
the course's Validate route, the labextension copy with the course's wording) on a loopback port, and the course's
grading service (``python -m grader serve``, one warm kernel, an empty exchange) answers ``POST /validate`` on
another.
Notebooks go through the toolbar's Validate button: a correct step with a wrong quiz answer, a step that sums
per-device means (4 times the gradient), and a psum_scatter without tiled=True (JAX raises). Screenshots go to
test-artifacts/browser/validate-*.png.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import urllib.error
import urllib.request
from contextlib import contextmanager

import nbformat
import pytest

from test_browser import ARTIFACTS, JUPYTER, LAB_SETTINGS, _run_browser, _setup_browser
from test_validate_learner import free_port, learner_notebook
from test_workflow import Server, copy_course

NOTEBOOK = "sharded_step/sharded_step.ipynb"


@contextmanager
def grading_service(course, folder):
    """``python -m grader serve`` on a free loopback port; yields its URL once ``GET /status`` answers."""
    port = free_port()
    log = folder / "service.log"
    folder.mkdir(parents=True, exist_ok=True)
    with log.open("w") as out:
        process = subprocess.Popen([sys.executable, "-m", "grader", "serve", "--workers", "1", "--port", str(port),
                                    "--out", str(folder / "out"), "--exchange", str(folder / "exchange")],
                                   env=dict(os.environ, COURSE_ROOT=str(course.root)), cwd=course.root, stdout=out,
                                   stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 180
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/status", timeout=2):
                    break
            except (urllib.error.URLError, OSError):
                assert process.poll() is None and time.monotonic() < deadline, \
                    f"python -m grader serve did not answer:\n{log.read_text()[-3000:]}"
                time.sleep(0.5)
        yield f"http://127.0.0.1:{port}/"
    finally:
        from test_browser import _stop

        _stop(process)


@pytest.mark.slow
def test_validate_dialog_is_honest_and_names_the_mistake(tmp_path):
    from grader.course.workspace import learner_lab

    if not JUPYTER.exists():
        pytest.skip(f"{JUPYTER} is missing: run `make test`, which installs the project's environment")
    _setup_browser()
    course = copy_course(tmp_path / "course")
    workspace = tmp_path / "workspace"
    (workspace / "sharded_step").mkdir(parents=True)
    cases = [{"name": name, "content": learner_notebook(course, "sharded_step", scenario)}
             for name, scenario in [("wrong-quiz", "wrong-quiz-summed"), ("summed-means", "wrong-summed-local-means"),
                                    ("offline", "wrong-summed-local-means")]]
    # psum_scatter without tiled=True: JAX raises in the cell that builds the programs, and in each test calling them
    cases.insert(2, {"name": "untiled", "notebook": "collectives/collectives.ipynb",
                     "content": learner_notebook(course, "collectives", "wrong-scatter-untiled")})
    (workspace / "collectives").mkdir()
    nbformat.write(cases[0]["content"], workspace / NOTEBOOK)
    fixture = tmp_path / "validate.json"
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    for old in ARTIFACTS.glob("validate-*.png"):
        old.unlink()
    argv, env, cwd = learner_lab(course, workspace=workspace)
    home = tmp_path / "home"
    for name, settings in LAB_SETTINGS.items():
        (home / "settings" / name).parent.mkdir(parents=True, exist_ok=True)
        (home / "settings" / name).write_text(json.dumps(settings))
    seen = []
    with grading_service(course, tmp_path / "service") as service_url:
        for url, batch in [(service_url, cases[:3]), (f"http://127.0.0.1:{free_port()}/", cases[3:])]:
            fixture.write_text(json.dumps({"notebook": NOTEBOOK, "cases": batch}))
            lab = Server(argv, dict(env, COURSE_GRADING_URL=url), cwd, home, ARTIFACTS / "validate-lab.log")
            try:
                returncode, output = _run_browser(dict(os.environ, LAB_URL=lab.url, LAB_TOKEN=lab.token,
                                                       VALIDATE_FIXTURE=str(fixture), ARTIFACTS_DIR=str(ARTIFACTS)),
                                                  timeout=600, script="validate.mjs")
            finally:
                lab.stop()
            print(output)
            lab_log = (ARTIFACTS / "validate-lab.log").read_text()[-3000:]
            assert returncode == 0, f"{output}\n--- JupyterLab log ---\n{lab_log}"
            seen += json.loads(next(ln for ln in output.splitlines() if ln.startswith("VALIDATE-RESULT "))[16:])
    quiz, summed, untiled, offline = seen
    assert quiz["focusInDialog"], quiz  # reached, pressed and closed with the keyboard alone (validate.mjs)
    for dialog in seen:
        assert dialog["axe"] == [], dialog["axe"]  # axe-core: no critical or serious violation in the message
        assert "passes all the tests" not in dialog["text"] and "The following cell failed" not in dialog["text"]
        assert "graded after you submit" in dialog["text"] and dialog["summaryFirst"], dialog
        assert "ACTUAL" not in dialog["text"] and "### BEGIN" not in dialog["text"] and dialog["markup"] == 0

    # A correct step and a wrong quiz answer: nothing fails, and the quiz is not called right or wrong.
    assert quiz["paragraphs"][0].startswith("No visible check fails (of 6)."), quiz
    assert "The quiz test (1 point): the multiple-choice answer: its correctness is graded after you submit" \
        in quiz["text"]
    assert re.search(r"\d more cases \(batches you have not seen, other mesh sizes, your programs run by the "
                     r"grader\), the written answer and the quiz's correctness are graded after you submit", quiz["text"])

    # The 4x step: counted first, then the test by name and points, then the grader's named mistake.
    assert summed["paragraphs"][0].startswith("1 of 6 visible checks fail."), summed
    assert "The loss and gradient test (3 points) fails:" in summed["paragraphs"]
    assert "the gradient at w = 0: differs from the host NumPy reference: 4 times the global gradient: the " \
           "per-device means were summed" in summed["text"]
    assert "train_step(w, x, y)" not in summed["text"]  # the test's source is not shown

    # A cell that raised: which one, and JAX's error in the lesson's terms; never "the notebook stopped".
    assert "The reduce scatter test (3 points) fails:" in untiled["paragraphs"], untiled
    assert "psum_scatter over `data` needs `tiled=True` here" in untiled["text"], untiled["text"]
    assert "notebook stopped" not in untiled["text"]

    # Without the service: the instructor's own words, and one line saying what the named diagnoses need.
    assert offline["paragraphs"][0].startswith("1 of 6 visible checks fail.")
    assert "the gradient at w = 0 should be -2/8 X^T y = [-5.25, -0.75]" in offline["text"]
    assert "The named diagnoses need the course's grading service" in offline["text"] and "4 times" not in offline["text"]
