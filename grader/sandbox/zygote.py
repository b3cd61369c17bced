"""A fork server for kernels: pay the imports once, fork a fresh kernel per notebook.

Starting a kernel costs about 1.8 s of CPU, most of it importing IPython,
ipykernel, NumPy and JAX. ``python -m grader.sandbox.zygote`` imports them once and
then, for each request on stdin (the arguments of ``grader.sandbox``), forks a
child that applies every confinement step of ``grader.sandbox.confine`` to
itself and runs the kernel in-process. Each child runs exactly one notebook
and shares nothing with the others after the fork (memory is copy-on-write).
JAX's backend is not started here, so each kernel still chooses its own
device count.

The grader side is ``Zygote`` (one per grading run) and ``ForkProvisioner``,
a jupyter_client provisioner that asks the zygote for a kernel instead of
starting a process.
"""
from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import uuid

from jupyter_client.provisioning import LocalProvisioner

PRELOAD = ("numpy", "jax", "jax.numpy", "IPython", "ipykernel.kernelapp", "matplotlib", "matplotlib_inline.backend_inline",
           # What every kernel imported after the fork (about 0.5 s of CPU each): the kernel class and its
           # debugger (debugpy), and pyplot for the inline figures (ipykernel imports them as it starts).
           "ipykernel.ipkernel", "ipykernel.debugger", "matplotlib.pyplot",
           # for grader.programs.runner: serialization, and what calling an exported program imports
           "jax.export", "jax._src.export.serialization", "jax.experimental.multihost_utils", "jaxlib.mlir.dialects.mhlo",
           "scipy.linalg.cython_blas", "scipy.linalg.cython_lapack")
RUNNER = ["-m", "grader.programs.runner"]


# -- the server (runs as ``python -m grader.sandbox.zygote``) -------------------------
def _reap(signum, frame) -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _child(argv: list[str]) -> None:
    import importlib.util

    from grader.sandbox import confine
    from grader.sandbox.disguise import become

    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    _, command, env = confine(argv)
    os.environ.clear()
    os.environ.update(env)
    if command[1:] == RUNNER:  # not a kernel: the grader's program runner, confined the same way
        import runpy

        sys.argv = [RUNNER[1]]  # the runner reads request.json from its working folder
        runpy.run_module(RUNNER[1], run_name="__main__", alter_sys=True)
        return
    become(command, importlib.util.find_spec("ipykernel_launcher").origin)
    for name in [n for n in sys.modules if n == "grader" or n.startswith("grader.")]:
        del sys.modules[name]
    from ipykernel.kernelapp import IPKernelApp

    # No parent handle: the kernel dies with its namespace's init, which dies with the fork server.
    app = IPKernelApp.instance()
    app.initialize(command[3:])
    # matplotlib_inline hooks into the shell when first imported inside one; here it was imported before.
    from matplotlib_inline.backend_inline import _enable_matplotlib_integration

    _enable_matplotlib_integration()
    app.start()


def _quietly(function, *args):
    """Call ``function`` with file descriptor 2 on /dev/null: debugpy's import-time notice about frozen
    modules belongs in a kernel's own log, where a started kernel writes it, not in the grader's output."""
    saved, null = os.dup(2), os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 2)
    try:
        return function(*args)
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(null)


def _read_line(fd: int) -> bytes:
    line = b""
    while not line.endswith(b"\n"):
        chunk = os.read(fd, 65536)
        if not chunk:
            raise EOFError("the grader closed the arguments pipe")
        line += chunk
    return line


def serve(args_fd: int) -> None:
    """Fork a child per request line on stdin; each child reads its own arguments from ``args_fd``.

    The server itself never reads a kernel's arguments (its scratch folder, uid, tag), so no
    forked kernel finds a sibling's in the memory it inherits.
    """
    # Started with exactly the kernels' environment; matplotlib's cache for the imports goes elsewhere.
    # The inline backend, as ipykernel sets it before a started kernel imports matplotlib.
    cache = tempfile.TemporaryDirectory()
    os.environ["MPLCONFIGDIR"] = cache.name
    os.environ["MPLBACKEND"] = "module://matplotlib_inline.backend_inline"
    for name in PRELOAD:
        _quietly(__import__, name)
    signal.signal(signal.SIGCHLD, _reap)
    replies = sys.stdout
    for _ in sys.stdin:
        pid = os.fork()
        if pid == 0:
            try:
                argv = json.loads(_read_line(args_fd))
                os.write(1, b"{\"ack\": true}\n")
                _child(argv)
            finally:
                os._exit(0)
        replies.write(json.dumps({"pid": pid}) + "\n")
        replies.flush()


