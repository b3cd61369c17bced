"""Grade a folder of submissions on a Dask distributed cluster, over mutual TLS.

The instructor's machine keeps everything that needs the course sources:
discovery, resume, ``prepare`` (rebuild each submission on the instructor's
skeleton) and ``finish`` (judge the records against the rubric, write the
autograded notebook, feedback and gradebook). Only the execution travels: each
Dask task is :func:`execute_notebook`, a plain function of JSON data (the
rebuilt notebook as nbformat JSON text, the limits as a dict, the confine
flag) that returns JSON data (the executed notebook and the fields of
:class:`~grader.kernel_run.Execution`). A worker therefore needs the course
environment (the installed ``grader`` and ``coursekit`` packages) and that
payload; it never sees a rubric or any other submission. To fill a compilation cache of its own
(``grader.compile_cache.worker_folder``), each worker also receives the instructor's notebooks of the
assignments graded, once per run (broadcast with ``client.scatter``): workers are trusted like the
instructor's machine, and only sealed kernels run there.

Trust: the cluster is authenticated with certificates made for the deployment
(``python -m grader certs``; :func:`client_security`), and a plain ``tcp://``
scheduler is refused unless the caller says ``insecure=True``: anyone who can
reach an unauthenticated scheduler can run code in every worker. A worker writes
nothing but its scratch folder; learner code runs only in the confined kernel
that :func:`execute_notebook` starts. What comes back is data, and the
instructor's process does not take it on trust (:func:`execution_from`): the
payload is type-checked and size-bounded (a notebook over the cap is the result
``too_much_output``), and only the outputs and execution counts of the code cells
are taken from it, grafted onto the notebook the instructor sent; every other
part of the notebook that is judged and written is the instructor's own.

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
import atexit
import copy
import json
import math
import os
import stat
import sys
import tempfile
import threading
import time
import traceback
from dataclasses import asdict, replace
from pathlib import Path

import nbformat

from .batch import outstanding
from .certs import Deployment
from .compile_cache import fill_request, worker_folder, worth_filling
from .gradebook import Gradebook
from .kernel_run import Execution, SandboxError, run_in, start_kernel
from .layout import Course
from .pipeline import (Settings, by_test, confinement, declared_programs, finish, grader_error, prepare,
                       recorded_programs)
from .programs import ProgramRun, program_from_json, program_to_json, run_to_json
from .programs.launch import run_from_json, run_programs
from .results import NotebookResult
from .sandbox import Limits

RETRIES = 2  # only for failures before any learner code ran (see module docstring)
STARTED = "grader-started"

# What a worker may send back (see execution_from).
RESULT_KEYS = frozenset({"notebook", "stopped", "message", "stopped_at_cell", "events", "seconds", "programs",
                         "hooks_not_reset"})
ERROR_KEYS = frozenset({"error", "traceback"})
STOPPED = frozenset({None, "timed_out", "kernel_died", "out_of_memory", "too_much_output", "exited"})
OUTPUT_TYPES = frozenset({"stream", "display_data", "execute_result", "error"})
MAX_TEXT = 4000  # characters kept of a message or an event
MAX_TRACEBACK = 50_000
MAX_SECONDS = 7 * 24 * 3600.0

PLAIN_TCP = (
    "refusing to use the Dask scheduler at {address!r}: it is not a tls:// address, so the connection is neither "
    "encrypted nor authenticated, and any process that can reach that scheduler can run its own code in every "
    "worker (distributed.Client(address).run(f)) and change the grades. Create certificates with "
    "`python -m grader certs DIR`, start `dask scheduler` and `dask worker` with --tls-ca-file, --tls-cert and "
    "--tls-key (README, \"On a cluster (Dask)\"), and pass --scheduler tls://HOST:PORT --tls-dir DIR. "
    "To use an unauthenticated cluster anyway (only on a network that nothing else can reach), add --insecure-cluster."
)


class NothingRan(RuntimeError):
    """The worker could not start a confined kernel; the submission never ran (safe to retry)."""


class WorkerFailed(RuntimeError):
    """The worker reported a failure after the notebook had started, or sent back something malformed;
    recorded as grader_error."""


class InsecureCluster(ValueError):
    """The scheduler address or the security settings would connect without mutual TLS."""


# ---------------------------------------------------------------- TLS


def _private_file(path, what: str) -> str:
    path = Path(path)
    try:
        mode = path.stat().st_mode
    except OSError as error:
        raise FileNotFoundError(f"{what} {path}: {error.strerror or error}") from None
    if not stat.S_ISREG(mode):
        raise FileNotFoundError(f"{what} {path} is not a file")
    if not os.access(path, os.R_OK):
        raise PermissionError(f"{what} {path} is not readable by this user")
    return str(path)


def _key_file(path, what: str) -> str:
    text = _private_file(path, what)
    mode = stat.S_IMODE(Path(path).stat().st_mode)
    if mode & 0o077:
        raise PermissionError(f"{what} {path} has mode {mode:04o}: a private key must be readable by its owner only "
                              f"(chmod 600 {path})")
    return text


def client_security(ca, cert, key):
    """The instructor's ``distributed.Security``: mutual TLS with this CA, this client certificate and key."""
    from distributed.security import Security

    return Security(require_encryption=True, tls_ca_file=_private_file(ca, "CA certificate"),
                    tls_client_cert=_private_file(cert, "client certificate"),
                    tls_client_key=_key_file(key, "client key"))


