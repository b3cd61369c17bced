"""The kernel sandbox: everything that confines one learner kernel.

- ``limits``      resource limits (memory, processes, files, time, output)
- ``view``        what the kernel sees: its home, environment, sockets, command line
- ``namespaces``  mount, network, IPC, UTS and PID namespaces and the processes holding them
- ``rootfs``      the private, allowlisted root file system
- ``syscalls``    a seccomp filter for socket families and calls namespaces do not cover
- ``disguise``    a forked kernel's command line made that of an ordinary ipykernel
- ``cgroup``      a memory cgroup per sandbox: the memory limit of all its processes together
- ``confine``     the steps in order; ``python -m grader.sandbox`` runs them, then the kernel
"""
from grader.sandbox.confine import SANDBOX_FAILED, confine, launch_command, read_failure, sandbox_arguments
from grader.sandbox.limits import Limits, apply_limits
from grader.sandbox.view import KERNEL_HOME, Confinement, kernel_argv, kernel_environment

__all__ = ["SANDBOX_FAILED", "KERNEL_HOME", "Confinement", "Limits", "apply_limits", "confine", "kernel_argv",
           "kernel_environment", "launch_command", "read_failure", "sandbox_arguments"]
