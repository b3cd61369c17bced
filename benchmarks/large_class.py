"""A large synthetic class graded locally and through Dask, side by side in one run.

    .venv/bin/python benchmarks/large_class.py [--submissions 1000] [--workers 2] [--dask 1 2]

Builds ``--submissions`` notebooks spread over the three assignments, drawn in turn from the class of
``grading_throughput.py`` (correct answers written several ways, blank notebooks, realistic wrong answers)
with one broken submission in twenty (not JSON, not a notebook, a kernel that dies, ``sys.exit``). Then grades
the whole class, in this order, each in one run with the compilation cache filled by that run:

  local   ``python -m grader grade --workers W`` (the fork server, sealed kernels);
  dask N  ``grader.classroom.cluster.grade_all_on_cluster`` on a ``LocalCluster`` of N worker processes (one thread each,
          mutual TLS), timed from the cluster's start, so a worker's fork server and cache fill are counted.

It prints, for each: wall time, submissions per minute and per minute per worker (a local worker is one of the
W notebooks graded at once), the CPU time of everything it started (a cgroup, sealed kernels included), the
instructor process's own CPU (the client and, on this machine, the scheduler), the peak memory per worker; it
checks that every Dask run's ``results.json`` equals the local one, and projects the throughput of 20 and 100
workers from the per-worker rate and the instructor's CPU per submission. Results: ``RESULTS.md``.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_setup import ASSIGNMENTS, CLASS, ROOT, load, python  # noqa: E402
from grading_throughput import fmt_mib  # noqa: E402
from measure import Run, become_subreaper, measured, wait_for_quiet  # noqa: E402

from grader.classroom.batch import default_workers  # noqa: E402
from grader.layout import Course  # noqa: E402
from grader.course.variants import parse, write_submission  # noqa: E402

BROKEN = [ROOT / "tests" / "attacks" / "sharded_step" / f"{name}.py"
          for name in ("invalid-json", "not-a-notebook", "kernel-dies", "sys-exit")]

# The sample learners: ada solves everything, blake submits the blank notebook, chen and dana make mistakes.
SAMPLE_KINDS = {"ada": "correct", "blake": "blank", "chen": "wrong", "dana": "wrong"}


def build(course: Course, submitted: Path, count: int) -> dict[str, int]:
    """``count`` submissions, assignment by assignment in turn; returns how many of each kind."""
    kinds: dict[str, int] = {}
    for index in range(count):
        assignment = ASSIGNMENTS[index % len(ASSIGNMENTS)]
        learner = index // len(ASSIGNMENTS)
        if index % 20 == 19:
            path, assignment = BROKEN[learner % len(BROKEN)], "sharded_step"
        else:
            pool = CLASS[assignment]
            path = pool[learner % len(pool)]
        student = f"s{index:05d}"  # one notebook per learner: every submission is its own
        write_submission(course, assignment, parse(path), submitted, student)
        kind = "broken" if path in BROKEN else SAMPLE_KINDS.get(path.stem) or path.stem.split("-")[0]
        kinds[kind] = kinds.get(kind, 0) + 1
    return kinds


def dask_child(args) -> None:
    """Grade on a LocalCluster of ``args.dask_child`` workers; print the timing and this process's own CPU."""
    from distributed import LocalCluster

    from grader.classroom.certs import make_certificates
    from grader.classroom.cluster import client_security_from_dir, deployment_security, grade_all_on_cluster
    from grader.submission.pipeline import Settings

    started = time.monotonic()
    tls = make_certificates(args.out.parent / f"{args.out.name}-tls", force=True).folder
    with LocalCluster(n_workers=args.dask_child, threads_per_worker=1, processes=True, host="127.0.0.1",
                      protocol="tls://", security=deployment_security(tls), dashboard_address=None,
                      silence_logs=40) as cluster:
        grade_all_on_cluster(args.submitted, Course.default(), Settings(out=args.out), cluster.scheduler_address,
                             security=client_security_from_dir(tls))
    own = resource.getrusage(resource.RUSAGE_SELF)
    print(json.dumps({"seconds": time.monotonic() - started, "own_cpu": own.ru_utime + own.ru_stime}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--submissions", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=default_workers(), help="default: the grader's own (cores + 1)")
    parser.add_argument("--dask", type=int, nargs="*", default=[1, 2])
    parser.add_argument("--quiet-wait", type=float, default=120)
    parser.add_argument("--dask-child", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--submitted", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.dask_child:
        return dask_child(args)
    become_subreaper()
    with tempfile.TemporaryDirectory(prefix="large-class-") as folder:
        work = Path(folder)
        log, submitted = work / "bench.log", work / "submitted"
        kinds = build(Course.default(), submitted, args.submissions)
        print(f"date {time.strftime('%Y-%m-%d %H:%M %Z')}; {os.cpu_count()} cores; {args.submissions} submissions: "
              + ", ".join(f"{n} {k}" for k, n in sorted(kinds.items())), flush=True)
        runs: list[tuple[Run, float]] = []  # (run, the instructor process's own CPU seconds)
        print(f"local: {wait_for_quiet(args.quiet_wait)}", flush=True)
        local = Run(f"local --workers {args.workers}", args.workers)
        measured(local, "class", [python(), "-m", "grader", "grade", "--submissions", str(submitted), "--out",
                                  str(work / "local"), "--workers", str(args.workers)], log, cwd=ROOT)
        runs.append((local, float("nan")))
        for n in args.dask:
            print(f"dask, {n} worker(s): {wait_for_quiet(args.quiet_wait)}", flush=True)
            run = Run(f"dask LocalCluster, {n} worker(s)", n)
            measured(run, "class", [python(), str(Path(__file__).resolve()), "--dask-child", str(n), "--submitted",
                                    str(submitted), "--out", str(work / f"dask{n}")], log, cwd=ROOT)
            line = [x for x in log.read_text().splitlines() if x.startswith('{"seconds"')][-1]
            runs.append((run, json.loads(line)["own_cpu"]))

        total = args.submissions
        print(f"\n{'':<34}{'wall s':>8}{'subs/min':>10}{'per worker':>11}{'CPU s':>8}{'instructor CPU s':>18}"
              f"{'peak MiB/worker':>16}")
        for run, own in runs:
            wall = run.seconds["class"]
            print(f"{run.name:<34}{wall:>8.1f}{total / wall * 60:>10.1f}{total / wall * 60 / run.workers:>11.1f}"
                  f"{run.cpu['class']:>8.0f}{own:>18.1f}{fmt_mib(run.memory.tree_rss // run.workers):>16}")
        reference = (work / "local" / "results.json").read_text()
        local_rate = total / local.seconds["class"] * 60 / local.workers
        for run, own in runs[1:]:
            name = f"dask{run.workers}"
            same = (work / name / "results.json").read_text() == reference
            rate = total / run.seconds["class"] * 60 / run.workers
            print(f"{run.name}: results.json {'identical to local' if same else 'DIFFERS from local'}; "
                  f"per worker {rate / local_rate:.2f}x a local worker; instructor CPU {own / total * 1000:.0f} ms "
                  f"per submission ({own / run.cpu['class']:.1%} of all CPU)")
            for workers in (20, 100):
                ceiling = total / own * 60 if own else float("inf")
                print(f"  projection, {workers} workers: {min(workers * rate, ceiling):.0f} submissions/min "
                      f"(workers: {workers * rate:.0f}; the instructor process alone: at most {ceiling:.0f})")
        print(f"load average at the end: {load()}")


if __name__ == "__main__":
    main()
