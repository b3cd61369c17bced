"""A large class graded against its floor, locally, through Dask and by the previous tree, side by side in one run.

    .venv/bin/python benchmarks/large_class.py                      # issue 27's run: about 3.5 h on 2 cores
    .venv/bin/python benchmarks/large_class.py --submissions 100    # the quick version (about half an hour)

``tests/test_benchmarks.py`` runs it on 3 submissions (one per assignment) with a sampled floor (``--floor-sample 1``)
and one Dask worker, and checks that every figure below is printed and the Dask grades equal the local ones.

Two classes (``--classes demo,bench``): ``demo``, the sample class ``samples/submitted`` taken twice (each learner
also as ``ID-2``), and ``bench``, ``--submissions`` notebooks (default 1000) spread over the three assignments,
drawn in turn from the class of ``grading_throughput.py`` (correct answers written several ways, blank
notebooks, realistic wrong answers) with one broken or hostile submission in twenty (not JSON, not a notebook,
a kernel that dies, ``sys.exit``); each answered notebook made its learner's own by a code cell at its end, blank
ones left identical, as in a real class (the grader runs identical notebooks once: ``grader.classroom.identical``).
For each class, in this order, each after waiting for a quiet machine:

  floor    for each submission, the instructor notebook of its assignment (solutions and hidden tests, converted
           once by nbconvert) run as a plain Python script, a fresh interpreter each, two at a time
           (``floor.py``; a broken submission counts as its folder's assignment). ``--floor-sample K`` runs
           only K per assignment and scales them by the class's counts: for quick runs only;
  local    ``python -m grader grade --workers W`` (the grader's default W; the fork server, sealed kernels), run
           through ``OWN_CPU``, which prints that process's own CPU at its exit;
  dask N   ``grade_all_on_cluster`` on a ``LocalCluster`` of N worker processes over mutual TLS, started by the
           benchmark and timed from its start (``--dask 1 2``; the bench class only, unless ``--dask-demo``), each
           worker with ``--threads`` notebooks at a time (default: the grader's W, cores + 1, split over the N
           workers and rounded up: one worker is one machine's worth, as the how-to deploys it);
  baseline ``--baseline REV`` (default 27a44a0, the tree before issue 27's changes; "" to skip): the same
           ``grade`` by that revision, in the worktree ``build/large-class-baseline`` (``baseline.py``).

It prints, per class: wall time, submissions per minute and per minute per worker, the CPU time of everything
started (a cgroup: sealed kernels included), the instructor process's own CPU (``grade``'s process; for Dask the
client's, which on a LocalCluster holds the scheduler), the peak memory per worker, bytes written under the
results folder per submission; ``ours / floor`` (local wall over floor wall, issue 27 asks <= 0.65); the
grader's line on program runs reused; every grade of every Dask run and of the baseline compared with the local
run (``same_grades.view``: status, score, message, flags, tampering, each test), each difference printed; and
a projection for 20 and 100 workers with what limits it. Results: ``RESULTS.md``.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import re
import resource
import shutil
import sys
import time
from pathlib import Path

import nbformat

sys.path.insert(0, str(Path(__file__).resolve().parent))

from baseline import baseline_tree, compared, short
from bench_setup import ASSIGNMENTS, CLASS, ROOT, load, python
from floor import class_counts, floor_run
from measure import Run, become_subreaper, measured, wait_for_quiet, work_folder

from grader.classroom.batch import default_workers
from grader.course.variants import parse, write_submission
from grader.layout import Course

BROKEN = [ROOT / "tests" / "attacks" / "sharded_step" / f"{name}.py"
          for name in ("invalid-json", "not-a-notebook", "kernel-dies", "sys-exit")]
# The sample learners: ada solves everything, blake submits the blank notebook, chen and dana make mistakes.
SAMPLE_KINDS = {"ada": "correct", "blake": "blank", "chen": "wrong", "dana": "wrong"}
# ``python -m grader`` that prints its own process's CPU at exit (its kernels and runners are other processes)
OWN_CPU = ("import atexit, os, resource, runpy, sys\nme = os.getpid()\n"
           "def own():\n    if os.getpid() == me:\n        u = resource.getrusage(resource.RUSAGE_SELF)\n"
           "        print(f'INSTRUCTOR-CPU {u.ru_utime + u.ru_stime}', file=sys.stderr, flush=True)\n"
           "atexit.register(own)\nsys.argv[0] = 'grader'\nrunpy.run_module('grader', run_name='__main__', alter_sys=True)")
REUSED = re.compile(r"\d+ program runs reused from identical programs \(\d+ kept\)")
NOT_RUN_AGAIN = re.compile(r"\d+ notebooks identical to an earlier submission's not run again \(\d+ runs kept\)")


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
        notebook = write_submission(course, assignment, parse(path), submitted, student)
        kind = "broken" if path in BROKEN else SAMPLE_KINDS.get(path.stem) or path.stem.split("-")[0]
        if kind not in ("broken", "blank"):
            own_copy(notebook, student)
        kinds[kind] = kinds.get(kind, 0) + 1
    return kinds


def own_copy(path: Path, student: str) -> None:
    """Make an answered notebook this learner's own, as real learners' answers differ: a code cell of theirs at its
    end. Without it the class would repeat ten answers per notebook, and the grader runs an identical notebook once
    (``grader.classroom.identical``); blank notebooks stay as handed out, identical as they are in a real class."""
    notebook = nbformat.read(path, as_version=4)
    notebook.cells.append(nbformat.v4.new_code_cell(f"# {student}'s notes"))
    path.write_text(nbformat.writes(notebook))


def demo(submitted: Path) -> dict[str, int]:
    """``samples/submitted`` taken twice: every learner's folder also as ``ID-2``."""
    kinds: dict[str, int] = {}
    for learner in sorted(p for p in (ROOT / "samples" / "submitted").iterdir() if p.is_dir()):
        for student in (learner.name, f"{learner.name}-2"):
            shutil.copytree(learner, submitted / student)
            kind = SAMPLE_KINDS.get(learner.name, "other")
            kinds[kind] = kinds.get(kind, 0) + sum(1 for p in learner.iterdir() if p.is_dir())
    return kinds


