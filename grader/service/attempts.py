"""The instructor's attempts policy, and the ledger of every submission the service has seen.

Without a limit, Submit would be an oracle: a learner could submit a variant, read which hidden cases fail, and
submit the next. The policy bounds how many submissions are graded in any window of ``window_hours`` (a rolling
window, measured on the service's clock when the submission arrived; nbgrader's timestamp is the learner's word
and is never used to decide), and says which graded attempt counts in the gradebook: the ``last`` (nbgrader's
rule for collected submissions) or the ``best``. A submission over the limit is kept in the exchange and in the
ledger, is not graded, does not count, and its learner is told when the next graded attempt is possible.

The ledger is one file of JSON lines per learner and assignment (``{state}/ledger/{student}/{assignment}.jsonl``), a
line appended after each decision, so a restarted service neither grades a submission twice nor forgets one, and a
decision costs the same however many came before.
"""
from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from grader.submission.gradebook import path_part

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
    message: str = ""


@dataclass(frozen=True)
class Decision:
    grade: bool
    used: int  # graded attempts in the window before this one
    next_at: float | None = None  # when the next graded attempt is possible, if not now


def _rows(path: Path) -> list[dict]:
    """The JSON lines of ``path`` (a line cut short by a crash mid-write is skipped)."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return []
    rows = []
    for line in text.splitlines():
        try:
            row = json.loads(line)
        except ValueError:
            continue
        if isinstance(row, dict):
            rows.append(row)
    return rows


def _append(path: Path, row: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as out:
        out.write(json.dumps(row) + "\n")
        out.flush()
        os.fsync(out.fileno())


@dataclass
class Ledger:
    """Every decision on a learner's submissions: one JSON line each, appended (``{state}/ledger/{student}/
    {assignment}.jsonl``); a decision costs one line, however many came before."""

    folder: Path  # {state}/ledger
    _cache: dict = field(default_factory=dict)

    def _path(self, student: str, assignment: str) -> Path:
        return self.folder / path_part(student) / f"{path_part(assignment)}.jsonl"

    def attempts(self, student: str, assignment: str) -> list[Attempt]:
        key = (student, assignment)
        if key not in self._cache:
            found = []
            for row in _rows(self._path(student, assignment)):
                try:
                    found.append(Attempt(**row))
                except TypeError:
                    continue
            self._cache[key] = found
        return list(self._cache[key])

    def seen(self) -> set[str]:
        """Every inbound folder name already decided (read from disk: after a restart too)."""
        return {row["name"] for path in self.folder.glob("*/*.jsonl") for row in _rows(path)
                if isinstance(row.get("name"), str)}

    def add(self, student: str, assignment: str, attempt: Attempt) -> list[Attempt]:
        """Record ``attempt``; the learner's attempts with it."""
        attempts = self.attempts(student, assignment) + [attempt]
        _append(self._path(student, assignment), asdict(attempt))
        self._cache[(student, assignment)] = attempts
        return list(attempts)


@dataclass
class Refusals:
    """Folders that could not be taken for anyone's submission (another account's name, an unknown assignment, a
    link): one JSON line each under the account that owns the folder (``{state}/refused/{account}.jsonl``), never in
    the ledger of the learner a folder names. At most ``KEPT_PER_ACCOUNT`` are kept per account; beyond that a
    refusal is said once in the service's log and not written (a learner making junk folders fills nothing)."""

    folder: Path
    _counts: dict = field(default_factory=dict)
    _full: set = field(default_factory=set)
    KEPT_PER_ACCOUNT = 1000

    def seen(self) -> set[str]:
        names = set()
        for path in self.folder.glob("*.jsonl"):
            rows = _rows(path)
            self._counts[path.stem] = len(rows)
            names |= {row["name"] for row in rows if isinstance(row.get("name"), str)}
        return names

    def add(self, account: str, row: dict) -> bool:
        """Record a refusal; False once the account has used its quota (nothing is written then)."""
        key = path_part(account)
        count = self._counts.get(key, 0)
        if count >= self.KEPT_PER_ACCOUNT:
            return False
        _append(self.folder / f"{key}.jsonl", row)
        self._counts[key] = count + 1
        return True

    def first_time_full(self, account: str) -> bool:
        """True once per account: the first refusal past its quota (the log says so once)."""
        key = path_part(account)
        if key in self._full:
            return False
        self._full.add(key)
        return True


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
