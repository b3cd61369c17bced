"""The instructor's attempts policy, and the ledger of every submission the service has seen.

Without a limit, Submit would be an oracle: a learner could submit a variant, read which hidden cases fail, and
submit the next. The policy bounds how many submissions are graded in any window of ``window_hours`` (a rolling
window, measured on the service's clock when the submission arrived; nbgrader's timestamp is the learner's word
and is never used to decide), and says which graded attempt counts in the gradebook (``counting``):

* ``best`` (the default): the graded attempt with the most points after its own late penalty, the earliest of equal
  ones. Submitting again can only help: a learner who resubmits the same work late, or tries an idea that scores
  less, keeps what they had. Submit is no more of an oracle for it, because the limit above bounds the graded
  attempts whatever counts.
* ``last``: nbgrader's rule for collected submissions, with one exception that keeps it from punishing a learner for
  pressing Submit twice: an attempt whose answers are identical to an earlier graded attempt's (the same cells,
  ``content_digest``) counts as that earlier attempt, with its earlier time and penalty.

Under either rule, only attempts the grader could read count. A submission over the limit, one the grader failed
on (``grader_error``), and an upload that is not a readable notebook (``UNREADABLE``: missing, not a notebook, a link,
too large) is kept in the exchange and in the ledger, is not graded, does not count, uses none of the learner's
graded attempts, and its learner is told why.

The ledger is one file of JSON lines per learner and assignment (``{state}/ledger/{student}/{assignment}.jsonl``), a
line appended after each decision, so a restarted service neither grades a submission twice nor forgets one, and a
decision costs the same however many came before.
"""
from __future__ import annotations

import glob
import hashlib
import json
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from grader.term.gradebook import path_part

COUNTS = ("best", "last")
# results that say the upload could not be read as the assignment's notebook: never graded, never counted
UNREADABLE = frozenset({"missing", "invalid_notebook", "invalid_folder", "too_large"})
NOT_GRADED = UNREADABLE | {"grader_error"}


@dataclass(frozen=True)
class Policy:
    graded_per_window: int | None = 3  # None: every submission is graded
    window_hours: float = 24.0
    counts: str = "best"

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
        if self.counts == "best":
            return f"{limit}; the best graded attempt, after its own late penalty, counts"
        return (f"{limit}; the last graded attempt counts (one identical to an earlier attempt counts as that earlier "
                "one)")


@dataclass
class Attempt:
    name: str  # the inbound folder's name
    arrived: float  # the service's clock (seconds since the epoch)
    graded: bool
    status: str = ""  # the result's status, or why it was not graded ("over_limit", "refused")
    score: float | None = None  # autograded points
    max_score: float | None = None
    message: str = ""
    penalty: float = 0.0  # the late penalty on the autograded points, when it was graded
    content: str = ""  # ``content_digest`` of the notebook graded ("" when unknown: never taken as identical)

    @property
    def value(self) -> float:
        """The autograded points after this attempt's own late penalty (what ``best`` compares)."""
        return round((self.score or 0.0) - self.penalty, 6)


def attempt_folder(state: Path, student: str, assignment: str, name: str, number: int | None = None) -> Path | None:
    """Where an attempt is graded and kept: ``{state}/attempts/{student}/{assignment}/{number:03d}-{name}`` (``name``:
    the inbound folder's). Without ``number``, the folder of an earlier attempt of that name (None if gone)."""
    place = state / "attempts" / path_part(student) / path_part(assignment)
    if number is not None:
        return place / f"{number:03d}-{path_part(name)[:40]}"
    return next(iter(sorted(place.glob(f"[0-9][0-9][0-9]-{glob.escape(path_part(name)[:40])}"))), None)


def content_digest(notebook: Path) -> str:
    """A digest of what the learner wrote: each cell's type and source, in order (outputs, execution counts and
    metadata left out, since the grader runs the notebook again). Two uploads with the same digest grade alike. A file
    that is not a notebook's JSON is digested as bytes (``""`` when it cannot be read)."""
    try:
        raw = notebook.read_bytes()
    except OSError:
        return ""
    try:
        cells = json.loads(raw)["cells"]
        parts = [[c.get("cell_type", ""), c["source"] if isinstance(c.get("source"), str) else "".join(c["source"])]
                 for c in cells]
        raw = json.dumps(parts, sort_keys=True).encode("utf-8", "surrogatepass")
    except (ValueError, KeyError, TypeError, AttributeError, UnicodeError):
        pass
    return hashlib.sha256(raw).hexdigest()


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
    """The graded attempt that counts (module docstring): the best after its own penalty (the earliest of equal
    ones), or the last, taken as the earliest graded attempt with the same answers."""
    graded = [a for a in attempts if a.graded and a.score is not None and a.status not in NOT_GRADED]
    if not graded:
        return None
    if policy.counts == "last":
        last = graded[-1]
        return next((a for a in graded if last.content and a.content == last.content), last)
    return max(graded, key=lambda a: (a.value, -a.arrived))