def client_security_from_dir(folder):
    """:func:`client_security` for a folder written by ``python -m grader certs``."""
    d = Deployment(Path(folder))
    return client_security(d.ca, d.client_cert, d.client_key)


def deployment_security(folder):
    """A ``distributed.Security`` for every role, from a folder written by ``python -m grader certs``.

    For a cluster that this process starts itself (``LocalCluster``, dask-jobqueue's ``SLURMCluster``,
    both with ``protocol="tls://"``): the scheduler and the workers use the cluster certificate, this
    process's client the client certificate.
    """
    from distributed.security import Security

    d = Deployment(Path(folder))
    cluster_cert = _private_file(d.cluster_cert, "cluster certificate")
    cluster_key = _key_file(d.cluster_key, "cluster key")
    return Security(require_encryption=True, tls_ca_file=_private_file(d.ca, "CA certificate"),
                    tls_scheduler_cert=cluster_cert, tls_scheduler_key=cluster_key,
                    tls_worker_cert=cluster_cert, tls_worker_key=cluster_key,
                    tls_client_cert=_private_file(d.client_cert, "client certificate"),
                    tls_client_key=_key_file(d.client_key, "client key"))


def check_transport(scheduler, security=None, *, insecure: bool = False) -> None:
    """Raise :class:`InsecureCluster` unless talking to ``scheduler`` is mutual TLS (or ``insecure``)."""
    if insecure:
        return
    if isinstance(scheduler, str):
        address = scheduler
    else:  # a cluster object: LocalCluster, KubeCluster, SLURMCluster
        address = str(getattr(scheduler, "scheduler_address", ""))
        if security is None:
            security = getattr(scheduler, "security", None)
    if not address.startswith("tls://"):
        raise InsecureCluster(PLAIN_TCP.format(address=address))
    if (security is None or not getattr(security, "require_encryption", False)
            or not getattr(security, "tls_ca_file", None) or not getattr(security, "tls_client_cert", None)):
        raise InsecureCluster(f"the scheduler at {address!r} needs this deployment's certificates: pass --tls-dir DIR "
                              f"(from `python -m grader certs DIR`) or --tls-ca, --tls-cert and --tls-key")


# ---------------------------------------------------------------- on the worker


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
    """This worker process's fork server (``grader.zygote``), started by its first task and kept for the next.

    It dies with the worker (its stdin closes); one is shared by the worker's threads.
    """
    global _ZYGOTE
    with _ZYGOTE_LOCK:
        if _ZYGOTE is None or _ZYGOTE._process.poll() is not None:
            from .zygote import Zygote

            _ZYGOTE = Zygote()
            atexit.register(_ZYGOTE.close)
        return _ZYGOTE


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
    (``grader.compile_cache.fill_request``), the worker's first task fills a compilation cache of this
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
            kernel = None
            if zygote is not None:
                try:
                    kernel = await start_kernel(conf, zygote=zygote)
                except Exception:  # noqa: BLE001 - run_in starts a kernel of its own, and reports a failure
                    kernel = None
            return await run_in(kernel, nb, conf)

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
    runs = {}
    if programs:
        try:
            declared = [program_from_json(data) for data in programs["declared"]]
            blobs = recorded_programs(execution.notebook, declared)
            runs = {key: run_to_json(run) for key, run in
                    run_programs(blobs, declared, int(programs["num_devices"]), settings, zygote).items()}
        except Exception as error:  # the notebook ran: record the failure, never run it again
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


# ---------------------------------------------------------------- back on the instructor's machine


def result_cap(notebook_json: str, limits: Limits) -> int:
    """The largest executed notebook (JSON characters) accepted back for ``notebook_json``.

    What was sent, plus 16 times the output cap (JSON quoting and the structure around each
    output can outweigh the characters the kernel's output cap counts), plus 1 MiB.
    """
    return len(notebook_json) + 16 * limits.max_output_bytes + 2**20


