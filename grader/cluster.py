"""Grade a folder of submissions on a Dask distributed cluster.

The instructor's machine keeps everything that needs the course sources:
discovery, resume, ``prepare`` (rebuild each submission on the instructor's
skeleton) and ``finish`` (judge the records against the rubric, write the
autograded notebook, feedback and gradebook). Only the execution travels: each
Dask task is :func:`execute_notebook`, a plain function of JSON data (the
rebuilt notebook as nbformat JSON text, the limits as a dict, the confine
flag) that returns JSON data (the executed notebook and the fields of
:class:`~grader.kernel_run.Execution`). A worker therefore needs the course
environment (the installed ``grader`` and ``coursekit`` packages) and that
payload; it never sees ``source/``, a rubric, or any other submission.

Retries: a task raises only when nothing of the submission ran (no sandbox
uid free, the sandbox could not confine the kernel), and only then does Dask
retry it. Whatever the notebook does to its kernel (a timeout, ``os._exit``,
memory) comes back as a result and is never re-run. If the worker process
itself dies while a notebook runs, the scheduler would normally reschedule
the task; the task marks itself as started in the scheduler's task metadata,
so a second attempt does not run the notebook again but reports the crash,
which is recorded as ``grader_error`` (retried by the next ``grade`` run, like
every ``grader_error``).
"""
from __future__ import annotations

import asyncio
import json
import sys
import tempfile
import time
import traceback
from dataclasses import asdict
from pathlib import Path

import nbformat

from .batch import outstanding
from .gradebook import Gradebook
from .kernel_run import Execution, SandboxError, run_in
from .layout import Course
from .pipeline import Settings, confinement, finish, grader_error, prepare
from .results import NotebookResult
from .sandbox import Limits

RETRIES = 2  # only for failures before any learner code ran (see module docstring)
STARTED = "grader-started"


class NothingRan(RuntimeError):
    """The worker could not start a confined kernel; the submission never ran (safe to retry)."""


class WorkerFailed(RuntimeError):
    """The worker reported a failure after the notebook had started; recorded as grader_error."""


def _claim_attempt() -> str | None:
    """Mark this task as started in the scheduler; say so if an earlier attempt already started it.

    Returns the address of the worker of an earlier attempt, or None for the first attempt
    (or when not running on a Dask worker at all).
    """
    try:
        from distributed import get_client, get_worker

        worker = get_worker()
    except (ImportError, ValueError):
        return None
    key = worker.get_current_task()
    client = get_client()
    earlier = client.get_metadata([key, STARTED], default=None)
    if earlier:
        return str(earlier)
    client.set_metadata([key, STARTED], worker.address)
    return None


def _release_attempt() -> None:
    """Forget the start mark: the attempt failed before running anything, so a retry is safe."""
    try:
        from distributed import get_client, get_worker

        worker = get_worker()
    except (ImportError, ValueError):
        return
    get_client().set_metadata([worker.get_current_task(), STARTED], None)


def execute_notebook(notebook_json: str, limits: dict, confine: bool = True) -> dict:
    """Run one rebuilt notebook in a fresh confined kernel; JSON in, JSON out.

    This is the function a Dask worker runs: it starts a kernel for this notebook only (in a
    fresh scratch folder, under the worker's confinement) and stops it afterwards.
    """
    earlier = _claim_attempt()
    if earlier is not None:
        return {"error": f"the worker ({earlier}) died while running this notebook; it was not run again"}
    # The worker writes no grading output: `out` is only a required field of Settings.
    settings = Settings(out=Path(tempfile.gettempdir()), limits=Limits(**limits), confine=confine)
    nb = nbformat.from_dict(json.loads(notebook_json))
    ran = False

    async def execute() -> Execution:
        nonlocal ran
        async with confinement(settings) as conf:
            ran = True
            return await run_in(None, nb, conf)

    try:
        execution = asyncio.run(execute())
    except SandboxError as error:  # the sandbox failed before exec: nothing of the submission ran
        _release_attempt()
        raise NothingRan(str(error)) from None
    except Exception as error:
        if not ran:  # no uid free, scratch folder not creatable, ...
            _release_attempt()
            raise NothingRan(f"{type(error).__name__}: {error}") from None
        return {"error": "".join(traceback.format_exception_only(type(error), error)).strip(),
                "traceback": traceback.format_exc()}
    return {
        "notebook": json.dumps(execution.notebook),
        "stopped": execution.stopped,
        "message": execution.message,
        "stopped_at_cell": execution.stopped_at_cell,
        "events": list(execution.events),
        "seconds": execution.seconds,
    }


def execution_from(payload: dict) -> Execution:
    """The worker's answer as an Execution; raises WorkerFailed for a reported failure."""
    if "error" in payload:
        if payload.get("traceback"):
            print(payload["traceback"], file=sys.stderr)
        raise WorkerFailed(payload["error"])
    return Execution(notebook=nbformat.from_dict(json.loads(payload["notebook"])), stopped=payload["stopped"],
                     message=payload["message"], stopped_at_cell=payload["stopped_at_cell"],
                     events=list(payload["events"]), seconds=payload["seconds"])


def grade_all_on_cluster(submissions: Path, course: Course, settings: Settings, scheduler: str, *,
                         only: list[str] | None = None, force: bool = False) -> list[NotebookResult]:
    """Like :func:`grader.batch.grade_all`, with the executions on the Dask cluster at ``scheduler``.

    ``scheduler`` is an address (``tcp://HOST:PORT``) or a ``distributed.Client``-compatible
    cluster object (``LocalCluster``, ``KubeCluster``, ``SLURMCluster``).
    """
    from distributed import Client, as_completed

    book = Gradebook(settings.out)
    todo, progress = outstanding(submissions, course, book, only=only, force=force)
    limits = asdict(settings.limits)

    if todo:
        with Client(scheduler) as client:
            running: dict = {}  # future -> (prepared submission, seconds its prepare took)
            for job in todo:
                prepared = None
                try:
                    prepared = prepare(job, course, settings)
                    prepare_s = time.monotonic() - prepared.started
                    if prepared.notebook is None:
                        progress.step(finish(prepared, None, course, settings))
                        continue
                    future = client.submit(execute_notebook, json.dumps(prepared.notebook), limits, settings.confine,
                                           pure=False, retries=RETRIES)
                    running[future] = prepared, prepare_s
                except Exception:
                    progress.step(grader_error(job, course, settings, prepared))
            for future in as_completed(running):
                prepared, prepare_s = running.pop(future)
                try:
                    execution = execution_from(future.result())
                    # Time as the local path counts it: prepare, execute, finish (not the wait in the queue).
                    prepared.started = time.monotonic() - execution.seconds - prepare_s
                    result = finish(prepared, execution, course, settings)
                except Exception:
                    result = grader_error(prepared.job, course, settings, prepared)
                finally:
                    future.release()
                progress.step(result)
    results = book.all_results()
    book.write_tables(results)
    return results


__all__ = ["execute_notebook", "execution_from", "grade_all_on_cluster"]
