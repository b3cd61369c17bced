"""Grading output on disk: one result file per notebook, then the gradebook.

Each graded notebook's result is written atomically as soon as it is known,
so a killed run loses nothing finished; ``grades.csv`` and ``results.json``
are rebuilt from those files, in a fixed order, so a repeated run gives the
same bytes.

A ``grader_error`` result has no score (an empty cell in grades.csv, null in
results.json) and keeps a count of the runs that failed on the same file; it is
graded again by the next run until ``MAX_GRADER_ATTEMPTS`` runs have failed.
File names come from student and assignment ids only when those are plain
path parts; any other id is stored under a digest of it.
"""
from __future__ import annotations

import contextlib
import csv
import hashlib
import io
import json
import os
import tempfile
from pathlib import Path

from grader.identifiers import escape_controls
from grader.results import LatePenalty, NotebookResult, Status

MAX_GRADER_ATTEMPTS = 3  # runs that may fail on the same file before its grader_error row is kept
ATTEMPTS = "grader_attempts"

CSV_COLUMNS = [
    "student_id", "assignment_id", "notebook", "score", "max_score",
    "manual_score", "manual_max_score", "status", "message", "flags", "tampering", "late_penalty", "total_score",
]


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


_UMASK = _umask()  # read once: os.umask can only be read by setting it


