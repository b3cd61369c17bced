"""What a sandbox holds for its lifetime: an unprivileged uid no other run uses, a memory cgroup, and the
sweep that kills every process of a uid afterwards (kernels and program runners alike)."""
from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import stat
import time
from pathlib import Path

from grader.sandbox import cgroup
from grader.sandbox.view import Confinement

UID_RANGE = range(61000, 62000)
RUNNER_UID_RANGE = range(62000, 62500)  # program runners: never a uid a kernel's leftovers may still hold
#: one folder for every grader on the machine, whatever its TMPDIR: two graders whose temporary folders differ (a
#: service started with its own) would otherwise each lease the same uid, and one's sweep would kill the other's
#: kernel. Root's is in /run, where only root can create anything: a folder in the shared temporary folder could be
#: made first by a learner's account, whose links and FIFOs root would then open (docs/explanation/security-model.md).
ROOT_UID_LOCKS = Path("/run") / "grader-uid-locks"


class LeaseRefused(RuntimeError):
    """The uid locks are not what the grader made: someone else could have planted them. Said to the administrator."""


def uid_locks() -> Path:
    """Where this process's grader leases uids: root's in /run; an unprivileged grader (whose kernels run as itself,
    so the uid is only a name) in a folder of its own in /tmp."""
    euid = os.geteuid()
    return ROOT_UID_LOCKS if euid == 0 else Path("/tmp") / f"grader-uid-locks-{euid}"


def open_locks(locks: Path | None = None) -> int:
    """The lock folder, made if missing and opened without following links, checked on every use: a folder of this
    process's user, with no access for anyone else, and every folder above it this user's or root's and writable by
    no one else (or sticky, where only its owner could replace it). Raises LeaseRefused saying what to do."""
    locks = locks or uid_locks()
    euid = os.geteuid()
    for above in reversed(locks.parents):
        info = os.lstat(above)
        if stat.S_ISLNK(info.st_mode) or info.st_uid not in (0, euid) or (
                info.st_mode & 0o022 and not info.st_mode & stat.S_ISVTX):
            raise LeaseRefused(f"{above} (above the sandbox uid locks {locks}) is a link or can be changed by another "
                               f"account (owner uid {info.st_uid}, mode {oct(info.st_mode & 0o7777)}): the locks "
                               "cannot be trusted there")
    with contextlib.suppress(FileExistsError):
        os.mkdir(locks, 0o700)
    try:
        folder = os.open(locks, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as error:
        raise LeaseRefused(f"{locks} (the sandbox uid locks) is not a folder: {error.strerror}; stop every grader, "
                           f"remove it (rm -r {locks}) and start again") from None
    info = os.fstat(folder)
    if info.st_uid != euid or info.st_mode & 0o077:
        os.close(folder)
        raise LeaseRefused(f"{locks} (the sandbox uid locks) is not a folder of uid {euid}'s with mode 0700 (owner uid "
                           f"{info.st_uid}, mode {oct(info.st_mode & 0o7777)}): someone else made it; stop every "
                           f"grader, remove it (rm -r {locks}) and start again")
    return folder


def _lock_file(folder: int, uid: int, locks: Path) -> int:
    """The lock file of ``uid`` in the checked folder, opened without following a link, truncating anything or
    waiting on a FIFO, and refused unless it is a plain file of this process's user with one name."""
    name = str(uid)
    try:
        handle = os.open(name, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o600,
                         dir_fd=folder)
    except OSError as error:
        raise LeaseRefused(f"{locks / name} (a sandbox uid lock) cannot be opened as a plain file ({error.strerror}): "
                           f"someone planted it; stop every grader, remove {locks} and start again") from None
    info = os.fstat(handle)
    if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid() or info.st_nlink != 1:
        os.close(handle)
        raise LeaseRefused(f"{locks / name} (a sandbox uid lock) is not a plain file of this grader's (mode "
                           f"{oct(info.st_mode)}, owner uid {info.st_uid}, {info.st_nlink} names): someone planted "
                           f"it; stop every grader, remove {locks} and start again")
    return handle


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
    uid, handle = _take(uids)
    try:
        yield uid
    finally:
        os.close(handle)


def _take(uids: range) -> tuple[int, int]:
    """The first uid of ``uids`` that no process runs under and whose lock this process could take, and the lock."""
    locks = uid_locks()
    folder = open_locks(locks)
    try:
        busy = {uid for _, uid in _processes()} if os.geteuid() == 0 else set()
        for uid in uids:
            if uid in busy:
                continue
            handle = _lock_file(folder, uid, locks)
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(handle)
                continue
            return uid, handle
    finally:
        os.close(folder)
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
