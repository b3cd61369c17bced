"""Grade every scenario (samples, corpora, attacks) with two trees of this project and compare the results.

    .venv/bin/python benchmarks/same_grades.py BEFORE_TREE [AFTER_TREE] [--only 'corpus/*/*'] [--exclude '*/*/redteam-*']

For a change that must not change any grade (moving modules, splitting a rubric): each tree builds the scenario
submissions with its own code and grades them with its own ``.venv`` (``python -m grader grade``); then every
notebook's status, score, message and per-test outcome and message are compared, and every difference printed.
AFTER_TREE defaults to this checkout. Exit status 1 if anything differs. ``--cpu`` (as root) also runs each tree's
grading in a fresh cgroup (``cgroup_cpu.py``: sealed kernels included) and prints each tree's CPU seconds per
notebook and their ratio, measured side by side on the same scenarios in one run (wall times are not compared).
``--before-results FILE`` keeps BEFORE_TREE's results in FILE (graded once, read again by later comparisons with
the same scenarios: a series of changes checked against one starting point).
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BUILD = r"""
import fnmatch, sys
from pathlib import Path
sys.path.insert(0, "tests")
from conftest import all_cases
try:
    from grader.course.variants import write_submission
except ImportError:  # a tree from before grader/ was grouped in packages
    from grader.variants import write_submission
from grader.layout import Course
course, out, patterns = Course.default(), Path(sys.argv[1]), sys.argv[2:]
only = [p for p in patterns if not p.startswith("!")]
skip = [p[1:] for p in patterns if p.startswith("!")]
for case in all_cases():
    if "requires" in case.scenario.headers or (only and not any(fnmatch.fnmatchcase(case.id, p) for p in only)):
        continue
    if any(fnmatch.fnmatchcase(case.id, p) for p in skip):
        continue
    write_submission(course, case.assignment, case.scenario, out, case.student)
"""
KEPT = ("status", "score", "max_score", "message", "flags", "tampering")


def grade(tree: Path, work: Path, only: list[str], workers: int, cpu: dict | None = None) -> dict:
    """Each result of ``tree``'s grading, by (student, assignment); ``cpu``: filled with the grading's CPU seconds
    (the command run in a fresh cgroup by ``cgroup_cpu.py``)."""
    python = str(tree / ".venv" / "bin" / "python")
    submitted, out = work / "submitted", work / "out"
    subprocess.run([python, "-c", BUILD, str(submitted), *only], cwd=tree, check=True)
    command = [python, "-m", "grader", "grade", "--submissions", str(submitted), "--out", str(out), "--force"]
    if workers:
        command += ["--workers", str(workers)]
    if cpu is None:
        subprocess.run(command, cwd=tree, check=True, stdout=subprocess.DEVNULL)
    else:
        shown = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "cgroup_cpu.py"), "--", *command], cwd=tree,
                               check=True, stdout=subprocess.PIPE, text=True).stdout
        cpu.update(json.loads([line for line in shown.splitlines() if line.startswith('{"wall_s"')][-1]))
    results = json.loads((out / "results.json").read_text())
    rows = results if isinstance(results, list) else results.get("results", results)
    return {(r["student_id"], r["assignment_id"]): r for r in rows}


def view(result: dict) -> dict:
    kept = {key: result.get(key) for key in KEPT}
    kept["tests"] = {t["grade_id"]: (t.get("points"), t.get("passed"), t.get("message")) for t in result.get("tests", [])}
    return kept


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path, nargs="?", default=ROOT)
    parser.add_argument("--only", nargs="*", default=[], help="scenario id patterns (group/assignment/name)")
    parser.add_argument("--exclude", nargs="*", default=[], help="scenario id patterns to leave out")
    parser.add_argument("--workers", type=int, default=0)
    parser.add_argument("--before-results", type=Path, help="BEFORE_TREE's results, kept here and read again")
    parser.add_argument("--cpu", action="store_true", help="also measure each tree's grading CPU in a cgroup (root)")
    args = parser.parse_args()
    cpu_before, cpu_after = ({}, {}) if args.cpu else (None, None)
    with tempfile.TemporaryDirectory(prefix="same-grades-") as scratch:
        patterns = args.only + [f"!{p}" for p in args.exclude]
        kept = args.before_results
        if kept and kept.is_file() and json.loads(kept.read_text()).get("patterns") == patterns \
                and (not args.cpu or json.loads(kept.read_text()).get("cpu")):
            saved = json.loads(kept.read_text())
            before = {tuple(key.split("/", 1)): row for key, row in saved["results"].items()}
            if args.cpu:
                cpu_before.update(saved["cpu"])
        else:
            before = grade(args.before.resolve(), Path(scratch) / "before", patterns, args.workers, cpu_before)
            if kept:
                kept.write_text(json.dumps({"patterns": patterns, "cpu": cpu_before,
                                            "results": {"/".join(key): row for key, row in before.items()}}))
        after = grade(args.after.resolve(), Path(scratch) / "after", patterns, args.workers, cpu_after)
    differences = 0
    for key in sorted(set(before) | set(after)):
        if key not in before or key not in after:
            print(f"{key}: only in {'after' if key not in before else 'before'}")
            differences += 1
            continue
        a, b = view(before[key]), view(after[key])
        for field in sorted(set(a) | set(b)):
            if a.get(field) != b.get(field):
                print(f"{key} {field}:\n  before: {a.get(field)}\n  after:  {b.get(field)}")
                differences += 1
    print(f"{len(after)} notebooks graded by both trees; {differences} difference(s)")
    if args.cpu:
        per = [round(side["cpu_s"] / max(len(results), 1), 3) for side, results in ((cpu_before, before),
                                                                                     (cpu_after, after))]
        print(f"CPU per notebook (cgroup, sealed kernels included): before {per[0]} s, after {per[1]} s, "
              f"after/before {per[1] / per[0]:.3f}")
    return 1 if differences else 0


if __name__ == "__main__":
    sys.exit(main())
