"""Grade a folder of submissions, several at a time, resumably.

Kernels are forked from one fork server per run (``grader.sandbox.zygote``), so the
imports are paid once, and each worker starts its next kernel while the
current notebook runs; every kernel still runs exactly one notebook.

Submissions are laid out as nbgrader's ``submitted/{student_id}/{assignment_id}/``.
Each kernel has its own scratch directory and, under root, its own leased uid,
so concurrent kernels cannot see each other.

Every folder under the submissions directory gets a row: a student id outside
the course's rule (``grader.identifiers``), a symbolic link, a
folder that cannot be read, an unknown assignment and a student folder with no
assignment folder in it are recorded with their reason (``invalid_folder`` or
``missing``), never skipped. Jupyter's own ``.ipynb_checkpoints`` folders are
the only ones passed over. A kernel that does not start is retried once within
the run; a ``grader_error`` is retried by later runs, at most
``gradebook.MAX_GRADER_ATTEMPTS`` times for the same file.
"""
from __future__ import annotations

import asyncio
import contextlib
import copy
import dataclasses
import os
import queue
import stat
import threading
import sys
import time
from pathlib import Path

from grader import cells, identifiers
from grader.term.gradebook import Gradebook
from grader.submission.intake import InvalidSubmission, fingerprint, locate, shown_name
from grader.submission.rubric_loading import load_rubric
from grader.classroom.identical import Identical, notebook_key, repeats_last
from grader.kernel.run import Execution, SandboxError, run_in, start_kernel, stop_kernel
from grader.layout import Course
from grader.submission.pipeline import Job, Settings, confinement, finish, grader_error, notebook_name, prepare, program_runs
from grader.programs.judged import Judged
from grader.results import NotebookResult, Status, TestResult
from grader.sandbox import scratch as scratch_folders
from grader.sandbox.zygote import Zygote

MAX_ID_CHARS = identifiers.MAX_CHARS  # under nbgrader's 128-character gradebook column
PASSED_OVER = {".ipynb_checkpoints"}  # Jupyter's autosave folders: never a submission


def valid_id(name: str) -> bool:
    """A student id the course accepts (``grader.identifiers``: a strict rule, tighter than nbgrader's)."""
    return identifiers.valid(name)


def _entries(folder: Path) -> list[os.DirEntry]:
    with os.scandir(folder) as found:
        return sorted(found, key=lambda e: e.name)


def _kind(entry: os.DirEntry) -> str:
    """'dir', 'link' or 'other' (without following links)."""
    mode = entry.stat(follow_symlinks=False).st_mode
    return "link" if stat.S_ISLNK(mode) else "dir" if stat.S_ISDIR(mode) else "other"


def _reason(error: OSError) -> str:
    return error.strerror or type(error).__name__


def check_students(submissions: Path, students: list[str]) -> None:
    """Raise ValueError, naming the learners there are, unless every id of ``students`` follows the course's id
    rule and has a folder in ``submissions``."""
    for student in students:
        if not valid_id(student):
            raise ValueError(identifiers.refusal("student id", shown_name(student), student))
    present = [e.name for e in _entries(submissions)
               if e.name not in PASSED_OVER and (e.is_dir(follow_symlinks=False) or e.is_symlink())]
    unknown = [s for s in dict.fromkeys(students) if s not in present]
    if unknown:
        names = [shown_name(n) for n in present if valid_id(n)]
        there = ", ".join(names[:30]) + (f", ... ({len(names)} in all)" if len(names) > 30 else "") or "none"
        raise ValueError(f"{', '.join(repr(s) for s in unknown)}: no such learner in {submissions} "
                         f"(the learners there: {there})")


