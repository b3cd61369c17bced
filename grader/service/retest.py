"""Grade one test again for the learners who have it (``python -m grader grade --test ID``): after a test was
corrected (an appeal answered ``fixed``, or a mistake found in a rubric), every other result stays as it was.

The notebook graded again is the one that counts, as graded: ``autograded/{student}/{assignment}/{notebook}`` in the
grading output, which both the batch and the grading service keep for the attempt that counts, turned back into the
learner's notebook (``restore.as_submitted``: their answers and added cells, every other cell as released). It is
graded whole, as any submission is (the course's cells from ``source/`` as they are now, the learner's answers from that
notebook, in the sandbox), in a scratch folder; then only the named test's points, message and parts are copied onto the
stored result, and into nbgrader's gradebook where formgrader shows them. Which attempt counts is not decided again.

Which results are graded again (``REGRADED``): every one whose notebook ran when it was graded, whatever its status,
because its points count in its total: ``graded``, and also ``suspicious`` and ``tampered`` (the flags and the
undone changes are for a person to review; the tests were judged as any other's) and the notebooks that stopped
(``timed_out``, ``kernel_died``, ``out_of_memory``, ``too_much_output``: the tests before the stop were judged and
scored). The status, flags and tampering notes stay; only the test's result follows the new judgement. The results
whose notebook never ran carry no points to grade again (``NOT_GRADED_AGAIN``: ``missing``, ``invalid_folder``,
``invalid_notebook``, ``too_large``, and ``grader_error``, which has no score at all): each is named, with why, and
keeps what it had.

A learner whose notebook could not be graded again cleanly keeps the result they had: the grader's trouble never
changes a grade (``taken``: the grading again must run to the end, or stop as the notebook stopped when it was
graded, at the same test, with the named test judged). Every result left as it was is named in the summary with the
reason.

Each learner whose points for the test changed gets a ``regrade`` event in the history of the grade, with who ran it
and why; grades.csv, results.json and the feedback pages of the learners graded again are rewritten.
"""
from __future__ import annotations

import dataclasses
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from grader.identifiers import escape_controls
from grader.layout import Course
from grader.results import Status
from grader.term.gradebook import Gradebook


# The statuses of a notebook that ran when it was graded: its tests were judged and their points count.
REGRADED = frozenset({Status.GRADED, Status.SUSPICIOUS, Status.TAMPERED, Status.TIMED_OUT, Status.KERNEL_DIED,
                      Status.OUT_OF_MEMORY, Status.TOO_MUCH_OUTPUT})
# The statuses of a notebook that never ran (or whose grading failed): why a one-test regrade leaves each as it is.
NOT_GRADED_AGAIN = {
    Status.MISSING: "nothing was submitted: no notebook ran, no points to grade again",
    Status.INVALID_FOLDER: "the submission's folder could not be graded: no notebook ran, no points to grade again",
    Status.INVALID_NOTEBOOK: "the submission is no notebook the grader could read: nothing ran, no points to grade "
                             "again",
    Status.TOO_LARGE: "the submission was over a limit of the grader: nothing ran, no points to grade again",
    Status.GRADER_ERROR: "the grader failed on it, so it has no score: the next `grade` run grades it whole (see its "
                         "message), with the test as it is now",
}
# A stopped run cannot be a fact about the notebook alone (a loaded machine times out sooner): it is taken only where it
# stopped as the notebook did when graded. A stopped or unreadable test reads so in ``pipeline.judge_tests``:
STOPPED = frozenset({Status.TIMED_OUT, Status.KERNEL_DIED, Status.OUT_OF_MEMORY, Status.TOO_MUCH_OUTPUT})
UNJUDGED = ("not run", "not judged", "not graded")


@dataclass(frozen=True)
class Retested:
    """One learner's notebook, graded again for one test (``tried``), or named with why it was not."""

    student: str
    assignment: str
    notebook: str
    before: float
    after: float | None  # None: not graded again (cleanly); ``before`` stays
    why_not: str = ""
    status: str = Status.GRADED.value  # the stored result's, which stays
    tried: bool = True  # False: not graded again at all (``why_not``: why)

    @property
    def changed(self) -> bool:
        return self.after is not None and self.after != self.before


