"""The benchmark's class (built from the scenario files) and its scores: stock nbgrader's gradebook against
the grader's results.json, disagreement by disagreement with its reason."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

from bench_setup import ASSIGNMENTS, CLASS, STOCK_AUTOGRADE
from measure import timed

from grader.layout import Course
from grader.course.variants import parse, write_submission


# ---------------------------------------------------------------- the class


def build_class(course: Course, submitted: Path, students: int) -> dict[str, list[str]]:
    """submitted/{student}/{assignment}/; returns each student's scenario per notebook."""
    who: dict[str, list[str]] = {}
    for assignment in ASSIGNMENTS:
        files = CLASS[assignment]
        for index in range(students):
            path = files[index % len(files)]
            student = f"s{index + 1:03d}"
            write_submission(course, assignment, parse(path), submitted, student)
            who.setdefault(student, []).append(f"{assignment}:{path.stem}")
    return who


def stock_course(course: Course, submitted: Path, root: Path, log: Path) -> None:
    """A temporary nbgrader course: the sources, the release, the config and the class."""
    for name in ("source", "notebooks"):
        shutil.copytree(course.root / name, root / name)
    shutil.copy(course.root / "nbgrader_config.py", root / "nbgrader_config.py")
    with (root / "nbgrader_config.py").open("a") as config:  # the baseline is stock nbgrader's own autograde
        config.write(STOCK_AUTOGRADE)
    shutil.copytree(submitted, root / "samples" / "submitted")
    for assignment in ASSIGNMENTS:  # the instructor's one-time set-up: fills the gradebook's cells
        timed(["nbgrader", "generate_assignment", assignment, "--force"], log, cwd=root)


# ---------------------------------------------------------------- scores


def our_scores(out: Path) -> dict[tuple[str, str], dict[str, float]]:
    scores = {}
    for result in json.loads((out / "results.json").read_text()):
        scores[result["student_id"], result["assignment_id"]] = {t["grade_id"]: t["points"] for t in result["tests"]}
    return scores


def our_messages(out: Path) -> dict[tuple[str, str, str], str]:
    messages = {}
    for result in json.loads((out / "results.json").read_text()):
        for t in result["tests"]:
            messages[result["student_id"], result["assignment_id"], t["grade_id"]] = t["message"]
    return messages


def stock_scores(root: Path) -> dict[tuple[str, str], dict[str, float]]:
    from nbgrader.api import Gradebook

    scores: dict[tuple[str, str], dict[str, float]] = {}
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}", course_id="jax-distributed-training") as book:
        for assignment in ASSIGNMENTS:
            for submission in book.assignment_submissions(assignment):
                for notebook in submission.notebooks:
                    scores[submission.student.id, assignment] = {
                        g.name: float(g.auto_score) for g in notebook.grades
                        if g.cell_type == "code" and g.auto_score is not None}
    return scores


def stock_reason(root: Path, student: str, assignment: str, grade_id: str) -> str:
    """What stock nbgrader saw in that test cell."""
    import nbformat

    path = root / "autograded" / student / assignment / f"{assignment}.ipynb"
    try:
        nb = nbformat.read(path, as_version=4)
    except OSError:
        return "stock: no autograded notebook"
    for cell in nb.cells:
        if cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") != grade_id:
            continue
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error":
                return f"stock: the cell raised {output.get('ename')}: {str(output.get('evalue'))[:90]}"
        for output in cell.get("outputs", []):
            if output.get("output_type") == "stream" and output.get("name") == "stderr":
                return f"stock: stderr output zeroes the cell: {output.get('text', '').strip()[:90]!r}"
        return "stock: the cell ran without error"
    return "stock: cell not found"


def compare(stock: dict, ours: dict, messages: dict, root: Path, who: dict) -> tuple[int, int, list[str]]:
    """Per-notebook agreement; every per-test disagreement with its reason."""
    agree, lines = 0, []
    keys = sorted(set(stock) | set(ours))
    for key in keys:
        student, assignment = key
        mine, theirs = ours.get(key), stock.get(key)
        if mine is None or theirs is None:
            lines.append(f"  {student}/{assignment}: graded by only one of them (ours {mine is not None}, "
                         f"stock {theirs is not None})")
            continue
        if sum(mine.values()) == sum(theirs.get(g, 0.0) for g in mine) and all(mine[g] == theirs.get(g, 0.0) for g in mine):
            agree += 1
            continue
        scenario = next((s.split(":", 1)[1] for s in who[student] if s.startswith(assignment + ":")), "?")
        lines.append(f"  {student}/{assignment} ({scenario}): ours {sum(mine.values()):g}, stock {sum(theirs.values()):g}")
        for grade_id in mine:
            if mine[grade_id] == theirs.get(grade_id, 0.0):
                continue
            if theirs.get(grade_id, 0.0) > mine[grade_id]:
                why = "ours fails it, stock passes: " + messages[student, assignment, grade_id][:110]
                why += " (stock runs only the public asserts; hidden cases and placement are judged by our rubric)"
            else:
                why = "ours passes it, stock fails: " + stock_reason(root, student, assignment, grade_id)
            lines.append(f"    {grade_id}: ours {mine[grade_id]:g}, stock {theirs.get(grade_id, 0.0):g}: {why}")
    return agree, len(keys), lines