def discover(submissions: Path, course: Course, only: list[str] | None = None,
             students: list[str] | None = None) -> tuple[list[Job], list[NotebookResult]]:
    """Jobs to grade, plus results for folders that cannot be graded at all (one per folder, with the reason);
    with ``students``, only those learners' folders (:func:`check_students` first), every other one untouched."""
    if students:
        check_students(submissions, students)
    jobs: list[Job] = []
    rejected: list[NotebookResult] = []
    known = course.assignments()
    wanted = [a for a in known if not only or a in only]
    skeletons: dict[str, tuple[list[TestResult], float]] = {}

    def reject(student: str, assignment: str, status: Status, message: str) -> None:
        if assignment in known and assignment not in skeletons:
            source = course.read_source(assignment)
            skeletons[assignment] = ([TestResult(cells.grade_id(c), 0.0, cells.points(c), False, "")
                                      for c in source.cells if cells.is_autograded_test(c)],
                                     sum(cells.points(c) for c in source.cells if cells.is_manual_answer(c)))
        tests, manual = skeletons.get(assignment, ([], 0.0))
        rejected.append(NotebookResult(
            student, assignment, notebook_name(assignment), status, message,
            tests=[TestResult(t.grade_id, 0.0, t.max_points, False, "not graded: " + message) for t in tests],
            manual_max_score=manual))

    for student in _entries(submissions):
        if student.name in PASSED_OVER or (students and student.name not in students):
            continue
        shown = shown_name(student.name)
        where = f"submitted/{shown}"
        try:
            kind = _kind(student)
        except OSError as error:
            kind, problem = "other", f"{where} cannot be read: {_reason(error)}"
        else:
            problem = None
        if kind == "other" and problem is None:
            continue  # a file beside the student folders, not a folder
        if problem is None and kind == "link":
            problem = f"{where} is a symbolic link; links are not followed: submit the folder itself"
        if problem is None and not valid_id(student.name):
            problem = f"{where}: " + identifiers.refusal("student id", shown, student.name)
        folders: list[os.DirEntry] = []
        if problem is None:
            try:
                folders = _entries(Path(student.path))
            except OSError as error:
                problem = f"{where} cannot be read: {_reason(error)}"
        if problem is not None:
            for assignment in wanted:
                reject(shown, assignment, Status.INVALID_FOLDER, problem)
            continue
        rows = 0
        for folder in folders:
            if folder.name in PASSED_OVER:
                continue
            try:
                kind = _kind(folder)
            except OSError as error:
                kind = f"unreadable: {_reason(error)}"
            if kind == "other":
                continue
            rows += 1
            if only and folder.name not in only:
                continue
            name = shown_name(folder.name)
            if kind == "link":
                reject(student.name, name, Status.INVALID_FOLDER,
                       f"{where}/{name} is a symbolic link; links are not followed: submit the folder itself")
            elif kind != "dir":
                reject(student.name, name, Status.INVALID_FOLDER, f"{where}/{name} cannot be read ({kind})")
            elif folder.name not in known:
                reject(student.name, name, Status.INVALID_FOLDER,
                       f"unknown assignment {name!r} (this course has {', '.join(known)})")
            else:
                jobs.append(Job(student.name, folder.name, Path(folder.path)))
        if not rows:
            held = ", ".join(shown_name(e.name) for e in folders[:5]) + (", ..." if len(folders) > 5 else "")
            for assignment in wanted:
                reject(student.name, assignment, Status.MISSING,
                       f"{where} holds no assignment folder" + (f" (found: {held})" if held else " (it is empty)"))
    return jobs, rejected


def _fingerprint(job: Job) -> str | None:
    try:
        return fingerprint(locate(job.folder, notebook_name(job.assignment_id)))
    except (InvalidSubmission, OSError):
        return None


class Progress:
    def __init__(self, total: int, stream=sys.stderr):
        self.total, self.done, self.started, self.stream = total, 0, time.monotonic(), stream

    def step(self, result: NotebookResult, reused: bool = False) -> None:
        self.done += 1
        elapsed = time.monotonic() - self.started
        left = elapsed / self.done * (self.total - self.done)
        bar = "#" * int(20 * self.done / max(self.total, 1))
        note = "kept from earlier run" if reused else f"{result.seconds:.1f} s"
        print(f"[{bar:<20}] {self.done}/{self.total} {result.student_id}/{result.assignment_id}: "
              f"{result.status.value} {'-' if result.reported_score is None else f'{result.score:g}'}/"
              f"{result.max_score:g} ({note}), ~{left:.0f} s left",
              file=self.stream, flush=True)


async def warm_kernel(settings: Settings, zygote: Zygote | None):
    """A confined kernel with the libraries imported, and the stack that frees it."""
    stack = contextlib.AsyncExitStack()
    try:
        conf = await stack.enter_async_context(confinement(settings))
        kernel = await start_kernel(conf, zygote=zygote)
    except BaseException:
        await stack.aclose()
        raise
    return kernel, stack


class InfrastructureError(RuntimeError):
    """No kernel could run the notebook (twice): nothing of the submission ran."""


async def _execute(prepared, current: asyncio.Future, settings: Settings, zygote: Zygote | None):
    """Run the prepared notebook in the kernel ``current`` brings; a kernel that does not start (or could not
    be confined, so nothing ran) is replaced once by a fresh one."""
    failures = []
    for attempt in (1, 2):
        if attempt == 2:
            current = asyncio.ensure_future(warm_kernel(settings, zygote))
        try:
            kernel, stack = await current
        except Exception as error:  # noqa: BLE001 - the kernel did not start: the grader's side, not the learner's
            failures.append(f"the kernel did not start ({type(error).__name__}: {str(error)[:200]})")
            continue
        try:
            return await run_in(kernel, copy.deepcopy(prepared.notebook), kernel.conf)
        except SandboxError as error:  # confinement failed before the kernel ran anything
            failures.append(f"the kernel could not be confined ({str(error)[:200]})")
        finally:
            await stack.aclose()
    raise InfrastructureError("; then ".join(failures))


