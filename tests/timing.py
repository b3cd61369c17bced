"""Where the suite's time goes, and the budget it must hold (issue 40).

A pytest plugin (``conftest.py`` loads it). Each run records every test's setup, call and teardown (when each began
and how long it took, and on which xdist worker), and the set-up time of every module- or session-scoped fixture
with the test that paid for it; at the end it writes ``test-artifacts/durations.json``, which
``tests/durations_table.py --write`` turns into the table in docs/explanation/benchmarks.md and into
``tests/longest-first.txt``, the order in which ``conftest.py`` hands the test files to the workers.

The budget: a whole-suite run (``make test``: every test collected, no ``-k``, ``-m`` or scenario subset) fails
when its wall time exceeds ``BUDGET_S`` plus a share for the CPU that programs outside the suite took meanwhile
(read from ``/proc``: a process that is not the suite's or a descendant of it, such as a CPU hog beside it). So a
loaded machine does not fail the gate, and a suite that grew past its budget fails on a quiet one.
``SUITE_BUDGET_S`` overrides the budget (0: no check, for a run under a debugger).
"""
from __future__ import annotations

import json
import os
import resource
import threading
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "test-artifacts" / "durations.json"
# make test within 22.5 minutes, a quarter of CI's 90, of which the install (pip, Chromium) takes about 1-1.5
BUDGET_S = 21 * 60
LONG_FIXTURE_SCOPES = {"session", "module", "package"}
TICK = os.sysconf("SC_CLK_TCK")


def _processes() -> dict[int, tuple[int, float]]:
    """Every process on the machine: pid -> (parent pid, CPU seconds used so far)."""
    found = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(entry.path, "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2:].split()  # after the command name, which may hold spaces
        found[int(entry.name)] = (int(fields[1]), (int(fields[11]) + int(fields[12])) / TICK)
    return found


class OthersCpu:
    """CPU seconds used by programs outside the suite while it runs, sampled every few seconds from /proc.

    A process counts as the suite's when the suite's first process is among its ancestors at any sample; the rest
    (a CPU hog, another job, the machine's own daemons) is "others". Processes that end between two samples are
    missed (never counted as others'), so the budget never grows for work the suite did itself, except for a
    process of the suite's that left it before the first sample that saw it (a daemon's double fork)."""

    def __init__(self, every_s: float = 3.0, root: int | None = None):
        self.root, self.every_s = root or os.getpid(), every_s
        self.seen: dict[int, float] = {}  # other processes' CPU at their first sample
        self.last: dict[int, float] = {}
        self.ours: set[int] = set()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True, name="others-cpu")
        self._sample(first=True)
        self.thread.start()

    def _sample(self, first: bool = False) -> None:
        table = _processes()
        for pid, (_parent, _) in table.items():
            chain, hops = pid, 0
            while chain > 1 and hops < 64 and chain not in self.ours:
                if chain == self.root:
                    break
                chain, hops = table.get(chain, (0, 0))[0], hops + 1
            if chain == self.root or chain in self.ours:
                self.ours.add(pid)
        for pid, (_, cpu) in table.items():
            if pid in self.ours:
                continue
            self.seen.setdefault(pid, cpu if first else 0.0)  # a process started later counts from zero
            self.last[pid] = cpu

    def _run(self) -> None:
        while not self.stop.wait(self.every_s):
            try:
                self._sample()
            except (OSError, ValueError, IndexError):
                continue

    def seconds(self) -> float:
        self.stop.set()
        return sum(max(0.0, self.last[pid] - self.seen[pid]) for pid in self.last if pid not in self.ours)


def _own_cpu_group() -> Path | None:
    """A cgroup v1 ``cpuacct`` group of this process's own (as root), which everything it starts joins; None where
    none can be made. The sandbox moves kernels to memory cgroups, a separate v1 hierarchy, so they stay counted."""
    root = Path("/sys/fs/cgroup/cpuacct")
    if os.geteuid() != 0 or not (root / "cpuacct.usage").is_file():
        return None
    for stale in root.glob("course-suite-*"):  # earlier runs' groups, once empty
        try:
            stale.rmdir()
        except OSError:
            pass
    group = root / f"course-suite-{os.getpid()}"
    try:
        group.mkdir(exist_ok=True)
        (group / "cgroup.procs").write_text(str(os.getpid()))
        return group
    except OSError:
        return None


def allowance(budget_s: float, others_s: float, cores: int, wall_s: float) -> tuple[float, float]:
    """(the seconds the suite may take, the share of the machine's cores that other programs took): the budget grows
    by that share, so a hog on one of two cores for the whole run allows half as much again."""
    share = min(1.0, others_s / (cores * wall_s)) if wall_s > 0 else 0.0
    return budget_s * (1 + share), share


