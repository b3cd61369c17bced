"""Grades to the LMS: the course's totals as a learning management system's grade-import CSV (no network call).

Each learner's total per assignment is the one ``grades.csv`` holds (``total_score``: autograded points plus hand
grades, less the late penalty; ``manual_grades.current``), keyed by the roster's LMS ids. The roster is nbgrader's:
its ``Student`` rows (``id``, ``first_name``, ``last_name``, ``email``, ``lms_user_id``), read from nbgrader's
gradebook or from a CSV with those columns (what ``nbgrader db student import`` reads).

* **Canvas** (its Gradebook's Import): columns ``Student``, ``ID``, ``SIS User ID``, ``SIS Login ID``, ``Section``,
  then one per assignment, headed ``Name (canvas id)`` for an assignment Canvas has (``canvas_ids``) or a plain name,
  which Canvas imports as a new assignment; a second row ``Points Possible``, as Canvas's own export writes it.
  ``ID`` is the roster's ``lms_user_id`` (Canvas's user id); a learner without one gets no row (Canvas would match
  it by its name, which a learner's chosen id can copy).
* **Moodle** (Grades > Import > CSV file): ``First name``, ``Last name``, ``ID number`` (the ``lms_user_id``),
  ``Email address``, then one column per assignment; Moodle's import maps a column to its users and each grade
  column to a grade item.

Learners graded but not on the roster are not written; ``Export.not_on_roster`` names them (the command says so and
fails). A learner on the roster without a submission, or whose total is not known yet (hand grading pending, a
grader error), gets an empty cell: an LMS leaves an empty cell's grade as it was, where a 0 would claim a grade.
Every text cell goes through ``spreadsheet_cell``: a name that starts like a formula is shown, never run.
"""
from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field
from pathlib import Path

from grader.layout import ASSIGNMENTS
from grader.results import LatePenalty, NotebookResult
from grader.term.gradebook import atomic_write, spreadsheet_cell, total_score
from grader.submission.intake import shown_name

ROSTER_COLUMNS = ("id", "first_name", "last_name", "email", "lms_user_id")  # nbgrader's Student table
CANVAS_COLUMNS = ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")
MOODLE_COLUMNS = ("First name", "Last name", "ID number", "Email address")


@dataclass(frozen=True)
class Learner:
    id: str
    first_name: str = ""
    last_name: str = ""
    email: str = ""
    lms_user_id: str = ""


@dataclass
class Export:
    assignments: list[str]
    points_possible: dict[str, float]
    totals: dict[tuple[str, str], float | None]  # (student, assignment) -> total; None: not known yet
    roster: list[Learner]
    not_on_roster: list[str] = field(default_factory=list)  # graded learners the roster lacks
    without_lms_id: list[str] = field(default_factory=list)  # roster learners with no lms_user_id
    pending: list[tuple[str, str]] = field(default_factory=list)  # submitted, total not known yet


def roster_from_csv(path: Path) -> list[Learner]:
    """The roster in nbgrader's ``db student import`` form; raises ValueError naming what is wrong."""
    with path.open(newline="", encoding="utf-8-sig") as handle:
        reader = csv.DictReader(handle)
        names = [n.strip() for n in reader.fieldnames or []]
        if "id" not in names:
            raise ValueError(f"the roster {path} has no 'id' column (nbgrader's columns: {', '.join(ROSTER_COLUMNS)})")
        reader.fieldnames = names
        return [Learner(**{k: (row.get(k) or "").strip() for k in ROSTER_COLUMNS}) for row in reader
                if (row.get("id") or "").strip()]


def roster_from_gradebook(db_url: str) -> list[Learner]:
    """nbgrader's students (``nbgrader db student import`` wrote them)."""
    from nbgrader.api import Gradebook

    with Gradebook(db_url) as book:
        return [Learner(s.id, s.first_name or "", s.last_name or "", s.email or "", s.lms_user_id or "")
                for s in book.students]


def collect(results: list[NotebookResult], by_hand: dict, late: dict[tuple[str, str, str], LatePenalty],
            roster: list[Learner]) -> Export:
    """Each learner's total per assignment (summed over its notebooks), against the roster."""
    known = {r.assignment_id for r in results}
    assignments = [a for a in ASSIGNMENTS if a in known] + sorted(known - set(ASSIGNMENTS))
    points: dict[str, float] = {}
    totals: dict[tuple[str, str], float | None] = {}
    for r in results:
        key = (r.student_id, r.assignment_id, r.notebook)
        total = total_score(r, by_hand.get(key), late.get(key))
        points.setdefault(r.assignment_id, 0.0)
        pair = (r.student_id, r.assignment_id)
        if pair not in totals or totals[pair] is not None:
            totals[pair] = None if total is None else round((totals.get(pair) or 0.0) + total, 6)
    for a in assignments:  # every learner's notebook of an assignment has the same points
        first = next(r for r in results if r.assignment_id == a)
        points[a] = round(sum(r.max_score + r.manual_max_score for r in results
                              if r.assignment_id == a and r.student_id == first.student_id), 6)
    listed = {learner.id for learner in roster}
    return Export(assignments, points, totals, roster,
                  not_on_roster=sorted({s for s, _ in totals} - listed),
                  without_lms_id=[learner.id for learner in roster if not learner.lms_user_id],
                  pending=sorted(p for p, t in totals.items() if t is None and p[0] in listed))