def atomic_write(path: Path, text: str) -> None:
    """``path`` replaced at once by ``text``, with the mode a plain ``open`` would give it (the process's umask; on a
    hub the grading service runs with 007, so the staff group reads and writes what it grades)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name[:100]}.")
    try:
        os.fchmod(fd, 0o666 & ~_UMASK)
        with os.fdopen(fd, "w", encoding="utf-8", errors="backslashreplace") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def path_part(name: str) -> str:
    """``name`` as one file-name component: itself when it is a plain one, else ``~`` and a digest of it.

    A plain name never starts with ``~``, so no name can take the place of another's digest (two learners,
    one results file).
    """
    encoded = name.encode("utf-8", "surrogateescape")
    if name and name not in (".", "..") and not name.startswith((".", "~")) and "/" not in name \
            and name.isprintable() and len(encoded) <= 200:
        return name
    return "~" + hashlib.sha256(encoded).hexdigest()[:32]


def spreadsheet_cell(text: str) -> str:
    """A CSV cell as a spreadsheet shows it, never runs it: control characters escaped, and a leading
    ``= + - @`` (a formula in Excel, LibreOffice and Sheets) quoted by an apostrophe, as OWASP advises."""
    text = escape_controls(str(text))  # (ids arrive escaped already: backslashes stay as they are)
    return "'" + text if text[:1] in ("=", "+", "-", "@") else text


class Gradebook:
    def __init__(self, out: Path):
        self.out = out

    def _folder(self, kind: str, student: str, assignment: str) -> Path:
        return self.out / kind / path_part(student) / path_part(assignment)

    def result_path(self, student: str, assignment: str, notebook: str) -> Path:
        return self._folder("results", student, assignment) / f"{path_part(Path(notebook).stem)}.json"

    def feedback_path(self, student: str, assignment: str, notebook: str) -> Path:
        return self._folder("feedback", student, assignment) / f"{path_part(Path(notebook).stem)}.html"

    def autograded_path(self, student: str, assignment: str, notebook: str) -> Path:
        return self._folder("autograded", student, assignment) / path_part(notebook)

    def save(self, result: NotebookResult, submission_sha256: str | None, *, grader_attempts: int | None = None) -> None:
        data = result.to_dict()
        data["submission_sha256"] = submission_sha256
        if result.status is Status.GRADER_ERROR:
            data[ATTEMPTS] = grader_attempts or 1
        atomic_write(self.result_path(result.student_id, result.assignment_id, result.notebook), json.dumps(data, indent=1))

    def _stored(self, student: str, assignment: str, notebook: str) -> dict | None:
        try:
            data = json.loads(self.result_path(student, assignment, notebook).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) else None

    def grader_attempts(self, student: str, assignment: str, notebook: str, sha256: str | None) -> int:
        """How many runs in a row failed with a grader error on this same file."""
        data = self._stored(student, assignment, notebook)
        if data is None or data.get("status") != Status.GRADER_ERROR.value or data.get("submission_sha256") != sha256:
            return 0
        attempts = data.get(ATTEMPTS, 1)
        return attempts if type(attempts) is int and attempts > 0 else 1

    def finished(self, student: str, assignment: str, notebook: str, sha256: str | None) -> NotebookResult | None:
        """The stored result, if it was graded from the same file (a grader error only once it is out of retries)."""
        data = self._stored(student, assignment, notebook)
        if data is None or data.pop("submission_sha256", None) != sha256:
            return None  # never graded, or changed since: grade again
        attempts = data.pop(ATTEMPTS, 1)
        if data.get("status") == Status.GRADER_ERROR.value and not (type(attempts) is int
                                                                    and attempts >= MAX_GRADER_ATTEMPTS):
            return None  # our own failure: grade again, a bounded number of times
        try:
            return NotebookResult.from_dict(data)
        except (TypeError, ValueError, KeyError):
            return None

    def stored(self, student: str, assignment: str, notebook: str) -> NotebookResult | None:
        """The last result recorded for this notebook, or None."""
        data = self._stored(student, assignment, notebook)
        if data is None:
            return None
        data.pop("submission_sha256", None)
        data.pop(ATTEMPTS, None)
        try:
            return NotebookResult.from_dict(data)
        except (TypeError, ValueError, KeyError):
            return None

    def replace_test(self, student: str, assignment: str, notebook: str, grade_id: str, test: dict) -> dict | None:
        """Put ``test`` (a ``TestResult``'s fields) in place of the stored result's test ``grade_id``, every other
        field and test as it was, the score summed again; returns the test as it was (None: no such test)."""
        path = self.result_path(student, assignment, notebook)
        data = json.loads(path.read_text(encoding="utf-8"))
        tests = data.get("tests", [])
        index = next((i for i, t in enumerate(tests) if t.get("grade_id") == grade_id), None)
        if index is None:
            return None
        before, tests[index] = tests[index], {**tests[index], **test, "grade_id": grade_id}
        if data.get("score") is not None:
            data["score"] = round(sum(float(t.get("points", 0)) for t in tests), 6)
        atomic_write(path, json.dumps(data, indent=1))
        return before

    def all_results(self) -> list[NotebookResult]:
        results = []
        for path in sorted((self.out / "results").glob("*/*/*.json")):
            data = json.loads(path.read_text(encoding="utf-8"))
            data.pop("submission_sha256", None)
            data.pop(ATTEMPTS, None)
            results.append(NotebookResult.from_dict(data))
        return sorted(results, key=lambda r: (r.student_id, r.assignment_id, r.notebook))

    @staticmethod
    def _cell(text: str) -> str:
        return spreadsheet_cell(text)

    def write_tables(self, results: list[NotebookResult], manual: dict | None = None,
                     late: dict[tuple[str, str, str], LatePenalty] | None = None) -> None:
        """grades.csv and results.json; ``manual`` maps (student, assignment, notebook) to the points graded by
        hand (``grader.nbgrader_adapter.manual_grades``), None where some are still to grade; ``late`` to the late
        penalty of a notebook with a due date (``grader.nbgrader_adapter.late``)."""
        manual, late = manual or {}, late or {}
        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, fieldnames=CSV_COLUMNS, lineterminator="\n")
        writer.writeheader()
        stable = []
        for r in results:
            key = (r.student_id, r.assignment_id, r.notebook)
            by_hand, penalty = manual.get(key), late.get(key)
            total = total_score(r, by_hand, penalty)
            cell = self._cell
            writer.writerow({
                "student_id": cell(r.student_id), "assignment_id": cell(r.assignment_id), "notebook": cell(r.notebook),
                "score": "" if r.reported_score is None else f"{r.reported_score:g}", "max_score": f"{r.max_score:g}",
                "manual_score": "" if by_hand is None else f"{by_hand:g}", "manual_max_score": f"{r.manual_max_score:g}",
                "status": r.status.value, "message": cell(r.message),
                "flags": cell(" | ".join(r.flags)), "tampering": cell(" | ".join(r.tampering)),
                "late_penalty": "" if penalty is None else f"{penalty.points:g}",
                "total_score": "" if total is None else f"{total:g}",
            })
            row = {k: v for k, v in r.to_dict().items() if k != "seconds"}
            row["late"] = None if penalty is None else penalty.to_dict()
            row["late_penalty"] = 0.0 if penalty is None else penalty.points
            row["total_score"] = total
            stable.append(row)
        atomic_write(self.out / "grades.csv", buffer.getvalue())
        atomic_write(self.out / "results.json", json.dumps(stable, indent=1, sort_keys=True))


def total_score(result: NotebookResult, by_hand: float | None, penalty: LatePenalty | None) -> float | None:
    """The notebook's total after hand grades and the late penalty; None until every answer is graded by hand
    (or when the grader failed)."""
    if result.reported_score is None or (by_hand is None and result.manual_max_score):
        return None
    return round(result.reported_score + (by_hand or 0.0) - (penalty.points if penalty else 0.0), 6)
