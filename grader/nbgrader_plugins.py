"""nbgrader preprocessors the course adds to ``generate_assignment``."""
from __future__ import annotations

from nbgrader.preprocessors import ClearSolutions


class ScaffoldSolutions(ClearSolutions):
    """Replace solution regions with a stub that says what to do.

    The instructor writes the instruction in the cell's metadata
    (``metadata.course.todo``); the student sees
    ``raise NotImplementedError("<instruction>")`` in place of the solution,
    indented where the solution was, below the signature and docstring.
    """

    def preprocess_cell(self, cell, resources, cell_index):
        todo = cell.get("metadata", {}).get("course", {}).get("todo")
        if not todo or cell.cell_type != "code":
            return super().preprocess_cell(cell, resources, cell_index)
        language = resources["language"]
        saved = dict(self.code_stub)
        self.code_stub = {**saved, language: f"# YOUR CODE HERE\nraise NotImplementedError({todo!r})"}
        try:
            return super().preprocess_cell(cell, resources, cell_index)
        finally:
            self.code_stub = saved
