"""Execute one notebook in a confined kernel, cell by cell, within limits.

Unlike papermill, this never trusts the kernel to stop: every cell runs under
a deadline (per cell and for the whole notebook), the output volume is
counted as it arrives, and when a limit is crossed the kernel's whole process
group is killed. The result says what happened; it never raises for anything
the notebook did.
"""
from __future__ import annotations

import asyncio
import atexit
import copy
import json
import os
import signal
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
from jupyter_client.manager import AsyncKernelManager
from nbclient import NotebookClient
from nbclient.exceptions import DeadKernelError

from grader import cells

from grader.kernel import hooks, messages
from grader.sandbox.lease import kill_uid
from grader.sandbox import Confinement, cgroup, launch_command, read_failure, rootfs

# Events after which the kernel is gone (or must not continue); a MemoryError
# inside Python is recorded but the remaining cells still run.
FATAL = ("timed_out", "kernel_died", "too_much_output", "exited")
OOM_MARKERS = ("bad_alloc", "Cannot allocate memory", "RESOURCE_EXHAUSTED", "out of memory", "MemoryError")


class SandboxError(RuntimeError):
    """The grader could not confine a kernel; nothing of the submission ran."""


@dataclass
class Execution:
    """What happened when a notebook ran."""

    notebook: nbformat.NotebookNode
    stopped: str | None = None  # None, or one of: timed_out, kernel_died, out_of_memory, too_much_output, exited
    message: str = ""
    stopped_at_cell: int | None = None
    events: list[str] = field(default_factory=list)
    seconds: float = 0.0
    hooks_not_reset: list[str] = field(default_factory=list)  # test cells run without the hooks put back


class ConfinedKernelManager(AsyncKernelManager):
    """Launches the kernel through ``grader.sandbox``; its clients refuse oversized or malformed messages."""

    confinement: Confinement | None = None
    def client(self, **kwargs):
        self.client_factory = messages.BoundedKernelClient
        client = super().client(**kwargs)
        client.max_message_bytes = self.confinement.limits.max_output_bytes + messages.MARGIN
        messages.harden_session(client.session)
        return client

    def format_kernel_cmd(self, extra_arguments=None):
        return launch_command(self.confinement, sys.executable)


class CountingClient(NotebookClient):
    """Counts every byte the kernel sends; keeps each output in the cell that was running.

    Past the cap it stops keeping outputs. A kernel cannot rewrite an earlier
    cell's outputs: display-id updates (``update_display_data``, or a display
    reusing an earlier display id) and widget (comm) messages are ignored, so a
    test cell's outputs are only what ran while it ran.
    """

    def __init__(self, *args, max_output_bytes: int, **kwargs):
        super().__init__(*args, **kwargs)
        self.max_output_bytes = max_output_bytes
        self.output_bytes = 0
        self.overflowed = False

    def process_message(self, msg, cell, cell_index):
        self.output_bytes += len(json.dumps(msg.get("content", {}), default=str)) + len(str(msg.get("metadata", "")))
        if self.output_bytes > self.max_output_bytes:
            self.overflowed = True
            if msg.get("msg_type") != "status":
                return None
        msg = messages.clean(msg)  # malformed output is dropped, never a grader error
        if msg is None:
            return None
        return super().process_message(msg, cell, cell_index)

    def _update_display_id(self, display_id, msg):
        return None

    def handle_comm_msg(self, outs, msg, cell_index):
        return None


def _kill_group(km: AsyncKernelManager) -> None:
    process = getattr(km.provisioner, "process", None) if km.provisioner else None
    if process is None or process.poll() is not None:
        return
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        process.kill()


def _kernel_log(conf: Confinement) -> str:
    try:
        return conf.log_file.read_text(errors="replace")[-20000:]
    except OSError:
        return ""


PRELOAD = "import numpy, jax, jax.numpy, IPython.display"


@dataclass
class Kernel:
    """A started, confined kernel, used for exactly one notebook."""

    conf: Confinement
    km: AsyncKernelManager
    kc: object


