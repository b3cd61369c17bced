"""Grading output on disk: one result file per notebook, then the gradebook.

Each graded notebook's result is written atomically as soon as it is known,
so a killed run loses nothing finished; ``grades.csv`` and ``results.json``
are rebuilt from those files, in a fixed order, so a repeated run gives the
same bytes.
"""
from __future__ import annotations

import csv
import io
import json
import os
import tempfile
from pathlib import Path

from .results import NotebookResult

CSV_COLUMNS = [
    "student_id", "assignment_id", "notebook", "score", "max_score",
    "manual_score", "manual_max_score", "status", "message", "flags", "tampering",
]


def atomic_write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(fd, "w") as handle:
        handle.write(text)
    os.replace(tmp, path)


class Gradebook:
    def __init__(self, out: Path):
        self.out = out

    def result_path(self, student: str, assignment: str, notebook: str) -> Path:
        return self.out / "results" / student / assignment / f"{Path(notebook).stem}.json"

    def feedback_path(self, student: str, assignment: str, notebook: str) -> Path:
        return self.out / "feedback" / student / assignment / f"{Path(notebook).stem}.html"

    def autograded_path(self, student: str, assignment: str, notebook: str) -> Path:
        return self.out / "autograded" / student / assignment / notebook

    def save(self, result: NotebookResult, submission_sha256: str | None) -> None:
        data = result.to_dict()
        data["submission_sha256"] = submission_sha256
        atomic_write(self.result_path(result.student_id, result.assignment_id, result.notebook), json.dumps(data, indent=1))

    def finished(self, student: str, assignment: str, notebook: str, sha256: str | None) -> NotebookResult | None:
        """The stored result, if it was graded from the same file."""
        path = self.result_path(student, assignment, notebook)
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            return None
        if data.pop("submission_sha256", None) != sha256 or data.get("status") == "grader_error":
            return None  # changed since, or our own failure: grade again
        return NotebookResult.from_dict(data)

    def all_results(self) -> list[NotebookResult]:
        results = []
        for path in sorted((self.out / "results").glob("*/*/*.json")):
            data = json.loads(path.read_text())
            data.pop("submission_sha256", None)
            results.append(NotebookResult.from_dict(data))
        return sorted(results, key=lambda r: (r.student_id, r.assignment_id, r.notebook))

    def write_tables(self, results: list[NotebookResult]) -> None:
        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, fieldnames=CSV_COLUMNS, lineterminator="\n")
        writer.writeheader()
        for r in results:
            writer.writerow({
                "student_id": r.student_id, "assignment_id": r.assignment_id, "notebook": r.notebook,
                "score": f"{r.score:g}", "max_score": f"{r.max_score:g}",
                "manual_score": "", "manual_max_score": f"{r.manual_max_score:g}",
                "status": r.status.value, "message": r.message,
                "flags": " | ".join(r.flags), "tampering": " | ".join(r.tampering),
            })
        atomic_write(self.out / "grades.csv", buffer.getvalue())
        stable = [{k: v for k, v in r.to_dict().items() if k != "seconds"} for r in results]
        atomic_write(self.out / "results.json", json.dumps(stable, indent=1, sort_keys=True))
