"""A private root file system for one kernel: an allowlist, read only but for its own folders.

Built inside the kernel's own mount namespace (nothing here is visible on the
host or to another kernel) and entered with ``chroot``:

- an empty tmpfs as ``/``;
- read only: the system folders, the Python installation, the virtual
  environment and the public kernel helpers (``keep``); every mount below
  them is made read only too (a recursive bind keeps submounts writable);
- a minimal ``/dev`` (null, zero, full, random, urandom, tty) with a fresh,
  private ``/dev/shm``; the host's ``/dev/shm``, ``/dev/pts`` and devices
  do not exist;
- a fresh ``/proc`` of the kernel's own PID namespace, showing its own processes only, and a fresh ``/sys``
  of its own network namespace (mounted by the namespace's first process);
- for a program runner only, never a kernel, read only when the grader has one: its folder of compiled XLA
  programs at ``/home/learner/.cache/jax-course-xla`` (``view.COMPILE_CACHE``), filled beforehand by the
  grader from the instructor's exported programs (writable only in that run, see ``grader.classroom.compile_cache``);
- writable: ``/home/learner`` (the host's ``{scratch}/home``, a size-capped
  tmpfs of its own, see :func:`mount_home`) and an empty ``/tmp``. Both
  vanish with the namespace or with the scratch folder.

The course, other checkouts, other submissions, the grading output, home
folders and the rest of the machine do not exist for the kernel.
"""
from __future__ import annotations

import ctypes
import os
from pathlib import Path

from grader.sandbox.view import COMPILE_CACHE

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
SYSTEM_PATHS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")
DEVICES = ("null", "zero", "full", "random", "urandom", "tty")
_FLAG_OPTIONS = {"nosuid": MS_NOSUID, "nodev": MS_NODEV, "noexec": MS_NOEXEC}

_libc = ctypes.CDLL(None, use_errno=True)


def mount(source, target, fstype, flags, data=None) -> None:
    if _libc.mount(source and source.encode(), str(target).encode(), fstype and fstype.encode(), flags,
                   data and data.encode()) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"mount {source} -> {target}: {os.strerror(err)}")


def _inside(root: Path, path: Path) -> Path:
    return Path(str(root) + str(path))


def _bind(root: Path, path: Path, *, recursive: bool = True) -> None:
    target = _inside(root, path)
    if path.is_symlink():  # /bin -> usr/bin on merged-/usr systems
        target.parent.mkdir(parents=True, exist_ok=True)
        if not target.exists() and not target.is_symlink():
            os.symlink(os.readlink(path), target)
        return
    if not path.exists():
        return
    if path.is_dir():
        target.mkdir(parents=True, exist_ok=True)
    else:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.touch()
    mount(str(path), target, None, MS_BIND | (MS_REC if recursive else 0))


def _links(root: Path, path: Path) -> None:
    """Make each symlink on the way to ``path`` inside ``root`` too, so that ``path`` itself (the interpreter's own
    ``sys.executable``, say) resolves there to the real folder, which ``build`` binds: without them a kernel started as
    ``/opt/venv/bin/python``, with ``/opt/venv`` a link, found no such file and died before it could say why."""
    current = Path("/")
    for part in path.parts[1:]:
        current = current / part
        if current.is_symlink():
            target = _inside(root, current)
            if not os.path.lexists(target):
                target.parent.mkdir(parents=True, exist_ok=True)
                os.symlink(os.readlink(current), target)
            current = current.resolve()


def _mounts_below(root: Path) -> list[tuple[Path, int]]:
    """Mount points at or below ``root`` with the per-mount flags to keep, outermost first."""
    found = []
    prefix = str(root).rstrip("/") + "/"
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        fields = line.split()
        point = fields[4].encode().decode("unicode_escape")
        if point == str(root) or point.startswith(prefix):
            keep = sum(flag for name, flag in _FLAG_OPTIONS.items() if name in fields[5].split(","))
            found.append((Path(point), keep))
    return sorted(found, key=lambda item: len(item[0].parts))


MNT_DETACH = 2


