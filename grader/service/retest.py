"""Grade one test again for the learners who have it (``python -m grader grade --test ID``): after a test was
corrected (an appeal answered ``fixed``, or a mistake found in a rubric), every other result stays as it was.

The notebook graded again is the one that counts, as graded: ``autograded/{student}/{assignment}/{notebook}`` in the
grading output, which both the batch and the grading service keep for the attempt that counts, turned back into the
learner's notebook (``restore.as_submitted``: their answers and added cells, every other cell as released). It is
graded whole, as any submission is (the course's cells from ``source/`` as they are now, the learner's answers from that notebook,
in the sandbox), in a scratch folder; then only the named test's points, message and parts are copied onto the stored
result, and into nbgrader's gradebook where formgrader shows them. A learner whose notebook could not be graded
again cleanly (timed out on a loaded machine, say) keeps the result they had: the grader's trouble never changes a
grade. Which attempt counts is not decided again.

Each learner whose points for the test changed gets a ``regrade`` event in the history of the grade, with who ran it
and why; grades.csv, results.json and the feedback pages of the learners graded again are rewritten.
"""
from __future__ import annotations

import dataclasses
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from grader.layout import Course
from grader.results import Status
from grader.submission.gradebook import Gradebook


@dataclass(frozen=True)
class Retested:
    """One learner's notebook, graded again for one test."""

    student: str
    assignment: str
    notebook: str
    before: float
    after: float | None  # None: not graded again cleanly; ``before`` stays
    why_not: str = ""

    @property
    def changed(self) -> bool:
        return self.after is not None and self.after != self.before


def targets(out: Path, test_id: str, *, students: list[str] | None = None,
            assignments: list[str] | None = None) -> list:
    """The stored results that have the test and a notebook as graded; ValueError names the tests there are
    when none has it."""
    book = Gradebook(out)
    results = [r for r in book.all_results()
               if (not students or r.student_id in students) and (not assignments or r.assignment_id in assignments)]
    chosen = [r for r in results if r.status is Status.GRADED and any(t.grade_id == test_id for t in r.tests)
              and book.autograded_path(r.student_id, r.assignment_id, r.notebook).is_file()]
    if not chosen:
        known = sorted({t.grade_id for r in results for t in r.tests})
        raise ValueError(f"no graded notebook in {out} has a test {test_id!r} (the tests there: "
                         f"{', '.join(known) or 'none'})")
    return chosen


def retest(out: Path, test_id: str, course: Course, settings, *, students: list[str] | None = None,
           assignments: list[str] | None = None, workers: int | None = None, db_url: str | None = None,
           why: str = "", zygote=None) -> list[Retested]:
    """Grade ``test_id`` again on each learner's notebook that counts; store the new points where they were graded
    cleanly; return what happened to each."""
    from grader.classroom.batch import grade_all
    from grader.nbgrader_adapter.manual_grades import refresh
    from grader.submission import history

    out = out.resolve()
    book = Gradebook(out)
    chosen = targets(out, test_id, students=students, assignments=assignments)
    done: list[Retested] = []
    with tempfile.TemporaryDirectory(prefix=".retest-", dir=out) as scratch:
        submitted, again = Path(scratch) / "submitted", Path(scratch) / "out"
        for r in chosen:
            folder = submitted / r.student_id / r.assignment_id
            folder.mkdir(parents=True, exist_ok=True)
            _learners_copy(book.autograded_path(r.student_id, r.assignment_id, r.notebook), course, r.assignment_id,
                           folder / r.notebook)
        grade_all(submitted, course, dataclasses.replace(settings, out=again), workers=workers,
                  only=sorted({r.assignment_id for r in chosen}), force=True, zygote=zygote)
        fresh = Gradebook(again)
        for r in chosen:
            before = next(t for t in r.tests if t.grade_id == test_id)
            new = fresh.stored(r.student_id, r.assignment_id, r.notebook)
            test = next((t for t in (new.tests if new else []) if t.grade_id == test_id), None)
            if new is None or new.status is not Status.GRADED or test is None:
                why_not = f"{new.status.value}: {new.message}" if new else "no result"
                done.append(Retested(r.student_id, r.assignment_id, r.notebook, before.points, None, why_not))
                continue
            done.append(Retested(r.student_id, r.assignment_id, r.notebook, before.points, test.points))
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
    return done


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
    from grader.submission.gradebook import atomic_write

    book = Gradebook(out)
    for d in done:
        page = feedback_page(out, d.student, d.assignment, d.notebook, db_url, course_root)
        if page is not None:
            atomic_write(book.feedback_path(d.student, d.assignment, d.notebook), page)


def summary(test_id: str, done: list[Retested]) -> str:
    lines = [f"{test_id} graded again on {len(done)} notebook(s):"]
    for d in done:
        if d.after is None:
            lines.append(f"  {d.student}  {d.assignment}  kept {d.before:g}: not graded again cleanly ({d.why_not})")
        else:
            lines.append(f"  {d.student}  {d.assignment}  {d.before:g} -> {d.after:g}"
                         + ("" if d.changed else "  (unchanged)"))
    changed = sum(d.changed for d in done)
    lines.append(f"{changed} changed; every other test and every other learner's result is as it was")
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
    print(summary(args.test, done))
    return 0