def _malformed(what: str) -> WorkerFailed:
    return WorkerFailed(f"the worker sent back a malformed result: {what}")


def _text(value, what: str, limit: int = MAX_TEXT) -> str:
    if type(value) is not str:
        raise _malformed(f"{what} is {type(value).__name__}, not str")
    return value if len(value) <= limit else value[:limit] + " [...]"


def _is_int(value) -> bool:
    return type(value) is int


def _graft(sent: nbformat.NotebookNode, returned) -> nbformat.NotebookNode:
    """The notebook the instructor sent, with the outputs and execution counts the worker returned.

    The cells must match what was sent (same number, types, ids and sources); nothing else of the
    returned notebook is used, except the kernel's ``language_info`` that nbclient records.
    """
    if type(returned) is not dict or type(returned.get("cells")) is not list:
        raise _malformed("the notebook is not a notebook")
    cells = returned["cells"]
    if len(cells) != len(sent.cells):
        raise _malformed(f"{len(cells)} cells came back for {len(sent.cells)} sent")
    merged = copy.deepcopy(sent)
    for index, (mine, theirs) in enumerate(zip(merged.cells, cells)):
        if type(theirs) is not dict:
            raise _malformed(f"cell {index} is not an object")
        for key in ("cell_type", "source", "id"):
            if theirs.get(key) != mine.get(key):
                raise _malformed(f"cell {index}: its {key} is not the one sent")
        if mine.cell_type != "code":
            continue
        count, outputs = theirs.get("execution_count"), theirs.get("outputs", [])
        if count is not None and not (_is_int(count) and count >= 0):
            raise _malformed(f"cell {index}: execution_count {count!r}")
        if type(outputs) is not list:
            raise _malformed(f"cell {index}: outputs is not a list")
        for output in outputs:
            if type(output) is not dict or output.get("output_type") not in OUTPUT_TYPES:
                raise _malformed(f"cell {index}: an output is not a notebook output")
        mine.execution_count = count
        mine.outputs = [nbformat.from_dict(output) for output in outputs]
    metadata = returned.get("metadata")
    if type(metadata) is dict and type(metadata.get("language_info")) is dict:
        merged.metadata.language_info = nbformat.from_dict(metadata["language_info"])
    return merged


def execution_from(payload, sent: nbformat.NotebookNode, *, max_notebook_chars: int) -> Execution:
    """The worker's answer as an Execution, checked; raises WorkerFailed for a reported failure or a malformed one.

    ``sent`` is the notebook the instructor submitted; an executed notebook longer than
    ``max_notebook_chars`` is not parsed: it is the result ``too_much_output``.
    """
    if type(payload) is not dict:
        raise _malformed(f"a {type(payload).__name__}, not a dict")
    keys = set(payload)
    if "error" in payload:
        if not keys <= ERROR_KEYS:
            raise _malformed(f"unexpected fields {sorted(map(str, keys - ERROR_KEYS))}")
        if payload.get("traceback") is not None:
            print(_text(payload["traceback"], "traceback", MAX_TRACEBACK), file=sys.stderr)
        raise WorkerFailed(_text(payload["error"], "error"))
    if keys != RESULT_KEYS:
        raise _malformed(f"fields {sorted(map(str, keys))}, expected {sorted(RESULT_KEYS)}")
    stopped, at, events, seconds = (payload["stopped"], payload["stopped_at_cell"], payload["events"],
                                    payload["seconds"])
    if not (stopped is None or type(stopped) is str) or stopped not in STOPPED:
        raise _malformed(f"stopped = {str(stopped)[:100]!r}")
    message = _text(payload["message"], "message")
    if at is not None and not (_is_int(at) and 0 <= at < len(sent.cells)):
        raise _malformed(f"stopped_at_cell = {str(at)[:100]!r}")
    if type(events) is not list or len(events) > len(sent.cells) + 16:
        raise _malformed("events is not a list of at most one event per cell")
    events = [_text(event, "an event") for event in events]
    unreset = payload["hooks_not_reset"]
    if type(unreset) is not list or len(unreset) > len(sent.cells):
        raise _malformed("hooks_not_reset is not a list of at most one grade id per cell")
    unreset = [_text(gid, "a grade id") for gid in unreset]
    if type(seconds) not in (int, float) or not (math.isfinite(seconds) and 0 <= seconds <= MAX_SECONDS):
        raise _malformed(f"seconds = {str(seconds)[:100]!r}")
    notebook = payload["notebook"]
    if type(notebook) is not str:
        raise _malformed(f"the notebook is {type(notebook).__name__}, not str")
    if len(notebook) > max_notebook_chars:
        message = (f"the executed notebook came back as {len(notebook)} characters, over the limit of "
                   f"{max_notebook_chars}; its outputs were dropped")
        unrun = copy.deepcopy(sent)
        for cell in unrun.cells:
            if cell.cell_type == "code":
                cell.outputs, cell.execution_count = [], None
        return Execution(notebook=unrun, stopped="too_much_output", message=message,
                         stopped_at_cell=None, events=events + [message], seconds=float(seconds),
                         hooks_not_reset=unreset)
    try:
        returned = json.loads(notebook)
    except (ValueError, RecursionError):
        raise _malformed("the notebook is not JSON") from None
    return Execution(notebook=_graft(sent, returned), stopped=stopped, message=message, stopped_at_cell=at,
                     events=events, seconds=float(seconds), hooks_not_reset=unreset)


