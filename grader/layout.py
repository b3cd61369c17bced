"""Where the course keeps things (nbgrader's course directory layout)."""
from __future__ import annotations

import copy
import functools
import os
from dataclasses import dataclass
from pathlib import Path

import nbformat

ASSIGNMENTS = ("sharded_step", "local_mean_diagnosis", "collectives")


def _default_root() -> Path:
    env = os.environ.get("COURSE_ROOT")
    return Path(env).resolve() if env else Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Course:
    root: Path

    @classmethod
    def default(cls) -> Course:
        return cls(_default_root())

    @property
    def source(self) -> Path:
        return self.root / "source"

    @property
    def release(self) -> Path:
        return self.root / "notebooks"

    @property
    def figures(self) -> Path:
        return self.root / "figures"

    @property
    def samples(self) -> Path:
        return self.root / "samples"

    def assignments(self) -> list[str]:
        """The course's assignments: the lessons in their order, then any other ``source/NAME/NAME.ipynb`` (a lesson
        an author added with ``python -m grader new-assignment``), by name."""
        known = [a for a in ASSIGNMENTS if (self.source / a).is_dir()]
        added = sorted(p.name for p in self.source.glob("*/") if p.name not in ASSIGNMENTS
                       and (p / f"{p.name}.ipynb").is_file()) if self.source.is_dir() else []
        return known + added

    def source_notebook(self, assignment: str) -> Path:
        return self.source / assignment / f"{assignment}.ipynb"

    def release_notebook(self, assignment: str) -> Path:
        return self.release / assignment / f"{assignment}.ipynb"

    def read_source(self, assignment: str) -> nbformat.NotebookNode:
        """The instructor's notebook of ``assignment``, parsed; a copy of its own for each caller."""
        return read_notebook(self.source_notebook(assignment))

    def read_release(self, assignment: str) -> nbformat.NotebookNode:
        """The released (student) notebook of ``assignment``, parsed; a copy of its own for each caller."""
        return read_notebook(self.release_notebook(assignment))

    def rubric(self, assignment: str) -> Path:
        return self.source / assignment / "rubric.py"

    def hidden_cases(self, assignment: str) -> str | None:
        """The source of ``source/<assignment>/rubric_cases.py``: the hidden tests' inputs, declared once (the
        hidden test cells import it, the rubric judges against it); None when the assignment has none."""
        path = self.source / assignment / "rubric_cases.py"
        return path.read_text() if path.is_file() else None


@functools.lru_cache(maxsize=64)
def _parsed(path: str, version: tuple[int, int, int]) -> nbformat.NotebookNode:
    return nbformat.read(path, as_version=4)


def read_notebook(path: Path) -> nbformat.NotebookNode:
    """A course notebook (instructor's or released), parsed and validated once per version of the file (its
    inode, size and modification time), then copied: every submission of a class is graded against the same
    few files, and reading one costs more than copying it. Never for a learner's file."""
    found = os.stat(path)
    return copy.deepcopy(_parsed(str(path), (found.st_ino, found.st_size, found.st_mtime_ns)))
