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

The hidden tests' inputs are declared once, in ``source/<assignment>/rubric_cases.py`` (the rubric judges against
the same module): each hidden part starts with a line that registers that module as ``rubric_cases`` in the
kernel (``cases_loader``), on a line the padding had left empty, so it reaches the kernel with the hidden source,
never before.

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


CASES_MODULE = "rubric_cases"
_LOADER = ("import sys, types\n"
           f"module = types.ModuleType({CASES_MODULE!r})\n"
           f"module.__file__ = '{CASES_MODULE}.py'\n"
           f"exec(compile(source, '{CASES_MODULE}.py', 'exec'), module.__dict__)\n"
           f"sys.modules[{CASES_MODULE!r}] = module\n")


def cases_loader(source: str) -> str:
    """One line of Python (no newline) that registers ``source`` as the module ``rubric_cases`` in the kernel: run
    in a namespace of its own (no name of the learner's is read or bound), replacing whatever a learner registered
    under that name or saved as ``rubric_cases.py`` beside the notebook."""
    return f"exec({_LOADER!r}, {{'source': {source!r}}})"


def with_hidden_cases(nb, cases: str | None) -> nbformat.NotebookNode:
    """The instructor's notebook (run whole, unsplit: ``grader.classroom.compile_cache``) with a cell that registers
    ``rubric_cases`` just before the first test cell with hidden tests; ``nb`` itself when there are no cases."""
    if cases is None:
        return nb
    nb = copy.deepcopy(nb)
    first = next((i for i, c in enumerate(nb.cells) if cells.is_autograded_test(c) and HIDDEN.spans(str(c.source))),
                 len(nb.cells))
    nb.cells.insert(first, cells.code_cell(cases_loader(cases)))
    return nb


def split(nb, cases: str | None = None) -> nbformat.NotebookNode:
    """``nb`` (rebuilt on the course's skeleton) with every test cell's hidden part moved after its last cell; each
    hidden part first registers ``cases`` (the source of ``rubric_cases.py``), when given, as ``rubric_cases``."""
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
        # the hidden part keeps its line numbers: padded with the visible part's line breaks, the first of which
        # (or a line of its own, when the whole cell is hidden) holds the cases' loader
        padding = "\n" * visible.count("\n")
        if cases is not None:
            padding = cases_loader(cases) + (padding or "\n")
        tail = cells.code_cell(padding + hidden,
                               metadata={GRADER: {"hidden_part_of": cells.grade_id(cell), "hidden_from": len(padding)}})
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
        start = cells.grader_marks(tail).get("hidden_from", visible.count("\n"))
        whole.source = visible + str(tail.source)[start if isinstance(start, int) else visible.count("\n"):]
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