async def _run_once(prepared, settings: Settings, zygote: Zygote | None, take_kernel) -> Execution:
    """The kernel's run of the prepared notebook: a copy of the clean run of an identical notebook in this grading
    run (``grader.classroom.identical``), waited for while another worker runs it, or a run of its own."""
    identical, key = settings.identical, None
    if identical is not None:
        key = notebook_key(prepared.job.assignment_id, prepared.notebook)
        while True:
            earlier, running = identical.claim(key)
            if earlier is not None:
                return earlier
            if running is None:
                break
            if not await asyncio.to_thread(running.wait, settings.limits.notebook_timeout_s + 60):
                key = None  # the other run never ended: run it here, unshared
                break
    try:
        current = take_kernel() if take_kernel else asyncio.ensure_future(warm_kernel(settings, zygote))
        execution = await _execute(prepared, current, settings, zygote)
    except BaseException:
        if key is not None:
            identical.release(key)  # whoever waits runs the notebook on their own
        raise
    if key is not None:
        identical.put(key, execution)
    return execution


async def grade_job(job: Job, course: Course, settings: Settings, zygote: Zygote | None,
                    take_kernel=None) -> NotebookResult | None:
    """Grade one submission; ``take_kernel()`` brings the (pre-started) kernel once the notebook is ready to run
    (a fresh one when None). Every failure of the grader's own is a recorded ``grader_error`` with the phase it
    happened in, never an exception (None only when even that could not be written)."""
    prepared, phase = None, "preparing the submission"
    try:
        prepared = prepare(job, course, settings)
        phase = "recording the result"
        if prepared.notebook is None:
            return finish(prepared, None, course, settings)
        phase = "running the notebook"
        execution = await _run_once(prepared, settings, zygote, take_kernel)
        phase = "running the recorded programs"
        programs = await asyncio.to_thread(program_runs, prepared, execution, course, settings, zygote)
        phase = "judging and recording the result"
        return finish(prepared, execution, course, settings, programs)
    except InfrastructureError as failure:
        return _error_result(job, course, settings, prepared, phase, infrastructure=str(failure))
    except Exception:  # noqa: BLE001 - any other failure is the grader's: this notebook's grader error, the run goes on
        return _error_result(job, course, settings, prepared, phase)


async def discard_kernel(warm: asyncio.Future) -> None:
    """Stop a pre-started kernel nobody will use; its scratch folder goes even when stopping it fails (a kernel
    that an interrupt of the whole process group stopped first)."""
    try:
        kernel, stack = await warm
    except Exception:  # noqa: BLE001 - it never started: warm_kernel freed what it had
        return
    for step in (lambda: stop_kernel(kernel), stack.aclose):
        try:
            await step()
        except Exception:  # noqa: BLE001 - stopping goes on: the scratch folder is removed whatever came first
            pass


async def _worker(jobs: queue.Queue, course: Course, settings: Settings, report, zygote: Zygote | None) -> None:
    """Grade jobs one after another; with pre-warming, the next kernel starts
    while the current notebook runs. Each kernel runs exactly one notebook."""
    warm: asyncio.Future | None = None
    try:
        while True:
            try:
                job = jobs.get_nowait()
            except queue.Empty:
                return

            def take_kernel():
                nonlocal warm
                current = warm or asyncio.ensure_future(warm_kernel(settings, zygote))
                warm = (asyncio.ensure_future(warm_kernel(settings, zygote))
                        if settings.prewarm and not jobs.empty() else None)
                return current

            result = await grade_job(job, course, settings, zygote, take_kernel)
            if result is not None:
                report(result)
    finally:
        if warm is not None:
            await discard_kernel(warm)


def _error_result(job, course, settings, prepared, phase, infrastructure=None) -> NotebookResult | None:
    try:
        return grader_error(job, course, settings, prepared, phase=phase, infrastructure=infrastructure)
    except Exception:  # noqa: BLE001 - even the error could not be recorded: the next run grades this again
        import traceback

        print(f"could not record a grader error for {job.student_id}/{job.assignment_id}:\n"
              f"{traceback.format_exc()}", file=sys.stderr)
        return None


