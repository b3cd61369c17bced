"""Warm kernels waiting for submissions: the service's grading workers.

A batch run starts its fork server and kernels when it starts and stops them when the folder is graded; the service
keeps them: one fork server (``grader.sandbox.zygote``) that imported the libraries once, and ``workers`` threads
that each hold one confined kernel already started, so a submission that arrives is running within a second. Each
kernel still runs exactly one notebook (``grader.classroom.batch.grade_job``, the same steps as a batch run) and
the worker starts the next one while the current notebook runs.
"""
from __future__ import annotations

import asyncio
import queue
import resource
import threading
from collections.abc import Callable
from dataclasses import dataclass

from grader.classroom.batch import discard_kernel, warm_kernel, grade_job
from grader.layout import Course
from grader.results import NotebookResult
from grader.sandbox import scratch
from grader.sandbox.zygote import Zygote
from grader.submission.rubric_loading import load_rubric
from grader.submission.pipeline import Job, Settings


@dataclass
class Task:
    job: Job
    settings: Settings  # the job's own output folder
    done: Callable[[NotebookResult | None], None]


class _Workers:
    """What both pools share: a queue of tasks, threads that each take one at a time, and a task's page released
    (one that fails is said, and grading goes on)."""

    def _start(self, workers: int, target: Callable[[], None], name: str) -> None:
        self.tasks: queue.Queue[Task | None] = queue.Queue()
        self.threads = [threading.Thread(target=target, daemon=True, name=f"{name}-{n}") for n in range(workers)]
        for thread in self.threads:
            thread.start()

    def submit(self, task: Task) -> None:
        self.tasks.put(task)

    def waiting(self) -> int:
        return self.tasks.qsize()

    @staticmethod
    def _done(task: Task, result: NotebookResult | None) -> None:
        try:
            task.done(result)
        except Exception:  # noqa: BLE001 - releasing one page failed (a full disk): say so, keep grading
            import sys
            import traceback

            print(f"serve: could not finish {task.job.student_id}/{task.job.assignment_id}:\n"
                  f"{traceback.format_exc()}", file=sys.stderr, flush=True)

    def _stop_threads(self) -> None:
        for _ in self.threads:
            self.tasks.put(None)
        for thread in self.threads:
            thread.join(timeout=60)


class Pool(_Workers):
    def __init__(self, course: Course, settings: Settings, workers: int):
        self.course, self.settings = course, settings
        scratch.sweep(settings.scratch_root)  # what a killed service left (homes still mounted) goes first
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if soft < hard:  # descriptors for kernels and the service's connections alike (a cap keeps clients to a few)
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        self.zygote = Zygote() if settings.fork_server else None
        for assignment in course.assignments():
            load_rubric(course.rubric(assignment))  # import once, before threads race to do it
        self._start(workers, lambda: asyncio.run(self._worker()), "grading-worker")

    async def _worker(self) -> None:
        warm = asyncio.ensure_future(warm_kernel(self.settings, self.zygote))
        try:
            while True:
                task = await asyncio.to_thread(self.tasks.get)
                if task is None:
                    return

                def take_kernel():
                    nonlocal warm
                    current, warm = warm, asyncio.ensure_future(warm_kernel(self.settings, self.zygote))
                    return current

                try:
                    result = await grade_job(task.job, self.course, task.settings, self.zygote, take_kernel)
                except BaseException:  # noqa: BLE001 - grade_job records its own failures; this is the last guard
                    result = None
                self._done(task, result)
        finally:
            await discard_kernel(warm)

    def close(self) -> None:
        self._stop_threads()
        if self.zygote is not None:
            self.zygote.close()


class ClusterPool(_Workers):
    """The service's grading on a Dask cluster (``serve --scheduler`` or ``--slurm-workers``): the same interface as
    ``Pool``; ``workers`` threads here each send one submission at a time to the cluster
    (``grader.classroom.cluster.ClusterRun``) and judge what comes back, so at most ``workers`` submissions are out
    at once. The cluster's workers keep their own fork servers and warm kernels, sealed as root."""

    def __init__(self, course: Course, settings: Settings, workers: int, client):
        """``client``: a ``distributed.Client``, or a callable that returns one (started only now, after the service
        has checked its exchange)."""
        from grader.classroom.cluster import ClusterRun

        self.client = client() if callable(client) else client
        self.run = ClusterRun(self.client, course, settings, course.assignments())
        self._start(workers, self._worker, "cluster-grading")

    def _worker(self) -> None:
        while (task := self.tasks.get()) is not None:
            future, pending = self.run.submit(task.job, task.settings)
            self._done(task, pending if future is None else self.run.collect(future, pending))

    def close(self) -> None:
        self._stop_threads()
        cluster = getattr(self.client, "cluster", None)
        self.client.close()
        if cluster is not None:  # a cluster this service started (Slurm jobs): its jobs end with it
            cluster.close()

