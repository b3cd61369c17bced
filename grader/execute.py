"""Execute notebooks headless with papermill (instructor runs, CI, figures).

This is the trusted path: the instructor's own notebooks, executed as they are,
with papermill parameters (``num_devices``, ``platform``, ``figures_dir``).
Learners' submissions go through ``grader.pipeline`` instead.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import papermill


@dataclass
class ExecutionFailed(Exception):
    notebook: Path
    cell: str
    error: str

    def __str__(self) -> str:
        return f"{self.notebook}: cell {self.cell} failed: {self.error}"


def execute(notebook: Path, output: Path, *, parameters: dict | None = None, progress: bool = True,
            cell_timeout: int = 300) -> Path:
    """Run ``notebook`` into ``output`` in the notebook's own folder; raise ``ExecutionFailed``."""
    output.parent.mkdir(parents=True, exist_ok=True)
    try:
        papermill.execute_notebook(
            str(notebook), str(output), parameters=parameters or {}, cwd=str(notebook.parent),
            progress_bar=progress, execution_timeout=cell_timeout, kernel_name="python3",
        )
    except papermill.PapermillExecutionError as error:
        cell = _failed_cell_id(output, error.cell_index)
        raise ExecutionFailed(notebook, cell, f"{error.ename}: {error.evalue}") from None
    return output


def _failed_cell_id(output: Path, index: int) -> str:
    import nbformat

    try:
        cell = nbformat.read(output, as_version=4).cells[index]
    except (OSError, IndexError, ValueError):
        return str(index)
    return cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") or cell.get("id") or str(index)
