"""Rebuild a submission on the instructor's skeleton and report tampering.

Only the learner's solution cells and the code cells they added are taken
from the submission. Every other cell (setup, teaching code, tests with their
hidden parts, markdown, and all nbgrader metadata such as points) comes from
``source/``. Differences between the submitted copy of an instructor cell and
the released one are reported as tampering; the grade uses the restored cell.

A solution cell keeps the learner's attachments too (JupyterLab stores an
image pasted into a markdown answer as ``attachments`` referenced by
``attachment:NAME``), as plain name -> MIME type -> text data, so the answer
renders in the feedback page and in formgrader as the learner saw it.
"""
from __future__ import annotations

import copy

import nbformat

from grader import cells
from grader.submission.intake import shown_name


def _norm(text: str) -> str:
    return "\n".join(line.rstrip() for line in str(text).strip().splitlines())


def _graded_fields(cell) -> dict:
    meta = cells.nbgrader(cell)
    return {key: meta.get(key) for key in ("grade_id", "grade", "solution", "locked", "points", "task")}


def _attachments(cell) -> dict:
    """The cell's attachments in the shape nbformat accepts: name -> MIME type -> text (lists joined)."""
    found = cell.get("attachments")
    kept = {}
    for name, bundle in (found.items() if isinstance(found, dict) else ()):
        if not isinstance(name, str) or not isinstance(bundle, dict):
            continue
        data = {}
        for mime, value in bundle.items():
            if isinstance(value, list) and all(isinstance(line, str) for line in value):
                value = "".join(value)
            if isinstance(mime, str) and isinstance(value, str):
                data[mime] = value
        if data:
            kept[name] = data
    return kept


def _index(nb) -> tuple[dict[str, list], dict[str, object]]:
    by_grade: dict[str, list] = {}
    by_id: dict[str, object] = {}
    for cell in nb.cells:
        gid = cells.grade_id(cell)
        if gid:
            by_grade.setdefault(gid, []).append(cell)
        if isinstance(cell.get("id"), str):
            by_id.setdefault(cell["id"], cell)
    return by_grade, by_id


def _as_released(cell) -> bool:
    """Whether a locked cell is exactly as a release of the course wrote it: nbgrader's checksum of its source and
    graded fields, which nbgrader's generate stores in it and its Validate checks, still matches. A learner who
    fetched before the instructor changed a test submits that release's cell; it is restored like any other, but
    was not edited. (A learner who edits a cell and recomputes its checksum escapes the flag, not the restoring.)"""
    from nbgrader.utils import compute_checksum

    recorded = cell.get("metadata", {}).get("nbgrader", {}).get("checksum")
    try:
        return isinstance(recorded, str) and recorded == compute_checksum(cell)
    except Exception:  # noqa: BLE001 - a cell whose metadata nbgrader cannot read is no release's
        return False


def rebuild(source, release, submitted) -> tuple[nbformat.NotebookNode, list[str]]:
    """(notebook to execute, tampering notes)."""
    tampering: list[str] = []
    released, _ = _index(release)
    known_grade_ids = {cells.grade_id(c) for c in source.cells if cells.grade_id(c)}
    submitted_grade, _ = _index(submitted)

    for gid, found in submitted_grade.items():
        if len(found) > 1:
            tampering.append(f"cell {shown_name(str(gid)[:100])} appears {len(found)} times; the first copy was used")

    # Learner cells that belong to no instructor cell stay, after the instructor
    # cell that preceded them.
    added: dict[str | None, list] = {}
    anchor: str | None = None
    for cell in submitted.cells:
        gid = cells.grade_id(cell)
        if gid in known_grade_ids:
            anchor = gid
            continue
        if cell.cell_type != "code":
            continue
        if gid or cells.is_grade(cell):
            claimed = shown_name(str(gid)[:100]) if gid else "no id"
            tampering.append(f"an added cell claims nbgrader metadata ({claimed}); it was kept as plain code")
        clean = nbformat.v4.new_code_cell(cell.source)
        added.setdefault(anchor, []).append(clean)

    rebuilt = []
    rebuilt.extend(added.get(None, []))
    for cell in source.cells:
        gid = cells.grade_id(cell)
        new = copy.deepcopy(cell)
        if new.cell_type == "code":
            new.outputs, new.execution_count = [], None
        if gid and cells.is_solution(cell):
            mine = submitted_grade.get(gid)
            if not mine:
                tampering.append(f"solution cell {gid} was deleted")
                new.source = ""
            else:
                new.source = mine[0].source if isinstance(mine[0].source, str) else ""
                attachments = _attachments(mine[0]) if new.cell_type in ("markdown", "raw") else {}
                new.pop("attachments", None)
                if attachments:
                    new.attachments = nbformat.from_dict(attachments)
        elif gid:
            theirs = submitted_grade.get(gid)
            ours = released.get(gid, [cell])[0]
            if not theirs:
                tampering.append(f"cell {gid} was deleted; restored from the course")
            elif not _as_released(theirs[0]):  # an earlier release's cell (a test fixed since) is no tampering
                if _norm(theirs[0].source) != _norm(ours.source):
                    tampering.append(f"cell {gid} was edited; restored from the course")
                if _graded_fields(theirs[0]) != _graded_fields(ours):
                    tampering.append(f"cell {gid} metadata was changed; restored from the course")
        rebuilt.append(new)
        if gid:
            rebuilt.extend(added.get(gid, []))
    nb = nbformat.v4.new_notebook(cells=rebuilt, metadata=copy.deepcopy(source.metadata))
    return nb, tampering


def inject_parameters(nb, parameters: dict) -> None:
    """Insert papermill-style overrides after the cell tagged ``parameters``."""
    text = "\n".join(f"{name} = {value!r}" for name, value in parameters.items())
    injected = cells.code_cell(text, metadata={"tags": ["injected-parameters"]})
    for index, cell in enumerate(nb.cells):
        if "parameters" in cell.get("metadata", {}).get("tags", []):
            nb.cells.insert(index + 1, injected)
            return
    nb.cells.insert(0, injected)


def as_submitted(graded, release) -> nbformat.NotebookNode:
    """The learner's notebook again from the one that was graded (``rebuild``'s output, executed): the learner's
    answers and added cells where they were, every other graded cell as released, the course's ungraded cells and the
    injected parameters left out (``rebuild`` brings the course's cells back from the source).
    ``rebuild`` of the result runs the same code and reports no tampering of its own making (the graded copy's
    test cells hold the hidden tests, which the released ones do not); a markdown answer comes back as the graded copy
    holds it (its attachments inlined for the pages). ``grade --test`` grades this again."""
    released, by_id = _index(release)
    kept = []
    for cell in graded.cells:
        if "injected-parameters" in cell.get("metadata", {}).get("tags", []):
            continue
        gid = cells.grade_id(cell)
        if not gid and cell.get("id") in by_id:
            continue  # the course's own ungraded cell (rebuild gives the learner's added cells new ids)
        if gid and gid in released and not cells.is_solution(released[gid][0]):
            kept.append(copy.deepcopy(released[gid][0]))
            continue
        new = copy.deepcopy(cell)
        if new.cell_type == "code":
            new.outputs, new.execution_count = [], None
        kept.append(new)
    return nbformat.v4.new_notebook(cells=kept, metadata=copy.deepcopy(release.metadata))
