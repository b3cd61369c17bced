"""Shared fixtures: the course, and one batch grading run over every scenario.

Grading is the slow part (a kernel per notebook), so all scenario files
(bundled samples, wrong-answer corpora, attacks) are graded together once per
session with the project's own parallel grader; the tests then read results.
"""
from __future__ import annotations

import contextlib
import fnmatch
import hashlib
import os
import socket
import threading
from dataclasses import dataclass
from pathlib import Path

import pytest

from grader.classroom.batch import grade_all
from grader.layout import Course
from grader.submission.pipeline import Settings
from grader.results import NotebookResult
from grader.sandbox import Limits
from grader.course.variants import Scenario, parse, write_submission
from timing import Timing

ROOT = Path(__file__).resolve().parent.parent
SCENARIO_GROUPS = {
    "sample": ROOT / "samples" / "scenarios",
    "corpus": ROOT / "tests" / "corpus",
    "attack": ROOT / "tests" / "attacks",
}
CORPUS_LIMITS = Limits(cell_timeout_s=15, notebook_timeout_s=240, memory_mb=3072, max_output_bytes=4 * 1024 * 1024)


@dataclass
class Case:
    group: str
    assignment: str
    scenario: Scenario

    @property
    def student(self) -> str:
        return f"{self.group}-{self.scenario.name}"

    @property
    def id(self) -> str:
        return f"{self.group}/{self.assignment}/{self.scenario.name}"


def all_cases() -> list[Case]:
    """Every scenario, or those whose id (``group/assignment/name``) matches one of the comma-separated shell patterns in
    ``GRADER_SCENARIOS`` (for a quick run while working on a few: ``GRADER_SCENARIOS='*/collectives/wrong-*'``)."""
    course = Course.default()
    wanted = [p for p in os.environ.get("GRADER_SCENARIOS", "").split(",") if p]
    cases = []
    for group, folder in SCENARIO_GROUPS.items():
        for assignment in course.assignments():
            for path in sorted((folder / assignment).glob("*.py")):
                if "same-as" in path.read_text().split("\n", 1)[0]:
                    continue  # graded under its original name already
                case = Case(group, assignment, parse(path))
                if not wanted or any(fnmatch.fnmatchcase(case.id, p) for p in wanted):
                    cases.append(case)
    return cases


def process_limit_proven() -> bool:
    from test_sandbox import prove_process_limit  # shared proof

    return prove_process_limit()


# Listeners on the host's loopback that a sealed kernel must never reach (see tests/attacks/*/net-*.py).
HOST_LISTENERS = [("127.0.0.1", 47012), ("127.0.0.2", 47012)]
HOST_CONTACTS: list[tuple[str, int]] = []


@contextlib.contextmanager
def host_listeners():
    """Accept on HOST_LISTENERS, answer the quiz ("2") and record every contact in HOST_CONTACTS."""
    sockets = []
    for address in HOST_LISTENERS:
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        # Another run on this machine (the cluster test beside the graded batch, or a second checkout) may listen on
        # the same port at the same time: both listen (SO_REUSEPORT), and a kernel that reaches either gets "2",
        # which its scenario's verdict (test-quiz lost) shows wherever the contact was recorded. No run waits.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind(address)
        sock.listen(16)
        sock.settimeout(0.2)
        sockets.append(sock)
    stop = threading.Event()

    def serve(sock):
        while not stop.is_set():
            try:
                connection, peer = sock.accept()
            except OSError:
                continue
            HOST_CONTACTS.append(peer)
            with connection:
                connection.sendall(b"2")

    threads = [threading.Thread(target=serve, args=(s,), daemon=True) for s in sockets]
    for thread in threads:
        thread.start()
    try:
        yield
    finally:
        stop.set()
        for thread in threads:
            thread.join()
        for sock in sockets:
            sock.close()


# -- three workers (make test runs pytest-xdist) -------------------------------------------------------------------
# Each test file is one unit of work, given whole to one worker, so a module fixture is set up once. The files that
# read the graded batch are one unit (the batch is graded once, by three kernels, on one worker), and so are the hub
# tests and the Slurm recipe (they share the machine's Unix accounts, /opt/jax-course, /srv and its one-machine Slurm,
# which the ``slurm`` fixture brings up once for them). Units go out longest first, in the order
# of tests/longest-first.txt (tests/durations_table.py --write makes it from a run's timing), the rest after them.
# xdist's own --dist loadgroup cannot do this under pytest 9 (it renames items through an attribute pytest 9 no
# longer reads), so the scheduler below groups by these units itself.
GRADED_UNIT = {"tests/test_class_report.py", "tests/test_lms.py", "tests/test_retest.py", "tests/test_scenarios.py"}
SHARED_UNITS = {**{path: "hub" for path in ("tests/test_hub.py", "tests/test_hub_on_slurm.py",
                                            "tests/test_cluster_recipes.py", "tests/test_lti_launch.py")},
                **{path: "graded" for path in GRADED_UNIT}}