async def start_kernel(conf: Confinement, *, preload: bool = True, startup_timeout: float = 120,
                       zygote=None) -> Kernel:
    """Start a kernel in ``conf`` and, optionally, import the heavy libraries.

    Importing JAX does not start its backend, so the setup cell can still
    choose the device count; it only moves ~1 s of imports off the critical
    path when kernels are started ahead of the submissions they will run.
    """
    conf.scratch.mkdir(parents=True, exist_ok=True)
    if conf.private_root and os.geteuid() == 0:
        rootfs.mount_home(conf.home, conf.limits.home_mb)
    try:
        conf.connection_file().parent.mkdir(parents=True, exist_ok=True)
        # IPC sockets in the kernel's own runtime folder: no TCP port for another process to find.
        km = ConfinedKernelManager(kernel_name="python3", transport="ipc", ip=conf.ipc_prefix(),
                                   connection_file=str(conf.connection_file()))
        km.confinement = conf
        if zygote is not None:  # fork the kernel from a process that has imported everything already
            from grader.sandbox.zygote import ForkProvisioner

            km.kernel_id = str(uuid.uuid4())
            km.provisioner = ForkProvisioner(kernel_id=km.kernel_id, kernel_spec=km.kernel_spec, parent=km)
            km.provisioner.zygote = zygote
            preload = False
        await km.start_kernel(cwd=str(conf.home))
    except BaseException:
        if conf.private_root and os.geteuid() == 0:
            rootfs.release_home(conf.home)
        raise
    kc = km.client()
    kc.start_channels()
    kernel = Kernel(conf, km, kc)
    try:
        await kc.wait_for_ready(timeout=startup_timeout)
        if preload:
            reply = await kc.execute_interactive(PRELOAD, silent=True, store_history=False, timeout=startup_timeout)
            if reply["content"].get("status") != "ok":
                raise RuntimeError("the kernel could not import the course libraries")
    except BaseException:
        await stop_kernel(kernel)
        raise
    return kernel


async def stop_kernel(kernel: Kernel) -> None:
    """Kill the kernel and everything of its uid, then detach its home (also when a step before fails: a kernel an
    interrupt of the whole process group already stopped leaves channels and files that raise)."""
    try:
        _kill_group(kernel.km)
        kernel.kc.stop_channels()
        try:
            await kernel.km.cleanup_resources()
        except Exception:  # noqa: BLE001 - the connection file may already be gone
            pass
    finally:
        if kernel.conf.uid is not None:
            kill_uid(kernel.conf.uid)
        if kernel.conf.private_root and os.geteuid() == 0:
            rootfs.release_home(kernel.conf.home)


async def run_in(kernel: Kernel | None, nb, conf: Confinement, *, start_cell: int = 0) -> Execution:
    """Run every code cell of ``nb`` (in place) in ``kernel``, or in a new one.

    When the kernel stopped (a limit, a crash) in a learner's cell before the hidden parts of earlier tests ran (they
    run after the learner's last cell: ``grader.submission.order``), the cells before the one that stopped run again
    in a fresh kernel, followed by those hidden parts: the tests the notebook had reached are judged as if their
    hidden parts had run where the course put them, and the stopped cell, which never runs again, keeps its test."""
    run = Execution(notebook=nb)
    started = time.monotonic()
    await _execute(kernel, nb, conf, run, start_cell, None)
    plan = replay_plan(nb, run)
    for attempt in range(REPLAY_ATTEMPTS if plan else 0):
        if attempt:  # the first try found no kernel (what the stopped one left behind had not ended yet)
            await asyncio.sleep(REPLAY_PAUSE_S)
        if conf.uid is not None:
            kill_uid(conf.uid)
        again = nbformat.from_dict(copy.deepcopy(dict(nb)))
        for cell in again.cells:
            if cell.cell_type == "code":
                cell.outputs, cell.execution_count = [], None
        replay = Execution(notebook=again)
        await _execute(None, again, conf, replay, 0, set(plan))
        if not any(_ran(again.cells[i]) for i in plan if cells.hidden_part_of(again.cells[i])):
            run.events = (run.events + [f"running cells 0-{run.stopped_at_cell - 1} again failed: "
                                        f"{replay.message or 'no hidden test ran'}"])[:max(1, len(nb.cells))]
            continue
        for index in plan:  # the cells the second kernel ran (all of them, unless it stopped too)
            if _ran(again.cells[index]):
                nb.cells[index] = again.cells[index]
        note = f"cells 0-{run.stopped_at_cell - 1} ran again in a fresh kernel, then the hidden tests they had reached"
        run.events = (run.events + [note] + [f"again: {event}" for event in replay.events])[:max(1, len(nb.cells))]
        run.hooks_not_reset += [gid for gid in replay.hooks_not_reset if gid not in run.hooks_not_reset]
        break
    run.seconds = time.monotonic() - started
    return run


