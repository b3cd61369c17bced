"""A history of every grade: append-only, one file of JSON lines per learner and assignment.

``{out}/history/{student}/{assignment}.jsonl`` gets a line for each event that can change a grade, with when, by whom
(the Unix account of the process that saw it; a hand grade is formgrader's, seen when the gradebook was next read)
and why:

* ``attempt``: a submission the service decided: graded (its points and late penalty, whether it counts now), not
  graded because it was unreadable, over the limit, or the grader failed;
* ``hand_grade``: what happened to a hand grade when a new attempt was published (``answers.Change``: held out of a
  changed answer, restored for an answer graded before, to grade);
* ``accommodation``: a learner's own due date or extra graded attempts (``python -m grader extend``), and why;
* ``lms_post``: a grade passed back to the LMS (``grader.lms``): what was posted, to which line item, the HTTP status,
  ``outcome`` posted or refused (with the platform's message);
* ``total``: the notebook's total as the gradebook has it (autograded + by hand - late penalty), written whenever
  it differs from the last one, with the fields that changed. The last ``total`` line of a notebook is what
  ``grades.csv`` and the LMS export show, and ``recompute`` reads it back.

Lines are only ever appended (``O_APPEND``, flushed to disk), by the grading side alone: on the hub the output folder
is the course root, which belongs to the staff group that learners are not in; on one machine, where the learner is
the instructor's own account, it is as trustworthy as that account.
"""
from __future__ import annotations

import getpass
import json
import os
import sys
import time
from pathlib import Path

from grader.identifiers import escape_controls, learner_text
from grader.term.gradebook import path_part

FOLDER = "history"
TOTAL_FIELDS = ("autograded", "by_hand", "penalty", "total")


def _account() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return str(os.getuid())


def path(out: Path, student: str, assignment: str) -> Path:
    return out / FOLDER / path_part(student) / f"{path_part(assignment)}.jsonl"


def append(out: Path, student: str, assignment: str, event: str, why: str, *, sync: bool = True, **data) -> dict:
    """Append one event; returns it. ``sync``: on disk before returning (a decision); a ``total`` is derived from the
    gradebook and is written again by the next refresh if a crash loses it, so it skips the wait."""
    row = {"at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "by": _account(), "event": event,
           "student": student, "assignment": assignment, "why": why, **data}
    target = path(out, student, assignment)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(target, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o660)
    try:
        os.write(fd, (json.dumps(row, sort_keys=True) + "\n").encode("utf-8", "backslashreplace"))
        if sync:
            os.fsync(fd)
    finally:
        os.close(fd)
    return row


def read(out: Path, student: str, assignment: str | None = None) -> list[dict]:
    """The events of one learner (one assignment, or all), oldest first; a line cut short by a crash is skipped."""
    files = [path(out, student, assignment)] if assignment else sorted((out / FOLDER / path_part(student)).glob("*.jsonl"))
    events = []
    for file in files:
        try:
            lines = file.read_text(encoding="utf-8").splitlines()
        except OSError:
            continue
        for line in lines:
            try:
                row = json.loads(line)
            except ValueError:
                continue
            if isinstance(row, dict):
                events.append(row)
    return sorted(events, key=lambda e: str(e.get("at", "")))  # stable: equal times keep their order


def last_totals(events: list[dict]) -> dict[tuple[str, str], dict]:
    """(assignment, notebook) -> the last ``total`` event: the total the gradebook holds."""
    found = {}
    for event in events:
        if event.get("event") == "total":
            found[(event.get("assignment"), event.get("notebook"))] = event
    return found


def recompute(event: dict) -> float | None:
    """The total a ``total`` event stands for, from its parts (None while a hand grade is missing)."""
    if event.get("autograded") is None or (event.get("by_hand") is None and event.get("manual_max")):
        return None
    return round(event["autograded"] + (event.get("by_hand") or 0.0) - (event.get("penalty") or 0.0), 6)