# -- the client (in the grader) ----------------------------------------------
class Zygote:
    """One fork server, shared by the grader's workers."""

    def __init__(self) -> None:
        from grader.sandbox import KERNEL_HOME, kernel_argv, kernel_environment
        from grader.sandbox.disguise import padded_server_argv
        from grader.sandbox.view import RUNTIME, connection_name

        # Scrubbed before the fork: the server never holds the grader's environment, and its
        # command line has room for a kernel's (see grader.sandbox.disguise).
        kernel = kernel_argv(str(KERNEL_HOME / RUNTIME / connection_name(str(uuid.uuid4()))))
        self._lock = threading.Lock()
        self._closed = False
        read_end, self._args = os.pipe()
        self._process = subprocess.Popen(
            padded_server_argv([sys.executable, "-m", "grader.sandbox.zygote", str(read_end)], kernel),
            env=kernel_environment(), stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
            pass_fds=(read_end,),
        )
        os.close(read_end)

    def spawn(self, sandbox_argv: list[str]) -> int:
        with self._lock:
            if self._process.poll() is not None:
                raise RuntimeError("the kernel fork server has stopped")
            self._process.stdin.write("\n")
            self._process.stdin.flush()
            reply = self._process.stdout.readline()
            if not reply:
                raise RuntimeError("the kernel fork server did not answer")
            # Only the new child reads this line; the next fork waits for its acknowledgement.
            os.write(self._args, (json.dumps(sandbox_argv) + "\n").encode())
            if not self._process.stdout.readline():
                raise RuntimeError("the forked kernel did not take its arguments")
        return int(json.loads(reply)["pid"])

    def running(self) -> bool:
        """Whether ``close`` has not been called yet."""
        return not self._closed

    def close(self, now: bool = False) -> None:
        """Stop the server (its forked kernels die with it); ``now``: without waiting for its imports to finish."""
        if self._closed:
            return
        self._closed = True
        os.close(self._args)
        if now:
            self._process.kill()
        if self._process.poll() is None:
            self._process.stdin.close()
            self._process.wait(timeout=10)


@contextlib.contextmanager
def started_early(wanted: bool):
    """A ``Zygote`` started now (None unless ``wanted``), so that its imports (about 3 s) overlap the caller's own;
    whoever is handed it closes it, and on leaving it is stopped at once if nobody did."""
    zygote = Zygote() if wanted else None
    try:
        yield zygote
    finally:
        if zygote is not None and zygote.running():
            zygote.close(now=True)


class ForkedProcess:
    """The subset of ``subprocess.Popen`` jupyter_client uses, for a process we did not start."""

    def __init__(self, pid: int):
        self.pid = pid
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            try:
                os.kill(self.pid, 0)
            except ProcessLookupError:
                self.returncode = -signal.SIGKILL  # the exit status belongs to the fork server
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        import time

        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(str(self.pid), timeout)
            time.sleep(0.02)
        return self.returncode

    def send_signal(self, signum: int) -> None:
        try:
            os.kill(self.pid, signum)
        except ProcessLookupError:
            pass

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)


class ForkProvisioner(LocalProvisioner):
    """Gets the kernel process from a ``Zygote`` instead of starting one."""

    zygote: Zygote | None = None

    async def launch_kernel(self, cmd: list[str], **kwargs):
        sandbox_argv = cmd[cmd.index("grader.sandbox") + 1:]
        pid = self.zygote.spawn(sandbox_argv)
        self.process = ForkedProcess(pid)
        self.pid = self.pgid = pid  # the child starts its own session
        self.cwd = kwargs.get("cwd")
        return self.connection_info


if __name__ == "__main__":
    serve(int(sys.argv[1]))  # further arguments only pad the command line (grader.sandbox.disguise)