REPLAY_ATTEMPTS = 2
REPLAY_PAUSE_S = 2.0


def _ran(cell) -> bool:
    return cell.get("execution_count") is not None or bool(cell.get("outputs"))


def replay_plan(nb, run: Execution) -> list[int]:
    """The cells to run again after a stop in a cell before the hidden parts: every code cell before the one that
    stopped, then the hidden parts of the tests among them; none when nothing of theirs is left to run."""
    at = run.stopped_at_cell
    if run.stopped is None or at is None or not 0 <= at < len(nb.cells) or cells.hidden_part_of(nb.cells[at]):
        return []
    reached = {cells.grade_id(c) for c in nb.cells[:at] if cells.is_autograded_test(c)}
    tails = [i for i, c in enumerate(nb.cells) if cells.hidden_part_of(c) in reached
             and c.get("execution_count") is None and not c.get("outputs")]
    if not tails:
        return []
    return [i for i, c in enumerate(nb.cells[:at]) if c.cell_type == "code"] + tails


async def _execute(kernel: Kernel | None, nb, conf: Confinement, run: Execution, start_cell: int,
                   only: set[int] | None) -> None:
    try:
        if kernel is None:
            kernel = await start_kernel(conf, preload=False)
        client = CountingClient(nb, km=kernel.km, timeout=None, allow_errors=True, startup_timeout=120,
                                max_output_bytes=conf.limits.max_output_bytes, record_timing=False)
        client.kc = kernel.kc
        deadline = time.monotonic() + conf.limits.notebook_timeout_s
        try:
            await _cells(nb, client, kernel.km, run, start_cell, deadline, conf.limits, only, conf.cgroup)
        finally:
            atexit.unregister(client._cleanup_kernel)
    except DeadKernelError:
        run.stopped, run.message = "kernel_died", "the kernel died"
    except RuntimeError as error:  # kernel failed to start, or died while starting
        run.stopped, run.message = "kernel_died", f"the kernel could not run: {error}"
    finally:
        if kernel is not None:
            await stop_kernel(kernel)
    failure = read_failure(conf)
    if failure:
        raise SandboxError(failure)
    log = _kernel_log(conf)
    if run.stopped == "kernel_died" and (any(marker in log for marker in OOM_MARKERS)
                                         or cgroup.ran_out_of_memory(conf.cgroup)):
        run.stopped, run.message = "out_of_memory", "the kernel ran out of memory and died"


async def _silently(client, code: str, expressions: dict | None = None) -> dict | None:
    """Run grader code in the kernel without history, hooks or outputs (``grader.kernel.hooks``); its reply's content
    when it succeeded, else None (a kernel too busy or dead for this fails its next cell anyway)."""
    try:
        reply = await client.kc.execute_interactive(code, silent=True, store_history=False, timeout=30,
                                                    user_expressions=expressions or {}, output_hook=lambda msg: None)
    except (TimeoutError, RuntimeError):
        return None
    content = reply.get("content") if isinstance(reply, dict) else None
    return content if isinstance(content, dict) and content.get("status") == "ok" else None


async def _reset_hooks(client, identity: tuple[str, str, str, str] | None) -> bool:
    """Put the kernel's hooks back (``grader.kernel.hooks``); whether that ran and succeeded.

    The reset is a user expression of an empty cell, never the cell's code: IPython passes a cell's code, silent
    or not, through the input and AST transformers, so a transformer the learner registered could rewrite the
    reset into a no-op that succeeds (and stay in place for the test cell); an empty cell is never transformed
    into anything that runs, and user expressions are evaluated as written."""
    content = await _silently(client, "", {"reset": hooks.restore(identity)})
    reset = ((content or {}).get("user_expressions") or {}).get("reset")
    return isinstance(reset, dict) and reset.get("status") == "ok"


def _identity(content: dict | None) -> tuple[str, str, str, str] | None:
    value = (((content or {}).get("user_expressions") or {}).get("id") or {}).get("data", {}).get("text/plain", "")
    return hooks.parse_identity(value)


