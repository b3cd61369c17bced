"""The kernel confinement, proven on harmless programs before any attack runs."""
from __future__ import annotations

import contextlib
import functools
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

from grader.sandbox import SANDBOX_FAILED, Confinement, Limits, launch_command, read_failure

ROOT = Path(__file__).resolve().parent.parent


def _confined(tmp_path: Path, code: str, limits: Limits, *, uid: int | None = 61900, timeout: int = 60,
              failures: list | None = None):
    """Run ``code`` as the sandbox runs a kernel; return its output (and append the sandbox's failure, if any)."""
    scratch = Path(tempfile.mkdtemp(prefix="sandbox-test-"))
    conf = Confinement(scratch=scratch, limits=limits, uid=uid if os.geteuid() == 0 else None,
                       private_root=os.geteuid() == 0,
                       keep=[Path(sys.prefix), Path(sys.base_prefix)])
    conf.home.mkdir()
    command = launch_command(conf, sys.executable) + ["--", sys.executable, "-c", textwrap.dedent(code)]
    try:
        subprocess.run(command, timeout=timeout, check=False)
        if failures is not None:
            failures.append(read_failure(conf))
        return conf.log_file.read_text() + (conf.status_file.read_text() if conf.status_file.exists() else "")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


@functools.lru_cache(maxsize=1)
def prove_process_limit() -> bool:
    """Start 40 sleeping children under a limit of 20 processes: the limit must stop them."""
    if os.geteuid() != 0:
        return False  # RLIMIT_NPROC needs a dedicated uid; without root we cannot switch
    log = _confined(Path("."), """
        import subprocess, sys
        children, refused = [], 0
        for _ in range(40):
            try:
                children.append(subprocess.Popen([sys.executable, "-c", "import time; time.sleep(5)"]))
            except OSError:
                refused += 1
        print("started", len(children), "refused", refused)
        for child in children:
            child.kill()
        """, Limits(max_processes=20))
    words = log.split()
    return "started" in words and int(words[words.index("started") + 1]) < 20 and int(words[words.index("refused") + 1]) > 0


def test_process_limit_holds_on_a_harmless_case():
    if os.geteuid() != 0:
        pytest.skip("not root: no dedicated uid, so RLIMIT_NPROC cannot be enforced per submission; fork bomb not run")
    assert prove_process_limit()


def test_memory_limit_turns_allocation_into_memoryerror(tmp_path):
    log = _confined(tmp_path, """
        try:
            block = bytearray(2 * 1024**3)
            print("allocated")
        except MemoryError:
            print("refused")
        """, Limits(memory_mb=1024))
    assert "refused" in log


def test_the_memory_limit_holds_for_all_of_a_sandboxs_processes_together(tmp_path):
    """Each of three processes stays under the per-process limit (600 of 1024 MiB), together they hold 1.8 GiB:
    the sandbox's memory cgroup makes the OOM killer stop one of them, and the group is removed afterwards."""
    if os.geteuid() != 0:
        pytest.skip("memory cgroups need root")
    from grader.sandbox import cgroup

    group = cgroup.create(f"test-{os.getpid()}", 1024)
    if group is None:
        pytest.skip(cgroup.describe())
    try:
        scratch = Path(tempfile.mkdtemp(prefix="sandbox-test-"))
        conf = Confinement(scratch=scratch, limits=Limits(memory_mb=1024), uid=61900, private_root=True,
                           keep=[Path(sys.prefix), Path(sys.base_prefix)], cgroup=group)
        conf.home.mkdir()
        code = textwrap.dedent("""
            import os, subprocess, sys
            hold = ("import time\\nblock = bytearray(600 * 1024**2)\\nblock[::4096] = b'x' * len(block[::4096])\\n"
                    "print('held', flush=True)\\ntime.sleep(3)\\n")
            children = [subprocess.Popen([sys.executable, "-c", hold], stdout=subprocess.PIPE) for _ in range(3)]
            held = sum(child.stdout.readline().strip() == b"held" for child in children)
            codes = [child.wait() for child in children]
            print("held", held, "killed", sum(code == -9 for code in codes))
            print("cgroup visible", os.path.exists("/sys/fs/cgroup") and bool(os.listdir("/sys/fs/cgroup")))
            """)
        subprocess.run(launch_command(conf, sys.executable) + ["--", sys.executable, "-c", code], timeout=120)
        log = conf.log_file.read_text()
        assert "killed 0" not in log and "held 3" not in log, log
        assert "cgroup visible False" in log, log
        assert cgroup.ran_out_of_memory(group)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        cgroup.remove(group)
    assert not group.exists()


