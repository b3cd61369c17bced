"""Run the programs a notebook recorded, in a sandbox of their own, on inputs drawn here.

The steps, in order: draw inputs for every declared program (from a seed the
kernel never saw: the SHA-256 of the programs' own bytes, so a program cannot
be made to know the inputs it will get, and the same programs get the same
inputs in every grading, on any machine), write the request into a new sandbox's home,
run ``grader.programs.runner`` there confined like a kernel (as root: its own
namespaces, private root, seccomp and a leased uid), then read its verdict
as untrusted data: every field is checked and anything malformed becomes
that program's error, never an exception in the grader.
"""
from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np

import coursekit
from coursekit.programs import NOT_EXPORTED

from grader.programs import Input, Output, Program, ProgramRun
from grader.programs.structure import too_many

MESH_HINT = ("write nothing that assumes the lesson's four devices (use len(devices) and the arrays' shapes) and use "
             "the mesh and shardings the notebook defines, not a mesh of your own")
RUN_TIMEOUT_S = 90.0  # for all of a notebook's programs: a few compilations of small programs
MAX_VERDICT_BYTES = 64 << 20
MAX_ELEMENTS = 1 << 20


class ProgramsNotRun(RuntimeError):
    """The sandbox for the programs could not be set up: the grader's side, not the learner's."""


def fresh_inputs(program: Program, rng: np.random.Generator) -> list[np.ndarray]:
    """Inputs for ``program`` that no kernel has seen: normal floats (booleans mostly true)."""
    inputs = []
    for spec in program.inputs:
        if spec.dtype == "bool":
            inputs.append(rng.random(spec.shape) < 0.7)
        else:
            inputs.append(rng.normal(size=spec.shape).astype(spec.dtype))
    return inputs


def _request(blobs: dict[str, str], programs: list[Program], inputs: dict[str, list[np.ndarray]],
             num_devices: int) -> dict:
    return {"num_devices": num_devices, "programs": [
        {"key": p.key, "mesh": p.mesh, "program": blobs[p.key], "run": p.run,
         "inputs": [{"shape": list(a.shape), "dtype": a.dtype.name, "spec": list(s.spec),
                     "data": a.astype(np.float64).ravel().tolist()} for a, s in zip(inputs[p.key], p.inputs)]}
        for p in programs]}


def _array(described) -> np.ndarray:
    if not isinstance(described, dict):
        raise ValueError("malformed output")
    shape, data, dtype = described.get("shape"), described.get("data"), described.get("dtype")
    if (not isinstance(shape, list) or not all(type(n) is int and 0 <= n <= MAX_ELEMENTS for n in shape)
            or len(shape) > 8 or not isinstance(data, list) or type(dtype) is not str):
        raise ValueError("malformed output")
    if int(np.prod(shape)) != len(data) or not all(v is None or type(v) in (int, float, bool) for v in data):
        raise ValueError("malformed output")
    return np.array([np.nan if v is None else v for v in data], dtype=np.float64).reshape(shape)


def _output(described) -> Output:
    shards = described.get("shards") if isinstance(described, dict) else None
    if not isinstance(shards, list) or len(shards) > 4096 or not all(isinstance(s, dict) for s in shards):
        raise ValueError("malformed output")
    shapes = []
    for shard in shards:
        shape = shard.get("shape")
        if not isinstance(shape, list) or not all(type(n) is int for n in shape):
            raise ValueError("malformed output")
        shapes.append(tuple(shape))
    sharding = described.get("sharding")
    return Output(_array(described), sharding[:200] if isinstance(sharding, str) else "?",
                  described.get("replicated") is True, shapes,
                  all(shard.get("equal_to_slice") is True for shard in shards))


def _strings(values) -> list[str | None]:
    if not isinstance(values, list):
        raise ValueError("malformed shardings")
    return [v[:500] if isinstance(v, str) else None for v in values]


def _counts(counts) -> dict[str, int]:
    """Collective counts as the runner reports them: names to non-negative ints (anything else is left out)."""
    if not isinstance(counts, dict) or len(counts) > 64:
        return {}
    return {str(k)[:50]: v for k, v in counts.items() if type(v) is int and v >= 0}


#: what the runner says of a program's structure as yes or no (``ProgramRun``'s fields): only a JSON true is yes
FLAGS = ("manual", "manual_only", "moves_data", "looped", "carries_more")


