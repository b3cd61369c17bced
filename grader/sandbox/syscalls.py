"""A seccomp filter for what namespaces do not cover, installed last, on the kernel itself.

Namespaces isolate inet sockets, Unix sockets, IPC and processes, but some
socket families are not namespaced at all (``AF_VSOCK`` reaches the
hypervisor's host) and some system calls are kernel attack surface a notebook
never needs. The filter (libseccomp through ``pyseccomp``) lets everything
else through and answers these with an error:

- ``socket``/``socketpair`` of any family but Unix, IPv4, IPv6 and netlink;
- io_uring (its operations bypass seccomp's argument checks), BPF, perf
  events, userfaultfd, the kernel keyring, ptrace, module and kexec loading,
  mounting, namespaces and ``chroot``;
- ``clone`` with any namespace flag (as ``unshare`` would), and ``clone3``
  (its flags live in memory seccomp cannot read) with ``ENOSYS``, so the C
  library falls back to ``clone``, as under Docker's default profile.

It is inherited by every child and survives ``exec``, and ``no_new_privs``
is set with it.
"""
from __future__ import annotations

import errno
import socket

ALLOWED_FAMILIES = (socket.AF_UNIX, socket.AF_INET, socket.AF_INET6, socket.AF_NETLINK)
DENIED_CALLS = (
    "io_uring_setup", "io_uring_enter", "io_uring_register", "bpf", "perf_event_open", "userfaultfd",
    "keyctl", "add_key", "request_key", "ptrace", "process_vm_readv", "process_vm_writev",
    "init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load",
    "mount", "umount2", "pivot_root", "chroot", "unshare", "setns", "fsopen", "fsmount", "move_mount",
    "open_tree", "quotactl", "swapon", "swapoff", "reboot", "acct",
)

NAMESPACE_FLAGS = (0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000, 0x40000000)  # CLONE_NEW*


def install() -> None:
    import pyseccomp as seccomp

    rules = seccomp.SyscallFilter(seccomp.ALLOW)
    for call in ("socket", "socketpair"):
        for family in range(0, max(ALLOWED_FAMILIES) + 1):
            if family not in ALLOWED_FAMILIES:
                rules.add_rule(seccomp.ERRNO(errno.EAFNOSUPPORT), call, seccomp.Arg(0, seccomp.EQ, family))
        rules.add_rule(seccomp.ERRNO(errno.EAFNOSUPPORT), call, seccomp.Arg(0, seccomp.GT, max(ALLOWED_FAMILIES)))
    for call in DENIED_CALLS:
        try:
            rules.add_rule(seccomp.ERRNO(errno.EPERM), call)
        except (ValueError, OSError, RuntimeError):  # a call this architecture does not have
            continue
    for flag in NAMESPACE_FLAGS:
        rules.add_rule(seccomp.ERRNO(errno.EPERM), "clone", seccomp.Arg(0, seccomp.MASKED_EQ, flag, flag))
    try:
        rules.add_rule(seccomp.ERRNO(errno.ENOSYS), "clone3")
    except (ValueError, OSError, RuntimeError):  # libseccomp too old to know clone3: nothing to refuse
        pass
    rules.load()