def mount_home(home: Path, size_mb: int) -> None:
    """Give the kernel's home (on the host) a size-capped tmpfs of its own, so no kernel can fill the disk.

    Mounted by the grader (as root) before the kernel starts, so the grader still reaches the
    kernel's sockets there; :func:`release_home` detaches it after the kernel is gone.
    """
    home.mkdir(parents=True, exist_ok=True)
    mount("tmpfs", home, "tmpfs", MS_NOSUID | MS_NODEV, f"size={size_mb}m,nr_inodes=65536,mode=700")


def release_home(home: Path) -> None:
    if _libc.umount2(str(home).encode(), MNT_DETACH) != 0 and ctypes.get_errno() not in (22, 2):  # EINVAL, ENOENT
        err = ctypes.get_errno()
        raise OSError(err, f"umount {home}: {os.strerror(err)}")


def build(new_root: Path, home: Path, inside_home: Path, keep: list[Path], *, cache: Path | None = None,
          cache_writable: bool = False) -> None:
    """Assemble the kernel's root at ``new_root`` (call in a fresh mount namespace, as root)."""
    mount(None, "/", None, MS_REC | MS_PRIVATE)
    new_root.mkdir(exist_ok=True)
    mount("tmpfs", new_root, "tmpfs", MS_NOSUID | MS_NODEV, "size=16m,mode=755")
    for system in SYSTEM_PATHS:
        _bind(new_root, Path(system))
    writable = []
    # /dev: a handful of device nodes and a private /dev/shm.
    dev = new_root / "dev"
    dev.mkdir()
    mount("tmpfs", dev, "tmpfs", MS_NOSUID | MS_NOEXEC, "size=64k,mode=755")
    for name in DEVICES:
        if Path("/dev", name).exists():
            _bind(new_root, Path("/dev", name), recursive=False)
    for name, target in [("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"), ("stdout", "/proc/self/fd/1"),
                         ("stderr", "/proc/self/fd/2")]:
        os.symlink(target, dev / name)
    for name, size in [("dev/shm", "64m"), ("tmp", "64m")]:
        (new_root / name).mkdir(parents=True, exist_ok=True)
        mount("tmpfs", new_root / name, "tmpfs", MS_NOSUID | MS_NODEV, f"size={size},mode=1777")
        writable.append(new_root / name)
    for name in ("proc", "sys"):
        (new_root / name).mkdir()
    # After the private /tmp, so that a course kept below /tmp (a CI checkout) stays visible.
    for path in sorted({p.resolve() for p in keep}, key=lambda p: len(p.parts)):
        _bind(new_root, path)
    for path in keep:  # a path reached through a symlink (an environment linked into /opt): its links too
        _links(new_root, path)
    target = _inside(new_root, inside_home)
    target.mkdir(parents=True, exist_ok=True)
    mount(str(home), target, None, MS_BIND)  # not recursive: nothing is mounted below it
    writable.append(target)
    if cache is not None:
        _bind_cache(home, _inside(new_root, inside_home / COMPILE_CACHE), cache)
        if cache_writable:
            writable.append(_inside(new_root, inside_home / COMPILE_CACHE))
    # Everything else read only, submounts included; device nodes stay usable (rw on a node is the driver's).
    for point, flags in _mounts_below(new_root):
        if point in writable or point.parent == dev:
            continue
        mount(None, point, None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | flags)


def _bind_cache(home: Path, target: Path, cache: Path) -> None:
    """Bind ``cache`` at ``target`` (inside the kernel's home); the caller's last step makes it read only.

    The folders leading to the mount point belong to the home's owner, as if the learner had made them;
    the mount point itself cannot be removed while it is mounted.
    """
    owner = home.stat()
    folder = home
    for part in COMPILE_CACHE.parts:
        folder = folder / part
        folder.mkdir(exist_ok=True)
        os.chown(folder, owner.st_uid, owner.st_gid)
    mount(str(cache.resolve()), target, None, MS_BIND)  # not recursive: the cache has no mounts below it


def mount_kernel_filesystems(new_root: Path) -> None:
    """A /proc of the new PID namespace and a /sys of the new network namespace (run as its first process)."""
    # hidepid: the kernel's uid sees its own processes only, not the namespace's init (root).
    mount("proc", new_root / "proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, "hidepid=2")
    mount("sysfs", new_root / "sys", "sysfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC)


def enter(new_root: Path, cwd: Path) -> None:
    os.chroot(new_root)
    os.chdir(cwd)
