"""Rebuild ``figures/`` by executing the instructor notebooks.

Every figure is drawn by a notebook cell from values computed in that run;
``figures_dir`` (a papermill parameter) points the cells at ``figures/``.
"""
from __future__ import annotations

import re
import tempfile
from pathlib import Path

from grader.course.execute import execute
from grader.layout import Course

_NUMBER = re.compile(r"-?\d+\.\d+")


def build_figures(course: Course, figures_dir: Path | None = None, progress: bool = True,
                  executed_dir: Path | None = None) -> list[Path]:
    figures_dir = (figures_dir or course.figures).resolve()
    before = {p: p.stat().st_mtime_ns for p in figures_dir.glob("*.svg")} if figures_dir.exists() else {}
    with tempfile.TemporaryDirectory() as tmp:
        for assignment in course.assignments():
            out = (executed_dir or Path(tmp)) / f"{assignment}.ipynb"
            execute(course.source_notebook(assignment), out, parameters={"figures_dir": str(figures_dir)},
                    progress=progress)
    return sorted(p for p in figures_dir.glob("*.svg") if before.get(p) != p.stat().st_mtime_ns)


def _comparable(svg: str) -> str:
    # Float formatting of the last digits may differ across CPUs; geometry to 0.1 px does not.
    return _NUMBER.sub(lambda m: f"{float(m.group()):.1f}", svg)


def stale_figures(course: Course) -> list[str]:
    with tempfile.TemporaryDirectory() as tmp:
        fresh = Path(tmp) / "figures"
        build_figures(course, fresh, progress=False)
        names = sorted({p.name for p in fresh.glob("*.svg")} | {p.name for p in course.figures.glob("*.svg")})
        return [n for n in names
                if not (fresh / n).exists() or not (course.figures / n).exists()
                or _comparable((fresh / n).read_text()) != _comparable((course.figures / n).read_text())]
