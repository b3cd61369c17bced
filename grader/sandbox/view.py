"""What one kernel sees, and where that lives on the host.

Every kernel gets the same view, so nothing in it tells one grading run from
another or from a learner's own kernel: its home and working folder are
``/home/learner`` (the host folder ``{scratch}/home``), its temporary folders
are empty, and its environment is :func:`kernel_environment`, identical for
every kernel. The grader's own files for this kernel (the kernel log, the
sandbox status, the private root's mount point) stay in ``{scratch}``, which
the kernel cannot see.

The kernel talks to the grader over ZeroMQ's IPC transport: Unix sockets in
the kernel's own runtime folder, reachable from the host through
``{scratch}/home`` and from no other kernel (each sees only its own home, and
has no network but its own loopback).
"""
from __future__ import annotations

import sys
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from grader.sandbox.limits import Limits

KERNEL_HOME = Path("/home/learner")
RUNTIME = Path(".local/share/jupyter/runtime")
# below a program runner's home (never a kernel's): grader.classroom.compile_cache
COMPILE_CACHE = Path(".cache/jax-course-xla")
SOCKET_PATH_MAX = 100  # sun_path holds 108 bytes, with room for "-NNNNN"


def kernel_environment(home: Path = KERNEL_HOME) -> dict[str, str]:
    """The environment of every kernel: that of a kernel a learner starts, nothing of the grader's."""
    return {
        "PATH": f"{Path(sys.prefix) / 'bin'}:/usr/local/bin:/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "HOME": str(home),
        "SHELL": "/bin/bash",
    }


def kernel_argv(connection_file: str) -> list[str]:
    """The command line of an ordinary ipykernel."""
    return [sys.executable, "-m", "ipykernel_launcher", "-f", connection_file]


def connection_name(tag: str) -> str:
    return f"kernel-{tag}.json"


@dataclass
class Confinement:
    scratch: Path
    limits: Limits
    uid: int | None = None  # only used when the grader runs as root
    private_root: bool = False  # root only: namespaces and a private root file system
    keep: list[Path] = field(default_factory=list)  # folders the kernel may read
    # program runners only (never kernels), private root: a host folder of compiled XLA programs, bound at
    # ~/COMPILE_CACHE, read only unless ``compile_cache_writable`` (only while the grader fills it)
    compile_cache: Path | None = None
    compile_cache_writable: bool = False
    cgroup: Path | None = None  # root only: the memory cgroup the sandbox joins first (``cgroup``)
    tag: str = field(default_factory=lambda: str(uuid.uuid4()))

    @property
    def home(self) -> Path:
        """The kernel's home on the host."""
        return self.scratch / "home"

    @property
    def inside_home(self) -> Path:
        """The kernel's home as the kernel sees it."""
        return KERNEL_HOME if self.private_root else self.home

    def ipc_prefix(self, inside: bool = False) -> str:
        """ZeroMQ IPC endpoint prefix (jupyter_client's ``ip`` for ``transport='ipc'``)."""
        base = self.inside_home if inside else self.home
        prefix = str(base / RUNTIME / f"ipc-{self.tag[:8]}")
        if len(prefix) > SOCKET_PATH_MAX:
            raise ValueError(f"the kernel's socket path is too long ({len(prefix)} > {SOCKET_PATH_MAX}): {prefix}; "
                             "use a shorter --scratch-root")
        return prefix

    def connection_file(self, inside: bool = False) -> Path:
        base = self.inside_home if inside else self.home
        return base / RUNTIME / connection_name(self.tag)

    @property
    def log_file(self) -> Path:
        return self.scratch / "kernel.log"

    @property
    def status_file(self) -> Path:
        """Written by the sandbox only, before learner code runs, and only when confinement failed."""
        return self.scratch / "sandbox-status"
