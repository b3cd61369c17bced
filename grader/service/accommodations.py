"""Accommodations: a learner's own due date and extra graded attempts, granted with one command.

``python -m grader extend STUDENT ASSIGNMENT --until DATE | --hours N [--attempts N] --why TEXT``

* **The due date** is nbgrader's own: the learner's ``extension`` on their submission row in the gradebook (the
  field formgrader shows; nbgrader's ``SubmittedAssignment.duedate`` is the assignment's due date plus it). nbgrader
  can set it only on a row that exists (nbgrader #660); the row is made when it is missing, as ``autograde`` would
  make it, and the grader's own publishing updates that row, keeping the extension. ``--until`` is the learner's new
  due date; ``--hours`` is added to the class's. The late penalties, grades.csv, the feedback pages and the export
  are then computed again (``manual_grades.refreshed``), so a penalty taken before the extension is given back.
* **Extra attempts**: the service grades ``--attempts N`` more submissions in each window for this learner and
  assignment (``policy_for``), kept in ``{out}/service/accommodations.json`` (a record of the term: backed up).

Each grant is a line in the learner's history (``accommodation``: what, by whom, why). An unknown learner or
assignment, an assignment with no due date to extend, or a date that is not one is refused with exit status 2,
and nothing is written.

**The learner sees it before Submit**: the service's ``GET /duedates`` (``mine``) answers the asking account's own
due dates only (whose from ``identity``; the route takes no name), each course assignment's class due date and, where
this learner has an extension, their own; the learner's server passes it on (``grader.learner.duedates``) and the
Assignment List shows it under each assignment's name (``grader/course/labextension.py``).
"""
from __future__ import annotations

import dataclasses
import datetime
import json
import os
import sys
from pathlib import Path

from grader.term.attempts import Policy
from grader.term import history

FILE = Path("service") / "accommodations.json"


