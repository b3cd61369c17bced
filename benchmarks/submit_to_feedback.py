"""Submit -> feedback, measured: one learner at a time, and a burst of learners submitting at once.

    .venv/bin/python benchmarks/submit_to_feedback.py [--single 5] [--burst 30] [--workers N]

Starts ``python -m grader serve`` on a temporary exchange (the course's own source/ and notebooks/), waits until one
warm-up submission has its feedback (a service that has been running), then:

* **single**: ``--single`` learners submit one after another, each after the previous one's feedback is out, with
  nbgrader's own commands: ``nbgrader submit`` (timed from its start) to ``nbgrader fetch_feedback`` returning the
  page; and the service's share alone (the submission complete in the exchange -> its feedback page released);
* **burst**: ``--burst`` learners' submissions land in the exchange within the same second (written as nbgrader's
  submit writes them: notebook, timestamp.txt, then submission_secret.txt); each one's time to its released page.

The submissions are the sample class's notebooks (solved, blank, the 4x step, wrong numbers), over the three
assignments in turn. Prints the median, the 95th percentile and the maximum of each.
"""
from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from grader.service.exchange import feedback_name  # noqa: E402

COURSE = "jax-distributed-training"
ASSIGNMENTS = ("sharded_step", "local_mean_diagnosis", "collectives")
NBGRADER = Path(sys.executable).parent / "nbgrader"


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * len(ordered) + 0.5) - 1))]


def samples() -> list[tuple[str, Path]]:
    found = sorted((ROOT / "samples" / "submitted").glob("*/*/*.ipynb"))
    by_assignment = {a: [p for p in found if p.parent.name == a] for a in ASSIGNMENTS}
    mixed = [by_assignment[a][i] for i in range(max(map(len, by_assignment.values()))) for a in ASSIGNMENTS
             if i < len(by_assignment[a])]
    return [(p.parent.name, p) for p in mixed]


def land(exchange: Path, student: str, assignment: str, notebook: Path) -> tuple[str, float]:
    """A submission written into the inbound folder as nbgrader's submit writes it; (secret, time complete)."""
    stamp = time.strftime("%Y-%m-%d %H:%M:%S.000000 UTC", time.gmtime())
    folder = exchange / COURSE / "inbound" / f"{student}+{assignment}+{stamp}+{secrets.token_hex(16)}"
    folder.mkdir()
    shutil.copy(notebook, folder / f"{assignment}.ipynb")
    (folder / "timestamp.txt").write_text(stamp)
    secret = secrets.token_hex(64)
    (folder / "submission_secret.txt").write_text(secret)
    return secret, time.monotonic()


def wait_for(path: Path, timeout: float = 900) -> float:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if time.monotonic() > deadline:
            raise TimeoutError(f"no feedback at {path} after {timeout:.0f} s")
        time.sleep(0.05)
    return time.monotonic()


def wait_for_all(paths: list[Path], timeout: float = 900) -> list[float]:
    """The moment each path first exists (all watched together, so no page is timed by another's wait)."""
    seen: dict[int, float] = {}
    deadline = time.monotonic() + timeout
    while len(seen) < len(paths):
        if time.monotonic() > deadline:
            raise TimeoutError(f"{len(paths) - len(seen)} feedback pages missing after {timeout:.0f} s")
        for index, path in enumerate(paths):
            if index not in seen and path.exists():
                seen[index] = time.monotonic()
        time.sleep(0.05)
    return [seen[i] for i in range(len(paths))]


def learner_env(home: Path, exchange: Path, student: str) -> dict[str, str]:
    config = home / "config"
    config.mkdir(parents=True, exist_ok=True)
    (config / "nbgrader_config.py").write_text(
        f"c = get_config()\nc.CourseDirectory.course_id = {COURSE!r}\nc.Exchange.root = {str(exchange)!r}\n"
        f"c.Exchange.cache = {str(home / 'cache')!r}\nc.CourseDirectory.student_id = {student!r}\n")
    return {**os.environ, "JUPYTER_CONFIG_DIR": str(config), "PATH": f"{NBGRADER.parent}:{os.environ['PATH']}"}


