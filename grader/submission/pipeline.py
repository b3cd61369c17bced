"""Grade one submitted notebook: a fixed sequence of small steps, in three phases.

    prepare:  locate -> read -> rebuild on the course skeleton -> scan learner code
              -> move hidden test parts after the learner's last cell (``order.split``)
    execute:  run in a confined kernel (``kernel_run``; locally or on a Dask worker)
    finish:   put hidden parts back in their test cells (``order.rejoin``) -> judge recorded values
              -> decide status -> write autograded notebook, feedback and result

Only ``execute`` runs learner code, and it needs nothing but the rebuilt
notebook, so ``batch`` and ``cluster`` can place it where they like. Anything
the submission does ends in a recorded status; only a bug in the grader itself
becomes ``grader_error``, and even that is recorded.
"""
from __future__ import annotations

import contextlib
import html
import sys
import time
import traceback
from dataclasses import dataclass, field, replace
from pathlib import Path

import nbformat

import coursekit

from grader import cells, raised

from grader.submission import intake, order, restore, scan, timestamps
from grader.submission.feedback import render
from grader.term.gradebook import MAX_GRADER_ATTEMPTS, Gradebook, atomic_write
from grader.submission.judge import NOT_REACHED, Evidence, Verdict
from grader.submission.rubric_loading import load_rubric
from grader.visible_checks import visible_check
from grader.kernel.run import Execution
from grader.sandbox import scratch as scratch_folders
from grader.sandbox.lease import leased_uid, memory_group
from grader.programs import Program, ProgramRun
from grader.programs.launch import run_programs
from grader.layout import Course
from grader.submission.records import records_of_cell
from grader.results import NotebookResult, Status, TestResult
from grader.sandbox import Confinement, Limits
from grader.submission.sanitize import sanitize_notebook


@dataclass
class Job:
    student_id: str
    assignment_id: str
    folder: Path  # submitted/{student}/{assignment}


@dataclass
class Settings:
    out: Path
    limits: Limits = field(default_factory=Limits)
    num_devices: int = 4
    platform: str = "cpu"
    scratch_root: Path | None = None
    confine: bool = True
    prewarm: bool = True  # start each worker's next kernel while the current one runs
    fork_server: bool = True  # fork kernels from a process that imported the libraries once
    compile_cache: bool = True  # program runners read the instructor's programs compiled beforehand (grader.classroom.compile_cache)
    compile_cache_dir: Path | None = None  # that folder, once filled and sealed (bound into program runners only)
    judged: object | None = field(default=None, compare=False, repr=False)  # the run's grader.programs.judged.Judged
    identical: object | None = field(default=None, compare=False, repr=False)  # grader.classroom.identical.Identical


def notebook_name(assignment: str) -> str:
    return f"{assignment}.ipynb"


@dataclass
class Prepared:
    """A submission ready to run: everything the execution step needs, and no more."""

    job: Job
    result: NotebookResult
    notebook: nbformat.NotebookNode | None  # None: nothing to run (invalid, missing)
    sha256: str | None
    started: float


PREPARE_BUDGET_S = 60.0  # for all the work on one submission before it runs (reading, rebuilding, scanning)
SHOWN_DUPLICATES = 10


def _skeleton(job: Job, source) -> NotebookResult:
    """The result before anything is known: every test of the course's notebook at 0 of its points."""
    result = NotebookResult(job.student_id, job.assignment_id, notebook_name(job.assignment_id), Status.GRADED, "")
    result.tests = [TestResult(cells.grade_id(c), 0.0, cells.points(c), False, "not run")
                    for c in source.cells if cells.is_autograded_test(c)]
    result.manual_max_score = sum(cells.points(c) for c in source.cells if cells.is_manual_answer(c))
    return result


