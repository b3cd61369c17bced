"""The outbox: what the LMS should hold, derived from the term's grade history, and what it does not hold yet.

The history (``grader.term.history``) already has a ``total`` line for every change of a notebook's total
(Submit, a hand grade, an appeal answered, a regrade, a late penalty). An assignment's grade for the LMS is the sum of
its notebooks' last totals; it is **pending** while the last ``lms_post`` line of the same history file does not hold
that grade. So nothing is queued twice and nothing can be lost: a crash between a post and its ``lms_post`` line posts
the same score again (with the same timestamp: the LMS keeps one), and only the newest grade is ever posted.

* A notebook whose hand grade is missing counts its autograded points (less the late penalty), posted with
  ``gradingProgress`` ``PendingManual`` and ``activityProgress`` ``Submitted``; never as a final grade.
* The score's ``timestamp`` is the newest ``total`` line's time, its line number in the file as milliseconds, so two
  totals within one second still go in order; the LMS refuses a score older than the one it holds (AGS 2.0).
* Failures that pass (the LMS unreachable, 5xx, 429, its token endpoint refusing) leave the grade pending with a back-off
  in ``{out}/lms/state.json`` (next try, attempts, last error); a 4xx refusal of a score is an ``lms_post`` line with
  the platform's message, shown by ``status`` and tried again only when the grade changes or on ``sync --retry``.
"""
from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

from grader.term import history
from grader.term.gradebook import atomic_write

FOLDER = "lms"
STATE = "state.json"
FIRST_DELAY, MOST_DELAY = 30.0, 3600.0  # seconds: doubled at each failure in a row, up to an hour


@dataclass
class Grade:
    """One learner's assignment as the LMS should hold it."""
    student: str
    assignment: str
    given: float | None  # scoreGiven; None while nothing can be posted (``waiting`` says why)
    maximum: float
    progress: str  # gradingProgress: FullyGraded, or PendingManual while a hand grade is missing
    timestamp: str
    parts: str  # "11 autograded + 1.5 by hand - 0 late", for the comment and status
    waiting: str = ""
    last_post: dict | None = None  # the last lms_post line of its history

    @property
    def key(self) -> str:
        return json.dumps([self.student, self.assignment])

    @property
    def activity(self) -> str:
        return "Completed" if self.progress == "FullyGraded" else "Submitted"

    def wanted(self) -> dict:
        """What identifies this grade in an ``lms_post`` line: posted once, never again unless it changes."""
        return {"scoreGiven": self.given, "scoreMaximum": self.maximum, "gradingProgress": self.progress,
                "timestamp": self.timestamp}

    @property
    def posted(self) -> bool:
        last = self.last_post or {}
        return last.get("outcome") == "posted" and last.get("grade") == self.wanted()

    @property
    def refused(self) -> bool:
        last = self.last_post or {}
        return last.get("outcome") == "refused" and last.get("grade") == self.wanted()


def _number(value) -> str:
    return history.shown(round(value, 6) if isinstance(value, float) else value)


def _timestamp(at: str, line: int) -> str:
    """``2026-05-01T10:00:00Z`` and the event's line -> ``2026-05-01T10:00:00.007+00:00`` (ISO 8601, sub-second)."""
    return f"{at.rstrip('Z')}.{line % 1000:03d}+00:00"


def grade_of(student: str, assignment: str, events: list[dict]) -> Grade | None:
    """The grade the history ``events`` of one assignment stand for (None before its first total)."""
    newest, totals = -1, {}
    last_post = None
    for line, event in enumerate(events):
        if event.get("event") == "total":
            totals[event.get("notebook")] = event
            newest = line
        elif event.get("event") == "lms_post":
            last_post = event
    if not totals:
        return None
    given, maximum, pending, waiting = 0.0, 0.0, False, []
    autograded = by_hand = penalty = 0.0
    for notebook, event in sorted(totals.items(), key=lambda kv: str(kv[0])):
        maximum += float(event.get("max") or 0.0)
        if event.get("autograded") is None:
            waiting.append(f"{notebook} has no autograded score ({event.get('status') or 'not graded'})")
            continue
        autograded += event["autograded"]
        penalty += event.get("penalty") or 0.0
        if event.get("by_hand") is None and event.get("manual_max"):
            pending = True
        else:
            by_hand += event.get("by_hand") or 0.0
    given = max(0.0, round(autograded + by_hand - penalty, 6))
    parts = f"{_number(autograded)} autograded + {_number(by_hand)} by hand" + (" (still to grade)" if pending else "")
    parts += f" - {_number(penalty)} late" if penalty else ""
    return Grade(student, assignment, None if waiting else given, round(maximum, 6),
                 "PendingManual" if pending else "FullyGraded", _timestamp(events[newest]["at"], newest), parts,
                 "; ".join(waiting), last_post)


