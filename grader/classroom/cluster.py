"""Grade a folder of submissions on a Dask distributed cluster, over mutual TLS.

The instructor's machine keeps everything that needs the course sources:
discovery, resume, ``prepare`` (rebuild each submission on the instructor's
skeleton) and ``finish`` (judge the records against the rubric, write the
autograded notebook, feedback and gradebook). Only the execution travels: each
Dask task is :func:`execute_notebook`, a plain function of JSON data (the
rebuilt notebook as nbformat JSON text, the limits as a dict, the confine
flag) that returns JSON data (the executed notebook and the fields of
:class:`~grader.kernel.run.Execution`). A worker therefore needs the course
environment (the installed ``grader`` and ``coursekit`` packages) and that
payload; it never sees a rubric or any other submission. To fill a compilation cache of its own
(``grader.classroom.compile_cache.worker_folder``), each worker also receives the instructor's notebooks of the
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
uid free, the sandbox could not confine the kernel, no kernel started, forked
or plain), and only then does Dask retry it. Whatever the notebook does to its kernel (a timeout, ``os._exit``,
memory) comes back as a result and is never re-run. If the worker process
itself dies while a notebook runs, the scheduler would normally reschedule
the task; the task marks itself as started in the scheduler's task metadata,
so a second attempt does not run the notebook again but reports the crash,
which is recorded as ``grader_error`` (retried by the next ``grade`` run, like
every ``grader_error``).
"""
from __future__ import annotations

import copy
import json
import math
import secrets
import sys
import time
from dataclasses import asdict
from pathlib import Path

import nbformat

from grader.classroom.batch import outstanding
from grader.classroom.compile_cache import fill_request, worth_filling
from grader.term.gradebook import Gradebook
from grader.kernel.run import Execution
from grader.layout import Course
from grader.submission.pipeline import Settings, by_test, declared_programs, finish, grader_error, prepare
from grader.programs import ProgramRun, program_to_json
from grader.programs.launch import run_from_json
from grader.results import NotebookResult
from grader.sandbox import Limits
# The cluster's public names include its transport's (python -m grader grade --scheduler, the recipes in docs/how-to).
from grader.classroom.tls import (PLAIN_TCP, InsecureCluster, check_transport, client_security, client_security_from_dir,
                                  deployment_security)
from grader.classroom.worker import NothingRan, execute_notebook


RETRIES = 2  # only for failures before any learner code ran (see module docstring)

# What a worker may send back (see execution_from).
RESULT_KEYS = frozenset({"notebook", "stopped", "message", "stopped_at_cell", "events", "seconds", "programs",
                         "hooks_not_reset"})
ERROR_KEYS = frozenset({"error", "traceback"})
STOPPED = frozenset({None, "timed_out", "kernel_died", "out_of_memory", "too_much_output", "exited"})
OUTPUT_TYPES = frozenset({"stream", "display_data", "execute_result", "error"})
MAX_TEXT = 4000  # characters kept of a message or an event
MAX_TRACEBACK = 50_000
MAX_SECONDS = 7 * 24 * 3600.0


class WorkerFailed(RuntimeError):
    """The worker reported a failure after the notebook had started, or sent back something malformed;
    recorded as grader_error."""


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