def nbgrader_round_trip(exchange: Path, work: Path, student: str, assignment: str, notebook: Path) -> tuple[float, float]:
    """nbgrader submit -> nbgrader fetch_feedback returns the page: (seconds, seconds of the service alone)."""
    home = work / f"learner-{student}"
    (home / assignment).mkdir(parents=True, exist_ok=True)
    shutil.copy(notebook, home / assignment / f"{assignment}.ipynb")
    env = learner_env(home, exchange, student)
    began = time.monotonic()
    subprocess.run([str(NBGRADER), "submit", assignment, "--student", student, "--log-level=ERROR"], cwd=home,
                   env=env, check=True, capture_output=True)
    submitted = time.monotonic()
    [cached] = (home / "cache" / COURSE).glob(f"{student}+{assignment}+*")
    page = exchange / COURSE / "feedback" / feedback_name((cached / "submission_secret.txt").read_text(), assignment)
    released = wait_for(page)
    subprocess.run([str(NBGRADER), "fetch_feedback", assignment, "--student", student, "--log-level=ERROR"],
                   cwd=home, env=env, check=True, capture_output=True)
    assert list((home / assignment / "feedback").rglob(f"{assignment}.html")), "fetch_feedback fetched nothing"
    return time.monotonic() - began, released - submitted


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--single", type=int, default=5)
    parser.add_argument("--burst", type=int, default=30)
    parser.add_argument("--workers", type=int, default=None, help="the service's --workers (default: its own)")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="submit-bench-", dir=ROOT / ".bench-tmp" if (ROOT / ".bench-tmp").is_dir()
                                 else None))
    exchange = work / "exchange"
    (exchange / COURSE / "inbound").mkdir(parents=True)
    os.chmod(exchange, 0o1777)
    for assignment in ASSIGNMENTS:  # what nbgrader's release_assignment puts there (its submit checks for it)
        shutil.copytree(ROOT / "notebooks" / assignment, exchange / COURSE / "outbound" / assignment)
    port = free_port()
    command = [sys.executable, "-m", "grader", "serve", "--exchange", str(exchange), "--out", str(work / "out"),
               "--attempts", "0", "--no-check-owner", "--port", str(port),
               *(["--workers", str(args.workers)] if args.workers else [])]
    log = (work / "serve.log").open("w")
    service = subprocess.Popen(command, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    pool = samples()
    try:
        started = time.monotonic()
        secret, _ = land(exchange, "warmup", pool[0][0], pool[0][1])
        wait_for(exchange / COURSE / "feedback" / feedback_name(secret, pool[0][0]))
        print(f"service started and graded a warm-up submission in {time.monotonic() - started:.1f} s "
              f"({os.cpu_count()} cores)", flush=True)
        round_trips, service_only = [], []
        for n in range(args.single):
            assignment, notebook = pool[n % len(pool)]
            total, alone = nbgrader_round_trip(exchange, work, f"single{n}", assignment, notebook)
            round_trips.append(total)
            service_only.append(alone)
            print(f"  single {n + 1}: {assignment}: nbgrader submit -> fetched feedback {total:.1f} s "
                  f"(service {alone:.1f} s)", flush=True)
        landed = [(f"burst{n}", *pool[n % len(pool)]) for n in range(args.burst)]
        secrets_at = [(student, assignment, *land(exchange, student, assignment, notebook))
                      for student, assignment, notebook in landed]
        pages = [exchange / COURSE / "feedback" / feedback_name(secret, assignment)
                 for _, assignment, secret, _ in secrets_at]
        burst = [seen - at for seen, (*_, at) in zip(wait_for_all(pages), secrets_at)]
        status = json.loads(urllib.request.urlopen(f"http://127.0.0.1:{port}/status", timeout=5).read())
    finally:
        service.terminate()
        try:
            service.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(service.pid, 9)
        log.close()

    def line(name: str, values: list[float]) -> str:
        return (f"{name:<52} median {statistics.median(values):6.1f} s   p95 {percentile(values, 95):6.1f} s   "
                f"max {max(values):6.1f} s   (n={len(values)})")

    print("\nSubmit -> feedback on this machine")
    if round_trips:
        print(line("single: nbgrader submit -> fetch_feedback returned", round_trips))
        print(line("single: nbgrader submit returned -> page released", service_only))
    if burst:
        print(line(f"burst of {args.burst}: landed together -> each released", burst))
        print(f"{'':<52} the last page {max(burst):.1f} s after the burst: "
              f"{args.burst / max(burst) * 60:.1f} submissions per minute")
    print(f"service status at the end: {status}")
    lines = [line for line in (work / "serve.log").read_text().splitlines() if "feedback released" in line]
    outcomes = {}
    for line in lines:
        outcome = line.split(": ")[2].split(",")[0]  # "graded 8/11"
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
    print("outcomes (status score/max: submissions): " + ", ".join(f"{k}: {v}" for k, v in sorted(outcomes.items())))
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
