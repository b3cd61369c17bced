"""The gradebook as a console table."""
from __future__ import annotations

from grader.submission.intake import shown_name
from grader.results import NotebookResult


def table(results: list[NotebookResult], manual: dict | None = None, late: dict | None = None) -> str:
    """``manual``: (student, assignment, notebook) -> points graded by hand (None while some are still to grade);
    ``late``: -> the late penalty (``grader.results.LatePenalty``) of a notebook whose assignment has a due date."""
    manual, late = manual or {}, late or {}
    header = ("student", "notebook", "points", "manual", "late", "status", "message")
    rows = [header]
    for r in results:
        by_hand = manual.get((r.student_id, r.assignment_id, r.notebook))
        penalty = late.get((r.student_id, r.assignment_id, r.notebook))
        hand = "-" if not r.manual_max_score else f"{'?' if by_hand is None else f'{by_hand:g}'}/{r.manual_max_score:g}"
        points = "-" if r.reported_score is None else f"{r.score:g}"
        message = shown_name(r.message)  # for a terminal: no learner text may carry control characters
        taken = "-" if penalty is None else f"-{penalty.points:g}" if penalty.points else "0"
        rows.append((shown_name(r.student_id), shown_name(r.assignment_id), f"{points}/{r.max_score:g}", hand, taken,
                     r.status.value, (message[:60] + "…") if len(message) > 61 else message))
    widths = [max(len(str(row[i])) for row in rows) for i in range(len(header))]
    lines = ["  ".join(str(c).ljust(w) for c, w in zip(row, widths)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def summary(results: list[NotebookResult], seconds: float) -> str:
    counts: dict[str, int] = {}
    for r in results:
        counts[r.status.value] = counts.get(r.status.value, 0) + 1
    by_status = ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
    rate = len(results) / seconds * 60 if seconds > 0 else 0.0
    return f"{len(results)} notebooks ({by_status}) in {seconds:.1f} s, {rate:.1f} per minute"