def prepare(job: Job, course: Course, settings: Settings) -> Prepared:
    """Locate, read, rebuild on the course skeleton, scan; no learner code runs.

    Bounded: ``intake`` checks sizes before reading and parsing, and the whole
    phase has ``PREPARE_BUDGET_S``; a submission over a limit is ``too_large``.
    """
    started = time.monotonic()
    deadline = intake.Deadline(PREPARE_BUDGET_S)
    name = notebook_name(job.assignment_id)
    source = course.read_source(job.assignment_id)
    result = _skeleton(job, source)
    result.submitted_at, result.submitted_note = timestamps.read(job.folder)  # due dates: grader.nbgrader_adapter.late
    sha256 = None
    try:
        submission = intake.read(intake.locate(job.folder, name), deadline)
        sha256 = submission.sha256
        release = course.read_release(job.assignment_id)
        rebuilt, tampering = restore.rebuild(source, release, submission.notebook)
        deadline.check("rebuilding the notebook on the course's cells")
        flags = learner_flags(rebuilt, deadline)
    except intake.InvalidSubmission as invalid:
        result.status, result.message = Status(invalid.status), invalid.message
        result.tests = [TestResult(t.grade_id, 0.0, t.max_points, False, "not graded: " + invalid.message)
                        for t in result.tests]
        return Prepared(job, result, None, invalid.fingerprint or sha256, started)  # kept by the next run
    result.tampering = tampering
    if submission.duplicate_cell_ids:
        shown = submission.duplicate_cell_ids[:SHOWN_DUPLICATES]
        more = len(submission.duplicate_cell_ids) - len(shown)
        result.tampering.insert(0, f"duplicated cell ids: {', '.join(intake.shown_name(str(i)[:100]) for i in shown)}"
                                   + (f" and {more} more" if more else ""))
    result.flags = flags
    # figures_dir None: figure cells display their PNG and write no SVG (the sanitized copies keep none)
    restore.inject_parameters(rebuilt, {"num_devices": settings.num_devices, "platform": settings.platform,
                                        "figures_dir": None})
    return Prepared(job, result, order.split(rebuilt, course.hidden_cases(job.assignment_id),
                                             draw=order.learner_draw(order.answers_key(rebuilt), job.assignment_id)),
                    submission.sha256, started)


def finish(prepared: Prepared, execution: Execution | None, course: Course, settings: Settings,
           programs: dict[str, dict[str, ProgramRun]] | None = None) -> NotebookResult:
    """Judge the records (and the programs, run by ``program_runs`` unless given), decide the status and
    write every output file."""
    result, job = prepared.result, prepared.job
    if execution is not None:
        if programs is None:
            programs = program_runs(prepared, execution, course, settings)
        execution = replace(execution, notebook=order.rejoin(execution.notebook))
        source = course.read_source(job.assignment_id)
        result.tests = judge_tests(course, job.assignment_id, source, execution, settings.num_devices, programs)
        result.events = execution.events
        if execution.hooks_not_reset:  # learner code replaced what the grader runs before test cells
            result.flags.append(f"the grader's reset of IPython hooks was replaced (before {', '.join(execution.hooks_not_reset[:5])})")
        result.status, result.message = decide_status(result, execution)
    return record(prepared, execution.notebook if execution else None, settings)


def record(prepared: Prepared, executed, settings: Settings) -> NotebookResult:
    result, job = prepared.result, prepared.job
    book = Gradebook(settings.out)
    result.seconds = round(time.monotonic() - prepared.started, 2)
    if executed is not None:  # judged already; formgrader renders this copy, without the grader's own parameters
        shown = nbformat.from_dict(dict(executed, cells=[c for c in executed.cells if "injected-parameters"
                                                         not in c.get("metadata", {}).get("tags", [])]))
        atomic_write(book.autograded_path(job.student_id, job.assignment_id, result.notebook),
                     nbformat.writes(sanitize_notebook(shown)))
    atomic_write(book.feedback_path(job.student_id, job.assignment_id, result.notebook), render(result, executed))
    book.save(result, prepared.sha256)
    return result


