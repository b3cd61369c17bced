"""What stronger evidence costs: this tree's grader against an earlier revision's, on the same class, in one run.

    .venv/bin/python benchmarks/evidence_cost.py [--baseline 0329c31] [--students 10] [--repeats 2]

Issue 11 allows grading time per notebook to grow by at most 25 % for its evidence (sub-meshes in every
default run, programs exported and run outside the kernel, hooks reset before test cells). This script
checks out ``--baseline`` (default: 0329c31, sealed kernels with the hidden tests before issue 11) into
``build/evidence-baseline`` with a copy of this virtual environment (so its kernels import its own
``coursekit``), builds the benchmark's class (``grading_throughput.build_class``) for each tree from its
own scenarios, and grades it with ``python -m grader grade --workers W`` alternately (baseline, this
tree, baseline, ...), ``--repeats`` times each. It prints each wall time and the ratio of the medians.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))

from baseline import baseline_tree as worktree  # noqa: E402
from measure import grading_seconds  # noqa: E402


def baseline_tree(revision: str) -> Path:
    """``build/evidence-baseline``: the revision's files and a venv whose editable install points at them."""
    return worktree(revision, ROOT / "build" / "evidence-baseline")


def build(tree: Path, submitted: Path, students: int) -> None:
    """The benchmark's class, built by ``tree``'s own code from ``tree``'s scenarios."""
    code = ("import sys; sys.path.insert(0, 'benchmarks'); from pathlib import Path\n"
            "try:\n    from class_scores import build_class\n"
            "except ImportError:  # a tree from before the benchmarks were split\n"
            "    from grading_throughput import build_class\n"
            "from grader.layout import Course\n"
            f"build_class(Course.default(), Path({str(submitted)!r}), {students})")
    subprocess.run([str(tree / ".venv" / "bin" / "python"), "-c", code], cwd=tree, check=True)


def grade(tree: Path, submitted: Path, out: Path, workers: int, log: Path) -> float:
    shutil.rmtree(out, ignore_errors=True)
    started = time.monotonic()
    with log.open("w") as handle:
        subprocess.run([str(tree / ".venv" / "bin" / "python"), "-m", "grader", "grade", "--submissions",
                        str(submitted), "--out", str(out), "--workers", str(workers), "--force"],
                       cwd=tree, stdout=handle, stderr=subprocess.STDOUT, check=True)
    reported = grading_seconds(log)
    return reported if reported == reported else time.monotonic() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", default="0329c31")
    parser.add_argument("--students", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    args = parser.parse_args()
    trees = {"baseline": baseline_tree(args.baseline), "this tree": ROOT}
    work = Path(tempfile.mkdtemp(prefix="evidence-cost-", dir=ROOT / "build"))
    times: dict[str, list[float]] = {name: [] for name in trees}
    for name, tree in trees.items():
        build(tree, work / name / "submitted", args.students)
    count = 3 * args.students
    for repeat in range(args.repeats):
        for name, tree in trees.items():
            seconds = grade(tree, work / name / "submitted", work / name / "out", args.workers,
                            work / f"{name}-{repeat}.log")
            times[name].append(seconds)
            print(f"{name}: {seconds:.1f} s for {count} notebooks ({seconds / count:.2f} s each)", flush=True)
    base, ours = (statistics.median(times[name]) for name in trees)
    revision = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True).stdout.strip()
    print(f"median per notebook: baseline {args.baseline} {base / count:.2f} s, this tree ({revision}) "
          f"{ours / count:.2f} s; ratio {ours / base:.2f} (issue 11 allows at most 1.25)")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
