"""Build submission notebooks from short scenario files (samples, test corpora).

A scenario file is Python with a header and ``# %%`` sections::

    # scenario: summed local means (gradient 4x)
    # base: solution            (solution | student)
    # expect-fail: test-loss-and-gradient test-update
    # expect-status: graded
    # expect-message: the per-device means were summed
    # %% cell train-step
    def loss(...): ...

Further headers: ``same-as`` (a path relative to this file: use that
scenario under this file's name), ``variant-of`` (a path relative to this file: start from that scenario's
sections, this file's own sections replacing its cells and adding its appended ones; headers are this file's),
``filename`` (submit under another name), ``delete``,
``duplicate`` (grade ids) and ``points`` (``GRADE_ID VALUE``) build tampered
notebooks; ``requires`` names a capability a test must prove first;
``expect-status`` may list several acceptable statuses; each ``expect-message``
line is a text the failed tests' messages must contain (the mistake named), each
``expect-no-message`` one none of them may contain (a mistake that is not the cause).

``base`` picks the starting notebook: the instructor's solutions (hidden
tests removed, like a learner's copy) or the generated student notebook.
Each ``# %% cell GRADE_ID`` section replaces that cell's source; ``# %% raw``
sections hold notebook JSON for scenarios that are not valid notebooks at all
(``# %% raw`` followed by the text to write verbatim). ``# %% append`` adds a
new code cell (as a learner may) after the cell named on the same line, or at
the end. Inside a section, ``# %% repeat N: TEMPLATE`` stands for N lines, line ``i`` (from 0) being
``TEMPLATE.format(i=i)``: a payload of thousands of generated lines (an attack on the grader's own cost) is
written as the rule that makes it, not stored.
"""
from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from grader import cells
from grader.cells import HIDDEN
from grader.layout import Course

@dataclass
class Scenario:
    name: str
    description: str = ""
    base: str = "solution"
    expect_fail: list[str] = field(default_factory=list)
    expect_status: str = "graded"
    expect_message: list[str] = field(default_factory=list)
    expect_no_message: list[str] = field(default_factory=list)
    replace: dict[str, str] = field(default_factory=dict)
    appended: list[tuple[str | None, str]] = field(default_factory=list)
    raw: str | None = None
    filename: str | None = None  # submit under another name (wrong-name scenarios)
    headers: dict[str, str] = field(default_factory=dict)


def parse(path: Path) -> Scenario:
    scenario = Scenario(name=path.stem)
    section: tuple[str, str | None] | None = None
    buffer: list[str] = []

    def flush():
        if section is None:
            return
        text = "\n".join(buffer).strip("\n") + "\n"
        kind, arg = section
        if kind == "cell":
            scenario.replace[arg] = text.rstrip("\n")
        elif kind == "append":
            scenario.appended.append((arg, text.rstrip("\n")))
        elif kind == "raw":
            scenario.raw = text

    for line in path.read_text().splitlines():
        repeat = re.match(r"# %% repeat (\d+): (.*)$", line)
        if repeat and section is not None:
            buffer.extend(repeat.group(2).format(i=i) for i in range(int(repeat.group(1))))
            continue
        match = re.match(r"# %% (cell|append|raw)\s*(\S*)\s*$", line)
        if match:
            flush()
            section, buffer = (match.group(1), match.group(2) or None), []
            continue
        if section is None:
            header = re.match(r"#\s*([a-z-]+):\s*(.*)$", line)
            if header:
                key, value = header.group(1), header.group(2).strip()
                scenario.headers[key] = value
                if key == "scenario":
                    scenario.description = value
                elif key == "base":
                    scenario.base = value
                elif key == "expect-fail":
                    scenario.expect_fail = value.split()
                elif key == "expect-status":
                    scenario.expect_status = value
                elif key == "expect-message":
                    scenario.expect_message.append(value)
                elif key == "expect-no-message":
                    scenario.expect_no_message.append(value)
                elif key == "filename":
                    scenario.filename = value
            continue
        buffer.append(line)
    flush()
    if "same-as" in scenario.headers:  # reuse another scenario file under this name
        original = parse((path.parent / scenario.headers["same-as"]).resolve())
        original.name = scenario.name
        return original
    if "variant-of" in scenario.headers:  # another scenario's answers, a few of them changed
        original = parse((path.parent / scenario.headers["variant-of"]).resolve())
        scenario.replace = {**original.replace, **scenario.replace}
        scenario.appended = original.appended + scenario.appended
        scenario.raw = scenario.raw if scenario.raw is not None else original.raw
        if "base" not in scenario.headers:
            scenario.base = original.base
    return scenario


SOLUTION_MARKERS = re.compile(r"^[ \t]*### (?:BEGIN|END) SOLUTION[ \t]*(?:\n|$)", re.M)


def solution_copy(nb) -> nbformat.NotebookNode:
    """The instructor notebook as a learner who solved everything would hold it: the solutions without
    nbgrader's ``### BEGIN/END SOLUTION`` lines (a learner never sees them), hidden tests and outputs gone."""
    nb = copy.deepcopy(nb)
    for cell in nb.cells:
        cell.source = SOLUTION_MARKERS.sub("", cell.source)
        if cells.is_autograded_test(cell):
            cell.source = HIDDEN.sub("", cell.source).rstrip("\n")
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    return nb


def build(course: Course, assignment: str, scenario: Scenario) -> str:
    """The submission file's text for ``scenario``."""
    if scenario.raw is not None:
        return scenario.raw
    if scenario.base == "student":
        nb = nbformat.read(course.release_notebook(assignment), as_version=4)
    else:
        nb = solution_copy(nbformat.read(course.source_notebook(assignment), as_version=4))
    by_id = {cells.grade_id(c): c for c in nb.cells if cells.grade_id(c)}
    # Tampering scenarios edit the notebook's structure, not just sources.
    for grade_id in scenario.headers.get("delete", "").split():
        nb.cells.remove(by_id[grade_id])
    if "points" in scenario.headers:
        grade_id, value = scenario.headers["points"].split()
        by_id[grade_id].metadata["nbgrader"]["points"] = float(value)
    for grade_id in scenario.headers.get("duplicate", "").split():
        twin = copy.deepcopy(by_id[grade_id])
        twin.source = "answer = 1"
        nb.cells.insert(nb.cells.index(by_id[grade_id]), twin)
    for grade_id, source in scenario.replace.items():
        if grade_id not in by_id:
            raise KeyError(f"{scenario.name}: no cell {grade_id!r} in {assignment}")
        by_id[grade_id].source = source
    for after, source in scenario.appended:
        new = nbformat.v4.new_code_cell(source)
        position = len(nb.cells) if after is None else nb.cells.index(by_id[after]) + 1
        nb.cells.insert(position, new)
    if "duplicate" in scenario.headers:
        # nbformat would repair the duplicated ids on write; keep them, as a hostile file would.
        return json.dumps(nb, indent=1, sort_keys=True) + "\n"
    return nbformat.writes(nb)


def write_submission(course: Course, assignment: str, scenario: Scenario, submitted: Path, student: str) -> Path:
    folder = submitted / student / assignment
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / (scenario.filename or f"{assignment}.ipynb")
    path.write_text(build(course, assignment, scenario))
    return path