def test_course_files_and_home_are_hidden(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("mount namespaces need root here")
    log = _confined(tmp_path, f"""
        import os
        print("source", os.path.exists({str(ROOT / 'source')!r}))
        print("rubric", os.path.exists({str(ROOT / 'source' / 'sharded_step' / 'rubric.py')!r}))
        print("uid", os.getuid())
        print("course root holds", sorted(os.listdir({str(ROOT)!r})))
        try:
            open({str(ROOT / 'pwned.txt')!r}, "w")
            print("wrote course")
        except OSError:
            print("course read-only")
        """, Limits())
    assert "source False" in log and "rubric False" in log
    assert "uid 61900" in log
    assert f"course root holds {sorted(p.name for p in [Path(sys.prefix)] if p.parent == ROOT)}" in log
    assert "course read-only" in log
    assert not (ROOT / "pwned.txt").exists()


def test_an_environment_reached_through_a_symlink_runs_in_the_sandbox(tmp_path):
    """A virtual environment linked into place (``/opt/venv`` -> the real folder) is how many machines install one;
    the sandbox bound only the real folder, so the kernel's ``/opt/venv/bin/python`` did not exist inside and every
    kernel died before replying ("Kernel died before replying to kernel_info")."""
    if os.geteuid() != 0:
        pytest.skip("mount namespaces need root here")
    linked = tmp_path / "linked-venv"
    linked.symlink_to(Path(sys.prefix).resolve())
    python = linked / "bin" / Path(sys.executable).name
    scratch = Path(tempfile.mkdtemp(prefix="sandbox-test-"))
    conf = Confinement(scratch=scratch, limits=Limits(), uid=61900, private_root=True,
                       keep=[linked, Path(sys.base_prefix)])
    conf.home.mkdir()
    try:
        command = launch_command(conf, sys.executable) + ["--", str(python), "-c", "import sys; print('ran', sys.prefix)"]
        subprocess.run(command, timeout=60, check=False)
        assert f"ran {linked}" in conf.log_file.read_text()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def test_environment_does_not_reveal_grading(tmp_path):
    log = _confined(tmp_path, """
        import os
        print(sorted(os.environ))
        """, Limits())
    names = log.strip().splitlines()[-1]
    for marker in ("NBGRADER", "GRADER", "PYTEST", "JPY_", "COURSE_ROOT"):
        assert marker not in names


needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="namespaces need root here; without root the grader "
                                "confines time, memory, output and files only (docs/explanation/security-model.md)")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@needs_root
def test_a_kernel_reaches_no_host_listener_and_no_dask_scheduler(tmp_path):
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)
    listener.settimeout(0.1)
    port = _free_port()
    scheduler = subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1",
                                  "--port", str(port), "--no-dashboard"], stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.2):
                break
            time.sleep(0.1)
        else:
            pytest.fail("the test's Dask scheduler did not start")
        log = _confined(tmp_path, f"""
            import socket
            print("interfaces", [name for _, name in socket.if_nameindex()])
            for port in ({listener.getsockname()[1]}, {port}):
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=2)
                    print("reached", port)
                except OSError as error:
                    print("unreachable", port, error.errno)
            import distributed
            try:
                distributed.Client("tcp://127.0.0.1:{port}", timeout=3)
                print("scheduler client connected")
            except OSError as error:
                print("scheduler client refused")
            """, Limits(), timeout=120)
        with pytest.raises(OSError):
            listener.accept()  # nobody knocked
    finally:
        scheduler.kill()
        scheduler.wait()
        listener.close()
    assert "interfaces ['lo']" in log
    assert "reached" not in log and "scheduler client connected" not in log, log
    assert "scheduler client refused" in log, log


