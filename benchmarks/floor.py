"""The floor of grading a class: for each submission, the instructor notebook of its assignment (solutions and
hidden tests) run as a plain Python script, a fresh interpreter each, two at a time over both cores.

    .venv/bin/python benchmarks/floor.py JOBS.json [--pool 2]   (the child ``large_class.py`` measures)

``JOBS.json`` lists ``[assignment, script]`` pairs; each script runs with the course's Python in a fresh empty
folder, ``--pool`` at once. At the end the child prints one line ``FLOOR-RESULT {json}`` with each script's own
wall seconds and CPU seconds (``wait4``). :func:`floor_run` converts the notebooks (nbconvert, once per
assignment), runs the child under ``measure.measured`` (wall time, cgroup CPU, memory) and, with ``sample`` > 0,
runs only ``sample`` scripts per assignment and scales their mean times by the class's count per assignment.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_setup import ASSIGNMENTS, environment, python
from measure import Run, measured, timed

MARK = "FLOOR-RESULT "


def class_counts(submitted: Path) -> dict[str, int]:
    """Submissions per assignment, by folder (``submitted/STUDENT/ASSIGNMENT/``): a broken submission whose
    notebook cannot be read counts as the assignment of its folder."""
    counts = {a: 0 for a in ASSIGNMENTS}
    for folder in submitted.glob("*/*"):
        if folder.is_dir():
            counts[folder.name] = counts.get(folder.name, 0) + 1
    return {a: n for a, n in counts.items() if n}


def scripts(course, assignments, folder: Path, log: Path) -> dict[str, Path]:
    """Each instructor notebook converted once to a plain script (``python -m nbconvert --to python``), beside its
    hidden cases (``rubric_cases.py``, which its hidden tests import; the script's folder is on its path)."""
    found = {}
    for assignment in assignments:
        out = folder / assignment
        out.mkdir(parents=True, exist_ok=True)
        timed([python(), "-m", "nbconvert", "--to", "python", str(course.source_notebook(assignment)),
               "--output-dir", str(out)], log, cwd=out)
        cases = course.source / assignment / "rubric_cases.py"
        if cases.is_file():
            shutil.copy(cases, out / cases.name)
        found[assignment] = out / f"{assignment}.py"
    return found


def floor_run(course, submitted: Path, work: Path, log: Path, sample: int = 0, pool: int = 2) -> tuple[Run, str]:
    """The floor of the class in ``submitted``: a Run (wall, CPU, memory) and a note saying how it was taken."""
    counts = class_counts(submitted)
    converted = scripts(course, counts, work / "scripts", log)
    jobs = [(a, str(converted[a])) for a, n in counts.items() for _ in range(min(n, sample) if sample else n)]
    (work / "jobs.json").write_text(json.dumps(jobs))
    run = Run(f"floor: plain scripts, {pool} at a time", pool)
    measured(run, "class", [python(), str(Path(__file__).resolve()), str(work / "jobs.json"), "--pool", str(pool)],
             log, cwd=work)
    line = [x for x in log.read_text().splitlines() if x.startswith(MARK)][-1]
    done = json.loads(line[len(MARK):])
    total = sum(counts.values())
    if not sample:
        return run, f"{total} scripts run, one per submission, {pool} at a time"
    ran = {a: [d for d in done if d["assignment"] == a] for a in counts}
    seconds = sum(sum(d["seconds"] for d in ran[a]) / len(ran[a]) * counts[a] for a in counts)
    cpu = sum(sum(d["cpu"] for d in ran[a]) / len(ran[a]) * counts[a] for a in counts)
    measured_wall = run.seconds["class"]
    run.name += " (SAMPLED)"
    run.seconds["class"], run.cpu["class"] = seconds / pool, cpu
    return run, (f"SAMPLED floor: {len(done)} scripts ({sample} per assignment, {pool} at a time, {measured_wall:.1f} s), "
                 f"each assignment's mean per-script wall and CPU times scaled to the class's "
                 + ", ".join(f"{n} {a}" for a, n in counts.items())
                 + f" and divided by {pool} cores; for quick runs only (--floor-sample 0 runs every submission)")


# ---------------------------------------------------------------- the child: the scripts, two at a time


def run_one(assignment: str, script: str) -> dict:
    folder = tempfile.mkdtemp(prefix="floor-")
    try:
        started = time.monotonic()
        env = {**environment(), "PYTHONPATH": str(Path(script).parent)}  # its hidden cases, beside it
        process = subprocess.Popen([python(), script], cwd=folder, env=env, stdin=subprocess.DEVNULL,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        errors = process.stderr.read()
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)
        seconds = time.monotonic() - started
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    if process.returncode != 0:
        raise RuntimeError(f"{script} failed ({process.returncode}): {errors.decode(errors='replace')[-2000:]}")
    return {"assignment": assignment, "seconds": seconds, "cpu": usage.ru_utime + usage.ru_stime}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("jobs", type=Path)
    parser.add_argument("--pool", type=int, default=2)
    args = parser.parse_args()
    todo = [tuple(job) for job in json.loads(args.jobs.read_text())]
    done, failures, lock = [], [], threading.Lock()

    def worker() -> None:
        while True:
            with lock:
                if not todo or failures:
                    return
                job = todo.pop(0)
            try:
                result = run_one(*job)
            except Exception as error:  # noqa: BLE001 - reported, and the run stops
                with lock:
                    failures.append(str(error))
                return
            with lock:
                done.append(result)

    threads = [threading.Thread(target=worker) for _ in range(args.pool)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if failures:
        print("\n".join(failures), file=sys.stderr)
        return 1
    print("\n" + MARK + json.dumps(done), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
