"""Scratch folders of kernels and program runners: made with their owner's mark, removed with what is mounted in
them, and those of a grader that died swept when the next one starts.

A kernel's scratch folder (``grade-*``, ``programs-*`` in the temporary folder or ``--scratch-root``) holds its
home, a size-capped tmpfs the grader mounts there as root (``rootfs.mount_home``). A grader that stops normally
detaches it and removes the folder; one that is killed (SIGKILL, a machine that lost power, a hub that gave up
waiting) cannot, and a tmpfs left mounted keeps its memory. So each folder carries a mark, ``.owner``: the pid of
the grader that made it and that process's start time (``/proc/PID/stat``, so a reused pid is not mistaken for the
owner). ``sweep`` removes every such folder whose owner is gone, mounts first; a folder of a live grader (another
service, a batch run beside it) is never touched. The mark sits beside the home, outside the kernel's reach (the
kernel sees only its home, and as another uid).
"""
from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import time
from pathlib import Path

from grader.sandbox import rootfs

PREFIXES = ("grade-", "programs-")
OWNER = ".owner"
#: a folder without a mark is being made (the mark is written right after ``mkdtemp``) or comes from an older
#: grader; it is swept only once it is this old
UNMARKED_GRACE_S = 120.0


def _started(pid: int) -> str | None:
    """The start time of process ``pid`` (clock ticks since boot), or None when there is no such process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat[stat.rindex(")") + 2:].split()[19]  # field 22, counted after the command name


def make(prefix: str, root: Path | str | None) -> Path:
    """A new scratch folder under ``root`` (the temporary folder when None), marked as this process's."""
    folder = Path(tempfile.mkdtemp(prefix=prefix, dir=root))
    (folder / OWNER).write_text(f"{os.getpid()} {_started(os.getpid())}\n")
    return folder


def _unescape(field: str) -> str:
    """A mount point as /proc/self/mountinfo writes it (space, tab, newline and backslash octal-escaped)."""
    return field.replace("\\040", " ").replace("\\011", "\t").replace("\\012", "\n").replace("\\134", "\\")


def mounts_under(folder: Path) -> list[Path]:
    """Mount points at or under ``folder`` in this mount namespace, deepest first."""
    base = os.path.realpath(folder)
    found = []
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return []
    for line in lines:
        fields = line.split(" ")
        if len(fields) > 4:
            point = _unescape(fields[4])
            if point == base or point.startswith(base + "/"):
                found.append(Path(point))
    return sorted(set(found), key=lambda p: len(p.parts), reverse=True)


def remove(folder: Path) -> None:
    """Detach whatever is mounted in ``folder`` (as root), then remove it."""
    for point in mounts_under(folder):
        with contextlib.suppress(OSError):  # not root, or already gone: rmtree then removes what it can
            rootfs.release_home(point)
    shutil.rmtree(folder, ignore_errors=True)


def _owner_gone(folder: Path) -> bool:
    try:
        pid, started = (folder / OWNER).read_text().split()
    except (OSError, ValueError):
        try:
            return time.time() - folder.stat().st_mtime > UNMARKED_GRACE_S
        except OSError:
            return False
    if not pid.isdigit():
        return True
    return _started(int(pid)) != started


def sweep(root: Path | str | None = None) -> list[Path]:
    """Remove the scratch folders under ``root`` whose grader is gone; returns them."""
    root = Path(root or tempfile.gettempdir())
    removed = []
    try:
        entries = list(root.iterdir())
    except OSError:
        return []
    for folder in entries:
        if not folder.name.startswith(PREFIXES) or folder.is_symlink() or not folder.is_dir():
            continue
        try:
            if folder.stat().st_uid != os.geteuid():
                continue  # another user's folder: not ours to judge
        except OSError:
            continue
        if _owner_gone(folder):
            remove(folder)
            removed.append(folder)
    return removed
