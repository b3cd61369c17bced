"""Due dates and late penalties, as nbgrader keeps and applies them.

* **Due dates** are nbgrader's: the assignment's ``duedate`` in nbgrader's gradebook (``nbgrader db assignment add A
  --duedate="2026-12-01 12:00:00 UTC"``, or formgrader's Manage Assignments), with the learner's extension if one was
  given (``SubmittedAssignment.duedate``). nbgrader 0.9 has no setting that declares due dates in
  ``nbgrader_config.py``, so the course adds one, ``c.Deadlines.duedates = {"sharded_step": "2026-12-01 12:00:00
  UTC"}``, for grading without a gradebook; a due date in the gradebook wins over it.
* **The penalty** is nbgrader's own ``AssignLatePenalties.plugin_class`` (a ``LateSubmissionPlugin``), read from the
  course's ``nbgrader_config.py`` through traitlets, as nbgrader's commands read it: the stock plugin's
  ``penalty_method = 'none'`` or ``'zero'``, or the course's ``PerDayPenalty`` (below). There is no second copy of
  the settings: ``c.PerDayPenalty.percent_per_day = 20`` in ``nbgrader_config.py`` is what the grader applies.
* **What it is taken from**: the points the notebook earned, autograded plus hand-graded once every answer is graded
  (``earned``), so it is computed again whenever a hand grade arrives (``manual_grades.refresh``), and clamped to
  ``[0, earned]`` as nbgrader's ``AssignLatePenalties`` does.
"""
from __future__ import annotations

import datetime
import math
from pathlib import Path

from nbgrader.plugins import LateSubmissionPlugin
from traitlets import Dict, Enum, Float, Unicode
from traitlets.config import Config, Configurable

from grader.results import LatePenalty, NotebookResult
from grader.submission import timestamps

DAY_S = 86400.0


class PerDayPenalty(LateSubmissionPlugin):
    """The course's late policy: ``percent_per_day`` of the earned points for each started day after the due date
    and ``grace_minutes``, at most ``max_percent``.

    The defaults, 10 % a day after 15 minutes of grace, capped at 100 %: a day late costs a tenth, so a learner
    who is stuck still gains by finishing, and ten days late is worth nothing; the grace absorbs a slow upload or a
    clock a few minutes off, never a day's work. ``penalty_method = 'none'`` or ``'zero'`` keep nbgrader's own
    methods."""

    penalty_method = Enum(("none", "zero", "per_day"), default_value="per_day",
                          help="'per_day': the percentage per started day; 'none', 'zero': nbgrader's").tag(config=True)
    percent_per_day = Float(10.0, help="percent of the earned points taken off per started day late").tag(config=True)
    grace_minutes = Float(15.0, help="minutes after the due date that are not late").tag(config=True)
    max_percent = Float(100.0, help="the most, in percent of the earned points, ever taken off").tag(config=True)

    def days_late(self, total_seconds_late: float) -> int:
        """Started days after the due date and the grace (0 within the grace)."""
        beyond = total_seconds_late - self.grace_minutes * 60
        return math.ceil(beyond / DAY_S) if beyond > 0 else 0

    def percent(self, total_seconds_late: float) -> float:
        return max(0.0, min(self.max_percent, self.percent_per_day * self.days_late(total_seconds_late)))

    def late_submission_penalty(self, student_id: str, score: float, total_seconds_late: float):
        if self.penalty_method != "per_day":
            return super().late_submission_penalty(student_id, score, total_seconds_late)
        return round(score * self.percent(total_seconds_late) / 100.0, 6)


class Deadlines(Configurable):
    """Due dates declared in ``nbgrader_config.py`` (nbgrader 0.9 has no such setting); the gradebook's win."""

    duedates = Dict(value_trait=Unicode(), help="assignment -> due date, in nbgrader's form "
                    "('2026-12-01 12:00:00 UTC'); a due date in nbgrader's gradebook wins").tag(config=True)


def course_config(root: Path) -> Config:
    """The course root's ``nbgrader_config.py`` (what nbgrader's commands read when run there), through traitlets."""
    from traitlets.config.loader import PyFileConfigLoader

    if not (root / "nbgrader_config.py").is_file():
        return Config()
    return PyFileConfigLoader("nbgrader_config.py", path=str(root)).load_config()


def plugin(config: Config) -> LateSubmissionPlugin:
    """nbgrader's late-penalty plugin as ``AssignLatePenalties`` would make it from ``config``."""
    from nbgrader.preprocessors import AssignLatePenalties

    step = AssignLatePenalties(config=config)
    return step.plugin_class(parent=step)


def _utc(text: str, what: str) -> datetime.datetime:
    from nbgrader.utils import parse_utc

    try:
        return parse_utc(text)
    except (ValueError, OverflowError, TypeError) as error:
        raise ValueError(f"the due date of {what}, {text!r}, is not a date and time ({error})") from None


def configured_due_dates(config: Config) -> dict[str, datetime.datetime]:
    """``c.Deadlines.duedates``: assignment -> due date (naive UTC); raises ValueError naming a bad one."""
    return {a: _utc(text, a) for a, text in Deadlines(config=config).duedates.items()}