def _host_processes_of(uid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        with contextlib.suppress(OSError):
            if entry.name.isdigit() and entry.stat().st_uid == uid:
                found.append(int(entry.name))
    return found


STASH_KEY = 0x5EED0099


@needs_root
def test_nothing_a_kernel_creates_survives_it_or_reaches_the_next(tmp_path):
    first = _confined(tmp_path, f"""
        import ctypes, os, socket, time
        for path in ("/dev/shm/stash", "/tmp/stash", os.path.expanduser("~/stash")):
            open(path, "w").write("secret")
        libc = ctypes.CDLL(None, use_errno=True)
        print("shm", libc.shmget({STASH_KEY}, 4096, 0o1666) >= 0)
        if os.fork() == 0:  # a daemon that would serve the stash to later kernels
            os.setsid()
            if os.fork() == 0:
                server = socket.socket(socket.AF_UNIX)
                server.bind("\\0stash")
                server.listen(1)
                time.sleep(120)
            os._exit(0)
        time.sleep(0.5)
        print("created", sorted(os.listdir("/dev/shm")), "stash" in os.listdir("/tmp"))
        """, Limits(), uid=61901)
    assert "shm True" in first and "created ['stash'] True" in first, first
    assert _host_processes_of(61901) == []  # the daemon died with the kernel's PID namespace
    assert not Path("/dev/shm/stash").exists() and not Path("/tmp/stash").exists()
    assert f"{STASH_KEY:10d}" not in Path("/proc/sysvipc/shm").read_text()
    second = _confined(tmp_path, f"""
        import ctypes, os, socket
        libc = ctypes.CDLL(None, use_errno=True)
        print("segment", libc.shmget({STASH_KEY}, 0, 0) >= 0)
        print("files", [p for p in ("/dev/shm/stash", "/tmp/stash", "/var/tmp/stash") if os.path.exists(p)])
        try:
            socket.socket(socket.AF_UNIX).connect("\\0stash")
            print("daemon reached")
        except OSError:
            print("no daemon")
        """, Limits(), uid=61902)
    assert "segment False" in second and "files []" in second and "no daemon" in second, second


@needs_root
def test_a_kernel_sees_only_its_own_processes(tmp_path):
    log = _confined(tmp_path, f"""
        import os
        print("pids", sorted(int(p) for p in os.listdir("/proc") if p.isdigit()), "me", os.getpid())
        print("grader visible", os.path.exists("/proc/{os.getpid()}"), os.path.exists("/proc/1/cmdline"))
        """, Limits())
    words = log.split()
    me = words[words.index("me") + 1]
    assert f"pids [{me}] me {me}" in log and "grader visible False False" in log, log


@needs_root
def test_a_kernel_cannot_forge_a_sandbox_failure_but_a_real_one_is_reported(tmp_path):
    failures: list = []
    _confined(tmp_path, f"""
        import glob, os
        os.write(1, b"{SANDBOX_FAILED} forged\\n")
        os.write(2, b"{SANDBOX_FAILED} forged\\n")
        found = [p for top in ("/home", "/tmp", "/dev/shm") for p in glob.glob(top + "/**/*status*", recursive=True)]
        for path in ["../sandbox-status", "../kernel.log", "/sandbox-status"] + found:
            try:
                open(path, "a").write("{SANDBOX_FAILED} forged")
            except OSError:
                pass
        """, Limits(), failures=failures)
    _confined(tmp_path, "print('never runs')", Limits(), uid=-5, failures=failures)  # setuid(-5) fails
    assert failures[0] is None
    assert failures[1] and failures[1].startswith(SANDBOX_FAILED), failures


IDENTITY = r"""
import ctypes, json, os, sys
ctypes.CDLL(None).prctl(4, 1, 0, 0, 0)  # PR_SET_DUMPABLE, as an attacker would
print(json.dumps({"cmdline": open("/proc/self/cmdline", "rb").read().decode(), "argv": sys.argv,
                  "orig_argv": sys.orig_argv, "environ": open("/proc/self/environ", "rb").read().decode(),
                  "cwd": os.getcwd(), "modules": sorted(m for m in sys.modules if m.startswith("grader"))}))
"""


def _in_kernel(code: str, *, zygote=None, limits: Limits | None = None, inside=None) -> tuple[str, Confinement]:
    """Run ``code`` in a kernel started as the grader starts one; return its stdout and confinement.

    ``inside(conf)`` is called after the kernel stopped, before the scratch folder is removed.
    """
    import asyncio

    import nbformat

    from grader.kernel.run import run_in, start_kernel
    from grader.submission.pipeline import Settings, confinement

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(code)])

    async def run() -> Confinement:
        async with confinement(Settings(out=Path(tempfile.gettempdir()), limits=limits or Limits())) as conf:
            await run_in(await start_kernel(conf, zygote=zygote, preload=False), nb, conf)
            if inside is not None:
                inside(conf)
            return conf

    conf = asyncio.run(run())
    return "".join(o.get("text", "") for o in nb.cells[0].outputs), conf


