"""One memory cgroup per kernel (or program runner): its memory limit holds for all of its processes together.

``RLIMIT_AS`` (``limits``) caps each process's address space, not a submission: a notebook can start many
processes (up to its process limit), each under the cap, and together push the host into the OOM killer,
where other learners' kernels and the grader live. So, as root, the grader makes a cgroup per sandbox with
``memory_mb`` as its limit (RAM, and RAM plus swap where swap is accounted), the sandboxed process joins it
before any learner code exists (``confine``), and everything it starts stays in it: the kernel's private
root has no cgroup file system, and its unprivileged uid could not write one. When the group reaches its
limit the kernel's own OOM killer picks a process *of that group*; the grader reads the group's OOM count to
report ``out_of_memory`` and removes the group after the kernel.

cgroup v2 (a unified hierarchy with the memory controller) is used where the machine has one, else v1's
``memory`` hierarchy. Without either, or when it is not writable (a container without its cgroup
delegated), ``create`` returns None: the per-process limit still applies, and ``describe`` says so.
"""
from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path

CGROUP_FS = Path("/sys/fs/cgroup")
PARENT = "grader-sandboxes"
MB = 1024 * 1024


def _v2_root() -> Path | None:
    controllers = CGROUP_FS / "cgroup.controllers"
    if controllers.is_file() and "memory" in controllers.read_text().split():
        return CGROUP_FS
    return None


def _v1_root() -> Path | None:
    memory = CGROUP_FS / "memory"
    return memory if (memory / "memory.limit_in_bytes").is_file() else None


def _write(path: Path, value: str) -> None:
    with open(path, "w") as handle:
        handle.write(value)


def create(tag: str, memory_mb: int) -> Path | None:
    """A new memory cgroup for the sandbox ``tag``, limited to ``memory_mb``; None where none can be made."""
    if os.geteuid() != 0:
        return None
    try:
        v2 = _v2_root()
        if v2 is not None:
            parent = v2 / PARENT
            parent.mkdir(exist_ok=True)
            _write(v2 / "cgroup.subtree_control", "+memory")
            _write(parent / "cgroup.subtree_control", "+memory")
            group = parent / tag
            group.mkdir()
            _write(group / "memory.max", str(memory_mb * MB))
            with contextlib.suppress(OSError):
                _write(group / "memory.swap.max", "0")
            return group
        v1 = _v1_root()
        if v1 is None:
            return None
        parent = v1 / PARENT
        parent.mkdir(exist_ok=True)
        group = parent / tag
        group.mkdir()
        _write(group / "memory.limit_in_bytes", str(memory_mb * MB))
        with contextlib.suppress(OSError):  # only where swap is accounted; never below the RAM limit
            _write(group / "memory.memsw.limit_in_bytes", str(memory_mb * MB))
        return group
    except OSError:
        return None


def join(group: Path) -> None:
    """Move the calling process (and so everything it starts later) into ``group``."""
    _write(group / "cgroup.procs", str(os.getpid()))


def threads(group: Path | None) -> list[int]:
    """The host ids of every thread in ``group`` (v2 ``cgroup.threads``, v1 ``tasks``); [] where there is none."""
    if group is None:
        return []
    for name in ("cgroup.threads", "tasks"):
        try:
            return [int(line) for line in (group / name).read_text().split()]
        except (OSError, ValueError):
            continue
    return []


def ran_out_of_memory(group: Path | None) -> bool:
    """Whether the group's limit made the kernel's OOM killer act (or an allocation fail) in it."""
    if group is None:
        return False
    try:
        events = group / "memory.events"
        if events.is_file():  # v2
            counts = dict(line.split() for line in events.read_text().splitlines() if line.strip())
            return int(counts.get("oom_kill", 0)) > 0 or int(counts.get("oom", 0)) > 0
        control = dict(line.split() for line in (group / "memory.oom_control").read_text().splitlines()
                       if line.strip())
        return int(control.get("oom_kill", 0)) > 0 or int((group / "memory.failcnt").read_text()) > 0
    except (OSError, ValueError):
        return False


def remove(group: Path | None, wait_s: float = 5.0) -> None:
    """Remove ``group`` once its processes are gone (they were killed with the kernel's uid)."""
    if group is None:
        return
    deadline = time.monotonic() + wait_s
    while True:
        try:
            group.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            if time.monotonic() > deadline:
                return  # a process still exiting; an empty group costs nothing and the next run may remove it
            time.sleep(0.05)


def describe() -> str:
    """Which per-sandbox memory limit this machine gives (for the grader's start-up warning)."""
    if os.geteuid() != 0:
        return "no memory cgroup (not root): each process is limited on its own"
    if _v2_root() is not None:
        return "cgroup v2 memory.max per sandbox"
    if _v1_root() is not None:
        return "cgroup v1 memory.limit_in_bytes per sandbox"
    return "no memory cgroup on this machine: each process is limited on its own"
