"""Which files of a grading output folder (``--out``) are a term's records, and which are only made again.

A term's grades depend on more than ``grades.csv``: the attempts the service kept and its ledger of which counts
(``service/``), each attempt's per-test results (``results/``), the graded notebooks (``autograded/``), the feedback
pages learners fetched (``feedback/``), nbgrader's database (hand grades, due dates, extensions, the roster:
``gradebook.db``), the hand-grade records that tie a hand grade to the answer it graded (``hand-grades/``), the
regrade requests and their answers (``appeals/``) and the history behind every number (``history/``). All of them
are records: nothing the course runs deletes them. What ``make demo`` only makes again from those (``class-report/``,
the compile cache) is not.
"""
from __future__ import annotations

import os
from pathlib import Path

GRADEBOOK = "gradebook.db"
MARK = "TERM.json"  # the folder's term mark (grader.term.guard)
#: every record of a term, relative to its folder (folders end with "/"); ``backup`` covers exactly these
RECORDS = ("service/", "results/", "autograded/", "feedback/", "hand-grades/", "appeals/", "history/", GRADEBOOK,
           "grades.csv", "results.json", "submitted/", MARK)
#: what the demo's ``make clean-grading`` may remove in a folder that is not a term's: it is made again by grading
DEMO_OUTPUT = ("autograded/", "feedback/", "results/", "grades.csv", "results.json", ".compile-cache/",
               "class-report/")


def present(out: Path, names: tuple[str, ...] = RECORDS) -> list[str]:
    """The entries of ``names`` that exist in ``out`` (as themselves, never through a link)."""
    return [name for name in names if (out / name.rstrip("/")).exists() or (out / name.rstrip("/")).is_symlink()]


def files(out: Path) -> list[str]:
    """Every record file under ``out``, relative and sorted; links and anything not a plain file are left out."""
    found = []
    for name in present(out):
        path = out / name.rstrip("/")
        if path.is_symlink():
            continue
        if path.is_file():
            found.append(name)
        elif path.is_dir():
            for folder, _, names in os.walk(path):  # never into a linked folder
                found += [os.path.relpath(os.path.join(folder, n), out) for n in names
                          if os.path.isfile(os.path.join(folder, n)) and not os.path.islink(os.path.join(folder, n))]
    return sorted(found)


def learners(out: Path) -> set[str]:
    """The learners a folder holds records of (their history and results folders' names)."""
    names = set()
    for folder in ("history", "results", "autograded", "appeals"):
        place = out / folder
        if place.is_dir():
            names |= {p.stem if p.is_file() else p.name for p in place.iterdir()}
    return names