def outstanding(submissions: Path, course: Course, book: Gradebook, *, only: list[str] | None = None,
                force: bool = False, students: list[str] | None = None) -> tuple[list[Job], Progress]:
    """The jobs still to grade (of ``students`` only, when given); unusable folders and results kept from an
    earlier run are recorded now."""
    jobs, rejected = discover(submissions, course, only, students)
    for result in rejected:
        book.save(result, None)
    todo, progress = [], Progress(len(jobs))
    for job in jobs:
        earlier = None if force else book.finished(job.student_id, job.assignment_id,
                                                   notebook_name(job.assignment_id), _fingerprint(job))
        if earlier is not None:
            progress.step(earlier, reused=True)
        else:
            todo.append(job)
    for assignment in {job.assignment_id for job in todo}:
        load_rubric(course.rubric(assignment))  # import once, before threads race to do it
    return todo, progress


def _with_compile_cache(course: Course, settings: Settings, todo: list[Job], workers: int, zygote) -> Settings:
    """``settings`` with a sealed folder of the instructor's compiled programs (sealed kernels only)."""
    if not (settings.compile_cache and settings.confine and todo and os.geteuid() == 0):
        return settings
    from grader.classroom import compile_cache

    assignments = compile_cache.worth_filling([job.assignment_id for job in todo])
    if not assignments:
        return settings
    started = time.monotonic()
    try:
        folder, note = compile_cache.fill(course, assignments, settings, zygote, workers, settings.out / ".compile-cache")
    except Exception as error:  # noqa: BLE001 - only a speed-up: every kernel then compiles its own programs
        print(f"no compilation cache this run ({type(error).__name__}: {error})", file=sys.stderr, flush=True)
        return settings
    print(f"{note} in {time.monotonic() - started:.1f} s", file=sys.stderr, flush=True)
    return dataclasses.replace(settings, compile_cache_dir=folder)


def default_workers() -> int:
    """One more notebook at a time than the machine has cores: a worker leaves its core idle while its kernel
    waits between cells, in a timing probe's pauses and while its program runner starts, and the extra
    worker fills those gaps (measured: ``--workers 3`` grades the benchmark's class 10-15 % faster than 2 on
    two cores; 4 is no faster than 3). Each worker holds about 1 GiB at peak."""
    return (os.cpu_count() or 1) + 1


def grade_all(submissions: Path, course: Course, settings: Settings, *, workers: int | None = None,
              only: list[str] | None = None, force: bool = False, students: list[str] | None = None,
              zygote: Zygote | None = None) -> list[NotebookResult]:
    """Grade what is outstanding (``students``: only these learners, every other stored result untouched) and
    rebuild grades.csv and results.json from every stored result. ``zygote``: a fork server the caller started
    early (``cli.cmd_grade`` starts it before importing this module, so its imports overlap the grader's); this
    run stops it."""
    book = Gradebook(settings.out)
    todo, progress = outstanding(submissions, course, book, only=only, force=force, students=students)
    if todo:  # what a killed grader left (its kernels' homes still mounted) goes before new kernels start
        scratch_folders.sweep(settings.scratch_root)
    workers = max(1, min(workers or default_workers(), len(todo) or 1))
    queued: queue.Queue[Job] = queue.Queue()
    for job in repeats_last(todo, _fingerprint):  # a copy of an earlier file then finds its run done, not running
        queued.put(job)
    lock = threading.Lock()

    def report(result: NotebookResult) -> None:
        with lock:
            progress.step(result)

    needed = bool(settings.fork_server and todo)
    if zygote is not None and not needed:
        zygote.close(now=True)
        zygote = None
    elif zygote is None and needed:
        zygote = Zygote()
    if todo:  # while the fork server imports JAX: timestamps.parse reads times as nbgrader does, and nbgrader's ~1 s
        import nbgrader.utils  # noqa: F401 - import is better paid once here than by every worker thread at once
    if settings.judged is None:  # identical programs judged once in this run (grader.programs.judged)
        settings = dataclasses.replace(settings, judged=Judged())
    if settings.identical is None:  # identical notebooks run once in this run (grader.classroom.identical)
        settings = dataclasses.replace(settings, identical=Identical())
    try:
        settings = _with_compile_cache(course, settings, todo, workers, zygote)
        threads = [threading.Thread(target=asyncio.run, args=(_worker(queued, course, settings, report, zygote),))
                   for _ in range(workers)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        if zygote is not None:
            zygote.close()
    for shared in (settings.identical, settings.judged):
        if todo and shared.reused:
            print(shared.summary(), file=sys.stderr, flush=True)
    results = book.all_results()
    book.write_tables(results)
    return results
