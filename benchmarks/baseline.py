"""Grades compared between two runs: an earlier revision's grader in a worktree of its own, and ``view``s.

:func:`baseline_tree` is ``evidence_cost.baseline_tree`` with a folder of its own (``build/large-class-baseline``
by default, so the two benchmarks never move each other's worktree): the revision's files and a copy of this
``.venv`` whose editable install points at them (so its kernels import its own ``coursekit``).
:func:`differences` compares two ``results.json`` notebook by notebook with ``same_grades.view`` (status, score,
max_score, message, flags, tampering, each test's points, passed and message); timings and the programs' random
inputs are not compared.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_setup import ROOT
from same_grades import view

TREE = ROOT / "build" / "large-class-baseline"


def baseline_tree(revision: str, tree: Path = TREE) -> Path:
    """``tree``: the revision's files and a venv whose editable install points at them."""
    if not (tree / ".git").exists():
        tree.parent.mkdir(exist_ok=True)
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(tree), revision], check=True)
    else:
        subprocess.run(["git", "-C", str(tree), "checkout", "--quiet", "--detach", revision], check=True)
    if not (tree / ".venv").exists():
        shutil.copytree(ROOT / ".venv", tree / ".venv", symlinks=True)
        subprocess.run([str(tree / ".venv" / "bin" / "python"), "-m", "pip", "install", "--quiet", "--no-deps",
                        "-e", str(tree)], check=True)
    return tree


def short(revision: str, tree: Path = ROOT) -> str:
    return subprocess.run(["git", "-C", str(tree), "rev-parse", "--short", revision], capture_output=True,
                          text=True).stdout.strip() or revision


def results(out: Path) -> dict[tuple[str, str], dict]:
    """``out/results.json`` keyed by (student, assignment)."""
    rows = json.loads((out / "results.json").read_text())
    rows = rows if isinstance(rows, list) else rows.get("results", rows)
    return {(r["student_id"], r["assignment_id"]): r for r in rows}


def differences(reference: Path, other: Path) -> tuple[list[str], int, int]:
    """Every difference between two results folders' ``view``s: (lines, notebooks that differ, notebooks)."""
    a, b = results(reference), results(other)
    lines, differ = [], 0
    for key in sorted(set(a) | set(b)):
        if key not in a or key not in b:
            lines.append(f"  {'/'.join(key)}: only in {'the second' if key not in a else 'the first'}")
            differ += 1
            continue
        va, vb = view(a[key]), view(b[key])
        fields = [f for f in sorted(set(va) | set(vb)) if va.get(f) != vb.get(f)]
        differ += bool(fields)
        for field in fields:
            if field == "tests":
                for test in sorted(set(va["tests"]) | set(vb["tests"])):
                    if va["tests"].get(test) != vb["tests"].get(test):
                        lines.append(f"  {'/'.join(key)} test {test}:\n    {va['tests'].get(test)}\n"
                                     f"    {vb['tests'].get(test)}")
            else:
                lines.append(f"  {'/'.join(key)} {field}:\n    {va.get(field)!r}\n    {vb.get(field)!r}")
    return lines, differ, len(set(a) | set(b))


def grade_view(result: dict) -> dict:
    """The grade alone: status, score, maximum and each test's points and pass/fail (no wording)."""
    return {"status": result.get("status"), "score": result.get("score"), "max_score": result.get("max_score"),
            "tests": {t["grade_id"]: (t.get("points"), t.get("passed")) for t in result.get("tests", [])}}


def compared(label: str, reference: Path, other: Path) -> tuple[int, int]:
    """Print ``label``'s comparison: the grades (status, score, each test's points and pass/fail), then every other
    difference (messages, flags), each with both versions (first: the reference); (grades that differ, n)."""
    a, b = results(reference), results(other)
    keys = set(a) | set(b)
    graded = sum(1 for k in keys if k not in a or k not in b or grade_view(a[k]) != grade_view(b[k]))
    lines, differ, count = differences(reference, other)
    print(f"{label}: grades {'identical' if not graded else 'DIFFER'} ({graded} of {count} differ); "
          f"wording or flags differ in {differ} of {count}")
    for line in lines:
        print(line)
    return graded, count
