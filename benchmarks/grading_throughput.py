"""Grading throughput: stock ``nbgrader autograde`` against ``python -m grader grade``, in one run.

    .venv/bin/python benchmarks/grading_throughput.py [--students 10] [--workers 2] [--dask 1 2 4]

Builds a class (``--students`` learners x the three notebooks, a mix of correct, blank and wrong
answers, from ``samples/scenarios/`` and ``tests/corpus/``), then grades it, one batch per notebook,
interleaved so that every grader sees the same machine load:

  stock   ``nbgrader autograde NOTEBOOK`` in a temporary copy of the course (``source/``,
          ``notebooks/``, ``nbgrader_config.py``; per-cell timeout 180 s), scores read from
          nbgrader's gradebook database;
  ours    ``python -m grader grade --workers W --assignment NOTEBOOK`` (kernels forked from a fork server, pre-warmed);
  cold    the same with ``--no-fork-server --no-prewarm`` (a new kernel process when each notebook is due);
  floor   each instructor notebook (solutions and hidden tests) converted by nbconvert to a plain
          Python script and run with the course's Python (best of two), times the number of
          submissions of that notebook, divided by the number of cores;

then ours once more on the whole class in one run, and the Dask path (``grader.classroom.cluster``) with 1, 2
and 4 local worker processes (``LocalCluster`` over mutual TLS; timed with the cluster already started), each worker
grading ``--threads`` notebooks at a time (default: W split over the workers, rounded up, as ``large_class.py``).
It checks that the scores agree (stock against ours per test cell, printing every disagreement with
its reason; ours, cold and every Dask run must give byte-identical ``results.json``), and prints the
wall time per notebook, the ratios stock/ours and ours/floor, submissions per minute and peak memory.

Memory is sampled every 0.2 s from ``/proc/PID/status`` of every process this script started
(transitively): ``VmHWM`` (peak resident set) per kernel, and the largest sum of ``VmRSS`` over the
whole process tree at one moment (grader or nbgrader process, Dask workers, all kernels, including
pre-warmed ones), divided by the number of workers.

CPU time is the total of a fresh cgroup (v1 ``cpuacct``, as root) that each command runs in, so sealed
kernels, which die with their PID namespace and never reach ``RUSAGE_CHILDREN``, are counted; without
that cgroup it is ``getrusage(RUSAGE_CHILDREN)`` around each command, with this script as a child
subreaper so that kernels orphaned by their grader are still counted. The machine may be shared: before each
measurement the script waits (``--quiet-wait``) for other processes to go quiet, and it prints the
share of the CPUs other processes used during each measurement.

This is a measurement, not a test: it takes about 12 minutes on 2 cores. Results: ``RESULTS.md``.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_setup import ASSIGNMENTS, ROOT, load, python
from class_scores import build_class, compare, our_messages, our_scores, stock_course, stock_scores
from measure import Run, become_subreaper, grading_seconds, measured, timed, wait_for_quiet, work_folder

from grader.classroom.batch import default_workers
from grader.layout import Course


# ---------------------------------------------------------------- floor


def floor_scripts(course: Course, work: Path, log: Path) -> tuple[Run, Run]:
    """Each instructor notebook as a plain Python script: (the better of two runs, the first run)."""
    best, first = Run("plain script, best of two runs", 1), Run("plain script, first run", 1)
    for assignment in ASSIGNMENTS:
        folder = work / assignment
        folder.mkdir(parents=True)
        timed([python(), "-m", "nbconvert", "--to", "python", str(course.source_notebook(assignment)),
               "--output-dir", str(folder)], log, cwd=folder)
        if (cases := course.source / assignment / "rubric_cases.py").is_file():
            shutil.copy(cases, folder / cases.name)  # the hidden tests import their cases, beside the script
        command = [python(), str(folder / f"{assignment}.py")]
        measured(first, assignment, command, log, cwd=folder)
        second = Run("", 1)
        measured(second, assignment, command, log, cwd=folder)
        chosen = first if first.seconds[assignment] <= second.seconds[assignment] else second
        best.seconds[assignment], best.cpu[assignment] = chosen.seconds[assignment], chosen.cpu[assignment]
        best.others[assignment] = chosen.others[assignment]
    return best, first


# ---------------------------------------------------------------- Dask child process


def dask_child(args) -> None:
    """Grade the class on a LocalCluster of ``args.dask_child`` workers (mutual TLS, certificates made for this
    run by ``grader.classroom.certs``); print timings as JSON."""
    from distributed import LocalCluster

    from grader.classroom.certs import make_certificates
    from grader.classroom.cluster import client_security_from_dir, deployment_security, grade_all_on_cluster
    from grader.submission.pipeline import Settings

    started = time.monotonic()
    timings: dict[str, float] = {}
    tls = make_certificates(args.out.parent / f"{args.out.name}-tls", force=True).folder
    with LocalCluster(n_workers=args.dask_child, threads_per_worker=args.threads, processes=True, host="127.0.0.1",
                      protocol="tls://", security=deployment_security(tls),
                      dashboard_address=None, silence_logs=40) as cluster:
        start_s = time.monotonic() - started
        for assignment in ASSIGNMENTS:
            began = time.monotonic()
            grade_all_on_cluster(args.submitted, Course.default(), Settings(out=args.out), cluster.scheduler_address,
                                 security=client_security_from_dir(tls), only=[assignment], force=True)
            timings[assignment] = time.monotonic() - began
    print(json.dumps({"start_s": start_s, "seconds": timings}))


# ---------------------------------------------------------------- main


def fmt_mib(n: int) -> str:
    return f"{n / 2**20:.0f} MiB"


def row(label: str, values: list[float], total: float | None = None, rate: float | None = None, fmt: str = ".1f") -> str:
    text = f"{label:<46}" + "".join(f"{v:>22{fmt}}" for v in values)
    if total is not None:
        text += f"{total:>9{fmt}}"
    if rate is not None:
        text += f"{rate:>10.1f}"
    return text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=10)
    parser.add_argument("--workers", type=int, default=default_workers(), help="default: the grader's own (cores + 1)")
    parser.add_argument("--dask", type=int, nargs="*", default=[1, 2, 4], help="LocalCluster sizes to measure")
    parser.add_argument("--quiet-wait", type=float, default=120,
                        help="before each measurement, wait up to this many seconds for other processes to go quiet")
    parser.add_argument("--keep", type=Path, help="work in this folder and keep it (default: a temporary one)")
    parser.add_argument("--threads", type=int, default=0,
                        help="notebooks at a time per Dask worker (default: --workers split over the workers, rounded up)")
    parser.add_argument("--dask-child", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--submitted", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.dask_child:
        return dask_child(args)

    become_subreaper()
    course, cores = Course.default(), os.cpu_count() or 1
    with contextlib.ExitStack() as stack:
        work = work_folder(stack, args.keep, "grading-bench-")
        log = work / "bench.log"
        submitted = work / "class" / "submitted"
        who = build_class(course, submitted, args.students)
        counts = {a: sum(1 for s in who.values() for x in s if x.startswith(a + ":")) for a in ASSIGNMENTS}
        total = sum(counts.values())
        import jax  # only for the versions line

        print(f"date {time.strftime('%Y-%m-%d %H:%M %Z')}; {cores} cores; Python {sys.version.split()[0]}; "
              f"JAX {jax.__version__}; class: {args.students} learners x {len(ASSIGNMENTS)} notebooks = {total} "
              f"submissions; grader workers {args.workers}", flush=True)
        for assignment in ASSIGNMENTS:
            names = [x.split(":", 1)[1] for s in who.values() for x in s if x.startswith(assignment + ":")]
            print(f"  {assignment}: " + ", ".join(f"{names.count(n)}x {n}" for n in dict.fromkeys(names)), flush=True)

        stock_root = work / "stock"
        stock_course(course, submitted, stock_root, log)

        stock = Run("stock nbgrader autograde (serial)", 1)
        ours = Run(f"ours --workers {args.workers}", args.workers)
        cold = Run(f"ours --workers {args.workers} --no-fork-server --no-prewarm", args.workers)
        for assignment in ASSIGNMENTS:  # interleaved: the graders see similar load
            print(f"grading {assignment}: {wait_for_quiet(args.quiet_wait)}", flush=True)
            measured(stock, assignment, ["nbgrader", "autograde", assignment, "--ExecutePreprocessor.timeout=180",
                                         "--Execute.timeout=180"], log, cwd=stock_root)
            for run, extra, out in ((ours, [], "ours"), (cold, ["--no-fork-server", "--no-prewarm"], "cold")):
                print(f"  {wait_for_quiet(args.quiet_wait)}", flush=True)
                measured(run, assignment, [python(), "-m", "grader", "grade", "--submissions", str(submitted), "--out",
                                           str(work / out), "--workers", str(args.workers), "--assignment", assignment,
                                           *extra], log, cwd=ROOT)
                run.inside[assignment] = grading_seconds(log)
            print("  " + ", ".join(f"{r.name.split(' --')[0] if r is stock else r.name}: {r.seconds[assignment]:.1f} s "
                                   f"({r.others[assignment]:.0%} of the CPUs used by others)"
                                   for r in (stock, ours, cold)), flush=True)

        print(f"ours, the whole class in one run: {wait_for_quiet(args.quiet_wait)}", flush=True)
        whole = Run(f"ours --workers {args.workers}, whole class, one run", args.workers)
        measured(whole, "class", [python(), "-m", "grader", "grade", "--submissions", str(submitted), "--out",
                                  str(work / "whole"), "--workers", str(args.workers)], log, cwd=ROOT)
        whole.inside["class"] = grading_seconds(log)

        print(f"floor: instructor notebooks as plain scripts: {wait_for_quiet(args.quiet_wait)}", flush=True)
        script, script_first = floor_scripts(course, work / "floor", log)
        floor = Run(f"floor: script x submissions / {cores} cores", cores)
        floor.seconds = {a: script.seconds[a] * counts[a] / cores for a in ASSIGNMENTS}
        floor.cpu = {a: script.cpu[a] * counts[a] for a in ASSIGNMENTS}

        dask_runs = []
        for n in args.dask:
            print(f"dask: LocalCluster with {n} worker(s): {wait_for_quiet(args.quiet_wait)}", flush=True)
            threads = args.threads or math.ceil(args.workers / n)
            run = Run(f"dask LocalCluster, {n} worker(s) x {threads} threads", n)
            measured(run, "process", [python(), str(Path(__file__).resolve()), "--dask-child", str(n), "--threads",
                                      str(threads),
                                      "--submitted", str(submitted), "--out", str(work / f"dask{n}")], log, cwd=ROOT)
            lines = [line for line in log.read_text().splitlines() if line.startswith('{"start_s"')]
            data = json.loads(lines[-1])
            wall = run.seconds.pop("process")
            run.note = f"cluster start {data['start_s']:.1f} s, whole process {wall:.1f} s, CPU {run.cpu['process']:.0f} s"
            run.seconds = data["seconds"]
            dask_runs.append(run)

        # ------------------------------------------------------------ report
        print()
        print(f"wall time per notebook (s); one batch per notebook; {counts[ASSIGNMENTS[0]]} submissions per notebook")
        print(f"{'':<46}" + "".join(f"{a:>22}" for a in ASSIGNMENTS) + f"{'total':>9}{'subs/min':>10}")
        for run in (stock, ours, cold, floor, *dask_runs):
            print(row(run.name, [run.seconds[a] for a in ASSIGNMENTS], run.total, total / run.total * 60))
        for run in (ours, cold):
            inside = sum(run.inside.values())
            print(row("  " + run.name + ": grading only", [run.inside[a] for a in ASSIGNMENTS], inside,
                      total / inside * 60))
        print(row(whole.name, [], None) + f"{'':>66}{whole.total:>9.1f}{total / whole.total * 60:>10.1f}"
              f"   (grading only {whole.inside['class']:.1f} s)")
        print(row("plain script, one submission: best of two", [script.seconds[a] for a in ASSIGNMENTS], fmt=".2f"))
        print(row("plain script, one submission: first run", [script_first.seconds[a] for a in ASSIGNMENTS], fmt=".2f"))
        print(row("share of the CPUs used by other processes", [], None) + "   stock "
              + " ".join(f"{stock.others[a]:.0%}" for a in ASSIGNMENTS) + ", ours "
              + " ".join(f"{ours.others[a]:.0%}" for a in ASSIGNMENTS) + ", cold "
              + " ".join(f"{cold.others[a]:.0%}" for a in ASSIGNMENTS) + f", whole {whole.others['class']:.0%}, "
              + "dask " + " ".join(f"{r.others['process']:.0%}" for r in dask_runs))
        print("(ours: wall time of `python -m grader grade` including its start-up; grading only: the time it reports"
              " after its imports; dask: grading time with the cluster already started)")
        print()
        print("CPU time (user+sys of every process started, s)")
        for run in (stock, ours, cold):
            print(row(run.name, [run.cpu[a] for a in ASSIGNMENTS], run.total_cpu, None))
        print(row("floor: script x submissions", [floor.cpu[a] for a in ASSIGNMENTS], floor.total_cpu, None))
        print(row(whole.name, [], None) + f"{'':>66}{whole.total_cpu:>9.1f}")
        print()
        print("ratios")
        for label, a_run, b_run in (("stock / ours (wall)", stock, ours), ("stock / ours cold (wall)", stock, cold),
                                    ("stock / ours (CPU)", stock, ours), ("ours / floor (wall)", ours, floor),
                                    ("ours cold / floor (wall)", cold, floor)):
            key = "cpu" if "CPU" in label else "seconds"
            a_v, b_v = getattr(a_run, key), getattr(b_run, key)
            print(f"  {label:<34}" + "".join(f"{a}: {a_v[a] / b_v[a]:.2f}   " for a in ASSIGNMENTS)
                  + f"total: {sum(a_v.values()) / sum(b_v.values()):.2f}")
        print(f"  {'stock / ours, whole class':<34}wall {stock.total / whole.total:.2f}, "
              f"CPU {stock.total_cpu / whole.total_cpu:.2f}; whole class / floor: wall {whole.total / floor.total:.2f} "
              f"(grading only {whole.inside['class'] / floor.total:.2f})")
        ours_inside = sum(ours.inside.values())
        for run in dask_runs:
            print(f"  {run.name + ' / ours grading only':<52}{run.total / ours_inside:.2f}   "
                  f"({total / run.total * 60:.1f} submissions/min, {total / run.total * 60 / run.workers:.1f} per worker; "
                  f"{run.note})")
        print()
        print("peak memory (VmHWM and VmRSS sampled every 0.2 s from /proc of every process started)")
        for run in (stock, ours, cold, whole, *dask_runs):
            m = run.memory
            print(f"  {run.name:<46} largest kernel {fmt_mib(m.kernel_hwm)}, largest other process "
                  f"{fmt_mib(m.other_hwm)}, whole tree at its peak {fmt_mib(m.tree_rss)} = "
                  f"{fmt_mib(m.tree_rss // max(run.workers, 1))} per worker ({m.kernels} kernels)")
        print()
        stock_s, ours_s = stock_scores(stock_root), our_scores(work / "ours")
        agree, compared, lines = compare(stock_s, ours_s, our_messages(work / "ours"), stock_root, who)
        print(f"scores: stock and ours agree on {agree} of {compared} notebooks (every test cell equal)")
        for line in lines:
            print(line)
        reference = (work / "ours" / "results.json").read_text()
        for name in ["cold", "whole", *(f"dask{n}" for n in args.dask)]:
            same = (work / name / "results.json").read_text() == reference
            print(f"  results.json of {name}: {'identical to ours' if same else 'DIFFERS from ours'}")
        print(f"load average at the end: {load()}")


if __name__ == "__main__":
    main()