def targets(out: Path, test_id: str, *, students: list[str] | None = None,
            assignments: list[str] | None = None) -> tuple[list, list[Retested]]:
    """The stored results that have the test: those to grade again (a status in ``REGRADED`` and a notebook as
    graded), and every other one, named with why not; ValueError names the tests there are when none has it."""
    book = Gradebook(out)
    results = [r for r in book.all_results()
               if (not students or r.student_id in students) and (not assignments or r.assignment_id in assignments)]
    chosen, left = [], []
    for r in results:
        test = next((t for t in r.tests if t.grade_id == test_id), None)
        if test is None:
            continue
        if r.status not in REGRADED:
            why = NOT_GRADED_AGAIN[r.status]
        elif not book.autograded_path(r.student_id, r.assignment_id, r.notebook).is_file():
            why = f"its notebook as graded is not in {out / 'autograded'}: nothing to grade again"
        else:
            chosen.append(r)
            continue
        left.append(Retested(r.student_id, r.assignment_id, r.notebook, test.points, None, why, r.status.value,
                             tried=False))
    if not chosen and not left:
        known = sorted({t.grade_id for r in results for t in r.tests})
        raise ValueError(f"no graded notebook in {out} has a test {test_id!r} (the tests there: "
                         f"{', '.join(known) or 'none'})")
    return chosen, left


def _judged(test) -> bool:
    return not test.message.startswith(UNJUDGED)


def taken(stored, again, test_id: str):
    """``(the test's new result, "")`` where ``again`` (the notebook graded again; None: no result) judged it as a
    grading counts, else ``(None, why not)``: it ran to its end (``graded``, or flagged again), or it stopped as the
    stored result's notebook did (the same status, the same tests judged) with the test judged."""
    if again is None:
        return None, "no result"
    test = next((t for t in again.tests if t.grade_id == test_id), None)
    why_not = f"{again.status.value}: {again.message}"
    if test is None:
        return None, f"{why_not}; no test {test_id} in it"
    if again.status in (Status.GRADED, Status.SUSPICIOUS, Status.TAMPERED):
        return test, ""
    if again.status in STOPPED and again.status is stored.status and _judged(test) \
            and {t.grade_id for t in again.tests if _judged(t)} == {t.grade_id for t in stored.tests if _judged(t)}:
        return test, ""
    return None, why_not


def retest(out: Path, test_id: str, course: Course, settings, *, students: list[str] | None = None,
           assignments: list[str] | None = None, workers: int | None = None, db_url: str | None = None,
           why: str = "", zygote=None) -> list[Retested]:
    """Grade ``test_id`` again on each learner's notebook that counts and carries points, whatever its status
    (``REGRADED``); store the new points where they were graded cleanly (``taken``); return what happened to each,
    then each result with the test that was not graded again, with why (``NOT_GRADED_AGAIN``)."""
    from grader.classroom.batch import grade_all
    from grader.nbgrader_adapter.manual_grades import refresh
    from grader.term import history

    out = out.resolve()
    book = Gradebook(out)
    chosen, left = targets(out, test_id, students=students, assignments=assignments)
    done: list[Retested] = []
    with tempfile.TemporaryDirectory(prefix=".retest-", dir=out) as scratch:
        submitted, again = Path(scratch) / "submitted", Path(scratch) / "out"
        for r in chosen:
            folder = submitted / r.student_id / r.assignment_id
            folder.mkdir(parents=True, exist_ok=True)
            _learners_copy(book.autograded_path(r.student_id, r.assignment_id, r.notebook), course, r.assignment_id,
                           folder / r.notebook)
        if chosen:
            grade_all(submitted, course, dataclasses.replace(settings, out=again), workers=workers,
                      only=sorted({r.assignment_id for r in chosen}), force=True, zygote=zygote)
        elif zygote is not None:
            zygote.close(now=True)  # nothing to run (grade_all stops it where it runs)
        fresh = Gradebook(again)
        for r in chosen:
            before = next(t for t in r.tests if t.grade_id == test_id)
            test, why_not = taken(r, fresh.stored(r.student_id, r.assignment_id, r.notebook), test_id)
            if test is None:
                done.append(Retested(r.student_id, r.assignment_id, r.notebook, before.points, None, why_not,
                                     r.status.value))
                continue
            done.append(Retested(r.student_id, r.assignment_id, r.notebook, before.points, test.points,
                                 status=r.status.value))
            if dataclasses.asdict(test) == dataclasses.asdict(before):
                continue
            book.replace_test(r.student_id, r.assignment_id, r.notebook, test_id, dataclasses.asdict(test))
            if db_url:
                from grader.nbgrader_adapter.db import set_auto_score

                set_auto_score(db_url, r.student_id, r.assignment_id, r.notebook, test_id, test.points)
            if test.points == before.points:
                continue  # the grade stands (its message may read differently now): no event in its history
            history.append(out, r.student_id, r.assignment_id, "regrade",
                           f"{test_id} graded again with the test as it is now: {before.points:g} -> "
                           f"{test.points:g}" + (f" ({why})" if why else ""), test=test_id, notebook=r.notebook,
                           before=before.points, after=test.points)
    refresh(out, db_url, course.root)
    rewrite_pages(out, db_url, course.root, [d for d in done if d.after is not None])
    return done + left