def grader_error(job: Job, course: Course, settings: Settings, prepared: Prepared | None, *,
                 phase: str | None = None, infrastructure: str | None = None) -> NotebookResult:
    """Record a failure of the grader itself (never of the submission) as this submission's result; the run goes on.

    The row has no score (every test is "not graded"), says what failed and
    where, and counts the runs that failed on this same file: the next run
    grades it again until ``gradebook.MAX_GRADER_ATTEMPTS`` runs have failed.
    ``infrastructure`` describes a failure of the machinery around the
    notebook (a kernel that did not start, twice), as opposed to a bug.
    Writing this result never depends on the code that may have failed
    (the feedback page falls back to a plain one).
    """
    trace = traceback.format_exc()
    if infrastructure is None and trace.strip() != "NoneType: None":
        print(trace, file=sys.stderr)
    if prepared is None:
        try:
            result = _skeleton(job, course.read_source(job.assignment_id))
        except Exception:  # noqa: BLE001 - the course itself may be what failed
            result = NotebookResult(job.student_id, job.assignment_id, notebook_name(job.assignment_id),
                                    Status.GRADED, "")
        prepared = Prepared(job, result, None, None, time.monotonic())
    sha256 = prepared.sha256
    if sha256 is None:
        try:
            sha256 = intake.fingerprint(intake.locate(job.folder, notebook_name(job.assignment_id)))
        except (intake.InvalidSubmission, OSError):
            sha256 = None
    book = Gradebook(settings.out)
    result = prepared.result
    attempts = book.grader_attempts(job.student_id, job.assignment_id, result.notebook, sha256) + 1
    if infrastructure is not None:
        what = f"infrastructure failure, not caused by the submission: {infrastructure}"
    else:
        last = trace.strip().splitlines()[-1] if trace.strip() else "unknown error"
        what = f"internal grader error while {phase or 'grading'}: {last[:300]}"
    if attempts < MAX_GRADER_ATTEMPTS:
        retry = f"run {attempts} of at most {MAX_GRADER_ATTEMPTS} on this file; the next run grades it again"
    else:
        retry = f"{attempts} runs failed on this file; not retried again until it changes or a run with --force"
    result.status = Status.GRADER_ERROR
    result.message = f"{what} ({retry})"
    result.tests = [TestResult(t.grade_id, 0.0, t.max_points, False, "not graded: the grader failed")
                    for t in result.tests]
    result.seconds = round(time.monotonic() - prepared.started, 2)
    try:
        page = render(result, None)
    except Exception:  # noqa: BLE001 - the page renderer may be what failed
        page = (f"<!doctype html><meta charset='utf-8'><title>Feedback</title>"
                f"<p>{html.escape(result.student_id)} / {html.escape(result.assignment_id)}: "
                f"{html.escape(result.message)}</p>")
    atomic_write(book.feedback_path(job.student_id, job.assignment_id, result.notebook), page)
    book.save(result, sha256, grader_attempts=attempts)
    return result


def learner_flags(nb, deadline: intake.Deadline | None = None) -> list[str]:
    return scan.learner_flags(nb, deadline)


@contextlib.asynccontextmanager
async def confinement(settings: Settings):
    """A fresh scratch folder and, under root, a leased uid, for one kernel."""
    with contextlib.ExitStack() as stack:
        scratch = scratch_folders.make("grade-", settings.scratch_root)
        stack.callback(scratch_folders.remove, scratch)  # the home's tmpfs detached, should stopping the kernel fail
        conf = Confinement(scratch=scratch, limits=settings.limits)
        if settings.confine:
            conf.uid = stack.enter_context(leased_uid())
            # The kernel sees Python, the environment and the public kernel helpers; nothing else.
            conf.private_root = True
            conf.keep = [Path(sys.prefix), Path(sys.base_prefix), Path(coursekit.__file__).resolve().parent]
            # No compilation cache: a kernel could tell a hit from a miss (grader.classroom.compile_cache).
            conf.cgroup = memory_group(stack, conf)
        yield conf


