"""Measuring commands side by side: memory sampled from /proc, CPU time from a cgroup (or RUSAGE_CHILDREN
with this process as a subreaper), and waiting for a shared machine to go quiet first."""
from __future__ import annotations

import contextlib
import os
import re
import resource
import shutil
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from bench_setup import environment


# ---------------------------------------------------------------- memory sampling


@dataclass
class MemoryPeak:
    kernel_hwm: int = 0  # bytes, the largest VmHWM of one kernel process
    other_hwm: int = 0  # bytes, the largest VmHWM of a non-kernel process (grader, nbgrader, Dask worker)
    tree_rss: int = 0  # bytes, the largest sum of VmRSS over the process tree at one moment
    kernels: int = 0  # kernel processes seen


class Sampler:
    """Samples /proc for every descendant of this process."""

    def __init__(self, interval: float = 0.2):
        self.interval, self.me = interval, os.getpid()
        self.peak, self.seen = MemoryPeak(), set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()

    @staticmethod
    def _status(pid: int) -> dict[str, int]:
        values = {}
        with open(f"/proc/{pid}/status") as handle:
            for line in handle:
                if line.startswith(("VmRSS:", "VmHWM:")):
                    key, value = line.split(":", 1)
                    values[key] = int(value.split()[0]) * 1024
        return values

    def _run(self) -> None:
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(self.interval)

    def sample(self) -> None:
        children: dict[int, list[int]] = {}
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit():
                continue
            try:
                with open(f"/proc/{entry.name}/stat") as handle:
                    ppid = int(handle.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
        stack, total = list(children.get(self.me, [])), 0
        while stack:
            pid = stack.pop()
            stack += children.get(pid, [])
            try:
                status = self._status(pid)
                with open(f"/proc/{pid}/cmdline", "rb") as handle:
                    kernel = b"ipykernel_launcher" in handle.read()
            except OSError:
                continue
            total += status.get("VmRSS", 0)
            if kernel:
                self.peak.kernel_hwm = max(self.peak.kernel_hwm, status.get("VmHWM", 0))
                if pid not in self.seen:
                    self.seen.add(pid)
                    self.peak.kernels += 1
            else:
                self.peak.other_hwm = max(self.peak.other_hwm, status.get("VmHWM", 0))
        self.peak.tree_rss = max(self.peak.tree_rss, total)


@dataclass
class Run:
    """One grader over the class: per notebook wall seconds, CPU seconds and memory."""

    name: str
    workers: int
    seconds: dict[str, float] = field(default_factory=dict)
    cpu: dict[str, float] = field(default_factory=dict)  # user+sys of every process it started
    others: dict[str, float] = field(default_factory=dict)  # share of the machine's CPU used by other processes
    memory: MemoryPeak = field(default_factory=MemoryPeak)
    note: str = ""
    inside: dict[str, float] = field(default_factory=dict)  # ours: the grading itself, without process start

    @property
    def total(self) -> float:
        return sum(self.seconds.values())

    @property
    def total_cpu(self) -> float:
        return sum(self.cpu.values())


def machine_busy() -> float:
    """CPU seconds the whole machine has spent busy (all cores, from /proc/stat)."""
    with open("/proc/stat") as handle:
        fields = [int(x) for x in handle.readline().split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def reap_orphans() -> None:
    """Collect descendants re-parented to us (we are a child subreaper), so their CPU time counts."""
    time.sleep(0.2)
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def become_subreaper() -> None:
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        pass


def wait_for_quiet(max_wait: float, threshold: float = 0.25) -> str:
    """Wait (at most ``max_wait`` s) until other processes use under ``threshold`` of the CPUs."""
    cores, waited = os.cpu_count() or 1, 0.0
    while True:
        before = machine_busy()
        time.sleep(2.0)
        busy = (machine_busy() - before) / (2.0 * cores)
        waited += 2.0
        if busy < threshold or waited >= max_wait:
            return f"machine {busy:.0%} busy before start, waited {waited:.0f} s"


CPUACCT = Path("/sys/fs/cgroup/cpuacct")  # cgroup v1; a sealed kernel's CPU time never reaches RUSAGE_CHILDREN


@contextlib.contextmanager
def cpu_group():
    """A fresh cpuacct cgroup (root, cgroup v1) whose total counts every process that ran in it, or None."""
    group = CPUACCT / f"grading-benchmark-{os.getpid()}-{time.monotonic_ns()}"
    try:
        group.mkdir()
    except OSError:
        yield None
        return
    try:
        yield group
    finally:
        for _ in range(50):
            try:
                group.rmdir()
                break
            except OSError:
                time.sleep(0.1)


def measured(run: Run, key: str, command: list[str], log: Path, *, cwd: Path) -> None:
    """Run ``command``; record its wall time, CPU time, memory and the load of everything else."""
    cpu0, busy0 = children_cpu(), machine_busy()
    with Sampler() as sampler, cpu_group() as group:
        run.seconds[key] = timed(command, log, cwd=cwd, group=group)
        reap_orphans()
        cpu = children_cpu() - cpu0
        if group is not None:  # counts the sealed kernels too
            cpu = int((group / "cpuacct.usage").read_text()) / 1e9
    run.cpu[key] = cpu
    run.others[key] = max(0.0, machine_busy() - busy0 - cpu) / (run.seconds[key] * (os.cpu_count() or 1))
    run.memory = merge(run.memory, sampler.peak)


def timed(command: list[str], log: Path, *, cwd: Path, group: Path | None = None) -> float:
    started = time.monotonic()
    join = None if group is None else (lambda: (group / "cgroup.procs").write_text(str(os.getpid())))
    with open(log, "ab") as out:
        out.write(f"\n$ {' '.join(command)}\n".encode())
        out.flush()
        result = subprocess.run(command, cwd=cwd, env=environment(), stdout=out, stderr=subprocess.STDOUT,
                                preexec_fn=join)
    seconds = time.monotonic() - started
    if result.returncode != 0:
        raise SystemExit(f"failed ({result.returncode}): {' '.join(command)}; see {log}")
    return seconds


def grading_seconds(log: Path) -> float:
    """The time ``python -m grader grade`` reports for its own grading (after its imports)."""
    found = re.findall(r"notebooks \([^)]*\) in ([0-9.]+) s,", log.read_text())
    return float(found[-1]) if found else float("nan")


def merge(a: MemoryPeak, b: MemoryPeak) -> MemoryPeak:
    return MemoryPeak(max(a.kernel_hwm, b.kernel_hwm), max(a.other_hwm, b.other_hwm), max(a.tree_rss, b.tree_rss),
                      a.kernels + b.kernels)


def work_folder(stack: contextlib.ExitStack, keep: Path | None, prefix: str) -> Path:
    """The benchmark's work folder: ``keep`` emptied and kept (``--keep``), or a temporary one ``stack`` removes."""
    if keep is None:
        return Path(stack.enter_context(tempfile.TemporaryDirectory(prefix=prefix)))
    work = keep.resolve()
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    return work
