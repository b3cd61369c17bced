"""Reading nbgrader's cell metadata, and building the code cells the grader adds."""
from __future__ import annotations

import ast
import re


def code_cell(source: str, **fields):
    """``nbformat.v4.new_code_cell`` without its schema check of the one cell, for cells whose every field the
    grader writes itself (the hidden parts moved after the learner's cells, the injected parameters): checking
    each costs more than the rest of building them, and the notebook is checked whole when it is written."""
    from nbformat import NotebookNode
    from nbformat.corpus.words import generate_corpus_id

    cell = NotebookNode(id=generate_corpus_id(), cell_type="code", metadata=NotebookNode(), execution_count=None,
                        source=source, outputs=[])
    cell.update(fields)
    return cell


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


class _HiddenBlocks:
    """nbgrader's hidden-test blocks in a cell's source, found line by line in linear time.

    The same blocks as ``re.compile(r"^[ \\t]*### BEGIN HIDDEN TESTS.*?^[ \\t]*### END HIDDEN TESTS[^\\n]*\\n?",
    re.S | re.M)``: from a line starting (after spaces or tabs) with ``### BEGIN HIDDEN TESTS`` to the first later
    line starting with ``### END HIDDEN TESTS``, that line and its newline included. That expression restarts its
    lazy scan at every BEGIN line, so a learner cell of BEGIN lines with no END took time quadratic in its length
    (minutes for a 512 KiB cell, holding the GIL: every worker of the grader stopped while a feedback page was
    written); this never looks at a line twice.
    """

    BEGIN, END = "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"

    def spans(self, source: str) -> list[tuple[int, int]]:
        spans, start, begin = [], 0, None
        for line in str(source).split("\n"):
            end = start + len(line) + 1  # past this line's newline (or one past the end of the text)
            marker = line.lstrip(" \t")
            if begin is None and marker.startswith(self.BEGIN):
                begin = start
            elif begin is not None and marker.startswith(self.END):
                spans.append((begin, min(end, len(source))))
                begin = None
            start = end
        return spans

    def findall(self, source: str) -> list[str]:
        return [source[a:b] for a, b in self.spans(source)]

    def search(self, source: str) -> bool:
        return bool(self.spans(source))

    def sub(self, replacement: str, source: str) -> str:
        parts, last = [], 0
        for a, b in self.spans(source):
            parts += [source[last:a], replacement]
            last = b
        return "".join(parts) + source[last:]


HIDDEN = _HiddenBlocks()


# The grader's own marks on the notebook it runs (``grader.submission.order``): a cell holding the hidden part of a
# test cell, moved after the learner's last cell, names that test; the rejoined test cell says how many of its
# outputs its visible part produced. Learner cells never carry them: ``restore`` builds every added cell afresh and
# takes every other cell's metadata from the course.
GRADER = "grader"


def grader_marks(cell) -> dict:
    meta = cell.get("metadata", {}).get(GRADER, {})
    return meta if isinstance(meta, dict) else {}


def hidden_part_of(cell) -> str | None:
    """The grade_id of the test cell whose hidden part this cell holds (run after the learner's last cell)."""
    value = grader_marks(cell).get("hidden_part_of")
    return value if cell.get("cell_type") == "code" and isinstance(value, str) else None


def test_of(cell) -> str | None:
    """The test a cell belongs to: its own grade_id for an autograded test cell, the test's for its hidden part."""
    return grade_id(cell) if is_autograded_test(cell) else hidden_part_of(cell)


def visible_outputs(cell) -> int | None:
    """How many of a rejoined test cell's outputs its visible part produced (the rest came from its hidden part)."""
    value = grader_marks(cell).get("visible_outputs")
    return value if type(value) is int and value >= 0 else None


def test_name(grade_id: str) -> str:
    """"test-loss-and-gradient" -> "loss and gradient": a test's name in the lesson's words, the same in Validate's
    dialog and on the feedback page."""
    name = grade_id[5:] if grade_id.startswith("test-") else grade_id
    return name.replace("-", " ").replace("_", " ")


# What an f-string placeholder in a record key may stand for: one plain name part (never a dot, so never another prefix)
KEY_PART = "[A-Za-z0-9_]{1,64}"


def record_calls(source: str, keys: dict[str, str] | None = None) -> list[tuple[str, re.Pattern | None, bool]]:
    """Each ``record(key, value)`` call of a cell's code: the key as written (an f-string's placeholders in braces),
    its pattern for an f-string key (None for a plain string), and whether the value is ``exported(...)`` (a program
    handed to the grader). ``keys``: the record keys a cell may name (a hidden part's ``record(PROGRAM, ...)`` with a
    ``Key`` of the assignment's ``rubric_cases``), by name. Code that does not parse records nothing."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    found = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "record"
                and node.args):
            continue
        key, value = node.args[0], node.args[1] if len(node.args) > 1 else None
        exported = isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "exported"
        if isinstance(key, ast.Constant) and isinstance(key.value, str):
            found.append((key.value, None, exported))
        elif isinstance(key, ast.Name) and key.id in (keys or {}):
            found.append((str(keys[key.id]), None, exported))
        elif isinstance(key, ast.JoinedStr):
            parts = [(v.value, re.escape(v.value)) if isinstance(v, ast.Constant) else ("{" + ast.unparse(v.value) + "}",
                                                                                        KEY_PART) for v in key.values]
            found.append(("".join(t for t, _ in parts), re.compile("".join(p for _, p in parts)), exported))
    return found


def record_keys(source: str) -> tuple[frozenset[str], tuple[re.Pattern, ...]]:
    """The record keys ``source`` records: its plain string keys, and a pattern per f-string key."""
    calls = record_calls(source)
    return frozenset(t for t, p, _ in calls if p is None), tuple(p for _, p, _ in calls if p is not None)