def declared_programs(course: Course, assignment: str, num_devices: int) -> list[Program]:
    """Every program the rubric declares, keyed ``grade_id/record key``."""
    rubric = load_rubric(course.rubric(assignment))
    return [replace(program, key=f"{gid}/{program.key}")
            for gid, declare in rubric.program_specs.items() for program in declare(num_devices)]


def recorded_programs(notebook, declared: list[Program]) -> dict[str, str]:
    """The serialized programs the executed test cells recorded, by declared key."""
    notebook = order.rejoin(notebook)  # a test's records are its cell's and its hidden part's
    executed = {cells.grade_id(c): c for c in notebook.cells if cells.grade_id(c)}
    found: dict[str, dict] = {}
    blobs = {}
    for program in declared:
        gid, key = program.key.split("/", 1)
        if gid not in found:
            found[gid] = records_of_cell(executed[gid])[0] if gid in executed else {}
        recorded = found[gid].get(key)
        if recorded is not None and recorded.kind == "scalar" and isinstance(recorded.value, str):
            blobs[program.key] = recorded.value
    return blobs


def by_test(runs: dict[str, ProgramRun]) -> dict[str, dict[str, ProgramRun]]:
    """grade_id -> record key -> run."""
    grouped: dict[str, dict[str, ProgramRun]] = {}
    for key, run in runs.items():
        gid, own = key.split("/", 1)
        grouped.setdefault(gid, {})[own] = replace(run, key=own)
    return grouped


def program_runs(prepared: Prepared, execution: Execution | None, course: Course, settings: Settings,
                 zygote=None) -> dict[str, dict[str, ProgramRun]]:
    """grade_id -> record key -> run: every program the rubric declares, run outside the kernel in one sandbox."""
    if execution is None:
        return {}
    declared = declared_programs(course, prepared.job.assignment_id, settings.num_devices)
    blobs = recorded_programs(execution.notebook, declared)
    return by_test(run_programs(blobs, declared, settings.num_devices, settings, zygote, judged=settings.judged))


def judge_tests(course: Course, assignment: str, source, execution: Execution, num_devices: int,
                programs: dict[str, dict[str, ProgramRun]] | None = None, *,
                evidence: type[Evidence] = Evidence) -> list[TestResult]:
    """Each autograded test's result; ``evidence``: the class that hands a judge its cell's records (the author's
    lint passes one that notes what each judge reads, ``grader.course.lint``)."""
    rubric = load_rubric(course.rubric(assignment))
    executed = {cells.grade_id(c): c for c in execution.notebook.cells if cells.grade_id(c)}
    # A test may judge a program another test cell recorded (the placement test reads the step's shardings).
    notebook_programs = {key: run for runs in (programs or {}).values() for key, run in runs.items()}
    # ... and another test cell's records (a relative judgement checks the earlier test's own, ``Evidence.elsewhere``)
    elsewhere = {gid: _records(ran) for gid, ran in executed.items() if cells.is_autograded_test(ran)}
    draw = order.drawn(execution.notebook)  # the hidden cases' draw, when they are drawn per learner
    results = []
    for cell in source.cells:
        if not cells.is_autograded_test(cell):
            continue
        gid, points = cells.grade_id(cell), cells.points(cell)
        ran = executed.get(gid)
        if ran is None or ran.get("execution_count") is None and not ran.get("outputs"):
            reason = execution.message or "the notebook stopped before this test"
            results.append(TestResult(gid, 0.0, points, False, f"not run: {reason}"))
            continue
        if not order.hidden_part_ran(ran):
            reason = execution.message or "the notebook stopped before the hidden tests"
            results.append(TestResult(gid, 0.0, points, False, f"not run: the hidden part of this test did not run "
                                      f"({reason})"))
            continue
        if gid in execution.hooks_not_reset:
            results.append(TestResult(gid, 0.0, points, False, "not judged: the grader could not put the kernel's "
                                      "hooks back before this test (the notebook changed the grader's reset)"))
            continue
        try:
            verdict = _judge_cell(rubric, gid, cell, ran, num_devices, notebook_programs, programs, points,
                                  raised.first_raised_before(execution.notebook.cells, gid), elsewhere, evidence,
                                  draw=draw)
        except (ValueError, TypeError, IndexError, KeyError, ArithmeticError, RecursionError, MemoryError):
            # The cell's outputs are the kernel's: whatever in them defeats the reading fails this test, never
            # the grader (a learner-chosen 5000-digit line number, a record nested too deep).
            verdict = Verdict(0.0, False, "the grader could not read this test's outputs")
        results.append(TestResult(gid, verdict.points, points, verdict.passed, verdict.message,
                                  [{"what": p.what, "points": p.points, "passed": p.failure is None}
                                   for p in verdict.parts]))
    return results