class ClusterRun:
    """One grading run's use of a Dask cluster, a submission at a time: ``submit`` prepares it here and sends its
    notebook to a worker, ``collect`` turns what came back into its result (judged here, as the local path does).
    The instructor's compiled programs are scattered to every worker once (``grader.classroom.compile_cache``), and
    a worker reuses program runs within this run only. Used by a batch run (``grade_all_on_cluster``) and by the
    grading service (``grader.service.pool.ClusterPool``)."""

    def __init__(self, client, course: Course, settings: Settings, assignments: list[str], *,
                 max_result_bytes: int | None = None):
        self.client, self.course, self.settings, self.max_result_bytes = client, course, settings, max_result_bytes
        self.limits = asdict(settings.limits)
        self.cache = None
        fill = worth_filling(assignments)
        if settings.compile_cache and settings.confine and fill:
            self.cache = client.scatter([fill_request(course, fill, settings)], broadcast=True, hash=True)[0]
        self.token = secrets.token_hex(16)

    def submit(self, job, settings: Settings | None = None):
        """``(future, pending)`` for a submission sent to a worker, or ``(None, result)`` when it was decided here
        (nothing to run, or the grader failed preparing it). ``settings``: this submission's own (its output folder,
        as the service gives each attempt one), else the run's."""
        settings = settings or self.settings
        prepared = None
        try:
            prepared = prepare(job, self.course, settings)
            prepare_s = time.monotonic() - prepared.started
            if prepared.notebook is None:
                return None, finish(prepared, None, self.course, settings)
            sent = json.dumps(prepared.notebook)
            cap = self.max_result_bytes if self.max_result_bytes is not None else result_cap(sent, settings.limits)
            declared = declared_programs(self.course, job.assignment_id, settings.num_devices)
            programs = {"num_devices": settings.num_devices, "run": self.token,
                        "declared": [program_to_json(program) for program in declared]}
            future = self.client.submit(execute_notebook, sent, self.limits, settings.confine, programs,
                                        settings.fork_server, self.cache, pure=False, retries=RETRIES)
            return future, (prepared, prepare_s, cap, declared, settings)
        except Exception:  # noqa: BLE001 - a failure to send is the grader's: this notebook's grader error
            return None, grader_error(job, self.course, settings, prepared)

    def collect(self, future, pending) -> NotebookResult:
        prepared, prepare_s, cap, declared, settings = pending
        try:
            payload = future.result()
            execution = execution_from(payload, prepared.notebook, max_notebook_chars=cap)
            # Time as the local path counts it: prepare, execute, finish (not the wait in the queue).
            prepared.started = time.monotonic() - execution.seconds - prepare_s
            return finish(prepared, execution, self.course, settings, programs_from(payload, declared))
        except Exception:  # noqa: BLE001 - a failure to judge is the grader's: this notebook's grader error
            return grader_error(prepared.job, self.course, settings, prepared)
        finally:
            future.release()


NODE_ADDRESS = ('COURSE_NODE_ADDR=$(scontrol -o show node "$SLURMD_NODENAME" | sed -n \'s/.* NodeAddr=\\([^ ]*\\).*/\\1/p\')'
                '; COURSE_NODE_ADDR=${COURSE_NODE_ADDR:-$(hostname)}')


def slurm_client(jobs: int, tls: Path, *, host: str = "127.0.0.1", memory: str = "4GiB", queue: str | None = None):
    """A Dask client on ``jobs`` Slurm jobs: dask-jobqueue's ``SLURMCluster`` with the documented recipe's arguments
    (docs/how-to/grade-on-a-cluster.md), this Python on the nodes, the course's certificates in ``tls`` (mutual TLS),
    the scheduler in this process on ``host`` (an address every node reaches; loopback on one machine). The jobs
    are cancelled when the client's cluster closes (``ClusterPool.close``)."""
    from dask_jobqueue import SLURMCluster
    from distributed import Client

    loopback = host.startswith("127.")
    # each worker listens on its node's address as Slurm knows it (NodeAddr, as the learners' servers do:
    # grader.slurm.spawner), where the scheduler reaches it; dask's own guess routes to 8.8.8.8, which a compute
    # node often cannot, and it then falls back to 127.0.0.1, where no scheduler on another host can gather from it
    cluster = SLURMCluster(cores=3, processes=1, job_cpu=2, memory=memory, walltime="24:00:00", queue=queue,
                           python=sys.executable, protocol="tls://", security=deployment_security(tls),
                           scheduler_options={"host": host, "dashboard_address": None},
                           job_script_prologue=[] if loopback else [NODE_ADDRESS],
                           worker_extra_args=["--host", host] if loopback else ["--host", '"$COURSE_NODE_ADDR"'],
                           job_name="course-grading", log_directory=str(Path(tls).parent / "grading-jobs"))
    cluster.scale(jobs=jobs)
    return Client(cluster, security=cluster.security)