def _number(value: float | None) -> str:
    return "" if value is None else f"{value:g}"


def _write(path: Path, rows: list[list[str]]) -> None:
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerows(rows)
    atomic_write(path, buffer.getvalue())


def write_canvas(export: Export, path: Path, canvas_ids: dict[str, str] | None = None) -> int:
    """Canvas's gradebook-import CSV; return how many learners it holds. A learner without an ``lms_user_id`` gets
    no row: Canvas matches a row whose ID is empty by its Student name, and a learner's id (which names the row
    when the roster has no name, as for the students ``grade --gradebook`` creates) can be a classmate's name."""
    canvas_ids = canvas_ids or {}
    cell = spreadsheet_cell
    heads = [f"{a} ({canvas_ids[a]})" if a in canvas_ids else a for a in export.assignments]
    rows = [list(CANVAS_COLUMNS) + [cell(h) for h in heads],
            ["    Points Possible", "", "", "", ""] + [_number(export.points_possible[a]) for a in export.assignments]]
    written = [learner for learner in export.roster if learner.lms_user_id]
    for learner in written:
        name = ", ".join(n for n in (learner.last_name, learner.first_name) if n) or learner.id
        rows.append([cell(name), cell(learner.lms_user_id), "", "", ""]
                    + [_number(export.totals.get((learner.id, a))) for a in export.assignments])
    _write(path, rows)
    return len(written)


def write_moodle(export: Export, path: Path) -> int:
    """Moodle's grade-import CSV (Grades > Import > CSV file)."""
    cell = spreadsheet_cell
    rows = [list(MOODLE_COLUMNS) + [cell(a) for a in export.assignments]]
    for learner in export.roster:
        rows.append([cell(learner.first_name or learner.id), cell(learner.last_name), cell(learner.lms_user_id),
                     cell(learner.email)] + [_number(export.totals.get((learner.id, a))) for a in export.assignments])
    _write(path, rows)
    return len(export.roster)


def problems(export: Export) -> list[str]:
    """What the instructor must know before importing, in plain words (learner ids shown safely)."""
    said = []
    if export.not_on_roster:
        names = ", ".join(repr(shown_name(s)) for s in export.not_on_roster)
        one = len(export.not_on_roster) == 1
        said.append(f"not exported: {names} {'has' if one else 'have'} graded work but {'is' if one else 'are'} not "
                    "on the roster; add them (nbgrader db student import ROSTER.csv, or the --roster CSV) and export "
                    "again")
    if export.without_lms_id:
        names = ", ".join(repr(shown_name(s)) for s in export.without_lms_id)
        said.append(f"no lms_user_id on the roster for {names}: not exported to Canvas (it would match a row without "
                    "an ID by its name, which a learner's id can copy); in Moodle's file their rows have no ID number")
    if export.pending:
        names = ", ".join(f"{shown_name(s)}/{shown_name(a)}" for s, a in export.pending)
        said.append(f"empty cells, the total is not known yet (hand grading pending or a grader error): {names}")
    return said


def export_command(out: Path, db_url: str | None, roster_csv: Path | None, canvas: Path | None, moodle: Path | None,
                   canvas_ids: list[str]) -> int:
    """``python -m grader export``: write the files asked for; say what the instructor must know; 1 when a graded
    learner is not on the roster, 2 when nothing could be written."""
    import sys

    from grader.nbgrader_adapter.manual_grades import current, default_db

    def fail(message: str) -> int:
        print(f"export: {message}", file=sys.stderr)
        return 2

    if not (canvas or moodle):
        return fail("give --canvas FILE and/or --moodle FILE")
    bad = [pair for pair in canvas_ids if not all(pair.partition("=")[::2])]
    if bad:
        return fail(f"--canvas-id takes ASSIGNMENT=ID (Canvas's assignment id), not {bad[0]!r}")
    db_url = db_url or default_db(out)
    if not roster_csv and not db_url:
        return fail("no roster: give --roster CSV (nbgrader's student columns) or --gradebook DB_URL")
    try:
        results, _, by_hand, late = current(out, db_url)
        roster = roster_from_csv(roster_csv) if roster_csv else roster_from_gradebook(db_url)
    except (ValueError, OSError) as error:
        return fail(str(error))
    export = collect(results, by_hand, late, roster)
    ids = dict(pair.partition("=")[::2] for pair in canvas_ids)
    for name, path in (("Canvas", canvas), ("Moodle", moodle)):
        if path:
            count = write_canvas(export, path, ids) if name == "Canvas" else write_moodle(export, path)
            print(f"{name}: {count} learners x {len(export.assignments)} assignments written to {path}")
    for problem in problems(export):
        print(f"export: {problem}", file=sys.stderr)
    return 1 if export.not_on_roster else 0