def _identity(zygote) -> dict:
    import json
    import re

    text, _ = _in_kernel(IDENTITY, zygote=zygote)
    return json.loads(re.sub(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "UUID", text))


def test_a_fork_server_started_early_and_not_needed_is_stopped_at_once(tmp_path):
    """``grade`` starts the fork server before its own imports; with nothing to grade (every result kept) the run
    stops it without waiting for its imports, and leaves no process behind."""
    from grader.classroom.batch import grade_all
    from grader.layout import Course
    from grader.sandbox.zygote import Zygote
    from grader.submission.pipeline import Settings

    (tmp_path / "submitted").mkdir()
    zygote = Zygote()
    process = zygote._process
    grade_all(tmp_path / "submitted", Course.default(), Settings(out=tmp_path / "out"), zygote=zygote)
    assert not zygote.running() and process.poll() is not None  # killed, not left importing JAX
    zygote.close()  # a second close is harmless (cli.cmd_grade's own cleanup)


@needs_root
def test_a_forked_kernel_looks_like_an_ordinary_kernel():
    from grader.sandbox import kernel_argv, kernel_environment
    from grader.sandbox.zygote import Zygote

    zygote = Zygote()
    try:
        forked = _identity(zygote)
    finally:
        zygote.close()
    started = _identity(None)
    assert forked == started
    argv = kernel_argv("/home/learner/.local/share/jupyter/runtime/kernel-UUID.json")
    assert forked["cmdline"] == "\0".join(argv) + "\0" and forked["orig_argv"] == argv
    assert forked["environ"] == "".join(f"{k}={v}\0" for k, v in kernel_environment().items())
    assert forked["cwd"] == "/home/learner" and forked["modules"] == []


@needs_root
def test_a_kernel_cannot_fill_the_disk_and_its_home_is_released():
    def home_released(conf):
        assert not os.path.ismount(conf.home)

    text, conf = _in_kernel(
        "import os\nwritten = 0\ntry:\n    for i in range(1000):\n"
        "        with open(f'fill-{i}', 'wb') as f:\n            f.write(b'x' * (16 << 20))\n        written += 16\n"
        "except OSError as error:\n    print('refused after', written, 'MiB:', error.strerror)",
        limits=Limits(home_mb=64), inside=home_released)
    assert "refused after" in text and "No space left on device" in text, text
    assert int(text.split("refused after")[1].split()[0]) <= 64
    assert not conf.home.exists()


SIBLING_SEARCH = r"""
import re
found = set()
with open("/proc/self/maps") as maps, open("/proc/self/mem", "rb") as memory:
    for line in maps:
        span, perms = line.split()[:2]
        if "r" not in perms or "[v" in line:
            continue
        start, end = (int(x, 16) for x in span.split("-"))
        try:
            memory.seek(start)
            data = memory.read(end - start)
        except (OSError, ValueError, OverflowError):
            continue
        found.update(re.findall(rb"grade-[a-z0-9_]{8}", data))
print(sorted(x.decode() for x in found))
"""


