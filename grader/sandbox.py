"""Start a kernel confined to its scratch directory: ``python -m grader.sandbox``.

This is the kernel launch command the grader gives jupyter_client. It runs
before the kernel exists, as the grader's user, and then replaces itself with
the kernel (``exec``), so the limits below cannot be lifted from inside:

1. a new session, so the whole process group can be killed at once;
2. resource limits: address space (memory), processes, file size, open files,
   no core dumps;
3. when started as root: a private mount namespace in which the course root,
   the submissions and the grading output are covered by empty read-only
   tmpfs mounts (the virtual environment is mounted back, read-only), and then
   a switch to an unprivileged uid, so files outside the scratch directory
   cannot be written and the process limit is enforced (Linux does not apply
   ``RLIMIT_NPROC`` to root);
4. a clean environment: HOME and TMPDIR point into the scratch directory and
   nothing says whether this is grading or learning.
"""
from __future__ import annotations

import argparse
import ctypes
import json
import os
import resource
import shutil
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

MS_RDONLY, MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 1, 32, 4096, 16384, 1 << 18
CLONE_NEWNS = 0x00020000
SANDBOX_FAILED = "grader.sandbox could not confine the kernel:"


@dataclass
class Limits:
    """Per-submission limits; defaults suit the course notebooks on a 2-core, 24 GiB machine."""

    memory_mb: int = 4096
    max_processes: int = 256  # threads count too: JAX starts a few dozen
    max_file_mb: int = 64
    max_open_files: int = 512
    cell_timeout_s: float = 120.0
    notebook_timeout_s: float = 600.0
    max_output_bytes: int = 4 * 1024 * 1024

    def to_json(self) -> str:
        return json.dumps(asdict(self))


@dataclass
class Confinement:
    scratch: Path
    limits: Limits
    uid: int | None = None  # only used when the grader runs as root
    hide: list[Path] = field(default_factory=list)  # folders to cover (root only)
    keep: list[Path] = field(default_factory=list)  # folders inside `hide` to mount back read-only


def launch_command(conf: Confinement, kernel_cmd: list[str]) -> list[str]:
    """The wrapper command that confines ``kernel_cmd``."""
    args = [sys.executable, "-m", "grader.sandbox", "--scratch", str(conf.scratch), "--limits", conf.limits.to_json()]
    if conf.uid is not None:
        args += ["--uid", str(conf.uid)]
    for path in conf.hide:
        args += ["--hide", str(path)]
    for path in conf.keep:
        args += ["--keep", str(path)]
    return args + ["--", *kernel_cmd]


def _libc():
    return ctypes.CDLL(None, use_errno=True)


def _mount(libc, source, target, fstype, flags, data=None) -> None:
    if libc.mount(source and source.encode(), target.encode(), fstype and fstype.encode(), flags, data and data.encode()) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"mount {source} -> {target}: {os.strerror(err)}")


def hide_paths(hide: list[Path], keep: list[Path]) -> None:
    """Cover ``hide`` with empty tmpfs mounts in a private mount namespace."""
    libc = _libc()
    if libc.unshare(CLONE_NEWNS) != 0:
        raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWNS) failed")
    _mount(libc, None, "/", None, MS_REC | MS_PRIVATE)
    # Open what we keep before covering its parent, then bind it back by fd.
    kept = [(path, os.open(path, os.O_PATH)) for path in keep if path.exists()]
    existing = {p for p in hide if p.exists()}
    # A folder inside another hidden folder is already covered.
    hide = [p for p in existing if not any(other != p and p.is_relative_to(other) for other in existing)]
    for path in sorted(hide, key=lambda p: len(p.parts)):
        _mount(libc, "tmpfs", str(path), "tmpfs", 0, "size=64k,mode=755")
    for path, fd in kept:
        path.mkdir(parents=True, exist_ok=True)
        _mount(libc, f"/proc/self/fd/{fd}", str(path), None, MS_BIND | MS_REC)
        _mount(libc, None, str(path), None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_REC)
        os.close(fd)
    for path in hide:
        _mount(libc, None, str(path), None, MS_REMOUNT | MS_RDONLY)


def apply_limits(limits: Limits) -> None:
    mb = 1024 * 1024
    for which, value in [
        (resource.RLIMIT_AS, limits.memory_mb * mb),
        (resource.RLIMIT_NPROC, limits.max_processes),
        (resource.RLIMIT_FSIZE, limits.max_file_mb * mb),
        (resource.RLIMIT_NOFILE, limits.max_open_files),
        (resource.RLIMIT_CORE, 0),
    ]:
        resource.setrlimit(which, (value, value))


def clean_environment(scratch: Path) -> dict[str, str]:
    # JPY_PARENT_PID lets the kernel exit if the grader dies (JupyterLab sets it too).
    keep = {k: os.environ[k] for k in ("PATH", "LANG", "LC_ALL", "TZ", "JPY_PARENT_PID") if k in os.environ}
    tmp = scratch / ".tmp"
    tmp.mkdir(exist_ok=True)
    return {
        **keep,
        "HOME": str(scratch),
        "TMPDIR": str(tmp),
        "MPLCONFIGDIR": str(scratch / ".matplotlib"),
        "MPLBACKEND": "module://matplotlib_inline.backend_inline",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONNOUSERSITE": "1",
    }


def _give_to(path: Path, uid: int) -> None:
    for root, dirs, files in os.walk(path):
        os.chown(root, uid, uid)
        for name in files:
            os.chown(os.path.join(root, name), uid, uid)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scratch", type=Path, required=True)
    parser.add_argument("--limits", required=True)
    parser.add_argument("--uid", type=int)
    parser.add_argument("--hide", type=Path, action="append", default=[])
    parser.add_argument("--keep", type=Path, action="append", default=[])
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    limits = Limits(**json.loads(args.limits))
    scratch = args.scratch.resolve()

    try:
        os.setsid()
    except OSError:
        pass  # already a session leader
    # The kernel reads its connection file; copy it into the scratch folder so
    # the unprivileged kernel can read it, and nothing else of ours.
    for i, item in enumerate(command):
        if item == "-f" and i + 1 < len(command):
            copy = scratch / ".connection.json"
            shutil.copyfile(command[i + 1], copy)
            command[i + 1] = str(copy)
    log = os.open(scratch / ".kernel.log", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.dup2(log, 1)
    os.dup2(log, 2)
    try:
        env = clean_environment(scratch)
        if os.geteuid() == 0 and args.hide:
            hide_paths(args.hide, args.keep)
        if os.geteuid() == 0 and args.uid is not None:
            _give_to(scratch, args.uid)
            os.chmod(scratch, 0o700)
        apply_limits(limits)
        if os.geteuid() == 0 and args.uid is not None:
            os.setgroups([])
            os.setgid(args.uid)
            os.setuid(args.uid)
        os.chdir(scratch)
    except Exception as error:  # fail closed: never start an unconfined kernel
        print(f"{SANDBOX_FAILED} {type(error).__name__}: {error}", flush=True)
        os._exit(70)
    os.execve(command[0], command, env)


if __name__ == "__main__":
    main()
