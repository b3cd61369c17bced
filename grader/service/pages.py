"""What the service's pages say: its own pages, the banner on a graded attempt's feedback, and the attempt that
counts in words (autograded points + points graded by hand - late penalty, as the gradebook holds them).

Every text is escaped; the pages load nothing and run no script.
"""
from __future__ import annotations

import html
import time
from pathlib import Path

from grader.results import NotebookResult
from grader.term.attempts import Attempt
from grader.term.gradebook import Gradebook
from grader.submission.pipeline import notebook_name


def when(seconds: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(seconds))


def page(title: str, paragraphs: list[str]) -> str:
    """A feedback page of the service's own (every text escaped; no script, no request)."""
    body = "".join(f"<p>{html.escape(p)}</p>" for p in paragraphs)
    return ("<!doctype html><html lang='en'><head><meta http-equiv='Content-Security-Policy' content=\"default-src 'none'; "
            "style-src 'unsafe-inline'\"><meta charset='utf-8'>"
            f"<title>{html.escape(title)}</title><style>body{{font-family:sans-serif;max-width:50em;margin:2em}}"
            f"</style></head><body><main><h1>{html.escape(title)}</h1>{body}</main></body></html>")


def with_banner(feedback: str, lines: list[str]) -> str:
    banner = ("<div class='attempt' style='border:1px solid #88a;background:#eef;padding:.5em 1em;margin:1em 0'>"
              + "".join(f"<p>{html.escape(line)}</p>" for line in lines) + "</div>")
    head, found, rest = feedback.partition("<main>")  # inside the page's main landmark, at its top
    if not found:
        head, found, rest = feedback.partition("<body>")
    return head + found + banner + rest if found else banner + feedback



def own(attempt: Attempt, result: NotebookResult | None) -> str:
    """What a graded attempt counts for, in words: autograded points, late penalty, and the answers graded by hand."""
    said = f"{attempt.score:g} / {attempt.max_score:g} autograded points"
    if attempt.penalty:
        said += f" - {attempt.penalty:g} for lateness = {attempt.value:g}"
    if result is not None and result.manual_max_score:
        said += (f", plus up to {result.manual_max_score:g} points for the answers your instructor grades by hand "
                 "(a grade already given carries over to an answer that did not change; a changed answer is "
                 "graded again)")
    return said

def appeal_hint(assignment: str, result: NotebookResult | None) -> list[str]:
    """How to ask for a regrade, on the page of the attempt that counts when a test lost points (``appeals``)."""
    lost = [t.grade_id for t in (result.tests if result else []) if t.points < t.max_points]
    if not lost:
        return []
    return [f"Think a test is wrong? Ask your instructor to look at it again, with your reason: in the Assignment "
            "List (Nbgrader > Assignment List), click \"ask for a regrade\" beside this submission's \"view "
            "feedback\", choose the test and say why (at most 3 requests for this assignment). Or, from a terminal "
            f"in your JupyterLab (File > New > Terminal): python -m grader appeal {assignment} {lost[0]} --reason "
            "\"why you think so\" (any test by its id in the table below). The answer comes with your feedback: "
            "Fetch Feedback again."]


def regrade(out: Path, student: str, assignment: str, folder: Path) -> str:
    """Said when this attempt changed an answer that was graded by hand (``answers``)."""
    from grader.nbgrader_adapter.answers import changed_since_graded

    notebook = notebook_name(assignment)
    changed = changed_since_graded(out, student, assignment, notebook,
                                   Gradebook(folder).autograded_path(student, assignment, notebook))
    if not changed:
        return ""
    return (f" Your written answer ({', '.join(changed)}) is not the one your instructor graded by hand, so it "
            "will be graded again; the earlier hand grade does not count for it, and your total is complete "
            "once it is graded.")

def standing(options, course_root: Path, student: str, assignment: str, counted: Attempt) -> str:
    """The total that counts, as the course's gradebook has it now (autograded + by hand - late penalty), when
    the counting attempt is the one published there; else the attempt's own points (``own``)."""
    from grader.nbgrader_adapter.manual_grades import read_manual, points
    from grader.nbgrader_adapter.late import penalties
    from grader.term.gradebook import total_score

    notebook = notebook_name(assignment)
    result = Gradebook(options.out).stored(student, assignment, notebook)
    published = (result is not None and result.reported_score is not None
                 and abs(result.reported_score - (counted.score or 0.0)) < 1e-9)
    if not published:
        return own(counted, result)
    try:
        key = (student, assignment, notebook)
        by_hand = points(read_manual(options.gradebook, [result]).get(key))
        penalty = penalties([result], {key: by_hand}, options.gradebook, course_root).get(key)
    except Exception:  # noqa: BLE001 - the gradebook busy or broken: the attempt's own points still say enough
        return own(counted, result)
    total = total_score(result, by_hand, penalty)
    most = result.max_score + result.manual_max_score
    said = f"{result.reported_score:g} autograded"
    if result.manual_max_score:
        said += (f" + {by_hand:g} graded by hand" if by_hand is not None else
                 f" + the {result.manual_max_score:g} points graded by hand, not graded yet")
    if penalty and penalty.points:
        said += f" - {penalty.points:g} for lateness"
    return said + (f" = {total:g} / {most:g} points" if total is not None else f" (of {most:g} points)")

