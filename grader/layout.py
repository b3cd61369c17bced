"""Where the course keeps things (nbgrader's course directory layout)."""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

ASSIGNMENTS = ("sharded_step", "local_mean_diagnosis", "collectives")


def _default_root() -> Path:
    env = os.environ.get("COURSE_ROOT")
    return Path(env).resolve() if env else Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Course:
    root: Path

    @classmethod
    def default(cls) -> "Course":
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
        return [a for a in ASSIGNMENTS if (self.source / a).is_dir()]

    def source_notebook(self, assignment: str) -> Path:
        return self.source / assignment / f"{assignment}.ipynb"

    def release_notebook(self, assignment: str) -> Path:
        return self.release / assignment / f"{assignment}.ipynb"

    def rubric(self, assignment: str) -> Path:
        return self.source / assignment / "rubric.py"