def gradebook_due_dates(db_url: str | None, keys) -> dict[tuple[str, str], datetime.datetime]:
    """(student, assignment) -> the due date nbgrader's gradebook holds, with the learner's extension, where it has one."""
    found: dict[tuple[str, str], datetime.datetime] = {}
    if not db_url:
        return found
    from nbgrader.api import Gradebook, MissingEntry

    with Gradebook(db_url) as book:
        for student, assignment in sorted(set(keys)):
            try:
                due = book.find_submission(assignment, student).duedate
            except MissingEntry:
                try:
                    due = book.find_assignment(assignment).duedate
                except MissingEntry:
                    due = None
            if due is not None:
                found[(student, assignment)] = due
    return found


def duration(seconds: float) -> str:
    """'1 day 3 hours', '5 minutes': the two largest units."""
    minutes = int(seconds // 60)
    units = [(minutes // 1440, "day"), (minutes % 1440 // 60, "hour"), (minutes % 60, "minute")]
    words = [f"{n} {unit}{'s' if n != 1 else ''}" for n, unit in units if n]
    return " ".join(words[:2]) if words else "less than a minute"


def _points(value: float) -> str:
    return f"{round(value, 6):g}"


def assess(policy: LateSubmissionPlugin, student: str, earned: float, due: datetime.datetime,
           submitted: datetime.datetime | None, note: str = "") -> LatePenalty:
    """The penalty ``policy`` gives a notebook that earned ``earned`` points, submitted at ``submitted`` (naive UTC;
    None: unknown, from a result graded before unusable times counted as the grading time), due at ``due``; ``note``
    says why the learner's own time was not used."""
    shown_due = f"{due:%Y-%m-%d %H:%M} UTC"
    if submitted is None:
        return LatePenalty(0.0, earned, 0.0, shown_due, f"The due date was {shown_due}, and the time of this "
                           f"submission is unknown ({note or 'no timestamp.txt'}): no late penalty was decided; your "
                           "instructor will check when it was submitted.")
    late = max(0.0, (submitted - due).total_seconds())  # nbgrader's SubmittedAssignment.total_seconds_late
    # the learner's own time was unusable: the time the grader (or the service) saw the submission counted
    why_this_time = f"{note[:1].upper()}{note[1:]}. " if note else ""
    if late <= 0:
        return LatePenalty(0.0, earned, 0.0, shown_due, f"{why_this_time}Submitted on time (due {shown_due}).")
    said = f"{why_this_time}Submitted {duration(late)} after the due date ({shown_due})"
    penalty = policy.late_submission_penalty(student, earned, late) if earned > 0 else 0.0
    penalty = min(max(0.0, float(penalty or 0.0)), earned)  # as nbgrader's AssignLatePenalties clamps it
    grace = getattr(policy, "grace_minutes", 0.0) if getattr(policy, "penalty_method", "") == "per_day" else 0.0
    if penalty <= 0:
        if grace and late <= grace * 60:
            why = f"within the course's {grace:g} minutes of grace: no points are taken off."
        elif earned <= 0:
            why = "no points were earned, so none are taken off."
        else:
            why = "the course's late policy takes no points off."
        return LatePenalty(0.0, earned, late, shown_due, f"{said}, {why}")
    percent = round(100.0 * penalty / earned, 2)
    return LatePenalty(round(penalty, 6), earned, late, shown_due,
                       f"{said}: {percent:g}% of your earned points ({_points(penalty)} of {_points(earned)}) "
                       f"{'is' if percent < 100 else 'are'} taken off.")


def penalties(results: list[NotebookResult], manual: dict, db_url: str | None,
              root: Path) -> dict[tuple[str, str, str], LatePenalty]:
    """(student, assignment, notebook) -> the late penalty of each result with a due date (none: not in the map).

    ``manual``: (student, assignment, notebook) -> points graded by hand, None while some are still to grade."""
    config = course_config(root)
    configured = configured_due_dates(config)
    policy = plugin(config)
    scored = [r for r in results if r.reported_score is not None]
    from_book = gradebook_due_dates(db_url, [(r.student_id, r.assignment_id) for r in scored])
    found = {}
    for r in scored:
        due = from_book.get((r.student_id, r.assignment_id)) or configured.get(r.assignment_id)
        if due is None:
            continue
        key = (r.student_id, r.assignment_id, r.notebook)
        earned = round(r.reported_score + (manual.get(key) or 0.0), 6)
        submitted, note = None, r.submitted_note
        if r.submitted_at:
            try:
                submitted = timestamps.parse(r.submitted_at, datetime.datetime.max)
            except timestamps.BadTimestamp as bad:
                note = str(bad)
        found[key] = assess(policy, r.student_id, earned, due, submitted, note)
    return found


def store(db_url: str, late: dict[tuple[str, str, str], LatePenalty]) -> int:
    """Each penalty into nbgrader's gradebook (``SubmittedNotebook.late_submission_penalty``, which formgrader shows);
    return how many notebooks hold one."""
    from nbgrader.api import Gradebook, MissingEntry

    written = 0
    with Gradebook(db_url) as book:
        for (student, assignment, notebook), penalty in late.items():
            try:
                submitted = book.find_submission_notebook(Path(notebook).stem, assignment, student)
            except MissingEntry:
                continue
            submitted.late_submission_penalty = penalty.points or None  # nbgrader's None: no penalty
            written += bool(penalty.points)
        book.db.commit()
    return written