def dask_child(args) -> None:
    """Grade on a LocalCluster of ``args.dask_child`` workers; print the timing and this process's own CPU."""
    from distributed import LocalCluster

    from grader.classroom.certs import make_certificates
    from grader.classroom.cluster import client_security_from_dir, deployment_security, grade_all_on_cluster
    from grader.submission.pipeline import Settings

    started = time.monotonic()
    tls = make_certificates(args.out.parent / f"{args.out.name}-tls", force=True).folder
    with LocalCluster(n_workers=args.dask_child, threads_per_worker=args.threads, processes=True, host="127.0.0.1",
                      protocol="tls://", security=deployment_security(tls), dashboard_address=None,
                      silence_logs=40) as cluster:
        grade_all_on_cluster(args.submitted, Course.default(), Settings(out=args.out), cluster.scheduler_address,
                             security=client_security_from_dir(tls))
    own = resource.getrusage(resource.RUSAGE_SELF)
    print(json.dumps({"seconds": time.monotonic() - started, "own_cpu": own.ru_utime + own.ru_stime}))


def written(out: Path) -> tuple[int, int]:
    """Bytes of the files under a results folder: (results, feedback and grades; the compilation cache)."""
    results = cache = 0
    for path in out.rglob("*"):
        if path.is_file() and not path.is_symlink():
            if ".compile-cache" in path.relative_to(out).parts:
                cache += path.stat().st_size
            else:
                results += path.stat().st_size
    return results, cache


def grade(run: Run, tree: Path, submitted: Path, out: Path, workers: int, log: Path) -> float:
    """``python -m grader grade`` of ``tree`` measured; the instructor process's own CPU seconds."""
    measured(run, "class", [str(tree / ".venv" / "bin" / "python"), "-c", OWN_CPU, "grade", "--submissions",
                            str(submitted), "--out", str(out), "--workers", str(workers)], log, cwd=tree)
    found = re.findall(r"^INSTRUCTOR-CPU ([0-9.]+)$", log.read_text(), re.M)
    return float(found[-1]) if found else math.nan


