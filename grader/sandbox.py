"""Start a kernel confined to its scratch directory: ``python -m grader.sandbox``.

This is the kernel launch command the grader gives jupyter_client. It runs
before the kernel exists, as the grader's user, and then replaces itself with
the kernel (``exec``), so the limits below cannot be lifted from inside:

1. a new session, so the whole process group can be killed at once;
2. resource limits: address space (memory), processes, file size, open files,
   no core dumps;
3. when started as root: a private mount namespace whose root holds only the
   system folders, the Python environment and the public kernel helpers (read
   only) and the scratch folder (``enter_private_root``), then a switch to an
   unprivileged uid, so nothing outside the scratch folder can be read or
   written and the process limit is enforced (Linux does not apply
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
    private_root: bool = False  # root only: see nothing but the system, `keep` and the scratch folder
    keep: list[Path] = field(default_factory=list)  # folders the kernel may read


def launch_command(conf: Confinement, kernel_cmd: list[str]) -> list[str]:
    """The wrapper command that confines ``kernel_cmd``."""
    args = [sys.executable, "-m", "grader.sandbox", "--scratch", str(conf.scratch), "--limits", conf.limits.to_json()]
    if conf.uid is not None:
        args += ["--uid", str(conf.uid)]
    if conf.private_root:
        args += ["--private-root"]
    for path in conf.keep:
        args += ["--keep", str(path)]
    return args + ["--", *kernel_cmd]


def _libc():
    return ctypes.CDLL(None, use_errno=True)


def _mount(libc, source, target, fstype, flags, data=None) -> None:
    if libc.mount(source and source.encode(), target.encode(), fstype and fstype.encode(), flags, data and data.encode()) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"mount {source} -> {target}: {os.strerror(err)}")


SYSTEM_PATHS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/dev", "/proc", "/sys")


def enter_private_root(scratch: Path, keep: list[Path]) -> None:
    """Replace the visible file system by an allowlist, then chroot into it.

    A new mount namespace gets an empty tmpfs as its root. Into it go, read
    only, the system folders, the Python installation and the folders in
    ``keep``; the scratch folder is the only writable place. Nothing else on
    the machine (the course, other checkouts, other submissions, grading
    output, home folders, the rest of /tmp) exists for the kernel.
    """
    libc = _libc()
    if libc.unshare(CLONE_NEWNS) != 0:
        raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWNS) failed")
    _mount(libc, None, "/", None, MS_REC | MS_PRIVATE)
    new_root = scratch / ".root"
    new_root.mkdir(exist_ok=True)
    _mount(libc, "tmpfs", str(new_root), "tmpfs", 0, "size=16m,mode=755")

    def expose(path: Path, writable: bool = False, recursive: bool = True) -> None:
        target = Path(str(new_root) + str(path))
        if path.is_symlink():  # /bin -> usr/bin on merged-/usr systems
            target.parent.mkdir(parents=True, exist_ok=True)
            if not target.exists() and not target.is_symlink():
                os.symlink(os.readlink(path), target)
            return
        if not path.exists():
            return
        target.mkdir(parents=True, exist_ok=True)
        _mount(libc, str(path), str(target), None, MS_BIND | (MS_REC if recursive else 0))
        if not writable:
            _mount(libc, None, str(target), None, MS_BIND | MS_REMOUNT | MS_RDONLY)

    tmp = new_root / "tmp"
    tmp.mkdir(exist_ok=True)
    _mount(libc, "tmpfs", str(tmp), "tmpfs", 0, "size=64m,mode=1777")
    for system in SYSTEM_PATHS:
        expose(Path(system))
    for path in sorted({p.resolve() for p in keep}, key=lambda p: len(p.parts)):
        expose(path)
    # Not recursive: the new root itself is mounted inside the scratch folder.
    expose(scratch, writable=True, recursive=False)
    os.chroot(new_root)
    os.chdir(scratch)


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


def confine(argv: list[str]) -> tuple[list[str], dict[str, str]]:
    """Apply every step to this process; return the kernel command and its environment.

    On failure it prints ``SANDBOX_FAILED`` to the kernel log and exits: an
    unconfined kernel never starts.
    """
    parser = argparse.ArgumentParser(prog="python -m grader.sandbox", description=__doc__.splitlines()[0])
    parser.add_argument("--scratch", type=Path, required=True)
    parser.add_argument("--limits", required=True)
    parser.add_argument("--uid", type=int)
    parser.add_argument("--private-root", action="store_true")
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
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    try:
        env = clean_environment(scratch)
        if os.geteuid() == 0 and args.uid is not None:
            _give_to(scratch, args.uid)
            os.chmod(scratch, 0o700)
        if os.geteuid() == 0 and args.private_root:
            enter_private_root(scratch, args.keep)
        apply_limits(limits)
        if os.geteuid() == 0 and args.uid is not None:
            os.setgroups([])
            os.setgid(args.uid)
            os.setuid(args.uid)
        os.chdir(scratch)
    except Exception as error:  # fail closed: never start an unconfined kernel
        print(f"{SANDBOX_FAILED} {type(error).__name__}: {error}", flush=True)
        os._exit(70)
    return command, env


def main(argv: list[str] | None = None) -> None:
    command, env = confine(sys.argv[1:] if argv is None else argv)
    os.execve(command[0], command, env)


if __name__ == "__main__":
    main()
