"""Identical notebooks run once per grading run (``grader.classroom.identical``), and nothing else crosses.

The scenarios grade real submissions in sealed kernels and count the kernels' runs; the unit tests pin what the
key is made of and what is never kept.
"""
from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import shutil
import threading

import nbformat
import pytest

from grader.classroom import batch
from grader.classroom.batch import grade_all
from grader.classroom.identical import Identical, notebook_key, repeats_last
from grader.kernel.run import Execution
from grader.layout import Course
from grader.submission.pipeline import Job, Settings

ASSIGNMENT = "sharded_step"
# The added cell every probing learner hands in: everything a kernel could read that might name its learner.
PROBE = """import os, sys
seen = [os.getcwd(), *sys.argv, *os.environ.values(), str(sorted(globals()))]
for name in ("/proc/self/cmdline", "/proc/self/environ", "/proc/self/cgroup"):
    try:
        seen.append(open(name, "rb").read().decode("latin-1"))
    except OSError as error:
        seen.append(str(error))
print("PROBE", repr(seen))"""


def _release(course: Course) -> nbformat.NotebookNode:
    return course.read_release(ASSIGNMENT)


def _hand_in(submitted, student: str, notebook) -> None:
    folder = submitted / student / ASSIGNMENT
    folder.mkdir(parents=True)
    (folder / f"{ASSIGNMENT}.ipynb").write_text(nbformat.writes(notebook))


@pytest.fixture
def kernel_runs(monkeypatch):
    """How many notebooks a sealed kernel ran, learner by learner's notebook (its prepared cells' sources)."""
    runs: list[str] = []
    real = batch._execute

    async def counted(prepared, current, settings, zygote):
        runs.append(prepared.job.student_id)
        return await real(prepared, current, settings, zygote)

    monkeypatch.setattr(batch, "_execute", counted)
    return runs


def _by_student(results) -> dict:
    return {r.student_id: r for r in results if r.assignment_id == ASSIGNMENT}


def _tests(result) -> list:
    return [dataclasses.astuple(t) for t in result.tests]


def test_learners_who_hand_in_the_same_notebook_share_one_kernel_run_and_nothing_else(tmp_path, kernel_runs):
    course = Course.default()
    submitted = tmp_path / "submitted"
    probing = _release(course)
    probing.cells.append(nbformat.v4.new_code_cell(PROBE))
    _hand_in(submitted, "pat-zq81", probing)
    shutil.copytree(submitted / "pat-zq81", submitted / "quinn-xv27")  # the same file, byte for byte
    # The same answers, run in JupyterLab first (outputs, counts, metadata of their own) and one read-only cell
    # edited: the rebuild drops all of it, so the kernel is handed the same notebook, but the edit is rae's own.
    lab = nbformat.from_dict(json.loads(nbformat.writes(probing)))
    lab.metadata["widgets"] = {"state": {}}
    for number, cell in enumerate(c for c in lab.cells if c.cell_type == "code"):
        cell.execution_count = number + 1
        cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=f"rae-ws55 ran this {number}\n")]
        cell.metadata["collapsed"] = True
    edited = next(c for c in lab.cells if c.get("metadata", {}).get("nbgrader", {}).get("grade_id") == "host-reference")
    edited.source += "\n# rae-ws55 was here"
    _hand_in(submitted, "rae-ws55", lab)

    results = _by_student(grade_all(submitted, course, Settings(out=tmp_path / "out"), workers=2))

    assert len(kernel_runs) == 1, f"three learners, one notebook, one kernel run; ran for {kernel_runs}"
    first = results[kernel_runs[0]]
    for student, result in results.items():
        assert _tests(result) == _tests(first), student
        executed = nbformat.read(tmp_path / "out" / "autograded" / student / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", 4)
        probe = "".join(o.get("text", "") for c in executed.cells for o in c.get("outputs", []) if "PROBE" in
                        o.get("text", ""))
        assert probe, f"{student}'s autograded notebook lacks the probe's output"
        for name in ("pat", "quinn", "rae", "zq81", "xv27", "ws55"):
            assert name not in probe, f"the kernel could read a learner's id ({name}): sharing its run would leak it"
    assert any("host-reference was edited" in note for note in results["rae-ws55"].tampering)
    assert results["rae-ws55"].status.value == "tampered"
    for student in ("pat-zq81", "quinn-xv27"):  # the probe reads /proc: its scan flags are each learner's own
        assert not results[student].tampering, f"rae's edit reached {student}'s result"
        assert results[student].status.value == "suspicious" and results[student].flags, student
    page = (tmp_path / "out" / "feedback" / "quinn-xv27" / ASSIGNMENT / f"{ASSIGNMENT}.html").read_text()
    assert "quinn-xv27" in page and "pat-zq81" not in page and "rae-ws55" not in page


def test_a_run_that_stopped_is_not_shared_with_a_classmate(tmp_path, monkeypatch):
    """A stop may come from the machine (a loaded machine times out sooner): the classmate's identical notebook is
    run in a kernel of its own, and graded on that run."""
    course = Course.default()
    submitted = tmp_path / "submitted"
    _hand_in(submitted, "sam", _release(course))
    shutil.copytree(submitted / "sam", submitted / "tia")
    runs: list[str] = []
    real = batch._execute

    async def first_one_times_out(prepared, current, settings, zygote):
        runs.append(prepared.job.student_id)
        execution = await real(prepared, current, settings, zygote)
        if len(runs) == 1:  # as if the machine had been too slow for the notebook's time limit
            for cell in execution.notebook.cells:
                cell.outputs, cell.execution_count = [], None
            execution.stopped, execution.message, execution.stopped_at_cell = "timed_out", "the notebook timed out", 0
        return execution

    monkeypatch.setattr(batch, "_execute", first_one_times_out)
    results = _by_student(grade_all(submitted, course, Settings(out=tmp_path / "out"), workers=1))
    assert runs == ["sam", "tia"], runs
    assert results["sam"].status.value == "timed_out", results["sam"].status
    assert results["tia"].status.value == "graded", (results["tia"].status, results["tia"].message)


def test_the_key_is_the_notebook_the_kernel_is_handed_less_the_random_cell_ids():
    course = Course.default()
    notebook = _release(course)
    key = notebook_key(ASSIGNMENT, notebook)
    same = nbformat.from_dict(json.loads(json.dumps(notebook)))
    for cell in same.cells:
        cell["id"] = "fresh-" + cell.get("id", "")
    assert notebook_key(ASSIGNMENT, same) == key
    assert notebook_key("local_mean_diagnosis", notebook) != key
    changed = nbformat.from_dict(json.loads(json.dumps(notebook)))
    changed.cells[-1].source += " "
    assert notebook_key(ASSIGNMENT, changed) != key, "one character of a cell's source is a different notebook"
    tagged = nbformat.from_dict(json.loads(json.dumps(notebook)))
    tagged.cells[-1].metadata["tags"] = ["raises-exception"]  # changes how the kernel's errors are taken
    assert notebook_key(ASSIGNMENT, tagged) != key
    renamed = nbformat.from_dict(json.loads(json.dumps(notebook)))
    renamed.metadata["kernelspec"]["name"] = "other"
    assert notebook_key(ASSIGNMENT, renamed) != key


def test_only_clean_runs_are_kept_and_each_hit_is_a_copy_of_its_own():
    identical = Identical()
    clean = Execution(notebook=nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("1")]))
    assert identical.claim("k") == (None, None)
    earlier, running = identical.claim("k")
    assert earlier is None and isinstance(running, threading.Event) and not running.is_set()
    identical.put("k", clean)
    assert running.is_set(), "whoever waited is woken"
    clean.notebook.cells[0].source = "changed after put"
    first, _ = identical.claim("k")
    first.notebook.cells[0].source = "changed by the first learner's judging"
    second, _ = identical.claim("k")
    assert second.notebook.cells[0].source == "1" and identical.reused == 2

    stopped = Execution(notebook=nbformat.v4.new_notebook(), stopped="timed_out")
    assert identical.claim("s") == (None, None)
    _, waiting = identical.claim("s")
    identical.put("s", stopped)
    assert waiting.is_set() and identical.claim("s") == (None, None), "a stopped run is run again, never handed out"