def _read_flags(run: ProgramRun, report: dict, program: Program) -> None:
    """The flags (only a JSON true is yes), and ``carries_more`` also where the program writes more collectives than
    its ``Expect.collectives`` allows (read from the collectives it reports, on both paths)."""
    for name in FLAGS:
        setattr(run, name, report.get(name) is True)
    bound = program.expect.collectives if program.expect is not None else None
    run.carries_more = run.carries_more or too_many(run.collectives, bound)


def parse_verdict(verdict, program: Program, inputs: list[np.ndarray]) -> ProgramRun:
    """One program's ``ProgramRun`` from the runner's report (untrusted: checked field by field)."""
    run = ProgramRun(program.key, inputs=inputs)
    try:
        if not isinstance(verdict, dict) or verdict.get("key") != program.key:
            raise ValueError("malformed report")
        run.collectives = _counts(verdict.get("collectives"))
        run.compiled_collectives = _counts(verdict.get("compiled_collectives"))
        _read_flags(run, verdict, program)
        if verdict.get("error") is not None:
            run.error = str(verdict["error"])[:500]
            return run
        run.in_shardings = _strings(verdict.get("in_shardings"))
        run.expected_in_shardings = [s or "" for s in _strings(verdict.get("expected_in_shardings"))]
        run.out_shardings = _strings(verdict.get("out_shardings"))
        outputs = verdict.get("outputs")
        if not isinstance(outputs, list) or len(outputs) > 64:
            raise ValueError("malformed outputs")
        run.outputs = [_output(o) for o in outputs]
    except (ValueError, TypeError, OverflowError):
        run.error = "the program runner's report could not be read"
        run.outputs = []
    return run


def run_from_json(data, program: Program) -> ProgramRun:
    """A run a Dask worker sent back (``grader.programs.run_to_json``), checked field by field like a verdict."""
    run = ProgramRun(program.key)
    try:
        if not isinstance(data, dict) or data.get("key") != program.key:
            raise ValueError("malformed run")
        inputs = data.get("inputs")
        if not isinstance(inputs, list) or len(inputs) != len(program.inputs):
            raise ValueError("malformed inputs")
        run.inputs = [_array(value).astype(spec.dtype) for value, spec in zip(inputs, program.inputs)]
        if any(value.shape != tuple(spec.shape) for value, spec in zip(run.inputs, program.inputs)):
            raise ValueError("inputs of the wrong shape")
        if data.get("error") is not None:
            run.error = str(data["error"])[:500]
            return run
        outputs = data.get("outputs")
        if not isinstance(outputs, list) or len(outputs) > 64:
            raise ValueError("malformed outputs")
        for output in outputs:
            if not isinstance(output, dict) or not isinstance(output.get("shard_shapes"), list):
                raise ValueError("malformed output")
            shapes = [tuple(shape) for shape in output["shard_shapes"]
                      if isinstance(shape, list) and all(type(n) is int for n in shape)]
            if len(shapes) != len(output["shard_shapes"]) or len(shapes) > 4096:
                raise ValueError("malformed output")
            sharding = output.get("sharding")
            run.outputs.append(Output(_array(output.get("value")), sharding[:200] if isinstance(sharding, str) else "?",
                                      output.get("replicated") is True, shapes,
                                      output.get("shards_consistent") is True))
        run.in_shardings = _strings(data.get("in_shardings"))
        run.expected_in_shardings = [s or "" for s in _strings(data.get("expected_in_shardings"))]
        run.out_shardings = _strings(data.get("out_shardings"))
        run.collectives = _counts(data.get("collectives"))
        run.compiled_collectives = _counts(data.get("compiled_collectives"))
        _read_flags(run, data, program)
    except (ValueError, TypeError, OverflowError):
        return ProgramRun(program.key, error="the worker's report of this program could not be read")
    return run