def record_totals(out: Path, rows: list[dict]) -> int:
    """Append a ``total`` event for each row (``student``, ``assignment``, ``notebook`` and ``TOTAL_FIELDS``, with
    ``manual_max``) that differs from the last one of its notebook; the reason names what changed. Returns how many."""
    written = 0
    by_file: dict[tuple[str, str], dict] = {}
    for row in rows:
        key = (row["student"], row["assignment"])
        if key not in by_file:
            by_file[key] = last_totals(read(out, *key))
        before = by_file[key].get((row["assignment"], row["notebook"]))
        changed = [f for f in TOTAL_FIELDS if before is None or before.get(f) != row.get(f)]
        if not changed:
            continue
        why = "first graded" if before is None else "changed: " + ", ".join(
            f"{f} {shown(before.get(f))} -> {shown(row.get(f))}" for f in changed)
        data = {k: v for k, v in row.items() if k not in ("student", "assignment")}
        by_file[key][(row["assignment"], row["notebook"])] = append(out, row["student"], row["assignment"], "total",
                                                                    why, sync=False, **data)
        written += 1
    return written


def shown(value) -> str:
    return "none" if value is None else f"{value:g}" if isinstance(value, (int, float)) else str(value)


#: the start of an appeal request's reason in histories written before the reason had a field of its own
_OLD_REQUEST = "regrade request: "
_WORDS = ("at", "assignment", "event", "by", "number", "status", "cell", "what")


def describe(event: dict) -> str:
    """One line for ``python -m grader history``, whatever the event holds: every value on one line
    (``escape_controls``), the learner's own words quoted and marked (``learner_text``)."""
    def field(name: str) -> str:  # a missing word shows as "?", a missing number as "none"
        return escape_controls(shown(event.get(name, "?" if name in _WORDS else None)))

    head = f"{field('at')}  {field('assignment')}  {field('event'):<10} by {field('by')}"
    kind = event.get("event")
    if kind == "total":
        parts = f"{field('autograded')} autograded"
        if event.get("manual_max"):
            parts += f" + {field('by_hand')} by hand"
        if event.get("penalty"):
            parts += f" - {field('penalty')} late"
        body = f"{parts} = {field('total')}"
    elif kind == "attempt":
        body = f"attempt {field('number')}: {field('status')} {field('score')}/{field('max_score')}"
        if event.get("penalty"):
            body += f", {field('penalty')} late penalty"
        body += "; counts now" if event.get("counts") else ""
    elif kind == "hand_grade":
        body = f"cell {field('cell')}: {field('what')} ({field('score')} points)"
    elif kind == "lms_post":  # grader.lms: a grade passed back to the LMS (LTI 1.3 AGS), or refused by it
        grade = event.get("grade") if isinstance(event.get("grade"), dict) else {}
        given, most, progress = (escape_controls(shown(grade.get(k)))
                                 for k in ("scoreGiven", "scoreMaximum", "gradingProgress"))
        body = f"to the LMS: {given}/{most} {progress}, {field('outcome')} (HTTP {field('status')})"
    elif kind == "accommodation":  # grader.service.accommodations: a learner's own due date or extra attempts
        body = f"granted: {field('granted')}"
    else:
        body = ""
    why = str(event.get("why", ""))
    if "reason" in event:  # an appeal request: the learner's reason, kept whole in its own field
        why = f"{escape_controls(why)}: {learner_text(event['reason'])}"
    elif kind == "appeal" and why.startswith(_OLD_REQUEST):
        why = f"{_OLD_REQUEST}{learner_text(why[len(_OLD_REQUEST):])}"
    else:
        why = escape_controls(why)
    return f"{head}  {body}  ({why})"


def show(out: Path, student: str, assignment: str | None = None) -> int:
    """``python -m grader history``: every event, then the total each notebook counts for now; 1 when none."""
    events = read(out, student, assignment)
    if not events:
        print(f"history: nothing recorded for {student!r}" + (f" in {assignment!r}" if assignment else "")
              + f" under {out / FOLDER}", file=sys.stderr)
        return 1
    for event in events:
        print(describe(event))
    for (name, notebook), event in sorted(last_totals(events).items()):
        total = recompute(event)
        print(f"counts now: {escape_controls(shown(name))}/{escape_controls(shown(notebook))}: "
              + (f"{total:g}" if total is not None else "incomplete (a hand grade is missing)")
              + f" of {escape_controls(shown(event.get('max')))}")
    return 0


def add_commands(sub) -> None:
    """``python -m grader history STUDENT [ASSIGNMENT] [--out DIR]``."""
    hist = sub.add_parser("history", help="every grade event of a learner: attempts, hand grades, penalties, totals")
    hist.add_argument("student")
    hist.add_argument("assignment", nargs="?")
    hist.add_argument("--out", type=Path, default=Path("."), help="the grading output folder (default: .)")
    hist.set_defaults(run=lambda args: show(args.out, args.student, args.assignment))