def test_repeated_files_are_queued_after_every_first_one():
    jobs = [Job(s, a, None) for s, a in [("a", "x"), ("b", "x"), ("c", "y"), ("d", "x"), ("e", "y")]]
    digest = {"a": "1", "b": "1", "c": "1", "d": "2", "e": None}
    ordered = repeats_last(jobs, lambda job: digest[job.student_id])
    assert [j.student_id for j in ordered] == ["a", "c", "d", "e", "b"], "same digest, other assignment: a first"


def test_a_claim_left_by_a_failed_run_lets_the_waiter_run_its_own(tmp_path):
    identical = Identical()
    assert identical.claim("k") == (None, None)
    _, running = identical.claim("k")

    async def waiter():
        await asyncio.to_thread(running.wait, 5)
        return identical.claim("k")

    thread = threading.Timer(0.1, identical.release, args=("k",))
    thread.start()
    assert asyncio.run(waiter()) == (None, None), "the waiter now holds the claim and runs the notebook itself"


def test_copies_of_a_notebook_whose_run_stopped_do_not_wait_for_each_other():
    """Otherwise copies of a notebook that spins to its time limit would run one after another, each waiting for
    the last: the class's time limit, times the copies."""
    identical = Identical()
    assert identical.claim("spins") == (None, None)
    identical.put("spins", Execution(notebook=nbformat.v4.new_notebook(), stopped="timed_out"))
    assert identical.claim("spins") == (None, None)
    assert identical.claim("spins") == (None, None), "a second copy running beside the first does not wait for it"


def test_what_is_kept_is_bounded_in_bytes():
    """A class of learners who each print megabytes cannot fill the instructor's memory: past the bound, notebooks
    are run, not kept."""
    identical = Identical(max_bytes=200_000)
    for key in ("a", "b", "c"):
        noisy = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("print(...)")])
        noisy.cells[0].outputs = [nbformat.v4.new_output("stream", name="stdout", text=os.urandom(60_000).hex())]
        assert identical.claim(key) == (None, None)
        identical.put(key, Execution(notebook=noisy))
    assert identical.kept == 2 and identical.bytes <= 200_000
    assert identical.claim("c") == (None, None), "the third was not kept: its copy runs"