def _judge_cell(rubric, gid: str, cell, ran, num_devices: int, notebook_programs: dict,
                programs: dict[str, dict[str, ProgramRun]] | None, points: float,
                before: tuple[str, dict] | None = None, elsewhere: dict | None = None,
                evidence: type[Evidence] = Evidence, *, draw: int = 0) -> Verdict:
    """One test's verdict from its cell's records; ``before``: an earlier cell that raised (its name, its error);
    ``draw``: the learner's draw of the hidden cases (``order.drawn``)."""
    records, broken = records_of_cell(ran)
    verdict = rubric.verdict(gid, evidence(records, broken, num_devices=num_devices, elsewhere=elsewhere,
                                           programs={**notebook_programs, **(programs or {}).get(gid, {})},
                                           draw=draw), points)
    outputs = ran.get("outputs", [])
    visible = cells.visible_outputs(ran)
    error = next((o for o in outputs if o.get("output_type") == "error"), None)
    stopped_visibly = error is not None and visible is not None and error in outputs[:visible]
    if verdict.passed and stopped_visibly:
        # The visible checks stopped the cell, so its hidden part once never ran and the test could not pass; it
        # runs now (after the learner's last cell), but a test whose visible checks fail still does not pass.
        verdict = Verdict(0.0, False, "the test's visible checks stopped with an error", verdict.parts)
    message = verdict.message
    if not verdict.passed:
        check = visible_check(str(cell.source), error) if error is not None else None
        if check:  # quoted from the course's source; the kernel's output only points at the line
            message = f"{message}; {check}"
        why = raised.not_recorded(error, before)  # raised is not stopped: the cell that raised, in lesson terms
        if why is not None and NOT_REACHED in message:
            message = message.replace(NOT_REACHED, why)
        elif error is not None and not records:  # (a learner-made exception class is never named: raised.py)
            message = f"{message}; the test cell {raised.raised(error)}"
    return replace(verdict, message=message)


def _records(ran) -> dict:
    """A test cell's well-formed records (those recorded once; any other is left out)."""
    try:
        records, broken = records_of_cell(ran)
    except (ValueError, TypeError, IndexError, KeyError, ArithmeticError, RecursionError, MemoryError):
        return {}
    return {key: value for key, value in records.items() if key not in set(broken)}


def decide_status(result: NotebookResult, execution: Execution) -> tuple[Status, str]:
    if execution.stopped in ("timed_out", "kernel_died", "too_much_output"):
        return Status(execution.stopped), execution.message
    if execution.stopped == "exited":
        return Status.KERNEL_DIED, execution.message
    if result.tampering:
        return Status.TAMPERED, f"{len(result.tampering)} instructor cell change(s) undone: " + "; ".join(result.tampering[:3])
    if result.flags:
        return Status.SUSPICIOUS, f"{len(result.flags)} construct(s) flagged for review: " + "; ".join(result.flags[:2])
    if execution.stopped == "out_of_memory":
        return Status.OUT_OF_MEMORY, execution.message
    passed = sum(t.passed for t in result.tests)
    return Status.GRADED, f"{passed} of {len(result.tests)} tests passed"