def grades(out: Path) -> list[Grade]:
    """Every learner's assignment that has a total, from ``{out}/history``, sorted by learner and assignment."""
    found = []
    for file in sorted((out / history.FOLDER).glob("*/*.jsonl")):
        if file.is_symlink() or file.parent.is_symlink():
            continue
        try:
            with file.open(encoding="utf-8") as handle:
                first = json.loads(handle.readline())
            student, assignment = str(first["student"]), str(first["assignment"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if history.path(out, student, assignment) != file:
            continue  # a file that is not where its own learner's history would be: not one of ours
        grade = grade_of(student, assignment, history.read(out, student, assignment))
        if grade is not None:
            found.append(grade)
    return sorted(found, key=lambda g: (g.student, g.assignment))


# -- back-off, kept beside the history: {out}/lms/state.json --------------------------------------------------------

def load_state(out: Path) -> dict:
    try:
        state = json.loads((out / FOLDER / STATE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        state = {}
    state = state if isinstance(state, dict) else {}
    for part in ("posts", "lineitems"):
        state[part] = state.get(part) if isinstance(state.get(part), dict) else {}
    return state


def save_state(out: Path, state: dict) -> None:
    atomic_write(out / FOLDER / STATE, json.dumps(state, indent=1, sort_keys=True))


def delay(attempts: int, retry_after: float | None = None) -> float:
    """Seconds to wait after ``attempts`` failures in a row: 30 s doubled each time, at most an hour; a 429's
    ``Retry-After`` when it asks for longer."""
    wait = min(MOST_DELAY, FIRST_DELAY * 2 ** max(0, attempts - 1))
    return max(wait, min(retry_after or 0.0, 24 * 3600.0))


def failed(entry: dict | None, error: str, now: float, retry_after: float | None = None) -> dict:
    """The back-off entry after one more failure."""
    entry = dict(entry or {})
    entry["attempts"] = int(entry.get("attempts", 0)) + 1
    entry.setdefault("since", time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now)))
    entry["last_error"] = error
    entry["next_try"] = now + delay(entry["attempts"], retry_after)
    return entry


def when(epoch: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))


def why_pending(grade: Grade, users: dict[str, str], state: dict, now: float) -> str | None:
    """Why ``grade`` is not in the LMS yet (None when it is)."""
    if grade.posted:
        return None
    if grade.waiting:
        return f"nothing to post yet: {grade.waiting}"
    if not users.get(grade.student):
        return "no LMS user id (add it to nbgrader's students or the users file)"
    if grade.refused:
        last = grade.last_post or {}
        return f"refused by the LMS (HTTP {last.get('status')}): {last.get('message', '')}; sync --retry tries again"
    for entry, whose in ((state.get("platform"), "the LMS"), (state["posts"].get(grade.key), "this post")):
        if entry:
            return (f"{whose} failed {entry.get('attempts')} time(s) since {entry.get('since')}: "
                    f"{entry.get('last_error')}; next try at {when(entry.get('next_try', now))}")
    return "not posted yet"


@contextlib.contextmanager
def locked(out: Path, wait: bool = True):
    """One sync at a time per output folder (the service's loop and an instructor's ``lms sync``); yields False
    when ``wait`` is off and another holds it."""
    folder = out / FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    fd = os.open(folder / ".lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o660)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            yield False
            return
        yield True
    finally:
        os.close(fd)
