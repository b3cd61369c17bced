"""The class report of a class of 1,000 submissions: how long ``python -m grader report --html`` takes, how big it is.

    .venv/bin/python benchmarks/class_report.py [--from DIR] [--learners 1000]

Takes the graded notebooks of a grading output folder (``--from``, default the repository root after ``make demo``:
the demo class, solved, blank, the 4x step and wrong numbers), deals them out to ``--learners`` generated learners
(learner i gets the results of graded learner i mod n, under its own id, so every test's pass rate and every mistake
keeps the class's proportions), writes them as the grader's ``results/`` into a temporary folder, and times the whole
command as an instructor runs it (a fresh interpreter: Python, matplotlib and the gradebook table included).
Prints the wall time, the page's size and the CSV files' sizes.
"""
from __future__ import annotations

import argparse
import dataclasses
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from grader.term.gradebook import Gradebook  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--from", dest="source", type=Path, default=ROOT)
    parser.add_argument("--learners", type=int, default=1000)
    args = parser.parse_args()
    graded = Gradebook(args.source).all_results()
    if not graded:
        print(f"no graded results in {args.source / 'results'}: run `make demo` first, or give --from DIR")
        return 2
    by_learner: dict[str, list] = {}
    for result in graded:
        by_learner.setdefault(result.student_id, []).append(result)
    models = list(by_learner.values())
    with tempfile.TemporaryDirectory() as folder:
        out, submissions = Path(folder), 0
        book = Gradebook(out)
        for i in range(args.learners):
            for result in models[i % len(models)]:
                book.save(dataclasses.replace(result, student_id=f"learner{i:04d}"), None)
                submissions += 1
        started = time.perf_counter()
        subprocess.run([sys.executable, "-m", "grader", "report", "--out", str(out), "--html"], cwd=ROOT, check=True,
                       stdout=subprocess.DEVNULL)
        seconds = time.perf_counter() - started
        page = out / "class-report" / "index.html"
        csvs = {p.name: p.stat().st_size for p in sorted(page.parent.glob("*.csv"))}
        print(f"class of {args.learners} learners, {submissions} graded notebooks "
              f"(dealt from {len(models)} graded learners of {args.source})")
        print(f"report --html: {seconds:.2f} s wall (fresh interpreter, table and CSV included)")
        print(f"index.html: {page.stat().st_size / 1e6:.2f} MB; "
              + ", ".join(f"{name} {size / 1e6:.2f} MB" for name, size in csvs.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