LONGEST_FIRST = ROOT / "tests" / "longest-first.txt"


def unit_of(nodeid: str) -> str:
    path = nodeid.split("::", 1)[0]
    return SHARED_UNITS.get(path, path)


def pytest_configure(config):
    config.pluginmanager.register(Timing(config), "course-timing")


def pytest_collection_modifyitems(config, items):
    strays = sorted({i.nodeid.split("::", 1)[0] for i in items if "graded" in getattr(i, "fixturenames", ())}
                    - GRADED_UNIT)
    if strays:  # a file of its own would grade the whole batch again on the other worker
        raise pytest.UsageError(f"{', '.join(strays)} read the graded batch: add them to GRADED_UNIT in tests/conftest.py")
    order = LONGEST_FIRST.read_text().split() if LONGEST_FIRST.exists() else []
    rank = {unit: index for index, unit in enumerate(order)}
    items.sort(key=lambda item: rank.get(unit_of(item.nodeid), len(rank)))  # stable: a file keeps its own order


@pytest.hookimpl(optionalhook=True)  # also without xdist (pytest -p no:xdist)
def pytest_xdist_auto_num_workers(config):
    """make test's ``-n auto``: one worker more than the machine has cores, at least three and at most four. Most
    units wait on a server, a browser, a subprocess or a kernel for much of their time; measured side by side on this
    2-core machine (fresh clones, the same commit's suite): two workers left the cores idle between those waits
    (22.1 min of pytest), three kept them busy (17.7 min, the cores 96-100 % busy throughout)."""
    return max(3, min(4, (os.cpu_count() or 1) + 1))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    from xdist.scheduler import LoadScopeScheduling  # only where xdist runs the suite

    class ByUnit(LoadScopeScheduling):
        """xdist's scheduling by scope, the scope being a test's unit, handed out in collection order."""

        def _split_scope(self, nodeid: str) -> str:
            return unit_of(nodeid)

    config.option.loadscopereorder = False  # keep longest-first, not most-tests-first
    return ByUnit(config, log)


@pytest.fixture(scope="session")
def course() -> Course:
    return Course.default()


@pytest.fixture(scope="session")
def slurm():
    """The one-machine Slurm (``python -m grader slurm up --separate-hosts``: a controller, two nodes that are hosts of
    their own, each in its own network namespace, Debian's slurm-wlm installed when missing), shared by the hub
    unit's files on their worker; stopped, jobs cancelled, namespaces removed, when the session ends."""
    from grader.slurm.local import LocalSlurm

    if os.geteuid() != 0:
        pytest.skip("Slurm's daemons and jobs under the learners' accounts need root")
    cluster = LocalSlurm(separate_hosts=True)
    cluster.up(say=lambda line: None)
    try:
        yield cluster
    finally:
        cluster.down()


@pytest.fixture(scope="session")
def graded_settings(tmp_path_factory) -> Settings:
    """How the graded batch is graded, with the run's kept kernel runs and program runs: a later grading of a notebook
    the batch ran (the author's lint of a course solution, ``test_scenarios``) reads them instead of running again."""
    from grader.classroom.identical import Identical
    from grader.programs.judged import Judged

    return Settings(out=tmp_path_factory.mktemp("corpus") / "out", limits=CORPUS_LIMITS, identical=Identical(),
                    judged=Judged())


@pytest.fixture(scope="session")
def graded(graded_settings, course) -> dict[str, tuple[Case, NotebookResult]]:
    settings = graded_settings
    base = settings.out.parent
    submitted = base / "submitted"
    cases = [c for c in all_cases() if "requires" not in c.scenario.headers
             or (c.scenario.headers["requires"] == "process-limit" and process_limit_proven())]
    for case in cases:
        write_submission(course, case.assignment, case.scenario, submitted, case.student)
    before = {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in submitted.rglob("*") if p.is_file()}
    with host_listeners():
        # one kernel per core, not the grader's default of one more: beside the suite's other workers the extra
        # kernel fills no idle gaps, it only adds contention (measured beside two CPU hogs: the same wall time, 12-17%
        # less kernel CPU with two than with three)
        results = grade_all(submitted, course, settings, workers=os.cpu_count() or 2)
    after = {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in submitted.rglob("*") if p.is_file()}
    by_key = {(r.student_id, r.assignment_id): r for r in results}
    graded = {c.id: (c, by_key[(c.student, c.assignment)]) for c in cases}
    graded["__meta__"] = (before == after, settings.out)
    return graded