def grade_all_on_cluster(submissions: Path, course: Course, settings: Settings, scheduler, *,
                         security=None, insecure: bool = False, only: list[str] | None = None, force: bool = False,
                         max_result_bytes: int | None = None, students: list[str] | None = None) -> list[NotebookResult]:
    """Like :func:`grader.classroom.batch.grade_all`, with the executions on the Dask cluster at ``scheduler``.

    ``scheduler`` is an address (``tls://HOST:PORT``) or a ``distributed.Client``-compatible
    cluster object (``LocalCluster``, ``KubeCluster``, ``SLURMCluster``). ``security`` is the
    client's ``distributed.Security`` (:func:`client_security`; a cluster object brings its own).
    Anything but mutual TLS raises :class:`InsecureCluster`, unless ``insecure``. An executed
    notebook longer than ``max_result_bytes`` characters (default: :func:`result_cap`) comes
    back as ``too_much_output``. ``students``: only these learners (as in ``grade_all``).
    """
    check_transport(scheduler, security, insecure=insecure)
    from distributed import Client, as_completed

    book = Gradebook(settings.out)
    todo, progress = outstanding(submissions, course, book, only=only, force=force, students=students)
    if todo:
        with Client(scheduler, security=security) as client:
            run = ClusterRun(client, course, settings, [job.assignment_id for job in todo],
                             max_result_bytes=max_result_bytes)
            running: dict = {}  # future -> what collect needs
            for job in todo:
                future, pending = run.submit(job)
                if future is None:
                    progress.step(pending)
                else:
                    running[future] = pending
            for future in as_completed(running):
                progress.step(run.collect(future, running.pop(future)))
    results = book.all_results()
    book.write_tables(results)
    return results


__all__ = ["PLAIN_TCP", "ClusterRun", "InsecureCluster", "NothingRan", "WorkerFailed", "check_transport",
           "client_security", "client_security_from_dir", "deployment_security", "execute_notebook", "execution_from",
           "grade_all_on_cluster", "result_cap", "cluster_security", "slurm_client"]


def cluster_security(args):
    """The client's TLS settings for ``grade --scheduler`` (the command's parsed options), or None for an explicit
    --insecure-cluster; raises ValueError naming the options that do not fit together."""
    if args.max_result_bytes is not None and args.max_result_bytes < 1:
        raise ValueError("--max-result-bytes must be positive")
    files = {"--tls-ca": args.tls_ca, "--tls-cert": args.tls_cert, "--tls-key": args.tls_key}
    given = [flag for flag, value in files.items() if value]
    if args.tls_dir and given:
        raise ValueError(f"give either --tls-dir or {', '.join(files)}, not both")
    if given and len(given) < len(files):
        raise ValueError(f"{', '.join(given)} also needs {', '.join(f for f in files if f not in given)}")
    tls = bool(args.tls_dir or given)
    if not args.scheduler.startswith("tls://"):
        if tls:
            raise ValueError(f"certificates were given but the scheduler address {args.scheduler!r} is not tls://")
        if not args.insecure_cluster:
            raise ValueError(PLAIN_TCP.format(address=args.scheduler))
        print(f"grade: WARNING: --insecure-cluster: {args.scheduler} is neither encrypted nor authenticated; anyone "
              "who can reach it can run code on its workers and change the grades", file=sys.stderr)
        return None
    if not tls:
        raise ValueError(f"the scheduler at {args.scheduler!r} needs this deployment's certificates: --tls-dir DIR "
                         "(from `python -m grader certs DIR`) or --tls-ca, --tls-cert and --tls-key")
    if args.tls_dir:
        return client_security_from_dir(args.tls_dir)
    return client_security(args.tls_ca, args.tls_cert, args.tls_key)