def grade_class(name: str, submitted: Path, kinds: dict[str, int], work: Path, args, base: tuple | None) -> None:
    counts = class_counts(submitted)
    total = sum(counts.values())
    print(f"\n[{name}] {total} submissions (" + ", ".join(f"{n} {a}" for a, n in counts.items()) + "): "
          + ", ".join(f"{n} {k}" for k, n in sorted(kinds.items())), flush=True)
    print(f"[{name}] floor: {wait_for_quiet(args.quiet_wait)}", flush=True)
    floor, note = floor_run(Course.default(), submitted, work / "floor", work / "floor.log", args.floor_sample)
    runs: list[tuple[Run, float, Path | None]] = [(floor, math.nan, None)]  # (run, instructor CPU s, results)
    print(f"[{name}] local: {wait_for_quiet(args.quiet_wait)}", flush=True)
    local = Run(f"ours: local --workers {args.workers}", args.workers)
    runs.append((local, grade(local, ROOT, submitted, work / "local", args.workers, work / "local.log"), work / "local"))
    for n in args.dask if name == "bench" or args.dask_demo else []:
        print(f"[{name}] dask, {n} worker(s): {wait_for_quiet(args.quiet_wait)}", flush=True)
        threads = args.threads or math.ceil(args.workers / n)
        run, log = Run(f"ours: dask, {n} worker(s) x {threads} threads", n), work / f"dask{n}.log"
        measured(run, "class", [python(), str(Path(__file__).resolve()), "--dask-child", str(n), "--threads",
                                str(threads), "--submitted", str(submitted), "--out", str(work / f"dask{n}")], log,
                 cwd=ROOT)
        line = [x for x in log.read_text().splitlines() if x.startswith('{"seconds"')][-1]
        runs.append((run, json.loads(line)["own_cpu"], work / f"dask{n}"))
    if base:
        print(f"[{name}] baseline {base[1]}: {wait_for_quiet(args.quiet_wait)}", flush=True)
        run = Run(f"baseline {base[1]}: local --workers {args.workers}", args.workers)
        runs.append((run, grade(run, base[0], submitted, work / "baseline", args.workers, work / "baseline.log"),
                     work / "baseline"))

    print(f"\n[{name}] {note}")
    print(f"{f'[{name}]':<46}{'wall s':>8}{'subs/min':>10}{'per worker':>11}{'CPU s':>8}{'instructor CPU s':>18}"
          f"{'peak MiB/worker':>16}{'KiB/sub written':>17}")
    for run, own, out in runs:
        wall = run.seconds["class"]
        kib = f"{written(out)[0] / total / 1024:.0f}" if out else "-"
        print(f"{run.name:<46}{wall:>8.1f}{total / wall * 60:>10.1f}{total / wall * 60 / run.workers:>11.1f}"
              f"{run.cpu['class']:>8.0f}{'-' if math.isnan(own) else f'{own:.1f}':>18}"
              f"{run.memory.tree_rss // run.workers / 2**20:>16.0f}{kib:>17}")
    ratio = local.seconds["class"] / floor.seconds["class"]
    print(f"ours / floor: {ratio:.2f} (target <= 0.65)" + (" [sampled floor]" if args.floor_sample else ""))
    reused = REUSED.findall((work / "local.log").read_text())
    again = NOT_RUN_AGAIN.findall((work / "local.log").read_text())
    print(f"ours local: {reused[-1] if reused else 'no program runs reused (the grader printed no reuse line)'}; "
          f"{again[-1] if again else 'every notebook run (none identical to an earlier one)'}")
    for run, _, out in runs[2:]:
        if out.name.startswith("dask"):
            compared(f"{run.name} vs local", work / "local", out)
    if base:
        graded, count = compared(f"ours vs baseline {base[1]}", work / "baseline", work / "local")
        print(f"grades identical to {base[1]}: {'NO' if graded else 'yes'} ({graded} of {count} differ)")
    project(runs, total, work / "local", name)