def read(out: Path) -> dict:
    """student -> assignment -> {"extra_attempts": N, ...}; {} when none were granted."""
    try:
        data = json.loads((out / FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def extra_attempts(out: Path, student: str, assignment: str) -> int:
    entry = read(out).get(student, {}).get(assignment, {})
    value = entry.get("extra_attempts", 0) if isinstance(entry, dict) else 0
    return value if isinstance(value, int) and value > 0 else 0


def policy_for(policy: Policy, out: Path, student: str, assignment: str) -> Policy:
    """The class's policy with this learner's extra attempts for this assignment."""
    extra = extra_attempts(out, student, assignment)
    if not extra or policy.graded_per_window is None:
        return policy
    return dataclasses.replace(policy, graded_per_window=policy.graded_per_window + extra)


def _write(out: Path, data: dict) -> None:
    target = out / FILE
    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = target.with_name(f".{target.name}.{os.getpid()}")
    temporary.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(temporary, target)


def _date(text: str) -> datetime.datetime:
    """A date as nbgrader takes due dates ("2026-12-20 17:00:00 UTC", ISO 8601), as naive UTC."""
    from nbgrader.utils import parse_utc

    try:
        when = parse_utc(text)
    except (ValueError, TypeError, OverflowError) as error:
        raise ValueError(f"--until {text!r} is not a date (write it as 2026-12-20 17:00 UTC): {error}") from None
    return when.replace(tzinfo=None) if when.tzinfo is None else \
        when.astimezone(datetime.timezone.utc).replace(tzinfo=None)


def _registered(db_url: str, assignment: str) -> None:
    """The course's assignment with its notebooks in the gradebook before any submission row is made for it: nbgrader
    refuses to record the notebooks of an assignment that has submissions (its generate step), so an extension
    granted before the first Submit would stop every later grade from being published."""
    import tempfile

    from nbgrader.api import Gradebook, MissingEntry

    from grader.course.generate import generate
    from grader.layout import Course

    course = Course.default()
    if assignment not in course.assignments():
        return
    with Gradebook(db_url) as book:
        try:
            if book.find_assignment(assignment).notebooks:
                return
        except MissingEntry:
            return  # refused below, by name
    with tempfile.TemporaryDirectory() as tmp:
        generate(course, [assignment], release=Path(tmp), db_url=db_url)


def grant(out: Path, db_url: str, student: str, assignment: str, *, until: str | None = None,
          hours: float | None = None, attempts: int | None = None, why: str = "") -> list[str]:
    """Grant the accommodation; what was granted, in words. Raises ValueError naming what is wrong."""
    from nbgrader.api import Gradebook, MissingEntry

    if until is None and hours is None and attempts is None:
        raise ValueError("say what to grant: --until DATE, --hours N and/or --attempts N")
    if attempts is not None and attempts < 0 or hours is not None and hours < 0:
        raise ValueError("--hours and --attempts are amounts to add, 0 or more")
    said = []
    _registered(db_url, assignment)
    with Gradebook(db_url) as book:
        try:
            book.find_student(student)
        except MissingEntry:
            raise ValueError(f"{student!r} is not a learner of this course's gradebook ({db_url}); enrol them first "
                             "(python -m grader roster, or nbgrader db student add)") from None
        try:
            due = book.find_assignment(assignment).duedate
        except MissingEntry:
            raise ValueError(f"{assignment!r} is not an assignment of this course's gradebook") from None
        if until is not None or hours is not None:
            if due is None:
                raise ValueError(f"{assignment} has no due date in the gradebook, so there is nothing to extend "
                                 "(set one: nbgrader db assignment add NAME --duedate=...)")
            extension = _date(until) - due if until is not None else datetime.timedelta(hours=hours)
            if extension < datetime.timedelta(0):
                raise ValueError(f"--until is before the class's due date ({due:%Y-%m-%d %H:%M} UTC)")
            with book.db.no_autoflush:
                book.update_or_create_submission(assignment, student, extension=extension)
            said.append(f"due {due + extension:%Y-%m-%d %H:%M} UTC for {student} (the class: {due:%Y-%m-%d %H:%M}"
                        f" UTC; nbgrader's extension {extension})")
    if attempts is not None:
        data = read(out)
        data.setdefault(student, {})[assignment] = {"extra_attempts": attempts, "why": why}
        _write(out, data)
        said.append(f"{attempts} extra graded attempt(s) in each window for {student}")
    history.append(out, student, assignment, "accommodation", why or "granted", granted="; ".join(said))
    return said


def shown(when: datetime.datetime) -> str:
    """A due date (naive UTC) as the learner reads it: "Sun 2026-12-20 17:00 UTC" (the feedback page's form)."""
    return f"{when:%a %Y-%m-%d %H:%M} UTC"


def due_dates(db_url: str | None, course_root: Path, assignments: list[str], student: str) -> dict[str, dict]:
    """assignment -> this learner's due date, as the late penalty will count it: the class's (nbgrader's gradebook,
    else ``c.Deadlines.duedates``) and, where ``student`` has an extension, theirs; ``said`` in words. Only
    ``student``'s own submission rows are read."""
    from grader.nbgrader_adapter.late import configured_due_dates, course_config

    configured = configured_due_dates(course_config(course_root))
    due = {a: configured.get(a) for a in assignments}
    extension: dict[str, datetime.timedelta] = {}
    sqlite = db_url[len("sqlite:///"):] if db_url and db_url.startswith("sqlite:///") else None
    if db_url and (sqlite is None or Path(sqlite).is_file()):  # never made by a reading (nbgrader would create it)
        from nbgrader.api import Gradebook, MissingEntry

        with Gradebook(db_url) as book:
            for assignment in assignments:
                try:
                    in_book = book.find_assignment(assignment).duedate
                except MissingEntry:
                    continue
                due[assignment] = in_book or due[assignment]
                try:  # nbgrader's own due date for the learner: the book's date plus their extension
                    granted = book.find_submission(assignment, student).extension if in_book else None
                except MissingEntry:
                    granted = None
                if granted and granted > datetime.timedelta(0):
                    extension[assignment] = granted
    found = {}
    for assignment in assignments:
        class_due = due[assignment]
        if class_due is None:
            found[assignment] = {"class_due": None, "due": None, "extended": False, "said": "No due date"}
            continue
        own = class_due + extension.get(assignment, datetime.timedelta(0))
        said = (f"Extended for you until {shown(own)} (the class's due date: {shown(class_due)})"
                if assignment in extension else f"Due {shown(class_due)}")
        found[assignment] = {"class_due": f"{class_due:%Y-%m-%dT%H:%M:%S}Z", "due": f"{own:%Y-%m-%dT%H:%M:%S}Z",
                             "extended": assignment in extension, "said": said}
    return found


def mine(service, uid: int) -> tuple[int, dict]:
    """``GET /duedates``: the due dates of the account that asks (``uid``, from ``identity``), never another's."""
    from grader.service.exchange import owner

    student = owner(uid)
    return 200, {"student": student, "assignments": due_dates(service.options.gradebook, service.course.root,
                                                              service.course.assignments(), student)}


def cmd_extend(args) -> int:
    from grader.layout import Course
    from grader.nbgrader_adapter.manual_grades import refreshed

    out = args.out.resolve()
    db_url = args.gradebook or f"sqlite:///{out / 'gradebook.db'}"
    try:
        said = grant(out, db_url, args.student, args.assignment, until=args.until, hours=args.hours,
                     attempts=args.attempts, why=args.why)
        if (out / "results").is_dir():  # penalties, totals and pages follow the new due date
            refreshed(out, db_url, Course.default().root)
    except ValueError as error:
        print(f"extend: {error}", file=sys.stderr)
        return 2
    for line in said:
        print(f"extend: {args.assignment}: {line}")
    return 0


def add_commands(sub) -> None:
    extend = sub.add_parser("extend", help="(instructor) a learner's own due date or extra graded attempts")
    extend.add_argument("student")
    extend.add_argument("assignment")
    when = extend.add_mutually_exclusive_group()
    when.add_argument("--until", metavar="DATE", help="the learner's due date (2026-12-20 17:00 UTC)")
    when.add_argument("--hours", type=float, help="hours added to the class's due date")
    extend.add_argument("--attempts", type=int, help="extra graded attempts in each window (the service's limit)")
    extend.add_argument("--why", default="", help="the reason, kept in the learner's history")
    extend.add_argument("--out", type=Path, default=Path("."), help="the grading output folder (default: .)")
    extend.add_argument("--gradebook", metavar="DB_URL", help="nbgrader database (default: OUT/gradebook.db)")
    extend.set_defaults(run=cmd_extend)
