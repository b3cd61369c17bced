"""nbgrader preprocessors the course adds to ``generate_assignment``."""
from __future__ import annotations

import re

from nbgrader.preprocessors import ClearSolutions


class ScaffoldSolutions(ClearSolutions):
    """Replace solution regions with a stub that says what to do.

    The instructor writes the instruction in the cell's metadata
    (``metadata.course.todo``): one string for every region of the cell, or a
    list with one string per region. The student sees
    ``raise NotImplementedError("<instruction>")`` in place of each solution,
    indented where the solution was, below the signature and docstring.
    """

    def preprocess_cell(self, cell, resources, cell_index):
        todo = cell.get("metadata", {}).get("course", {}).get("todo")
        if not todo or cell.cell_type != "code" or self.begin_solution_delimeter not in cell.source:
            return super().preprocess_cell(cell, resources, cell_index)
        messages = [todo] if isinstance(todo, str) else list(todo)
        cell.source = self._scaffold(cell.source, messages)
        return cell, resources

    def _scaffold(self, source: str, messages: list[str]) -> str:
        lines, inside, region = [], False, 0
        for line in source.split("\n"):
            if self.begin_solution_delimeter in line:
                if inside:
                    raise RuntimeError("encountered nested begin solution statements")
                indent = re.match(r"\s*", line).group(0)
                message = messages[min(region, len(messages) - 1)]
                lines += [f"{indent}# YOUR CODE HERE", f"{indent}raise NotImplementedError({message!r})"]
                inside, region = True, region + 1
            elif self.end_solution_delimeter in line:
                inside = False
            elif not inside:
                lines.append(line)
        if inside:
            raise RuntimeError("no end solution statement found")
        return "\n".join(lines)
