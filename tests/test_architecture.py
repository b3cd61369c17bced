"""The package layout is the architecture: each job in its own place, and imports only go down.

    vocabulary (layout, cells, results, identifiers, visible_checks, raised)
    course (build the course)    sandbox (seal a process)    slurm (a one-machine Slurm; the hub's spawner on Slurm)
    programs (judge exported programs outside the kernel)
    kernel (run a notebook in a sealed kernel)
    submission (grade one submission, step by step)
    classroom (grade a class: locally or on Dask)    nbgrader_adapter (formgrader, gradebook, hand grades)
    service (the course's grading service: submissions graded as they arrive, Validate's diagnoses)
    hub (a JupyterHub for the class)    authoring (a new assignment, and the lint that grades its solution)
    cli

    learner (the learner's JupyterLab server extension: rank of the vocabulary's neighbours; it runs on the
             learner's side and imports nothing that judges)

    term (a term's records)    lms (grades passed back to the LMS)

A module may import its own package, the vocabulary, and packages of a lower rank only, so nothing imports upward;
no two modules import each other, even through others or inside a function (no cycle); no module is longer than
450 lines; ``grader/__init__.py``'s map names every package.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "grader"
VOCABULARY = {"layout", "cells", "results", "identifiers", "visible_checks", "raised"}
RANK = {"vocabulary": 0, "__init__": 0,
        "course": 1, "sandbox": 1, "learner": 1, "slurm": 1,
        "programs": 2,
        "kernel": 3,
        "submission": 4,
        "classroom": 5, "nbgrader_adapter": 5, "term": 5, "lms": 5,
        "service": 6, "hub": 6, "authoring": 6,
        "cli": 7,
        "__main__": 8}
MAX_LINES = 450


def unit(dotted: str) -> str:
    """The place a dotted module name belongs to: a subpackage, the vocabulary, or a top-level module."""
    parts = dotted.split(".")
    name = parts[1] if len(parts) > 1 else "__init__"
    return "vocabulary" if name in VOCABULARY else name


def modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


def dotted(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts)


def imports(path: Path) -> set[str]:
    """Every grader module a file imports, at any depth (function-level imports included)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"{dotted(path)}: relative import (write grader.… in full)"
            if node.module == "grader":
                found |= {f"grader.{alias.name}" for alias in node.names}
            elif node.module and node.module.startswith("grader."):
                found.add(node.module)
        elif isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name.startswith("grader.")}
    return found


def test_every_place_has_a_rank():
    places = {unit(dotted(p)) for p in modules()}
    assert places <= set(RANK), f"new places need a rank here: {sorted(places - set(RANK))}"


@pytest.mark.parametrize("path", modules(), ids=lambda p: str(p.relative_to(ROOT)))
def test_imports_only_go_down(path):
    me = unit(dotted(path))
    for target in imports(path):
        them = unit(target)
        if them == me:
            continue
        assert RANK[them] < RANK[me], f"{dotted(path)} ({me}) imports {target} ({them}): upward or sideways"


@pytest.mark.parametrize("path", modules(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_module_is_a_god_module(path):
    lines = len(path.read_text().splitlines())
    assert lines <= MAX_LINES, f"{path.relative_to(ROOT)} has {lines} lines: split it by job"


def test_every_package_says_what_it_is_for():
    for init in PACKAGE.glob("*/__init__.py"):
        assert ast.get_docstring(ast.parse(init.read_text())), f"{init.parent.name}/__init__.py has no docstring"


def _imports(path: Path, modules: set[str]) -> set[str]:
    """The grader modules ``path`` imports anywhere in it (in a function too); ``from package import submodule`` is
    the submodule, not the package."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "grader":
            submodules = {f"{node.module}.{alias.name}" for alias in node.names} & modules
            names_only = len(submodules) < len(node.names)
            found |= submodules | ({node.module} & modules if names_only else set())
        elif isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names} & modules
    return found


def test_no_module_imports_one_that_imports_it_back():
    """No circle, however indirect and however late the import: the judges once re-exported the loader that imports
    them (issue 59)."""
    files = {".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__"): path
             for path in PACKAGE.rglob("*.py")}
    graph = {name: _imports(path, set(files)) - {name} for name, path in files.items()}
    done: set[str] = set()

    def visit(name: str, trail: list[str]) -> None:
        if name in trail:
            raise AssertionError(f"an import circle: {' -> '.join(trail[trail.index(name):] + [name])}")
        if name in done:
            return
        for target in sorted(graph[name]):
            visit(target, trail + [name])
        done.add(name)

    for name in sorted(graph):
        visit(name, [])


def test_the_package_map_names_every_package():
    """``grader/__init__.py``'s map, the README's and the architecture page's name every package there is."""
    packages = {p.parent.name for p in PACKAGE.glob("*/__init__.py")}
    documented = {"grader/__init__.py": (PACKAGE / "__init__.py").read_text(),
                  "docs/explanation/architecture.md": (ROOT / "docs" / "explanation" / "architecture.md").read_text()}
    for where, text in documented.items():
        missing = sorted(name for name in packages if f"{name}/" not in text)
        assert not missing, f"{where} does not name {missing}"