@needs_root
def test_forked_kernels_inherit_nothing_of_their_siblings():
    """The fork server never reads a kernel's arguments, so no child finds an earlier child's scratch folder."""
    from grader.sandbox.zygote import Zygote

    zygote = Zygote()
    try:
        seen = [(conf.scratch.name, text) for text, conf in (_in_kernel(SIBLING_SEARCH, zygote=zygote) for _ in range(3))]
    finally:
        zygote.close()
    for index, (_own, text) in enumerate(seen):
        for other, _ in seen[:index]:
            assert other not in text, f"kernel {index} found the scratch folder of an earlier kernel: {text}"


@needs_root
def test_socket_families_and_calls_that_namespaces_do_not_cover_are_refused(tmp_path):
    log = _confined(tmp_path, """
        import ctypes, errno, socket
        for name, family, kind in [("vsock", 40, socket.SOCK_STREAM), ("packet", 17, socket.SOCK_RAW),
                                   ("bluetooth", 31, socket.SOCK_STREAM), ("appletalk", 5, socket.SOCK_DGRAM)]:
            try:
                socket.socket(family, kind).close()
                print(name, "created")
            except OSError as error:
                print(name, errno.errorcode.get(error.errno))
        libc = ctypes.CDLL(None, use_errno=True)
        for name, number in [("io_uring_setup", 425), ("bpf", 321), ("perf_event_open", 298), ("userfaultfd", 323)]:
            result = libc.syscall(number, 0, 0, 0, 0, 0)
            print(name, "allowed" if result >= 0 else errno.errorcode.get(ctypes.get_errno()))
        socket.socket(socket.AF_INET).close(); socket.socket(socket.AF_UNIX).close()
        print("inet and unix sockets work")
        # CLONE_NEWUSER | CLONE_FS is invalid (EINVAL from Linux): EPERM can only come from the filter
        result = libc.syscall(56, 0x10000000 | 0x200, 0, 0, 0, 0)
        print("clone-newuser", "allowed" if result >= 0 else errno.errorcode.get(ctypes.get_errno()))
        result = libc.syscall(435, 0, 0)
        print("clone3", "allowed" if result >= 0 else errno.errorcode.get(ctypes.get_errno()))
        import subprocess, sys, threading
        thread = threading.Thread(target=print, args=("a thread runs",)); thread.start(); thread.join()
        print(subprocess.run([sys.executable, "-c", "print('a process runs')"], capture_output=True, text=True).stdout)
        """, Limits())
    for name in ("vsock", "packet", "bluetooth", "appletalk"):
        assert f"{name} EAFNOSUPPORT" in log, log
    for name in ("io_uring_setup", "bpf", "perf_event_open", "userfaultfd"):
        assert f"{name} EPERM" in log, log
    assert "inet and unix sockets work" in log
    if os.geteuid() == 0:  # the filter is installed with the private root
        assert "clone-newuser EPERM" in log and "clone3 ENOSYS" in log, log
    assert "a thread runs" in log and "a process runs" in log, log


class _Leftover:
    """A sleeping process under ``uid`` (a killed kernel's leftover thread, as a loaded machine keeps it for
    seconds), forked from the test (the uid may not read the checkout's interpreter); ``non_dumpable``: it made itself
    non-dumpable, so /proc shows its folder as root's."""

    def __init__(self, uid: int, *, non_dumpable: bool):
        import ctypes

        read, write = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:  # the child: never returns into pytest
            try:
                os.setgroups([])
                os.setgid(uid)
                os.setuid(uid)
                if non_dumpable:
                    ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE, 0
                os.write(write, b"ready")
                time.sleep(120)
            finally:
                os._exit(0)
        os.close(write)
        assert os.read(read, 5) == b"ready"
        os.close(read)

    def stop(self) -> int:
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, 9)
        return os.waitstatus_to_exitcode(os.waitpid(self.pid, 0)[1])


