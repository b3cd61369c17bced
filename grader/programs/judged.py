"""Programs judged once per grading run: a run reused for every submission that exported the same program.

What the runner reports for a program (``grader.programs.launch``) depends on three things only: the program's
bytes (the serialized ``jax.export`` module), what the rubric declares about it (its mesh size, its inputs' shapes,
partition specs and dtypes, whether it is run or only read, the collectives its ``Expect`` allows) and the device
count; the inputs are the grader's own, drawn for the run. Correct answers written the lesson's way export
byte-identical programs, so a class of a thousand learners needs a few runs of each, not a thousand.

``Judged`` keeps, for one grading run, the ``ProgramRun`` of every program that ran cleanly, keyed by the SHA-256
of those three things and nothing else: a learner's run reaches another learner's report only when their programs
are the same bytes under the same declaration. What is never kept:

* a run with an error (refused, did not compile, failed): a failure may come from the sandbox the program shared
  with the other programs of its notebook (the time limit, the memory limit), so it is not a fact about its bytes
  alone, and a learner must not be able to make a classmate's identical program fail by running it first;
* runs of a notebook whose runner produced no readable report (those get no ``ProgramRun`` of their own).

Each hit is a deep copy, so a rubric that changes a run's arrays changes nothing for the next learner. The keys are
kept for the run only (the object lives as long as the run that made it) and bounded by ``max_runs``.

A program another notebook of the run is running right now is not run a second time beside it: ``claim`` hands the
first notebook the run and the others an event to wait on; they then take its clean run like any earlier one, or,
when it ran with an error (or the claimant never put it), run the program themselves.
"""
from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
import threading

from grader.programs import Program, ProgramRun, program_to_json


def program_key(blob: str, program: Program, num_devices: int) -> str:
    """The SHA-256 of what a program's run depends on: its bytes, its declaration (not its record key; with the
    collectives its ``Expect`` allows, which ``carries_more`` is read against), the devices."""
    declared = program_to_json(program)
    declared.pop("key")
    declared["collectives"] = program.expect.collectives if program.expect is not None else None
    digest = hashlib.sha256(blob.encode("utf-8", "surrogatepass")).hexdigest()
    return hashlib.sha256(json.dumps([digest, declared, int(num_devices)], sort_keys=True).encode()).hexdigest()


class Judged:
    """The clean runs of one grading run, by ``program_key``; safe to share between the run's threads."""

    def __init__(self, max_runs: int = 4096):
        self.max_runs = max_runs
        self._runs: dict[str, ProgramRun] = {}
        self._running: dict[str, threading.Event] = {}  # claimed by a notebook whose runner has not reported yet
        self._lock = threading.Lock()
        self.reused = 0  # runs handed out again
        self.kept = 0  # runs stored

    def get(self, blob: str, program: Program, num_devices: int) -> ProgramRun | None:
        """A copy of the earlier run of these bytes under this declaration, under ``program``'s record key."""
        with self._lock:
            run = self._runs.get(program_key(blob, program, num_devices))
            if run is None:
                return None
            self.reused += 1
        return dataclasses.replace(copy.deepcopy(run), key=program.key)

    def claim(self, blob: str, program: Program, num_devices: int) -> tuple[ProgramRun | None, threading.Event | None]:
        """``(run, None)``: a copy of an earlier clean run, as ``get``. ``(None, event)``: another notebook is running
        these bytes under this declaration now; wait for ``event``, then ``get`` (None: run it yourself).
        ``(None, None)``: the caller runs it, and must ``put`` or ``release`` it."""
        key = program_key(blob, program, num_devices)
        with self._lock:
            if key not in self._runs:
                if key in self._running:
                    return None, self._running[key]
                self._running[key] = threading.Event()
                return None, None
        return self.get(blob, program, num_devices), None

    def release(self, blob: str, program: Program, num_devices: int) -> None:
        """End a claim without a clean run: whoever waits on it runs the program on their own."""
        with self._lock:
            event = self._running.pop(program_key(blob, program, num_devices), None)
        if event is not None:
            event.set()

    def put(self, blob: str, program: Program, num_devices: int, run: ProgramRun) -> None:
        """Keep ``run`` when it ran cleanly (see the module's docstring for what is never kept); ends a claim."""
        key = program_key(blob, program, num_devices)
        if not (run.error is not None or not run.outputs and program.run):
            with self._lock:
                if key not in self._runs and len(self._runs) < self.max_runs:
                    self._runs[key] = copy.deepcopy(run)
                    self.kept += 1
        self.release(blob, program, num_devices)

    def summary(self) -> str:
        """For the run's last line: how many program runs were reused."""
        return f"{self.reused} program runs reused from identical programs ({self.kept} kept)"


__all__ = ["Judged", "program_key"]
