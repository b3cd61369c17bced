"""Make a forked kernel look like an ordinary ipykernel from the inside.

A kernel forked from the fork server never execs, so ``sys.argv`` and
``/proc/self/cmdline`` would still be the fork server's. The fork server is
therefore started with exactly the kernels' environment (nothing of the
grader's is ever in its memory) and with a command line padded to the length
of a kernel's; each forked kernel writes its own command line over that
memory (``/proc/self/cmdline`` reads it) and sets ``sys.argv`` to match.
"""
from __future__ import annotations

import ctypes
import sys
from pathlib import Path

PAD_FLAG = "--pad"


def _encoded(argv: list[str]) -> bytes:
    return b"".join(arg.encode() + b"\0" for arg in argv)


def padded_server_argv(server: list[str], kernel: list[str]) -> list[str]:
    """``server`` plus a padding argument, so that its command line is as long as ``kernel``'s."""
    missing = len(_encoded(kernel)) - len(_encoded(server + [PAD_FLAG, ""]))
    if missing < 0:
        raise ValueError("the fork server's command line is longer than a kernel's")
    return server + [PAD_FLAG, "x" * missing]


def _arg_area() -> tuple[int, int]:
    """Start and end of this process's argument memory (fields 48 and 49 of /proc/self/stat)."""
    stat = Path("/proc/self/stat").read_text()
    fields = stat[stat.rindex(")") + 2:].split()
    return int(fields[45]), int(fields[46])


def become(argv: list[str], main_file: str) -> bool:
    """Show ``argv`` as this process's command line and ``sys.argv``; say whether /proc shows it too."""
    sys.argv = [main_file, *argv[3:]]  # as `python -m module ...` leaves it
    sys.orig_argv = list(argv)
    wanted = _encoded(argv)
    start, end = _arg_area()
    if end - start != len(wanted):
        return False
    ctypes.memmove(start, wanted, len(wanted))
    return Path("/proc/self/cmdline").read_bytes() == wanted
