"""Linux namespaces for one kernel, and the three processes that hold them.

``unshare`` gives the calling process new mount, network, IPC and UTS
namespaces, and its *children* a new PID namespace. So confinement forks
twice::

    A  waiter   host PID namespace; the pid the grader tracks; waits for B
    B  init     PID 1 of the new namespace: mounts its /proc and /sys, brings up
                its loopback, reaps, exits with the kernel (root, hidden from the kernel)
    C  kernel   everything else of the confinement, then the kernel itself

When B ends, Linux kills every process left in the namespace, so nothing a
notebook started survives it; the namespace's network, SysV and POSIX IPC
objects, ``/tmp`` and ``/dev/shm`` go with the last process. A dies when the
grader (or its fork server) dies, B when A dies, and with B everything else.
"""
from __future__ import annotations

import ctypes
import fcntl
import os
import signal
import socket
import struct

CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC = 0x00020000, 0x04000000, 0x08000000
CLONE_NEWPID, CLONE_NEWNET = 0x20000000, 0x40000000
ALL = CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWPID | CLONE_NEWNET
PR_SET_PDEATHSIG, PR_SET_DUMPABLE = 1, 4
SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1

_libc = ctypes.CDLL(None, use_errno=True)


def unshare(flags: int = ALL) -> None:
    if _libc.unshare(flags) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"unshare: {os.strerror(err)}")


def die_with_parent() -> None:
    """SIGKILL this process when its parent ends (reset by a uid change: call after it)."""
    _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def dumpable() -> None:
    """What an exec does after a uid change; a forked kernel that skipped the exec does it here."""
    _libc.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)


def loopback_up() -> None:
    """Bring up ``lo`` of the new network namespace: its only interface, reaching only itself."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        request = struct.pack("16sh22x", b"lo", 0)
        flags = struct.unpack("16sh", fcntl.ioctl(sock, SIOCGIFFLAGS, request)[:18])[1]
        fcntl.ioctl(sock, SIOCSIFFLAGS, struct.pack("16sh22x", b"lo", flags | IFF_UP))


def _exit_like(status: int) -> None:
    os._exit(os.waitstatus_to_exitcode(status) % 256 if os.WIFEXITED(status) else 128 + os.WTERMSIG(status))


def wait_as_waiter(child: int) -> None:
    """Process A: end B when told to stop, then leave with B's status. Never returns."""
    def stop(signum, frame):
        try:
            os.kill(child, signal.SIGKILL)
        except ProcessLookupError:
            pass

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # an interrupt is for the kernel (it gets it too)
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, stop)
    while True:
        try:
            _, status = os.waitpid(child, 0)
        except ChildProcessError:
            os._exit(0)
        _exit_like(status)


def wait_as_init(kernel: int) -> None:
    """Process B (PID 1): reap every orphan; leave with the kernel's status. Never returns."""
    while True:
        try:
            pid, status = os.wait()
        except ChildProcessError:
            os._exit(0)
        if pid == kernel:
            _exit_like(status)
