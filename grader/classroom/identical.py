"""Identical notebooks run once per grading run: one kernel's clean run judged for every submission that asked for it.

What a sealed kernel does with a submission depends on the notebook it is handed and nothing else of the learner's:
``pipeline.prepare`` rebuilds every submission on the course's own cells (the learner's outputs, execution counts and
metadata are dropped, only the sources of their answer cells and added code cells are kept), and the kernel is never
told whose notebook it runs (its scratch folder and uid are drawn per kernel, the run's parameters are the same for
every notebook). Two learners who hand in the same answers, the most common case being two blank notebooks, hand the
kernel the same notebook, byte for byte, so a class needs one run of it, not two.

``Identical`` keeps, for one grading run, the clean ``Execution`` of every notebook that ran, keyed by the SHA-256 of
the assignment and the prepared notebook (its canonical JSON, less the random ids of the cells the rebuild adds) and
nothing else. A learner's execution reaches another
learner's report only through that equality; everything of the learner's own is still theirs: the rebuild's tampering
notes and the scan's flags, the submission time and lateness, the program runs (``program_runs`` asks
``grader.programs.judged`` for them as for any notebook, so a program whose run failed is run again for this
learner), the judging, and the files written. What is never kept:

* a run that stopped (timed out, the kernel died or ran out of memory, too much output, the notebook exited): a stop
  may come from the machine (a loaded machine times out sooner), so it is not a fact about the notebook alone, and a
  learner must not be able to make a classmate's identical notebook stop by running it first;
* a run whose kernel did not start or could not be confined, or that raised inside the grader.

Each hit is a copy of its own (unpickled from what was kept). A notebook another worker of the run is running right
now is not run a second time beside it: ``claim`` hands the first worker the run and the others an event to wait on;
they then take its clean run or, when it stopped (or the claimant never put it), run the notebook themselves, side by
side. A notebook whose run stopped is never waited for again, so the copies of one that spins to its time limit wait
for it once at most. ``repeats_last`` orders a run's jobs so that a submission whose file is byte-identical to an
earlier one's comes after every first one: it then finds a finished run instead of waiting for one.
"""
from __future__ import annotations

import hashlib
import json
import pickle
import threading
import zlib
from collections.abc import Callable, Iterable


def notebook_key(assignment: str, notebook) -> str:
    """The SHA-256 of what a kernel's run depends on: the assignment and the prepared notebook's canonical JSON, less
    the cell ids (the rebuild draws fresh random ids for the cells it adds, as it draws the scratch folder's name)."""
    cells = [{name: value for name, value in cell.items() if name != "id"} for cell in notebook.cells]
    shape = {name: value for name, value in notebook.items() if name != "cells"}
    canonical = json.dumps([assignment, shape, cells], sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()


def repeats_last(jobs: Iterable, fingerprint: Callable) -> list:
    """``jobs`` with every job whose ``fingerprint`` (the submitted file's digest; None: unknown) an earlier job
    already had moved after all first ones, each part in its own order."""
    firsts, repeats, seen = [], [], set()
    for job in jobs:
        digest = fingerprint(job)
        key = None if digest is None else (job.assignment_id, digest)
        (repeats if key is not None and key in seen else firsts).append(job)
        seen.add(key)
    return firsts + repeats


class Identical:
    """The clean kernel runs of one grading run, by ``notebook_key``; safe to share between the run's threads.

    A run is kept pickled and compressed (about a third of its notebook's JSON), within ``max_bytes`` in all: a
    class of learners who each print megabytes cannot fill the instructor's memory; past it, notebooks just run."""

    def __init__(self, max_runs: int = 4096, max_bytes: int = 256 * 2**20):
        self.max_runs, self.max_bytes = max_runs, max_bytes
        self._runs: dict[str, bytes] = {}
        self._stopped: set[str] = set()  # keys whose run stopped: each later copy runs at once, nobody waits
        self._running: dict[str, threading.Event] = {}
        self._lock = threading.Lock()
        self.bytes = 0  # of the runs kept
        self.reused = 0  # executions handed out again
        self.kept = 0  # executions stored

    def claim(self, key: str) -> tuple[object | None, threading.Event | None]:
        """``(execution, None)``: a copy of an earlier clean run. ``(None, event)``: another worker is running this
        notebook now; wait for ``event``, then claim again. ``(None, None)``: the caller runs it, and must ``put`` or
        ``release`` the key (a key whose run stopped is never claimed again: each copy runs, none waits)."""
        with self._lock:
            kept = self._runs.get(key)
            if kept is None:
                if key in self._stopped:
                    return None, None
                if key in self._running:
                    return None, self._running[key]
                self._running[key] = threading.Event()
                return None, None
            self.reused += 1
        return pickle.loads(zlib.decompress(kept)), None

    def release(self, key: str) -> None:
        """End a claim without a clean run: whoever waits on it runs the notebook on their own."""
        with self._lock:
            event = self._running.pop(key, None)
        if event is not None:
            event.set()

    def put(self, key: str, execution) -> None:
        """Keep ``execution`` when it ran to the end (see the module's docstring for what is never kept); ends the
        claim. Call it before anything changes the execution: what is kept is a copy made here."""
        if execution.stopped is None:
            kept = zlib.compress(pickle.dumps(execution, protocol=pickle.HIGHEST_PROTOCOL), 1)
            with self._lock:
                if (key not in self._runs and len(self._runs) < self.max_runs
                        and self.bytes + len(kept) <= self.max_bytes):
                    self._runs[key] = kept
                    self.bytes += len(kept)
                    self.kept += 1
        else:
            with self._lock:
                self._stopped.add(key)
        self.release(key)

    def summary(self) -> str:
        """For the run's last lines: how many notebooks were not run again."""
        return f"{self.reused} notebooks identical to an earlier submission's not run again ({self.kept} runs kept)"


__all__ = ["Identical", "notebook_key", "repeats_last"]