def _learners_copy(graded: Path, course: Course, assignment: str, target: Path) -> None:
    """The learner's notebook again, from the one graded (``restore.as_submitted``); a file that is no notebook now
    is copied as it is, and grading it says so."""
    import nbformat

    from grader.submission.restore import as_submitted

    try:
        notebook = as_submitted(nbformat.read(graded, as_version=4), course.read_release(assignment))
    except (OSError, ValueError, KeyError, AttributeError, TypeError):
        shutil.copyfile(graded, target)
        return
    nbformat.write(notebook, target)


def rewrite_pages(out: Path, db_url: str | None, course_root: Path, done: list[Retested]) -> None:
    """The feedback pages of the notebooks graded again, with the new test result."""
    from grader.nbgrader_adapter.manual_grades import feedback_page
    from grader.term.gradebook import atomic_write

    book = Gradebook(out)
    for d in done:
        page = feedback_page(out, d.student, d.assignment, d.notebook, db_url, course_root)
        if page is not None:
            atomic_write(book.feedback_path(d.student, d.assignment, d.notebook), page)


def summary(test_id: str, done: list[Retested], *, narrowed: bool = False) -> str:
    """What ``grade --test`` did to each result that has the test: graded again (the new points, or kept and why),
    or not graded again and why; ``narrowed``: --student or --assignment left some results out."""
    tried, left = [d for d in done if d.tried], [d for d in done if not d.tried]

    def who(d: Retested) -> str:
        return f"  {d.student}  {d.assignment}  " + ("" if d.status == Status.GRADED.value else f"({d.status})  ")

    lines = [f"{test_id} graded again on {len(tried)} notebook(s):"]
    for d in tried:
        if d.after is None:
            lines.append(f"{who(d)}kept {d.before:g}: not graded again cleanly "
                         f"({escape_controls(d.why_not)})")  # its message may quote the learner's notebook: one line
        else:
            lines.append(f"{who(d)}{d.before:g} -> {d.after:g}" + ("" if d.changed else "  (unchanged)"))
    if left:
        lines.append(f"{test_id} not graded again on {len(left)} notebook(s), each kept as it was:")
        lines += [f"{who(d)}kept {d.before:g}: {escape_controls(d.why_not)}" for d in left]
    changed, kept = sum(d.changed for d in tried), sum(d.after is None for d in tried)
    counts = [f"{changed} changed", f"{len(tried) - changed - kept} unchanged"]
    if kept:
        counts.append(f"{kept} not graded again cleanly, kept as it was")
    if left:
        counts.append(f"{len(left)} not graded again, kept as it was")
    lines.append("; ".join(counts) + f". Only {test_id} was graded: every other test of these notebooks is as it was"
                 + ("; the results --student/--assignment left out were not looked at" if narrowed else ""))
    return "\n".join(lines)


def command(args, settings, course: Course, zygote) -> int:
    """``python -m grader grade --out OUT --test ID [--student ID] [--assignment A] [--why TEXT]``."""
    import sys

    from grader.nbgrader_adapter.manual_grades import default_db

    if args.scheduler or args.submissions is not None:
        print("grade: --test grades again the notebooks in --out as they were graded; it takes neither "
              "--submissions nor --scheduler", file=sys.stderr)
        return 2
    try:
        targets(settings.out, args.test, students=args.student, assignments=args.assignment)
    except ValueError as error:
        print(f"grade: --test: {error}", file=sys.stderr)
        return 2
    done = retest(settings.out, args.test, course, settings, students=args.student, assignments=args.assignment,
                  workers=args.workers, db_url=args.gradebook or default_db(settings.out), why=args.why, zygote=zygote)
    print(summary(args.test, done, narrowed=bool(args.student or args.assignment)))
    return 0