async def _cells(nb, client, km, run: Execution, start_cell: int, deadline: float, limits,
                 only: set[int] | None = None, group: Path | None = None) -> None:
    async with client.async_setup_kernel():
        identity = _identity(await _silently(client, hooks.SNAPSHOT, {"id": hooks.IDENTITY}))
        for index, cell in enumerate(nb.cells):
            if cell.cell_type != "code" or index < start_cell or only is not None and index not in only:
                continue
            test = cells.test_of(cell)  # a test cell, or a test's hidden part: no learner hook runs inside either
            if test is not None and not await _reset_hooks(client, identity):
                if test not in run.hooks_not_reset:
                    run.hooks_not_reset.append(test)
            budget = min(limits.cell_timeout_s, deadline - time.monotonic())
            waited = RunQueue(group)
            task = asyncio.ensure_future(client.async_execute_cell(cell, index))
            outcome = await _watch(task, client, km, budget, waited)
            if outcome is None and cell.get("outputs"):
                outcome = _classify_errors(cell)
            if outcome is not None:
                if run.stopped is None or outcome[0] in FATAL:
                    run.stopped, run.message = outcome
                    run.stopped_at_cell = index
                run.events.append(f"cell {index}: {outcome[1]}")
                if outcome[0] in FATAL:
                    break


def _classify_errors(cell) -> tuple[str, str] | None:
    for output in cell.outputs:
        if output.get("output_type") != "error":
            continue
        if output.get("ename") == "SystemExit":
            return "exited", "the notebook called sys.exit(); later cells were not run"
        if output.get("ename") == "MemoryError":
            return "out_of_memory", "a cell ran out of memory (MemoryError)"
    return None


async def _abandon(task, km) -> None:
    _kill_group(km)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


WATCH_TICK_S = 0.2
STALL_S = 1.0  # a tick this late means the grader's own process was held up
WAIT_CAP = 2.0  # a cell kept waiting for a core may run on the clock up to 1 + WAIT_CAP times its limit


class RunQueue:
    """How long the sandbox's threads have waited for a core since this watch began: the longest wait of any one of
    them (Linux's per-thread run-queue delay, ``/proc/TID/schedstat``), so a learner's extra threads cannot add their
    waits up. A thread first seen later counts from then. Where the sandbox has no cgroup, nothing is known: 0."""

    def __init__(self, group: Path | None):
        self.group = group
        self.since: dict[int, int] = {}
        self._read()

    def _read(self) -> int:
        longest = 0
        for tid in cgroup.threads(self.group):
            try:
                delay = int(Path(f"/proc/{tid}/schedstat").read_text().split()[1])  # nanoseconds on a run queue
            except (OSError, ValueError, IndexError):
                continue
            longest = max(longest, delay - self.since.setdefault(tid, delay))
        return longest

    def __call__(self) -> float:
        return self._read() / 1e9


async def _watch(task, client: CountingClient, km, budget: float, waited=lambda: 0.0):
    """Wait for one cell; enforce the time and output limits while it runs.

    The time limit is the cell's own: time the grader could not watch (``stalled``) and time the machine's other
    work kept the kernel from a core (``waited``, at most ``WAIT_CAP`` times the limit, a ``RunQueue``) are not
    charged, so an honest notebook graded at a deadline burst is not timed out, and a sleeping cell still is."""
    started = last = time.monotonic()
    stalled = 0.0  # time this process could not watch (another notebook's feedback holding the GIL, swapping)
    while True:
        await asyncio.wait({task}, timeout=WATCH_TICK_S)
        now = time.monotonic()
        if now - last > STALL_S:  # the grader was late, not the kernel: that time is not the cell's
            stalled += now - last - WATCH_TICK_S
        last = now
        # A channel cut while the kernel lives: ZeroMQ refused a message over the cap.
        if client.overflowed or messages.received_too_much(client.kc.session, client.max_output_bytes) \
                or (client.kc.oversized() and await km.is_alive()):
            await _abandon(task, km)
            return "too_much_output", f"output exceeded {client.max_output_bytes} bytes; the kernel was stopped"
        if task.done():
            break
        if now - started - stalled > budget and now - started - max(stalled, min(waited(), WAIT_CAP * budget)) > budget:
            await _abandon(task, km)  # compiled loops ignore SIGINT; only a kill is reliable
            return "timed_out", f"a cell ran longer than {budget:.0f} s; the kernel was stopped"
    try:
        task.result()
    except asyncio.CancelledError:
        return "kernel_died", "the kernel stopped responding"
    except DeadKernelError:
        return "kernel_died", "the kernel died"
    return None
