"""The class on the hub under load, measured: N learners at once, through the hub's REST API and their kernels' websockets.

    sudo .venv/bin/python benchmarks/hub_load.py [--learners 5 10 20 40] [--spawner local slurm]

For each spawner: one hub as ``make hub`` starts it (its own class folders, ``/srv/jax-course-load``, the culler off;
for ``slurm``, on the one-machine Slurm of ``python -m grader slurm up``, its nodes declaring 20 CPUs each, as many
servers as the local spawner runs on the same 2 cores, and each server's job asking for 800 MB). For each N: N fresh accounts
(``lNNxKK``, in the learners' group; fresh, so no one runs out of graded attempts) start together, each a
``hub_learner`` session: log in, start the server, fetch sharded_step, run the solved notebook's 20 code cells in a
kernel, Validate, Submit, wait for the feedback and fetch it, and leave (its server stopped). A server Slurm cannot
place waits in the queue, and fails after the hub's start timeout (180 s).

Prints, per spawner and N: learners done; p50 and p95 of server start, cell latency (over every cell of every learner),
Validate, and Submit -> feedback; memory per learner (PSS of its account's processes once its cells have run: server
and kernel), the machine's memory in use at the busiest moment, and the machine's busy CPU seconds per learner (its
server, kernel, Validate and grading). A learner that fails is counted and its first error
printed. The numbers are this machine's (2 cores, 23 GiB); docs/explanation/capacity.md projects from them.
"""
from __future__ import annotations

import argparse
import os
import pwd
import shutil
import statistics
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
from grader.hub import accounts  # noqa: E402
import hub_learner  # noqa: E402

SRV = Path("/srv/jax-course-load")
ASSIGNMENT = "sharded_step"
SOLVED = ROOT / "samples" / "submitted" / "ada" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
VENV_BIN = Path("/opt/jax-course/venv/bin")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * len(ordered) + 0.5) - 1))] if ordered else float("nan")


def busy_cpu_s() -> float:
    """CPU seconds the machine has spent busy since boot (every core; /proc/stat's user+nice+system+irq+softirq)."""
    fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    return sum(int(fields[i]) for i in (0, 1, 2, 5, 6)) / os.sysconf("SC_CLK_TCK")


def in_use_mb() -> float:
    info = dict(line.split(":", 1) for line in Path("/proc/meminfo").read_text().splitlines())
    return (int(info["MemTotal"].split()[0]) - int(info["MemAvailable"].split()[0])) / 1024


def start_hub(spawner: str, port: int, log: Path) -> subprocess.Popen:
    subprocess.run(["rm", "-rf", str(SRV)], check=True)
    with log.open("w") as out:
        hub = subprocess.Popen([sys.executable, "-m", "grader", "hub", "--port", str(port), "--service-port",
                                str(port + 1), "--spawner", spawner, "--cull-idle", "0", "--slurm-memory", "800M"],
                               cwd=ROOT, stdout=out,
                               stderr=subprocess.STDOUT, env=dict(os.environ, COURSE_HUB_SRV=str(SRV)),
                               start_new_session=True)
    deadline = time.monotonic() + 900
    while "serve: watching" not in log.read_text() or "JupyterHub is now running" not in log.read_text():
        if hub.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"the hub did not start:\n{log.read_text()[-3000:]}")
        time.sleep(1)
    course = SRV / "course"
    subprocess.run(["runuser", "-u", "instructor", "--", "env", "-i", f"PATH={VENV_BIN}:/usr/bin:/bin",
                    "HOME=/home/instructor", f"COURSE_ROOT={course}", "LANG=C.UTF-8", str(VENV_BIN / "nbgrader"),
                    "release_assignment", ASSIGNMENT, "--force"], cwd=course, check=True, capture_output=True)
    return hub


def one_round(url: str, spawner: str, n: int) -> None:
    names = [f"l{n:02d}x{k:02d}" for k in range(1, n + 1)]
    passwords = accounts.ensure([accounts.Account(name, (accounts.LEARNERS,)) for name in names],
                                SRV / "hub" / f"load-{n}.txt")
    for name in names:  # accounts made by an earlier run: as new learners, with nothing fetched yet
        home = Path(pwd.getpwnam(name).pw_dir)
        for leftover in (home / ASSIGNMENT, home / ".local" / "share" / "jupyter" / "nbgrader_cache"):
            shutil.rmtree(leftover, ignore_errors=True)
    memory: dict[str, float] = {}
    peak = [in_use_mb()]
    stop = threading.Event()

    def watch() -> None:
        while not stop.wait(2.0):
            peak[0] = max(peak[0], in_use_mb())

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    began, cpu = time.monotonic(), busy_cpu_s()
    with ThreadPoolExecutor(max_workers=n) as pool:
        sessions = list(pool.map(lambda name: hub_learner.run(
            url, name, passwords[name], ASSIGNMENT, SOLVED,
            lambda who: memory.__setitem__(who, hub_learner.memory_mb(who))), names))
    stop.set()
    cpu = busy_cpu_s() - cpu
    done = [s for s in sessions if s.failed is None]
    cells = [t for s in done for t in s.cells]

    def row(label: str, values: list[float]) -> str:
        return f"{label} p50 {percentile(values, 50):.1f} s, p95 {percentile(values, 95):.1f} s"

    print(f"[{spawner}] N={n}: {len(done)} of {n} learners done in {time.monotonic() - began:.0f} s; "
          + "; ".join([row("server start", [s.server_start for s in done]), row("cell", cells),
                       row("Validate", [s.validate for s in done]), row("Submit->feedback", [s.feedback for s in done])])
          + f"; memory per learner {statistics.mean(memory.values()) if memory else float('nan'):.0f} MB; "
          f"machine in use at peak {peak[0] / 1024:.1f} GiB; {cpu / n:.0f} CPU-s per learner (the machine's, "
          f"grading included); {sum(s.reconnects for s in sessions)} websocket(s) reopened", flush=True)
    for failed in [s for s in sessions if s.failed][:3]:
        print(f"[{spawner}] N={n}: {failed.name} failed: {failed.failed}", flush=True)
    for name in names:  # the next round starts from an idle hub
        subprocess.run(["pkill", "-KILL", "-u", name], capture_output=True)
    subprocess.run(["scancel", "--partition", "course"], capture_output=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--learners", type=int, nargs="+", default=[5, 10, 20, 40])
    parser.add_argument("--spawner", nargs="+", choices=["local", "slurm"], default=["local", "slurm"])
    parser.add_argument("--port", type=int, default=8300)
    args = parser.parse_args()
    if os.geteuid() != 0:
        print("hub_load: run as root (the hub makes accounts and starts servers as them)", file=sys.stderr)
        return 2
    print(f"hub_load: {os.cpu_count()} cores, {in_use_mb() / 1024:.1f} GiB in use before the hub", flush=True)
    for spawner in args.spawner:
        if spawner == "slurm":
            from grader.slurm.local import LocalSlurm

            LocalSlurm(cpus=20).up()
        log = ROOT / "test-artifacts" / f"hub-load-{spawner}.log"
        log.parent.mkdir(exist_ok=True)
        hub = start_hub(spawner, args.port, log)
        try:
            print(f"[{spawner}] hub up; {in_use_mb() / 1024:.1f} GiB in use", flush=True)
            for n in args.learners:
                one_round(f"http://127.0.0.1:{args.port}", spawner, n)
        finally:
            hub.send_signal(2)
            try:
                hub.wait(timeout=120)
            except subprocess.TimeoutExpired:
                os.killpg(hub.pid, 9)
    return 0


if __name__ == "__main__":
    sys.exit(main())