def project(runs, total: int, local_out: Path, name: str) -> None:
    """Throughput of 20 and 100 workers from each distributed run (or the local one) and what limits it."""
    results, cache = written(local_out)
    per_sub = results / total
    basis = [r for r in runs[1:] if r[2] and r[2].name.startswith("dask")] or runs[1:2]
    for run, own, _ in basis:
        rate = total / run.seconds["class"] * 60 / run.workers
        ceiling = total / own * 60 if own and not math.isnan(own) else math.inf
        print(f"[{name}] from {run.name}: {rate:.1f} submissions/min per worker; instructor CPU "
              f"{own / total * 1000:.0f} ms per submission ({own / run.cpu['class']:.1%} of all CPU)")
        for workers in (20, 100):
            print(f"  projection, {workers} workers: {min(workers * rate, ceiling):.0f} submissions/min (workers: "
                  f"{workers * rate:.0f}; the instructor process alone: at most {ceiling:.0f}; results written: "
                  f"{min(workers * rate, ceiling) * per_sub / 2**20:.1f} MiB/min)")
    extra = f", plus {cache / 2**20:.1f} MiB of compilation cache once per run" if cache else ""
    print(f"  limits: the instructor process (its CPU per submission above: grade's own process, or the Dask client, "
          f"which sends each notebook and judges what comes back); the scheduler (a LocalCluster's runs in the "
          f"client's process, so it is inside that figure; one task per submission); disk: {per_sub / 1024:.0f} KiB "
          f"written under the results folder per submission ({results / 2**20:.1f} MiB in all{extra}); the gradebook: "
          f"nbgrader's SQLite gradebook (--gradebook, not written in this run) is written by the instructor "
          f"process, one writer, after the grades")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--classes", default="demo,bench", help="demo (samples/submitted twice), bench, or both")
    parser.add_argument("--submissions", type=int, default=1000, help="the bench class's size")
    parser.add_argument("--workers", type=int, default=default_workers(), help="default: the grader's own (cores + 1)")
    parser.add_argument("--dask", type=int, nargs="*", default=[1, 2], help="LocalCluster sizes (bench class)")
    parser.add_argument("--threads", type=int, default=0,
                        help="notebooks at a time per Dask worker (default: --workers split over the workers, rounded up)")
    parser.add_argument("--dask-demo", action="store_true", help="also grade the demo class on Dask")
    parser.add_argument("--baseline", default="27a44a0", help='revision to compare grades with ("" to skip)')
    parser.add_argument("--floor-sample", type=int, default=0, help="K > 0: K floor scripts per assignment, scaled")
    parser.add_argument("--quiet-wait", type=float, default=120, help="wait up to this long for a quiet machine")
    parser.add_argument("--keep", type=Path, help="work in this folder and keep it (default: a temporary one)")
    parser.add_argument("--dask-child", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--submitted", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.dask_child:
        return dask_child(args)
    classes = [c.strip() for c in args.classes.split(",") if c.strip()]
    if not classes or set(classes) - {"demo", "bench"}:
        parser.error("--classes: demo, bench or demo,bench")
    become_subreaper()
    commit = short("HEAD")
    print(f"date {time.strftime('%Y-%m-%d %H:%M %Z')}; commit {commit}; {os.cpu_count()} cores; grader workers "
          f"{args.workers}; load average at the start: {load()}", flush=True)
    base = (baseline_tree(args.baseline), short(args.baseline)) if args.baseline else None
    with contextlib.ExitStack() as stack:
        work = work_folder(stack, args.keep, "large-class-")
        for name in classes:
            submitted = work / name / "submitted"
            kinds = demo(submitted) if name == "demo" else build(Course.default(), submitted, args.submissions)
            grade_class(name, submitted, kinds, work / name, args, base)
    print(f"\nload average at the end: {load()}")


if __name__ == "__main__":
    main()
