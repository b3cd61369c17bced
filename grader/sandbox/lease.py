"""What a sandbox holds for its lifetime: an unprivileged uid no other run uses, a memory cgroup, and the
sweep that kills every process of a uid afterwards (kernels and program runners alike)."""
from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import time
from pathlib import Path

from grader.sandbox import cgroup
from grader.sandbox.view import Confinement

UID_RANGE = range(61000, 62000)
RUNNER_UID_RANGE = range(62000, 62500)  # program runners: never a uid a kernel's leftovers may still hold
#: one folder for every grader on the machine, whatever its TMPDIR: two graders whose temporary folders differ (a
#: service started with its own) would otherwise each lease the same uid, and one's sweep would kill the other's kernel
UID_LOCKS = Path("/tmp") / "grader-uid-locks"


def _real_uid(pid: Path) -> int | None:
    """The real uid of the live process ``/proc/<pid>``, read from its status (never the owner of its files, which
    are root's once a process makes itself non-dumpable); None once it is gone or only a zombie (which holds no
    thread and runs nothing)."""
    try:
        fields = dict(line.split(":", 1) for line in (pid / "status").read_text().splitlines() if ":" in line)
        return None if fields["State"].split()[0] in ("Z", "X") else int(fields["Uid"].split()[0])
    except (OSError, ValueError, KeyError, IndexError):
        return None


def _processes() -> list[tuple[int, int]]:
    """(pid, real uid) of every live process on the machine (as far as this process's /proc shows them)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            uid = _real_uid(entry)
            if uid is not None:
                found.append((int(entry.name), uid))
    return found


@contextlib.contextmanager
def leased_uid(uids: range = UID_RANGE):
    """An unprivileged uid no other grading process on this machine is using, and under which no process runs.

    The grader kills every process of a finished kernel's uid, so two runs must never share one; an flock per uid
    arbitrates across processes. A uid whose lock is free can still have processes: a killed kernel's threads exit
    only when the scheduler runs them, which on a loaded machine takes seconds. Such a uid is skipped: its leftovers
    would share the next learner's uid, and count against its RLIMIT_NPROC (threads included), so the next kernel
    could fail to start its threads.
    """
    UID_LOCKS.mkdir(mode=0o700, exist_ok=True)
    busy = {uid for _, uid in _processes()} if os.geteuid() == 0 else set()
    for uid in uids:
        if uid in busy:
            continue
        handle = open(UID_LOCKS / str(uid), "w")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.close()
            continue
        try:
            yield uid
        finally:
            handle.close()
        return
    raise RuntimeError("no free sandbox uid")


def memory_group(stack: contextlib.ExitStack, conf: Confinement) -> Path | None:
    """The sandbox's own memory cgroup (removed when ``stack`` closes, after its processes were killed)."""
    group = cgroup.create(conf.tag, conf.limits.memory_mb)
    stack.callback(cgroup.remove, group)
    return group


def kill_uid(uid: int) -> int:
    """Kill every process of the slot's uid: children that left the process group too."""
    if os.geteuid() != 0:
        return 0
    killed = 0
    for _ in range(5):  # a forking process may create more while we sweep
        found = 0
        for pid, owner in _processes():
            if owner == uid:
                try:
                    os.kill(pid, signal.SIGKILL)
                    found += 1
                except (ProcessLookupError, PermissionError):
                    continue
        killed += found
        if not found:
            break
        time.sleep(0.05)
    return killed
