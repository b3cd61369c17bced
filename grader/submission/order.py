"""Hidden parts of test cells run after the learner's last cell: one step before the kernel, one after.

``split`` (before the kernel) cuts every test cell at its ``### BEGIN HIDDEN TESTS`` line: the visible part stays
where the course put it; the hidden part (to the end of the cell) becomes a cell of its own, appended after the
notebook's last cell, in the course's order, marked with the test it belongs to (``cells.hidden_part_of``). The
kernel resets its hooks before each of those cells as before each test cell (``grader.kernel.run``), and the hidden
part runs on the notebook's final state, as in otter-grader: a learner who rebinds a name after a test cell is
graded on the rebound name. The hidden part keeps its line numbers (it is padded with the visible part's line
breaks), so a traceback of either part points at the line of the course's cell.

So no hidden source reaches the kernel before every learner cell has run, and every output of a learner cell, and
of a test's visible part, was produced by a kernel that had never received any: the feedback page can show them.
Outputs of the hidden parts (and whatever a learner thread or hook printed while they ran) stay withheld.

``rejoin`` (after the kernel) puts each hidden part's outputs back after its test cell's own, restores the cell's
whole source, drops the appended cells and marks what came from where (``cells.visible_outputs``; the notebook's
``metadata.grader.hidden_tests``), so records, errors, the autograded notebook and nbgrader see one cell per test.
"""
from __future__ import annotations

import copy

import nbformat

from grader import cells
from grader.cells import GRADER, HIDDEN

AFTER_LAST_CELL = "after the learner's last cell"


def split(nb) -> nbformat.NotebookNode:
    """``nb`` (rebuilt on the course's skeleton) with every test cell's hidden part moved after its last cell."""
    nb = copy.deepcopy(nb)
    taken = {c.get("id") for c in nb.cells}
    tails = []
    for cell in nb.cells:
        if not cells.is_autograded_test(cell):
            continue
        source = str(cell.source)
        spans = HIDDEN.spans(source)
        if not spans:
            continue
        begin = spans[0][0]
        if source[begin] in " \t":  # a hidden block inside an indented block: the visible part alone would not
            begin = 0               # parse, so the whole cell runs last (and shows no output)
        visible, hidden = source[:begin], source[begin:]
        cell.source = visible
        tail = cells.code_cell("\n" * visible.count("\n") + hidden,
                               metadata={GRADER: {"hidden_part_of": cells.grade_id(cell)}})
        tail.id = _fresh_id(f"hidden-{len(tails)}", taken)
        tails.append(tail)
    nb.cells.extend(tails)
    return nb


def _fresh_id(wanted: str, taken: set) -> str:
    name, n = wanted, 0
    while name in taken:
        n += 1
        name = f"{wanted}-{n}"
    taken.add(name)
    return name


def rejoin(nb) -> nbformat.NotebookNode:
    """One cell per test again: each hidden part's outputs after its test cell's own. A notebook that was not split
    (the instructor's) comes back as it is. The cells are new objects; outputs are shared with ``nb``."""
    tails = {cells.hidden_part_of(c): c for c in nb.cells if cells.hidden_part_of(c)}
    if not tails:
        return nb
    joined = []
    for cell in nb.cells:
        if cells.hidden_part_of(cell):
            continue
        gid = cells.grade_id(cell) if cells.is_autograded_test(cell) else None
        if gid is None or gid not in tails:  # a test without a hidden part: every output is its visible part's
            if gid is not None:
                cell = nbformat.NotebookNode(dict(cell))
                cell.metadata = nbformat.from_dict({**copy.deepcopy(dict(cell.get("metadata", {}))),
                                                    GRADER: {"visible_outputs": len(cell.get("outputs", []))}})
            joined.append(cell)
            continue
        tail, visible = tails[gid], str(cell.source)
        whole = nbformat.NotebookNode(dict(cell))
        whole.source = visible + str(tail.source)[visible.count("\n"):]
        whole.outputs = [*cell.get("outputs", []), *tail.get("outputs", [])]
        marks = {"visible_outputs": len(cell.get("outputs", [])),
                 "hidden_part_ran": tail.get("execution_count") is not None or bool(tail.get("outputs"))}
        whole.metadata = nbformat.from_dict({**copy.deepcopy(dict(cell.get("metadata", {}))), GRADER: marks})
        joined.append(whole)
    out = nbformat.NotebookNode(dict(nb))
    out.cells = joined
    out.metadata = nbformat.from_dict({**copy.deepcopy(dict(nb.get("metadata", {}))),
                                       GRADER: {"hidden_tests": AFTER_LAST_CELL}})
    return out


def hidden_ran_last(nb) -> bool:
    """Whether ``nb`` (rejoined, or its sanitized copy) ran every hidden part after the learner's last cell."""
    marks = (nb.get("metadata", {}) if nb is not None else {}).get(GRADER, {})
    return isinstance(marks, dict) and marks.get("hidden_tests") == AFTER_LAST_CELL


def hidden_part_ran(cell) -> bool:
    """False only for a rejoined test cell whose hidden part never ran (the kernel had stopped before it)."""
    return cells.grader_marks(cell).get("hidden_part_ran", True) is not False