class Timing:
    def __init__(self, config: pytest.Config):
        self.config = config
        self.tests: dict[str, dict] = {}
        self.fixtures: list[dict] = []
        self.current: str | None = None
        self.began = time.time()
        self.collected = 0
        self.whole_suite = False
        self.worker = os.environ.get("PYTEST_XDIST_WORKER")
        self.others = None if self.worker else OthersCpu()
        self.line: str | None = None
        self.cpu_group = _own_cpu_group() if self.worker else None

    # -- each test's phases (on the controller, from every worker's reports) -------------------------------------
    def pytest_runtest_logreport(self, report):
        entry = self.tests.setdefault(report.nodeid, {"file": report.nodeid.split("::", 1)[0]})
        entry[report.when] = round(report.duration, 3)
        entry[f"{report.when}_start"] = round(report.start - self.began, 3)
        node = getattr(report, "node", None)
        if node is not None:
            entry["worker"] = node.gateway.id

        for name, value in report.user_properties:
            if name == f"cpu_{report.when}":
                entry[name] = value

    # -- each phase's CPU seconds (on the worker that runs it) ---------------------------------------------------
    def _cpu(self) -> float:
        """The worker's and all its descendants' CPU seconds: from the worker's own cpuacct cgroup where it has one
        (every process it started, sealed kernels included, which die in their PID namespace and are never reaped
        by it), else its own and its reaped descendants' (``getrusage``)."""
        if self.cpu_group is not None:
            try:
                return int((self.cpu_group / "cpuacct.usage").read_text()) / 1e9
            except (OSError, ValueError):
                pass
        mine, theirs = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        return mine.ru_utime + mine.ru_stime + theirs.ru_utime + theirs.ru_stime

    def _phase(self, item, when):
        began = self._cpu()
        yield
        item.user_properties.append((f"cpu_{when}", round(self._cpu() - began, 2)))

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_setup(self, item):
        yield from self._phase(item, "setup")

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_call(self, item):
        yield from self._phase(item, "call")

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_teardown(self, item, nextitem):
        yield from self._phase(item, "teardown")

    # -- long-lived fixtures (on whichever process sets them up) --------------------------------------------------
    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item, nextitem):
        self.current = item.nodeid
        yield

    @pytest.hookimpl(hookwrapper=True)
    def pytest_fixture_setup(self, fixturedef, request):
        started = time.perf_counter()
        yield
        if fixturedef.scope in LONG_FIXTURE_SCOPES:
            self.fixtures.append({"fixture": fixturedef.argname, "scope": fixturedef.scope,
                                  "module": fixturedef.baseid or "tests/conftest.py",
                                  "setup": round(time.perf_counter() - started, 3), "paid_by": self.current,
                                  "worker": self.worker})

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node, error):  # xdist: a worker's fixtures reach the controller
        self.fixtures.extend(getattr(node, "workeroutput", {}).get("course_fixtures", []))

    # -- the budget ---------------------------------------------------------------------------------------------
    def pytest_collection_finish(self, session):
        self.collected = len(session.items)

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node, ids):  # the controller collects nothing itself
        self.collected = max(self.collected, len(ids))

    def _whole_suite(self) -> bool:
        option = self.config.option
        everything = {str(ROOT / "tests"), "tests"}
        return (not option.keyword and not option.markexpr and not os.environ.get("GRADER_SCENARIOS")
                and not getattr(option, "lf", False) and not option.collectonly and not getattr(option, "deselect", None)
                and {a.rstrip("/") for a in self.config.args} <= everything)

    def budget(self) -> float:
        return float(os.environ.get("SUITE_BUDGET_S", BUDGET_S))

    def verdict(self, wall: float) -> tuple[bool, str]:
        """(within the budget, the line that says so)."""
        others = self.others.seconds() if self.others else 0.0
        allowed, share = allowance(self.budget(), others, os.cpu_count() or 1, wall)
        line = (f"suite budget: {wall / 60:.1f} min of pytest for {self.collected} tests, allowed {allowed / 60:.1f} "
                f"min ({self.budget() / 60:.1f} + {share:.0%} for the {others / 60:.1f} CPU-minutes that programs "
                f"outside the suite took)")
        return wall <= allowed, line

    def pytest_sessionfinish(self, session, exitstatus):
        if self.worker:
            if self.cpu_group is not None:  # back to the machine's group; the next run removes this one once empty
                try:
                    (self.cpu_group.parent / "cgroup.procs").write_text(str(os.getpid()))
                except OSError:
                    pass
            if hasattr(self.config, "workeroutput"):
                self.config.workeroutput["course_fixtures"] = self.fixtures
            return
        wall = time.time() - self.began
        self.whole_suite = self._whole_suite()
        within, self.line = self.verdict(wall)
        if self.whole_suite and self.budget() > 0 and not within and session.exitstatus == 0:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
            self.line += " -- OVER BUDGET: make the new work share fixtures (docs/how-to/test-and-ci.md)"
        record = {"when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(self.began)), "wall_s": round(wall, 1),
                  "collected": self.collected, "whole_suite": self.whole_suite, "passed": session.exitstatus == 0,
                  "workers": self.config.getoption("numprocesses", None), "budget": self.line,
                  "tests": self.tests, "fixtures": self.fixtures}
        OUT.parent.mkdir(parents=True, exist_ok=True)
        OUT.write_text(json.dumps(record, indent=1))

    def pytest_terminal_summary(self, terminalreporter):
        if self.line and self.whole_suite:
            terminalreporter.write_line(self.line, red="OVER BUDGET" in self.line, bold=True)
