"""The instructor's attempts policy, and the ledger of every submission the service has seen.

Without a limit, Submit would be an oracle: a learner could submit a variant, read which hidden cases fail, and
submit the next. The policy bounds how many submissions are graded in any window of ``window_hours`` (a rolling
window, measured on the service's clock when the submission arrived; nbgrader's timestamp is the learner's word
and is never used to decide), and says which graded attempt counts in the gradebook: the ``last`` (nbgrader's
rule for collected submissions) or the ``best``. A submission over the limit is kept in the exchange and in the
ledger, is not graded, does not count, and its learner is told when the next graded attempt is possible.

The ledger is one JSON file per learner and assignment (``{state}/ledger/{student}/{assignment}.json``), written
atomically after each decision, so a restarted service neither grades a submission twice nor forgets one.
"""
from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from grader.submission.gradebook import atomic_write, path_part

COUNTS = ("last", "best")


@dataclass(frozen=True)
class Policy:
    graded_per_window: int | None = 3  # None: every submission is graded
    window_hours: float = 24.0
    counts: str = "last"

    def __post_init__(self):
        if self.counts not in COUNTS:
            raise ValueError(f"the attempt that counts is one of {', '.join(COUNTS)}, not {self.counts!r}")
        if self.graded_per_window is not None and self.graded_per_window < 1:
            raise ValueError("graded attempts per window must be at least 1 (or no limit)")
        if self.window_hours <= 0:
            raise ValueError("the window must be longer than 0 hours")

    def describe(self) -> str:
        limit = ("every submission is graded" if self.graded_per_window is None else
                 f"at most {self.graded_per_window} graded attempt(s) in any {self.window_hours:g} hours")
        return f"{limit}; the {self.counts} graded attempt counts"


@dataclass
class Attempt:
    name: str  # the inbound folder's name
    arrived: float  # the service's clock (seconds since the epoch)
    graded: bool
    status: str = ""  # the result's status, or why it was not graded ("over_limit", "refused")
    score: float | None = None
    max_score: float | None = None
    counts: bool = False
    message: str = ""


@dataclass(frozen=True)
class Decision:
    grade: bool
    used: int  # graded attempts in the window before this one
    next_at: float | None = None  # when the next graded attempt is possible, if not now


@dataclass
class Ledger:
    folder: Path  # {state}/ledger
    _cache: dict = field(default_factory=dict)

    def _path(self, student: str, assignment: str) -> Path:
        return self.folder / path_part(student) / f"{path_part(assignment)}.json"

    def attempts(self, student: str, assignment: str) -> list[Attempt]:
        key = (student, assignment)
        if key not in self._cache:
            try:
                rows = json.loads(self._path(student, assignment).read_text(encoding="utf-8"))
                self._cache[key] = [Attempt(**row) for row in rows]
            except (OSError, ValueError, TypeError):
                self._cache[key] = []
        return self._cache[key]

    def seen(self) -> set[str]:
        """Every inbound folder name already decided (read from disk: after a restart too)."""
        names = set()
        for path in self.folder.glob("*/*.json"):
            try:
                names |= {row["name"] for row in json.loads(path.read_text(encoding="utf-8"))}
            except (OSError, ValueError, TypeError, KeyError):
                continue
        return names

    def write(self, student: str, assignment: str, attempts: list[Attempt]) -> None:
        self._cache[(student, assignment)] = attempts
        path = self._path(student, assignment)
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, json.dumps([asdict(a) for a in attempts], indent=1))


def decide(policy: Policy, attempts: list[Attempt], now: float | None = None) -> Decision:
    """Whether a submission arriving ``now`` is graded under ``policy``, given the learner's earlier attempts."""
    now = time.time() if now is None else now
    window = policy.window_hours * 3600
    recent = sorted(a.arrived for a in attempts if a.graded and now - a.arrived < window)
    if policy.graded_per_window is None or len(recent) < policy.graded_per_window:
        return Decision(True, len(recent))
    return Decision(False, len(recent), recent[-policy.graded_per_window] + window)


def counting(policy: Policy, attempts: list[Attempt]) -> Attempt | None:
    """The graded attempt that counts: the last one, or the best (the earliest of equal best scores)."""
    graded = [a for a in attempts if a.graded and a.score is not None]
    if not graded:
        return None
    if policy.counts == "last":
        return graded[-1]
    return max(graded, key=lambda a: (a.score, -a.arrived))
