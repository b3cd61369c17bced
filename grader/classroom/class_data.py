"""The class at a glance, as numbers: what the class report (``class_page``) draws and its CSV tables hold.

Everything here is computed from the grader's results (``results.json``), the hand grades read back from nbgrader's
gradebook and the late penalties, once, by ``summarize``; the page and the CSV files only lay it out. Test pass rates
and mistakes count the notebooks the grader graded (status ``graded``); a notebook that timed out, ran out of memory
or was flagged is listed under its status instead, so a test is not called hard because submissions never reached it.
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass, field

from grader.results import NotebookResult, Status
from grader.submission.judge import NOT_CHECKED

Key = tuple[str, str, str]  # (student, assignment, notebook)
STOPPED = "the notebook stopped before this test (an unfinished TODO or an earlier error)"


@dataclass(frozen=True)
class NotebookScores:
    assignment: str
    notebook: str
    max_total: float  # autograded and hand-graded points
    totals: list[float]  # each graded learner's total: autograded + hand grades - late penalty
    submissions: int  # every result of this notebook, whatever its status
    hand_pending: int  # graded notebooks whose hand-graded answers are not all graded yet
    late: int  # notebooks with a late penalty

    @property
    def mean(self) -> float | None:
        return statistics.fmean(self.totals) if self.totals else None

    @property
    def median(self) -> float | None:
        return statistics.median(self.totals) if self.totals else None


@dataclass(frozen=True)
class TestRate:
    assignment: str
    grade_id: str
    points: float
    graded: int  # graded notebooks that have this test
    passed: int  # of those, the ones that scored every point
    scored: float  # points scored in all, partial credit included

    @property
    def rate(self) -> float:
        return self.passed / self.graded if self.graded else 0.0


@dataclass(frozen=True)
class Mistake:
    """One thing the grader said about a failed test, and every learner it said it to."""

    assignment: str
    grade_id: str
    message: str
    learners: list[Key]


@dataclass(frozen=True)
class Flagged:
    status: str
    student: str
    assignment: str
    notebook: str
    message: str


@dataclass(frozen=True)
class Timing:
    assignment: str
    notebook: str
    count: int
    total_s: float
    mean_s: float
    max_s: float


@dataclass(frozen=True)
class Slow:
    student: str
    assignment: str
    notebook: str
    seconds: float
    status: str


@dataclass
class ClassSummary:
    learners: int
    results: int
    statuses: dict[str, int]
    notebooks: list[NotebookScores] = field(default_factory=list)
    tests: list[TestRate] = field(default_factory=list)  # hardest first
    mistakes: list[Mistake] = field(default_factory=list)  # most common first
    unreached: list[Mistake] = field(default_factory=list)  # tests the notebook stopped before, most common first
    flagged: list[Flagged] = field(default_factory=list)
    timing: list[Timing] = field(default_factory=list)
    slowest: list[Slow] = field(default_factory=list)
    rows: list[dict] = field(default_factory=list)  # one per result: the scores table


def _key(result: NotebookResult) -> Key:
    return (result.student_id, result.assignment_id, result.notebook)


def summarize(results: list[NotebookResult], manual: dict[Key, float | None] | None = None,
              penalties: dict[Key, float] | None = None, *, slowest: int = 10) -> ClassSummary:
    """Every figure of the class report. ``manual``: points graded by hand (None while some are still to grade);
    ``penalties``: late penalties (``LatePenalty``, or points taken off), by the same keys."""
    manual, penalties = manual or {}, penalties or {}
    statuses: dict[str, int] = {}
    by_notebook: dict[tuple[str, str], list[NotebookResult]] = {}
    for r in results:
        statuses[r.status.value] = statuses.get(r.status.value, 0) + 1
        by_notebook.setdefault((r.assignment_id, r.notebook), []).append(r)
    summary = ClassSummary(learners=len({r.student_id for r in results}), results=len(results),
                           statuses=dict(sorted(statuses.items(), key=lambda kv: (-kv[1], kv[0]))))
    tests: dict[tuple[str, str], dict] = {}
    mistakes: dict[tuple[str, str, str], list[Key]] = {}
    for (assignment, notebook), group in sorted(by_notebook.items()):
        totals, pending, late = [], 0, 0
        for r in group:
            key = _key(r)
            hand = manual.get(key)
            penalty = penalties.get(key)
            penalty = float(getattr(penalty, "points", penalty) or 0.0)
            late += penalty > 0
            if r.status is Status.GRADED:
                pending += bool(r.manual_max_score) and hand is None
                totals.append(round(r.score + (hand or 0.0) - penalty, 6))
                for t in r.tests:
                    entry = tests.setdefault((assignment, t.grade_id),
                                             {"points": t.max_points, "graded": 0, "passed": 0, "scored": 0.0})
                    entry["graded"] += 1
                    entry["passed"] += t.passed
                    entry["scored"] += t.points
                    if not t.passed:
                        said = STOPPED if NOT_CHECKED in t.message else t.message
                        mistakes.setdefault((assignment, t.grade_id, said), []).append(key)
            summary.rows.append({"student": r.student_id, "assignment": assignment, "notebook": notebook,
                                 "status": r.status.value, "autograded": r.reported_score, "max": r.max_score,
                                 "hand": hand, "hand_max": r.manual_max_score, "late_penalty": penalty,
                                 "total": (None if r.reported_score is None
                                           else round(r.score + (hand or 0.0) - penalty, 6)),
                                 "seconds": round(r.seconds, 3)})
            if r.status is not Status.GRADED or r.flags or r.tampering:
                reason = r.message if r.status is not Status.GRADED else "; ".join(r.flags + r.tampering) or r.message
                summary.flagged.append(Flagged(r.status.value, r.student_id, assignment, notebook, reason))
        first = group[0]
        summary.notebooks.append(NotebookScores(assignment, notebook, first.max_score + first.manual_max_score,
                                                totals, len(group), pending, late))
        seconds = [r.seconds for r in group]
        summary.timing.append(Timing(assignment, notebook, len(group), round(sum(seconds), 3),
                                     round(statistics.fmean(seconds), 3), round(max(seconds), 3)))
    summary.tests = sorted((TestRate(a, g, e["points"], e["graded"], e["passed"], round(e["scored"], 6))
                            for (a, g), e in tests.items()), key=lambda t: (t.rate, t.assignment, t.grade_id))
    ranked = sorted((Mistake(a, g, m, sorted(ks)) for (a, g, m), ks in mistakes.items()),
                    key=lambda m: (-len(m.learners), m.assignment, m.grade_id, m.message))
    summary.mistakes = [m for m in ranked if m.message != STOPPED]
    summary.unreached = [m for m in ranked if m.message == STOPPED]
    summary.flagged.sort(key=lambda f: (f.status, f.assignment, f.student))
    summary.slowest = [Slow(r.student_id, r.assignment_id, r.notebook, round(r.seconds, 3), r.status.value)
                       for r in sorted(results, key=lambda r: -r.seconds)[:slowest]]
    return summary


def tables(summary: ClassSummary) -> dict[str, tuple[list[str], list[list]]]:
    """The report's tables for instructors who want raw data: file name -> (header, rows), every learner listed."""
    return {
        "scores.csv": (["student", "assignment", "notebook", "status", "autograded", "max", "hand", "hand_max",
                        "late_penalty", "total", "seconds"], [list(row.values()) for row in summary.rows]),
        "tests.csv": (["assignment", "test", "points", "graded", "passed", "pass_rate", "points_scored"],
                      [[t.assignment, t.grade_id, t.points, t.graded, t.passed, round(t.rate, 4), t.scored]
                       for t in summary.tests]),
        "mistakes.csv": (["assignment", "test", "message", "learners", "student", "notebook"],
                         [[m.assignment, m.grade_id, m.message, len(m.learners), s, n]
                          for m in summary.mistakes + summary.unreached for s, _, n in m.learners]),
        "statuses.csv": (["status", "student", "assignment", "notebook", "reason"],
                         [[f.status, f.student, f.assignment, f.notebook, f.message] for f in summary.flagged]),
        "timing.csv": (["assignment", "notebook", "submissions", "total_s", "mean_s", "max_s"],
                       [[t.assignment, t.notebook, t.count, t.total_s, t.mean_s, t.max_s] for t in summary.timing]),
    }
