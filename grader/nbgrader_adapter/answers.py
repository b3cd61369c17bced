"""Hand grades belong to the answer they graded.

formgrader keeps one hand grade per learner, notebook and answer cell in nbgrader's database, whatever the answer
now says. When a learner's counting attempt changes, the service publishes the new attempt into the same rows, so a
grade given to the old answer would stay on a rewritten one. This module keys each hand grade to the answer's content
(``answer_digests``: a digest of the cell's source) in a record beside the grading output, and ``settle`` applies it
whenever a new attempt is written into the database:

* the answer did not change: the grade and its comment stay;
* it changed to one graded before (the learner went back to an earlier answer): that grade comes back;
* it changed to one never graded: the grade and comment are held out (kept in the record, ``manual_score`` set to
  None), and the cell needs hand grading again (nbgrader's ``needs_manual_grade``, which formgrader's Manual Grading
  lists). Until it is graded, the notebook's total is unknown: ``grades.csv``'s ``total_score`` and the LMS export
  leave it empty rather than carry the earlier points.

The record is ``{out}/hand-grades/{student}/{assignment}/{notebook}.json``: ``{"current": {cell: digest}, "graded":
{cell: {digest: {"score", "comment"}}}}``, written only by the grading side (the course root on the hub is the
staff group's, which learners are not in).
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from grader import cells
from grader.term.gradebook import atomic_write, path_part

FOLDER = "hand-grades"


@dataclass(frozen=True)
class Change:
    """What ``settle`` did to one hand-graded cell."""

    cell: str
    what: str  # "held_out" (answer changed; its grade kept aside), "restored" (an answer graded before), "to_grade"
    score: float | None  # the points concerned: held out, or given back
    comment: str = ""


def answer_digests(notebook: Path, cell_ids) -> dict[str, str]:
    """cell id -> a digest of the answer in every cell of ``notebook`` carrying that id (an answer that is gone or was
    split in two is a changed answer); {} when the notebook cannot be read."""
    try:
        data = json.loads(notebook.read_text(encoding="utf-8"))
        found: dict[str, list[str]] = {cid: [] for cid in cell_ids}
        for cell in data.get("cells", []):
            cid = cells.grade_id(cell) if isinstance(cell, dict) else None
            if cid in found:
                source = cell.get("source", "")
                found[cid].append(source if isinstance(source, str) else "".join(map(str, source)))
    except (OSError, ValueError, TypeError, AttributeError):
        return {}
    return {cid: hashlib.sha256(json.dumps([s.rstrip() for s in sources]).encode("utf-8", "surrogatepass"))
            .hexdigest() for cid, sources in found.items()}


def record_path(out: Path, student: str, assignment: str, notebook: str) -> Path:
    return out / FOLDER / path_part(student) / path_part(assignment) / f"{path_part(Path(notebook).stem)}.json"


def _load(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        data = {}
    if not isinstance(data, dict):
        data = {}
    return {"current": dict(data.get("current") or {}), "graded": dict(data.get("graded") or {})}


def changed_since_graded(out: Path, student: str, assignment: str, notebook: str, submitted: Path) -> list[str]:
    """The cells graded by hand whose answer in the notebook file ``submitted`` is not the one their grade was given
    for, nor one graded before (read only: what the learner's page says before the attempt is published)."""
    record = _load(record_path(out, student, assignment, notebook))
    graded = {cid: digests for cid, digests in record["graded"].items() if digests}
    found = answer_digests(submitted, graded) if graded else {}
    return sorted(cid for cid, digest in found.items() if digest not in graded[cid])


def settle(book, out: Path, student: str, assignment: str, notebook: str, digests: dict[str, str]) -> list[Change]:
    """Key the hand grades of one submitted notebook in nbgrader's ``book`` (an open ``nbgrader.api.Gradebook``) to
    the answers in ``digests`` (cell id -> digest of the answer now submitted); the caller commits."""
    from nbgrader.api import MissingEntry

    path = record_path(out, student, assignment, notebook)
    record = _load(path)
    try:
        submitted = book.find_submission_notebook(Path(notebook).stem, assignment, student)
    except MissingEntry:
        return []
    comments = {c.name: c for c in submitted.comments}
    changes = []
    for grade in submitted.grades:
        if grade.name not in digests:
            continue
        cid, new = grade.name, digests[grade.name]
        old = record["current"].get(cid)
        comment = comments.get(cid)
        graded = record["graded"].setdefault(cid, {})
        if old is not None and grade.manual_score is not None:  # the grade given to the answer published before
            graded[old] = {"score": grade.manual_score, "comment": (comment.manual_comment or "") if comment else ""}
        if old is None and grade.manual_score is not None:
            graded[new] = {"score": grade.manual_score, "comment": (comment.manual_comment or "") if comment else ""}
        elif old != new:
            if new in graded:
                grade.manual_score, grade.needs_manual_grade = graded[new]["score"], False
                if comment is not None:
                    comment.manual_comment = graded[new]["comment"] or None
                changes.append(Change(cid, "restored", graded[new]["score"], graded[new]["comment"]))
            else:
                if grade.manual_score is not None:
                    changes.append(Change(cid, "held_out", grade.manual_score, graded.get(old, {}).get("comment", "")))
                    grade.manual_score, grade.needs_manual_grade = None, True  # formgrader lists it to grade again
                    if comment is not None:
                        comment.manual_comment = None
                elif old is not None:
                    changes.append(Change(cid, "to_grade", None))
                # (a first answer never graded is left as nbgrader wrote it: no write can race formgrader's save)
        record["current"][cid] = new
    atomic_write(path, json.dumps(record, indent=1, sort_keys=True))
    return changes


def remember(out: Path, manual: dict) -> int:
    """File the hand grades read from nbgrader's database (``manual_grades.read_manual``: (student, assignment,
    notebook) -> grades) under the answer each was given for, as soon as they are read, so that the learner's page
    can say an answer changed before the attempt is published; returns how many records changed."""
    changed = 0
    for (student, assignment, notebook), grades in manual.items():
        path = record_path(out, student, assignment, notebook)
        if not path.is_file():
            continue  # never published with its answers' digests (graded before this record existed)
        record = _load(path)
        before = json.dumps(record, sort_keys=True)
        for grade in grades:
            digest = record["current"].get(grade.grade_id)
            if digest is not None and grade.score is not None:
                record["graded"].setdefault(grade.grade_id, {})[digest] = {"score": grade.score,
                                                                          "comment": grade.comment or ""}
        if json.dumps(record, sort_keys=True) != before:
            atomic_write(path, json.dumps(record, indent=1, sort_keys=True))
            changed += 1
    return changed