@contextlib.contextmanager
def _sandbox(settings, fill_cache: Path | None = None):
    """A confinement for the runner: like a kernel's, plus the grader's own package (read-only).

    It reads the sealed compilation cache of the instructor's programs (``settings.compile_cache_dir``); with
    ``fill_cache`` (only for the instructor's programs, ``grader.classroom.compile_cache``) it writes that folder instead.
    """
    from grader.sandbox.lease import RUNNER_UID_RANGE, leased_uid, memory_group
    from grader.sandbox import Confinement
    from grader.sandbox import scratch as scratch_folders

    with contextlib.ExitStack() as stack:
        scratch = scratch_folders.make("programs-", settings.scratch_root)
        stack.callback(scratch_folders.remove, scratch)
        conf = Confinement(scratch=scratch, limits=settings.limits)
        if settings.confine:
            conf.uid = stack.enter_context(leased_uid(RUNNER_UID_RANGE))
            conf.private_root = True
            conf.keep = [Path(sys.prefix), Path(sys.base_prefix), Path(coursekit.__file__).resolve().parent,
                         Path(__file__).resolve().parents[1]]
            cache = getattr(settings, "compile_cache_dir", None)
            conf.compile_cache = cache
            conf.cgroup = memory_group(stack, conf)
            if fill_cache is not None:
                fill_cache.mkdir(mode=0o700, exist_ok=True)
                os.chown(fill_cache, conf.uid, conf.uid)  # this runner's uid only; sealed afterwards
                conf.compile_cache, conf.compile_cache_writable = fill_cache, True
        yield conf


