"""Grade a folder of submissions, several at a time, resumably.

Kernels are forked from one fork server per run (``grader.zygote``), so the
imports are paid once, and each worker starts its next kernel while the
current notebook runs; every kernel still runs exactly one notebook.

Submissions are laid out as nbgrader's ``submitted/{student_id}/{assignment_id}/``.
Each kernel has its own scratch directory and, under root, its own leased uid,
so concurrent kernels cannot see each other.
"""
from __future__ import annotations

import asyncio
import contextlib
import os
import queue
import threading
import re
import sys
import time
from pathlib import Path

from .gradebook import Gradebook
from .intake import InvalidSubmission, digest, locate
from .judge import load_rubric
from .layout import Course
from .kernel_run import run_in, start_kernel, stop_kernel
from .pipeline import Job, Settings, confinement, finish, grader_error, notebook_name, prepare
from .results import NotebookResult, Status
from .zygote import Zygote

SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@+-]{0,127}$")


def discover(submissions: Path, course: Course, only: list[str] | None = None) -> tuple[list[Job], list[NotebookResult]]:
    """Jobs to grade, plus results for folders that cannot be graded at all."""
    jobs, rejected = [], []
    known = set(course.assignments())
    for student in sorted(p for p in submissions.iterdir() if p.is_dir() and not p.is_symlink()):
        for folder in sorted(p for p in student.iterdir() if p.is_dir() and not p.is_symlink()):
            if only and folder.name not in only:
                continue
            if not SAFE_NAME.match(student.name) or folder.name not in known:
                if SAFE_NAME.match(student.name) and SAFE_NAME.match(folder.name):
                    rejected.append(NotebookResult(student.name, folder.name, notebook_name(folder.name), Status.INVALID_NOTEBOOK,
                                                   f"unknown assignment {folder.name!r}"))
                continue
            jobs.append(Job(student.name, folder.name, folder))
    return jobs, rejected


def _fingerprint(job: Job) -> str | None:
    try:
        return digest(locate(job.folder, notebook_name(job.assignment_id)))
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
              f"{result.status.value} {result.score:g}/{result.max_score:g} ({note}), ~{left:.0f} s left",
              file=self.stream, flush=True)


async def _warm_kernel(settings: Settings, zygote: Zygote | None):
    """A confined kernel with the libraries imported, and the stack that frees it."""
    stack = contextlib.AsyncExitStack()
    try:
        conf = await stack.enter_async_context(confinement(settings))
        kernel = await start_kernel(conf, zygote=zygote)
    except BaseException:
        await stack.aclose()
        raise
    return kernel, stack


async def _worker(jobs: queue.Queue, course: Course, settings: Settings, report, zygote: Zygote | None) -> None:
    """Grade jobs one after another; with pre-warming, the next kernel starts
    while the current notebook runs. Each kernel runs exactly one notebook."""
    warm: asyncio.Task | None = None
    try:
        while True:
            try:
                job = jobs.get_nowait()
            except queue.Empty:
                return
            prepared = None
            try:
                prepared = prepare(job, course, settings)
                if prepared.notebook is None:
                    report(finish(prepared, None, course, settings))
                    continue
                current = warm or asyncio.ensure_future(_warm_kernel(settings, zygote))
                warm = (asyncio.ensure_future(_warm_kernel(settings, zygote))
                        if settings.prewarm and not jobs.empty() else None)
                kernel, stack = await current
                try:
                    execution = await run_in(kernel, prepared.notebook, kernel.conf)
                finally:
                    await stack.aclose()
                report(finish(prepared, execution, course, settings))
            except Exception:
                report(grader_error(job, course, settings, prepared))
    finally:
        if warm is not None:
            try:
                kernel, stack = await warm
                await stop_kernel(kernel)
                await stack.aclose()
            except Exception:
                pass


def outstanding(submissions: Path, course: Course, book: Gradebook, *, only: list[str] | None = None,
                force: bool = False) -> tuple[list[Job], Progress]:
    """The jobs still to grade; unusable folders and results kept from an earlier run are recorded now."""
    jobs, rejected = discover(submissions, course, only)
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


def grade_all(submissions: Path, course: Course, settings: Settings, *, workers: int | None = None,
              only: list[str] | None = None, force: bool = False) -> list[NotebookResult]:
    book = Gradebook(settings.out)
    todo, progress = outstanding(submissions, course, book, only=only, force=force)
    workers = max(1, min(workers or os.cpu_count() or 1, len(todo) or 1))
    queued: queue.Queue[Job] = queue.Queue()
    for job in todo:
        queued.put(job)
    lock = threading.Lock()

    def report(result: NotebookResult) -> None:
        with lock:
            progress.step(result)

    zygote = Zygote() if settings.fork_server and todo else None
    try:
        threads = [threading.Thread(target=asyncio.run, args=(_worker(queued, course, settings, report, zygote),))
                   for _ in range(workers)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        if zygote is not None:
            zygote.close()
    results = book.all_results()
    book.write_tables(results)
    return results