def programs_from(payload, declared: list) -> dict:
    """The program runs the worker sent back, checked like everything else it sends; a program the worker did
    not report fails with that message (the programs are never run on the instructor's machine)."""
    sent = payload.get("programs") if isinstance(payload, dict) else None
    sent = sent if isinstance(sent, dict) else {}
    runs = {program.key: run_from_json(sent[program.key], program) if program.key in sent else
            ProgramRun(program.key, error="the worker did not report this program") for program in declared}
    return by_test(runs)


def grade_all_on_cluster(submissions: Path, course: Course, settings: Settings, scheduler, *,
                         security=None, insecure: bool = False, only: list[str] | None = None, force: bool = False,
                         max_result_bytes: int | None = None) -> list[NotebookResult]:
    """Like :func:`grader.batch.grade_all`, with the executions on the Dask cluster at ``scheduler``.

    ``scheduler`` is an address (``tls://HOST:PORT``) or a ``distributed.Client``-compatible
    cluster object (``LocalCluster``, ``KubeCluster``, ``SLURMCluster``). ``security`` is the
    client's ``distributed.Security`` (:func:`client_security`; a cluster object brings its own).
    Anything but mutual TLS raises :class:`InsecureCluster`, unless ``insecure``. An executed
    notebook longer than ``max_result_bytes`` characters (default: :func:`result_cap`) comes
    back as ``too_much_output``.
    """
    check_transport(scheduler, security, insecure=insecure)
    from distributed import Client, as_completed

    book = Gradebook(settings.out)
    todo, progress = outstanding(submissions, course, book, only=only, force=force)
    limits = asdict(settings.limits)

    if todo:
        with Client(scheduler, security=security) as client:
            cache = None  # each worker compiles the instructor's programs once, for itself (grader.compile_cache)
            assignments = worth_filling([job.assignment_id for job in todo])
            if settings.compile_cache and settings.confine and assignments:
                request = fill_request(course, assignments, settings)
                cache = client.scatter([request], broadcast=True, hash=True)[0]  # one future: the whole dict
            running: dict = {}  # future -> (prepared submission, seconds its prepare took, result cap)
            for job in todo:
                prepared = None
                try:
                    prepared = prepare(job, course, settings)
                    prepare_s = time.monotonic() - prepared.started
                    if prepared.notebook is None:
                        progress.step(finish(prepared, None, course, settings))
                        continue
                    sent = json.dumps(prepared.notebook)
                    cap = max_result_bytes if max_result_bytes is not None else result_cap(sent, settings.limits)
                    declared = declared_programs(course, job.assignment_id, settings.num_devices)
                    programs = {"num_devices": settings.num_devices,
                                "declared": [program_to_json(program) for program in declared]}
                    future = client.submit(execute_notebook, sent, limits, settings.confine, programs,
                                           settings.fork_server, cache, pure=False, retries=RETRIES)
                    running[future] = prepared, prepare_s, cap, declared
                except Exception:
                    progress.step(grader_error(job, course, settings, prepared))
            for future in as_completed(running):
                prepared, prepare_s, cap, declared = running.pop(future)
                try:
                    payload = future.result()
                    execution = execution_from(payload, prepared.notebook, max_notebook_chars=cap)
                    # Time as the local path counts it: prepare, execute, finish (not the wait in the queue).
                    prepared.started = time.monotonic() - execution.seconds - prepare_s
                    result = finish(prepared, execution, course, settings, programs_from(payload, declared))
                except Exception:
                    result = grader_error(prepared.job, course, settings, prepared)
                finally:
                    future.release()
                progress.step(result)
    results = book.all_results()
    book.write_tables(results)
    return results


__all__ = ["InsecureCluster", "NothingRan", "WorkerFailed", "check_transport", "client_security",
           "client_security_from_dir", "deployment_security", "execute_notebook", "execution_from",
           "grade_all_on_cluster", "result_cap"]