def _run_confined(conf, request: dict, zygote=None, runner: list[str] | None = None) -> dict | None:
    """The runner's report, or None when it produced none (timed out, crashed, killed).

    ``runner``: the command to confine instead of ``grader.programs.runner`` (tests; not with a zygote).
    """
    from grader.sandbox.lease import kill_uid
    from grader.sandbox import read_failure, rootfs, sandbox_arguments

    as_root = conf.private_root and os.geteuid() == 0
    conf.scratch.mkdir(parents=True, exist_ok=True)
    if as_root:
        rootfs.mount_home(conf.home, conf.limits.home_mb)
    try:
        conf.home.mkdir(parents=True, exist_ok=True)
        (conf.home / "request.json").write_text(json.dumps(request))
        runner = runner or [sys.executable, "-m", "grader.programs.runner"]
        if zygote is not None:  # forked from the kernels' fork server: JAX is imported already
            from grader.sandbox.zygote import ForkedProcess

            process = ForkedProcess(zygote.spawn([*sandbox_arguments(conf), "--", *runner]))
        else:
            process = subprocess.Popen([sys.executable, "-m", "grader.sandbox", *sandbox_arguments(conf), "--",
                                        *runner], cwd=str(conf.scratch), stdin=subprocess.DEVNULL,
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            process.wait(timeout=RUN_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.kill()
            process.wait(timeout=30)
            return None
        finally:
            if conf.uid is not None:
                kill_uid(conf.uid)
        failure = read_failure(conf)
        if failure:
            raise ProgramsNotRun(failure)
        path = conf.home / "verdict.json"
        if not path.is_file() or path.is_symlink() or path.stat().st_size > MAX_VERDICT_BYTES:
            return None
        try:
            return json.loads(path.read_text())
        except (ValueError, UnicodeDecodeError):
            return {}
    finally:
        if as_root:
            rootfs.release_home(conf.home)


# Why a program did not export, by the class of JAX's error (coursekit.programs.exported records only the class name)
EXPORT_ERRORS = {
    "ConcretizationTypeError": "a traced value was needed as a concrete number (float(), np.asarray, a Python "
                               "condition or a shape computed from an array's values)",
    "TracerArrayConversionError": "a traced array went to NumPy (np.asarray, np.array or a NumPy function on it): "
                                  "use jax.numpy inside the program",
    "TracerBoolConversionError": "a Python if or while tested a traced value: use jnp.where or jax.lax.cond",
    "TracerIntegerConversionError": "a traced value was used as a Python int (an index, a range or a shape)",
    "UnexpectedTracerError": "a traced value from another call was kept (in a global, a list or a closure) and used",
    "TypeError": "the function does not take the arguments the hidden test gives it, or returns something that is "
                 "not arrays",
}

def _seed(blobs: dict[str, str], programs: list[Program]) -> int:
    """The inputs' seed: the SHA-256 of every recorded program's bytes and declaration. A program that answered
    only the inputs it will get would have to know a hash of its own bytes; a regrade, a cluster's worker and the
    local grader draw the same inputs for the same programs (messages that say how far off a value is agree)."""
    import hashlib

    digest = hashlib.sha256()
    for program in sorted(programs, key=lambda p: p.key):
        blob = blobs.get(program.key)
        digest.update(f"{program.key}\0{program.mesh}\0".encode())
        digest.update(blob.encode() if isinstance(blob, str) else b"\1")
        digest.update(b"\0")
    return int.from_bytes(digest.digest()[:16], "big")


def run_programs(blobs: dict[str, str], programs: list[Program], num_devices: int, settings,
                 zygote=None, fill_cache: Path | None = None, judged=None) -> dict[str, ProgramRun]:
    """``ProgramRun`` per declared program; programs the kernel did not record get an error run.

    ``zygote``: the kernels' fork server (``grader.sandbox.zygote``), to fork the runner from instead of starting it.
    ``fill_cache``: a folder the runner writes its compiled programs to (the instructor's programs only).
    ``judged``: the run's ``grader.programs.judged.Judged``: a program whose bytes and declaration ran cleanly earlier
    in the run is not run again (its run is reused), and this notebook's clean runs are kept for later ones; one that
    another notebook is running at this moment is waited for and reused when it ran cleanly (else run here).
    """
    rng = np.random.default_rng(_seed(blobs, programs))
    runs: dict[str, ProgramRun] = {}
    present, claimed, waiting = [], [], []
    for program in programs:
        blob = blobs.get(program.key)
        if isinstance(blob, str) and (blob == NOT_EXPORTED or blob.startswith(NOT_EXPORTED + ": ")):
            # the kernel's own words are never shown (they are the learner's): only a known class name picks a line
            why = EXPORT_ERRORS.get(blob[len(NOT_EXPORTED) + 2:])
            error = ("JAX could not export it (jax.export) for the arrays the hidden test gave it: it must compute "
                     "from its arguments only (not from the notebook's own arrays), work for any batch size, and be a "
                     "function of JAX operations only, with no NumPy on traced values and no Python callbacks"
                     + (f"; here: {why}" if why else ""))
            if program.mesh != num_devices:  # it exported on the notebook's own mesh, or that test failed first
                error = (f"it stopped working with {program.mesh} device(s): the grader also runs your code with other "
                         f"numbers of devices than the lesson's four, and with {program.mesh} it could not be traced; "
                         f"{MESH_HINT}")
            runs[program.key] = ProgramRun(program.key, error=error)
        elif not isinstance(blobs.get(program.key), str):
            runs[program.key] = ProgramRun(program.key, error="no program was recorded (the test stopped before "
                                                                "exporting it, or it could not be exported)")
        elif judged is None:
            present.append(program)
        else:
            earlier, running = judged.claim(blobs[program.key], program, num_devices)
            if earlier is not None:
                runs[program.key] = earlier
            elif running is not None:  # another notebook is running these bytes now: its clean run serves this one
                waiting.append((program, running))
            else:
                present.append(program)
                claimed.append(program)
    try:
        runs.update(_launched(blobs, present, num_devices, settings, zygote, fill_cache, judged, rng))
    finally:
        for program in claimed:  # a claim the run did not end (an exception): the waiters run it themselves
            judged.release(blobs[program.key], program, num_devices)
    again = []
    for program, running in waiting:
        running.wait(RUN_TIMEOUT_S + 30)
        earlier = judged.get(blobs[program.key], program, num_devices)
        if earlier is not None:
            runs[program.key] = earlier
        else:  # it failed there (or is still running): a failure is never another learner's fact, so run it here
            again.append(program)
    runs.update(_launched(blobs, again, num_devices, settings, zygote, fill_cache, judged, rng))
    return runs


def _launched(blobs, present: list[Program], num_devices: int, settings, zygote, fill_cache, judged,
              rng) -> dict[str, ProgramRun]:
    """Run ``present`` in one sealed runner, on fresh inputs; each clean run is kept in ``judged``."""
    runs: dict[str, ProgramRun] = {}
    if not present:
        return runs
    inputs = {p.key: fresh_inputs(p, rng) for p in present}
    with _sandbox(settings, fill_cache) as conf:
        report = _run_confined(conf, _request(blobs, present, inputs, num_devices), zygote)
    verdicts = report.get("verdicts") if isinstance(report, dict) else None
    if report is None:
        reason = f"the programs did not finish within {RUN_TIMEOUT_S:.0f} s or crashed the runner"
    elif not isinstance(verdicts, list) or len(verdicts) != len(present):
        reason, verdicts = "the program runner's report could not be read", None
    for index, program in enumerate(present):
        if verdicts is None:
            runs[program.key] = ProgramRun(program.key, error=reason, inputs=inputs[program.key])
        else:
            runs[program.key] = parse_verdict(verdicts[index], program, inputs[program.key])
        if judged is not None:
            judged.put(blobs[program.key], program, num_devices, runs[program.key])
    return runs


__all__ = ["Input", "Program", "ProgramRun", "ProgramsNotRun", "run_programs", "fresh_inputs", "parse_verdict"]
