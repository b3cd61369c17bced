"""Reading nbgrader's cell metadata."""
from __future__ import annotations


def nbgrader(cell) -> dict:
    meta = cell.get("metadata", {}).get("nbgrader", {})
    return meta if isinstance(meta, dict) else {}


def grade_id(cell) -> str | None:
    value = nbgrader(cell).get("grade_id")
    return value if isinstance(value, str) else None


def is_solution(cell) -> bool:
    return bool(nbgrader(cell).get("solution"))


def is_grade(cell) -> bool:
    return bool(nbgrader(cell).get("grade"))


def is_autograded_test(cell) -> bool:
    """A locked code cell whose points the autograder awards."""
    return cell.get("cell_type") == "code" and is_grade(cell) and not is_solution(cell)


def is_manual_answer(cell) -> bool:
    return is_grade(cell) and is_solution(cell)


def points(cell) -> float:
    try:
        return float(nbgrader(cell).get("points", 0) or 0)
    except (TypeError, ValueError):
        return 0.0