@needs_root
def test_a_uid_with_a_leftover_process_is_not_leased_again():
    """A uid whose lock is free but under which a process still runs is skipped: its leftovers would share the next
    learner's uid and count against that kernel's RLIMIT_NPROC (a kernel then dies before it starts its threads)."""
    from grader.sandbox.lease import leased_uid

    uids = range(61990, 61992)
    leftover = _Leftover(uids[0], non_dumpable=True)  # its /proc files are then root's: the uid is read anyway
    try:
        with leased_uid(uids) as uid:
            assert uid == uids[1]
    finally:
        leftover.stop()
    with leased_uid(uids) as uid:
        assert uid == uids[0]  # free again once its process is gone



# -- scratch folders: what a killed grader leaves is swept by the next one --------------------------------------------

def test_a_dead_graders_scratch_is_swept_with_its_mount_and_a_live_ones_kept(tmp_path):
    """A grader killed with its kernels' homes mounted (SIGKILL, a hub that gave up waiting) leaves scratch folders
    with a tmpfs in them; the next grader's sweep detaches and removes those whose owner is gone (a dead pid, or a
    live pid that is another process: the start time differs) and never touches a live grader's folder, a folder
    without the prefix, or a link named like one."""
    from grader.sandbox import scratch

    live = scratch.make("grade-", tmp_path)  # this process's: alive
    dead_process = subprocess.Popen([sys.executable, "-c", "pass"])
    dead_process.wait()
    dead = scratch.make("grade-", tmp_path)
    (dead / scratch.OWNER).write_text(f"{dead_process.pid} 1\n")
    reused = scratch.make("programs-", tmp_path)  # our pid, another start time: the pid was reused
    (reused / scratch.OWNER).write_text(f"{os.getpid()} 1\n")
    unmarked_old = tmp_path / "grade-old"
    unmarked_old.mkdir()
    os.utime(unmarked_old, (time.time() - 3600, time.time() - 3600))
    unmarked_new = tmp_path / "grade-new"  # being made right now: its mark comes next
    unmarked_new.mkdir()
    other = tmp_path / "keep-me"
    other.mkdir()
    (tmp_path / "grade-link").symlink_to(other)
    home = dead / "home"
    home.mkdir()
    mounted = os.geteuid() == 0
    if mounted:
        from grader.sandbox import rootfs

        rootfs.mount_home(home, 1)
        assert scratch.mounts_under(dead) == [home.resolve()]
    removed = scratch.sweep(tmp_path)
    assert sorted(removed) == sorted([dead, reused, unmarked_old])
    assert not dead.exists() and not reused.exists() and not unmarked_old.exists()
    assert live.exists() and unmarked_new.exists() and other.exists() and (tmp_path / "grade-link").is_symlink()
    assert scratch.mounts_under(tmp_path) == []
    if mounted:
        assert str(home) not in Path("/proc/self/mountinfo").read_text()
    scratch.remove(live)
    assert not live.exists()


def test_every_grader_leases_uids_from_one_place_whatever_its_temporary_folder(tmp_path):
    """A grader started with its own TMPDIR (the service in tests/test_service.py) leases sandbox uids from the same
    locks as every other grader on the machine: with a lock folder per temporary folder, two graders leased the same
    uid, and one's sweep of that uid killed the other's kernel (both kernels died in the suite)."""
    from grader.sandbox.lease import uid_locks

    elsewhere = subprocess.run([sys.executable, "-c", "from grader.sandbox.lease import uid_locks; print(uid_locks())"],
                               env={**os.environ, "TMPDIR": str(tmp_path)}, cwd=ROOT, capture_output=True, text=True,
                               timeout=60)
    assert elsewhere.returncode == 0, elsewhere.stderr
    assert elsewhere.stdout.strip() == str(uid_locks())
    assert str(uid_locks()) == ("/run/grader-uid-locks" if os.geteuid() == 0 else f"/tmp/grader-uid-locks-{os.geteuid()}")
