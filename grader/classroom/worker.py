"""What runs on a Dask worker: one submission's notebook in a confined kernel, from JSON to JSON
(``grader.classroom.cluster`` sends it and takes the answer back without trusting it)."""
from __future__ import annotations

import asyncio
import atexit
import json
import os
import stat
import tempfile
import threading
import traceback
from dataclasses import replace
from pathlib import Path

import nbformat

from grader.classroom.compile_cache import worker_folder
from grader.kernel.run import Execution, SandboxError, run_in, start_kernel
from grader.submission.pipeline import Settings, confinement, recorded_programs
from grader.programs import program_from_json, run_to_json
from grader.programs.judged import Judged
from grader.programs.launch import run_programs
from grader.sandbox import Limits


STARTED = "grader-started"


class NothingRan(RuntimeError):
    """The worker could not start a confined kernel; the submission never ran (safe to retry)."""


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


def _exposed_worker_key() -> str | None:
    """The worker's TLS key file, if other users (a kernel's uid) could read it; else None."""
    try:
        from distributed import get_worker

        security = get_worker().security
    except (ImportError, ValueError):
        return None
    path = security.tls_worker_key or security.tls_worker_cert  # the key may be inside the cert file
    if not path or "\n" in path:  # no TLS, or held in memory
        return None
    try:
        return path if stat.S_IMODE(os.stat(path).st_mode) & 0o044 else None
    except OSError:
        return None


_ZYGOTE = None
_ZYGOTE_LOCK = threading.Lock()


def worker_fork_server():
    """This worker process's fork server (``grader.sandbox.zygote``), started by its first task and kept for the next.

    It dies with the worker (its stdin closes); one is shared by the worker's threads.
    """
    global _ZYGOTE
    with _ZYGOTE_LOCK:
        if _ZYGOTE is None or _ZYGOTE._process.poll() is not None:
            from grader.sandbox.zygote import Zygote

            _ZYGOTE = Zygote()
            atexit.register(_ZYGOTE.close)
        return _ZYGOTE


_JUDGED: tuple[str, Judged] | None = None  # (the grading run's token, its programs judged on this worker)
_JUDGED_LOCK = threading.Lock()


def _judged_for(run) -> Judged | None:
    """This worker's ``Judged`` for the grading run ``run`` (a token the instructor's process draws per run); a new
    run replaces the last one's, so no run's programs are reused in another run."""
    global _JUDGED
    if not isinstance(run, str) or not 16 <= len(run) <= 64:
        return None
    with _JUDGED_LOCK:
        if _JUDGED is None or _JUDGED[0] != run:
            _JUDGED = (run, Judged())
        return _JUDGED[1]


async def started_kernel(conf, zygote):
    """A kernel for one notebook: forked from the fork server, else (or when that fails) started plainly, as the
    local grader's ``_execute`` replaces a kernel that does not start. NothingRan when none starts: no cell of the
    submission was sent, so the failure is the grader's (a loaded worker), never a grade of the learner's."""
    failures = []
    for fork in ([zygote] if zygote is not None else []) + [None]:
        try:
            return await start_kernel(conf, zygote=fork, preload=False)
        except Exception as error:  # noqa: BLE001 - reported, and the submission is retried where nothing ran
            failures.append(f"the kernel did not start ({type(error).__name__}: {str(error)[:200]})")
    raise NothingRan("; then ".join(failures))


def execute_notebook(notebook_json: str, limits: dict, confine: bool = True, programs: dict | None = None,
                     fork_server: bool = True, compile_cache: dict | None = None) -> dict:
    """Run one rebuilt notebook in a fresh confined kernel; JSON in, JSON out.

    This is the function a Dask worker runs: it starts a kernel for this notebook only (in a
    fresh scratch folder, under the worker's confinement) and stops it afterwards; then it runs
    the programs the notebook recorded (``programs``: ``{"num_devices": p, "declared": [...]}``,
    see ``grader.programs``) in a sandbox of their own, on inputs drawn here. It writes no result
    anywhere; the instructor's process judges what it returns. With ``fork_server``, the kernel
    and the program runner are forked from the worker's fork server (``worker_fork_server``), so
    a worker pays the imports once, as the local grader does. With ``compile_cache``
    (``grader.classroom.compile_cache.fill_request``), the worker's first task fills a compilation cache of this
    worker's own from the instructor's notebooks, and every kernel and program runner reads it, sealed,
    as on the instructor's machine.
    """
    if confine and os.geteuid() != 0:  # fail closed: an unsealed kernel could read this worker's key
        raise NothingRan(f"this worker runs as uid {os.geteuid()}, not root, so it cannot seal kernels (namespaces, "
                         "private root, uid switch, seccomp); run workers as root in their pod or job")
    exposed = _exposed_worker_key()
    if exposed is not None:  # a kernel under another uid could read it and join the cluster
        raise NothingRan(f"this worker's TLS key {exposed} is readable by other users; chmod 600 it")
    earlier = _claim_attempt()
    if earlier is not None:
        return {"error": f"the worker ({earlier}) died while running this notebook; it was not run again"}
    # The worker writes no grading output: `out` is only a required field of Settings.
    settings = Settings(out=Path(tempfile.gettempdir()), limits=Limits(**limits), confine=confine)
    nb = nbformat.from_dict(json.loads(notebook_json))
    ran = False

    zygote = worker_fork_server() if fork_server else None
    if compile_cache and confine:
        folder = worker_folder(compile_cache, settings, zygote)
        settings = replace(settings, compile_cache_dir=folder) if folder is not None else settings

    async def execute() -> Execution:
        nonlocal ran
        async with confinement(settings) as conf:
            ran = True
            return await run_in(await started_kernel(conf, zygote), nb, conf)

    try:
        execution = asyncio.run(execute())
    except NothingRan:
        _release_attempt()
        raise
    except SandboxError as error:  # the sandbox failed before exec: nothing of the submission ran
        _release_attempt()
        raise NothingRan(str(error)) from None
    except Exception as error:  # noqa: BLE001 - whatever failed is sent back to the instructor as such
        if not ran:  # no uid free, scratch folder not creatable, ...
            _release_attempt()
            raise NothingRan(f"{type(error).__name__}: {error}") from None
        return {"error": "".join(traceback.format_exception_only(type(error), error)).strip(),
                "traceback": traceback.format_exc()}
    runs = {}
    if programs:
        try:
            declared = [program_from_json(data) for data in programs["declared"]]
            blobs = recorded_programs(execution.notebook, declared)
            runs = {key: run_to_json(run) for key, run in
                    run_programs(blobs, declared, int(programs["num_devices"]), settings, zygote,
                                 judged=_judged_for(programs.get("run"))).items()}
        except Exception as error:  # noqa: BLE001 - the notebook ran: record the failure, never run it again
            return {"error": "the programs could not be run: "
                             + "".join(traceback.format_exception_only(type(error), error)).strip(),
                    "traceback": traceback.format_exc()}
    return {
        "programs": runs,
        "notebook": json.dumps(execution.notebook, ensure_ascii=False),
        "stopped": execution.stopped,
        "message": execution.message,
        "stopped_at_cell": execution.stopped_at_cell,
        "events": list(execution.events),
        "seconds": execution.seconds,
        "hooks_not_reset": list(execution.hooks_not_reset),
    }
