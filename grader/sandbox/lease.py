"""What a sandbox holds for its lifetime: an unprivileged uid no other run uses, a memory cgroup, and the
sweep that kills every process of a uid afterwards (kernels and program runners alike)."""
from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import tempfile
import time
from pathlib import Path

from grader.sandbox import cgroup
from grader.sandbox.view import Confinement

UID_RANGE = range(61000, 62000)
RUNNER_UID_RANGE = range(62000, 62500)  # program runners: never a uid a kernel's leftovers may still hold
UID_LOCKS = Path(tempfile.gettempdir()) / "grader-uid-locks"


@contextlib.contextmanager
def leased_uid(uids: range = UID_RANGE):
    """An unprivileged uid no other grading process on this machine is using.

    The grader kills every process of a finished kernel's uid, so two runs
    must never share one; an flock per uid arbitrates across processes.
    """
    UID_LOCKS.mkdir(mode=0o700, exist_ok=True)
    for uid in uids:
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
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                if entry.stat().st_uid == uid:
                    os.kill(int(entry.name), signal.SIGKILL)
                    found += 1
            except (ProcessLookupError, FileNotFoundError, PermissionError):
                continue
        killed += found
        if not found:
            break
        time.sleep(0.05)
    return killed
