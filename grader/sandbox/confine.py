"""Confine the calling process, step by step, before it becomes a kernel.

Runs as the grader's user (root, for the full sandbox) in the process that
will become the kernel, before any learner code exists. In order:

1. a new session, so the grader can kill the whole process group at once; as root,
   the sandbox's memory cgroup (``cgroup``), so its limit holds for every process it starts;
2. the kernel's connection file placed in its own runtime folder, pointing at
   IPC sockets there (no TCP port exists for another process to find);
3. stdout and stderr to the kernel log, stdin from /dev/null;
4. as root: new mount, network, IPC, UTS and PID namespaces
   (``namespaces``), the private root file system (``rootfs``), and a
   switch to a leased unprivileged uid, which also makes the process limit
   effective (Linux does not apply ``RLIMIT_NPROC`` to root);
5. resource limits (``limits``), and as root a seccomp filter (``syscalls``);
6. every other file descriptor closed; the environment is the kernels' own
   (``view.kernel_environment``), identical for every kernel.

A failure at any step is written to the sandbox status file, which only this
code can write (it is opened before, and closed before any learner code; the
kernel cannot see it), and the process exits: an unconfined kernel never
starts, and a kernel cannot forge a sandbox failure.
"""
from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from grader.sandbox import cgroup, namespaces, rootfs, syscalls
from grader.sandbox.limits import Limits, apply_limits
from grader.sandbox.view import Confinement, kernel_argv, kernel_environment

SANDBOX_FAILED = "grader.sandbox could not confine the kernel:"


def launch_command(conf: Confinement, python: str) -> list[str]:
    """The command that starts a kernel confined by ``conf`` (``python`` runs ``grader.sandbox``)."""
    return [python, "-m", "grader.sandbox", *sandbox_arguments(conf)]


def sandbox_arguments(conf: Confinement) -> list[str]:
    args = ["--scratch", str(conf.scratch), "--limits", conf.limits.to_json(), "--tag", conf.tag]
    if conf.uid is not None:
        args += ["--uid", str(conf.uid)]
    if conf.private_root:
        args += ["--private-root"]
    for path in conf.keep:
        args += ["--keep", str(path)]
    if conf.cgroup is not None:
        args += ["--cgroup", str(conf.cgroup)]
    if conf.compile_cache is not None:
        args += ["--compile-cache", str(conf.compile_cache)]
        if conf.compile_cache_writable:
            args += ["--compile-cache-writable"]
    return args


def parse(argv: list[str]) -> tuple[Confinement, list[str]]:
    """The confinement and, after ``--``, an optional program to run instead of a kernel (tests)."""
    parser = argparse.ArgumentParser(prog="python -m grader.sandbox", description="Start a confined kernel.")
    parser.add_argument("--scratch", type=Path, required=True)
    parser.add_argument("--limits", required=True)
    parser.add_argument("--tag", required=True)
    parser.add_argument("--uid", type=int)
    parser.add_argument("--private-root", action="store_true")
    parser.add_argument("--keep", type=Path, action="append", default=[])
    parser.add_argument("--compile-cache", type=Path)
    parser.add_argument("--cgroup", type=Path)
    parser.add_argument("--compile-cache-writable", action="store_true")
    parser.add_argument("program", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    conf = Confinement(scratch=args.scratch.resolve(), limits=Limits(**json.loads(args.limits)), uid=args.uid,
                       private_root=args.private_root, keep=args.keep, tag=args.tag,
                       compile_cache=args.compile_cache, compile_cache_writable=args.compile_cache_writable,
                       cgroup=args.cgroup)
    program = args.program[1:] if args.program[:1] == ["--"] else args.program
    return conf, program


def _place_connection_file(conf: Confinement) -> None:
    """Point the connection file the grader wrote at the kernel's view of its IPC sockets."""
    path = conf.connection_file()
    info = json.loads(path.read_text())
    if info.get("transport") != "ipc":
        raise ValueError("the kernel must use the IPC transport (no TCP ports)")
    info["ip"] = conf.ipc_prefix(inside=True)
    path.write_text(json.dumps(info, indent=1))


def _give_home_to(conf: Confinement) -> None:
    for root, _dirs, files in os.walk(conf.home):
        os.chown(root, conf.uid, conf.uid)
        for name in files:
            os.chown(os.path.join(root, name), conf.uid, conf.uid)
    os.chmod(conf.home, 0o700)


def _drop_privileges(uid: int) -> None:
    os.setgroups([])
    os.setgid(uid)
    os.setuid(uid)


def _redirect_output(conf: Confinement) -> None:
    log = os.open(conf.log_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.dup2(log, 1)
    os.dup2(log, 2)
    os.close(log)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)


def confine(argv: list[str]) -> tuple[Confinement, list[str], dict[str, str]]:
    """Apply every step to this process; return the confinement, the command and its environment.

    As root with ``--private-root`` this forks twice (see ``namespaces``): only
    the innermost process returns; the others wait and exit with it.
    """
    conf, program = parse(argv)
    status = os.open(conf.status_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
    root = os.geteuid() == 0
    try:
        try:
            os.setsid()
        except OSError:
            pass  # already a session leader
        if root and conf.cgroup is not None:
            cgroup.join(conf.cgroup)
        _redirect_output(conf)
        if not program:
            _place_connection_file(conf)
        namespaces.die_with_parent()
        if root and conf.uid is not None:
            _give_home_to(conf)
        if root and conf.private_root:
            namespaces.unshare()
            new_root = conf.scratch / "root"
            rootfs.build(new_root, conf.home, conf.inside_home, conf.keep,
                         cache=conf.compile_cache, cache_writable=conf.compile_cache_writable)
            init = os.fork()
            if init:
                os.close(status)
                namespaces.wait_as_waiter(init)
            # PID 1 of the kernel's namespaces.
            namespaces.die_with_parent()
            rootfs.mount_kernel_filesystems(new_root)
            namespaces.loopback_up()
            rootfs.enter(new_root, conf.inside_home)
            kernel = os.fork()
            if kernel:  # stays root: the kernel's uid can neither see, signal nor trace it
                os.close(status)
                namespaces.wait_as_init(kernel)
        apply_limits(conf.limits)
        if root and conf.uid is not None:
            _drop_privileges(conf.uid)
        namespaces.die_with_parent()  # a uid change cleared it
        namespaces.dumpable()  # as after an exec: /proc/self is the kernel's own, forked or not
        if root and conf.private_root:
            syscalls.install()
        os.chdir(conf.inside_home)
    except BaseException as error:  # noqa: BLE001 - fail closed: never start an unconfined kernel
        os.write(status, f"{SANDBOX_FAILED} {type(error).__name__}: {error}\n".encode())
        os._exit(70)
    os.close(status)
    os.closerange(3, 1 << 16)
    command = program or kernel_argv(str(conf.connection_file(inside=True)))
    return conf, command, kernel_environment(conf.inside_home)


def read_failure(conf: Confinement) -> str | None:
    """The sandbox's own failure message, if confinement failed (the kernel cannot write this file)."""
    try:
        text = conf.status_file.read_text(errors="replace").strip()
    except OSError:
        return None
    return text.splitlines()[0] if text else None
