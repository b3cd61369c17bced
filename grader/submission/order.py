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
import hashlib
import re

import nbformat

from grader import cells
from grader.cells import GRADER, HIDDEN

AFTER_LAST_CELL = "after the learner's last cell"


CASES_MODULE = "rubric_cases"
_LOADER = ("import sys, types\n"
           f"module = types.ModuleType({CASES_MODULE!r})\n"
           f"module.__file__ = '{CASES_MODULE}.py'\n"
           f"exec(compile(source, '{CASES_MODULE}.py', 'exec'), module.__dict__)\n"
           f"sys.modules[{CASES_MODULE!r}] = module\n"
           "module.LEARNER_CELLS = cells\n")

#: a hidden part that names this gets, as ``rubric_cases.LEARNER_CELLS``, the sources of the learner's own code cells
#: (solution cells and cells the learner added), in order, as the grader read them from the submitted notebook, never
#: from the kernel: ``coursekit.meshes.rebuilt`` runs them again on a smaller mesh
LEARNER_CELLS = "LEARNER_CELLS"

#: a cases module that assigns this name at its top level draws its hidden cases per learner (``coursekit.contracts``)
DRAW = "LEARNER_DRAW"
_DRAWS = re.compile(rf"^{DRAW}\s*=", re.MULTILINE)


def learner_draw(answers: str, assignment: str) -> int:
    """The draw number of the hidden cases of ``assignment`` for a submission whose answers are ``answers``
    (``answers_key``): the same at every grading and regrade of it, another for other answers or another assignment.
    Drawn from the answers, not the learner's id: identical answers get identical cases (two learners who hand in the
    same code get the same verdict, and the grader runs such notebooks once), and the kernel is never told whose
    notebook it runs. Editing an answer to draw again gains nothing: every draw holds the contract's corners."""
    digest = hashlib.sha256(f"hidden cases\0{assignment}\0{answers}".encode("utf-8", "surrogatepass")).digest()
    return int.from_bytes(digest[:4], "big")


def answers_key(nb) -> str:
    """What a notebook runs, as one text: every code cell's source, in order (the instructor's cells are restored
    before this is read, so only the learner's answers make two submissions differ)."""
    return "\0".join(c.source if isinstance(c.source, str) else "".join(c.source)
                     for c in nb.cells if c.cell_type == "code")


def draws_per_learner(cases: str | None) -> bool:
    """Whether the cases module ``cases`` (its source) draws per learner: it assigns ``LEARNER_DRAW``."""
    return cases is not None and _DRAWS.search(cases) is not None


def drawn(nb) -> int:
    """The draw number the hidden parts of ``nb`` (split or rejoined) were handed; 0, the instructor's own draw, when
    they were handed none."""
    value = cells.grader_marks(nb).get("learner_draw", 0) if nb is not None else 0
    return value if type(value) is int and value >= 0 else 0


def learner_cells(nb) -> tuple[str, ...]:
    """The sources of ``nb``'s code cells a learner writes: solution cells and cells with no grade id."""
    return tuple(str(c.source) for c in nb.cells if c.get("cell_type") == "code"
                 and (cells.is_solution(c) or cells.grade_id(c) is None))


def cases_loader(source: str, learner: tuple[str, ...] = ()) -> str:
    """One line of Python (no newline) that registers ``source`` as the module ``rubric_cases`` in the kernel: run
    in a namespace of its own (no name of the learner's is read or bound), replacing whatever a learner registered
    under that name or saved as ``rubric_cases.py`` beside the notebook; ``learner``: its ``LEARNER_CELLS``."""
    return f"exec({_LOADER!r}, {{'source': {source!r}, 'cells': {tuple(learner)!r}}})"


def with_hidden_cases(nb, cases: str | None) -> nbformat.NotebookNode:
    """The instructor's notebook (run whole, unsplit: ``grader.classroom.compile_cache``) with a cell that registers
    ``rubric_cases`` just before the first test cell with hidden tests; ``nb`` itself when there are no cases."""
    if cases is None:
        return nb
    nb = copy.deepcopy(nb)
    first = next((i for i, c in enumerate(nb.cells) if cells.is_autograded_test(c) and HIDDEN.spans(str(c.source))),
                 len(nb.cells))
    nb.cells.insert(first, cells.code_cell(cases_loader(cases, learner_cells(nb))))
    return nb


def split(nb, cases: str | None = None, draw: int | None = None) -> nbformat.NotebookNode:
    """``nb`` (rebuilt on the course's skeleton) with every test cell's hidden part moved after its last cell; each
    hidden part first registers ``cases`` (the source of ``rubric_cases.py``), when given, as ``rubric_cases``.
    ``draw``: the learner's draw number (``learner_draw``), set as the module's ``LEARNER_DRAW`` when it draws per
    learner, and kept in the notebook's metadata (the grader's, never the kernel's) for the judges (``drawn``)."""
    nb = copy.deepcopy(nb)
    if draw is not None and draws_per_learner(cases):
        cases = f"{cases}\n{DRAW} = {int(draw)}\n"
        nb.metadata = nbformat.from_dict({**copy.deepcopy(dict(nb.get("metadata", {}))),
                                          GRADER: {"learner_draw": int(draw)}})
    taken = {c.get("id") for c in nb.cells}
    tails, learner = [], learner_cells(nb)
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
            padding = cases_loader(cases, learner if LEARNER_CELLS in hidden else ()) + (padding or "\n")
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
    kept = {"learner_draw": drawn(nb)} if "learner_draw" in cells.grader_marks(nb) else {}
    out.metadata = nbformat.from_dict({**copy.deepcopy(dict(nb.get("metadata", {}))),
                                       GRADER: {"hidden_tests": AFTER_LAST_CELL, **kept}})
    return out


def hidden_ran_last(nb) -> bool:
    """Whether ``nb`` (rejoined, or its sanitized copy) ran every hidden part after the learner's last cell."""
    marks = (nb.get("metadata", {}) if nb is not None else {}).get(GRADER, {})
    return isinstance(marks, dict) and marks.get("hidden_tests") == AFTER_LAST_CELL


def hidden_part_ran(cell) -> bool:
    """False only for a rejoined test cell whose hidden part never ran (the kernel had stopped before it)."""
    return cells.grader_marks(cell).get("hidden_part_ran", True) is not False
