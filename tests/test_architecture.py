"""The package layout is the architecture: each job in its own place, and imports only go down.

    vocabulary (layout, cells, results, identifiers, visible_checks, raised)
    course (build the course)    sandbox (seal a process)    slurm (a one-machine Slurm; the hub's spawner on Slurm)
    term (a term's records: the gradebook's files, the history, the attempts ledger; backups)
    programs (judge exported programs outside the kernel)
    kernel (run a notebook in a sealed kernel)
    submission (grade one submission, step by step)
    classroom (grade a class: locally or on Dask)    nbgrader_adapter (formgrader, gradebook, hand grades)
    service (the course's grading service: submissions graded as they arrive, Validate's diagnoses)
    hub (a JupyterHub for the class)    authoring (a new assignment, and the lint that grades its solution)
    cli

    learner (the learner's JupyterLab server extension: rank of the vocabulary's neighbours; it runs on the
             learner's side and imports nothing that judges)

    lms (grades passed back to the LMS)
    rubric (everything a rubric in source/ imports; nothing in grader/ imports it)

A module may import its own package, the vocabulary, and packages of a lower rank only, so nothing imports upward;
no two modules import each other, even through others or inside a function (no cycle); no module is longer than
450 lines, nor is an assignment's rubric file (``source/*/*.py``); ``grader/__init__.py``'s map names every package.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "grader"
VOCABULARY = {"layout", "cells", "results", "identifiers", "visible_checks", "raised"}
RANK = {"vocabulary": 0, "__init__": 0,
        "course": 1, "sandbox": 1, "learner": 1, "slurm": 1, "term": 1,
        "programs": 2,
        "kernel": 3,
        "submission": 4,
        "classroom": 5, "nbgrader_adapter": 5, "lms": 5,
        "service": 6, "hub": 6, "authoring": 6, "rubric": 6,
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


@pytest.mark.parametrize("path", sorted(ROOT.glob("source/*/*.py")), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_rubric_is_a_god_module(path):
    """The cap holds for an assignment's rubric and cases too: a rubric keeps groups of tests in sibling modules."""
    lines = len(path.read_text().splitlines())
    assert lines <= MAX_LINES, f"{path.relative_to(ROOT)} has {lines} lines: split it by group of tests (rubric_*.py)"


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


# The package maps: the README's, the architecture page's and grader/__init__.py's. RANK and MAX_LINES above are their
# one source: each map names every package of grader/ and no other, the two that state the ranks state them as
# ranks_line() writes them from RANK, the two that list the packages in rank order keep it, and none gives a line cap
# but MAX_LINES.
MAPS = {"README.md": r"grader/(\w+)/", "docs/explanation/architecture.md": r"(?m)^  (\w+)/ ",
        "grader/__init__.py": r"(?m)^    (\w+)/ "}
STATE_THE_RANKS = ("docs/explanation/architecture.md", "grader/__init__.py")
IN_RANK_ORDER = ("README.md", "grader/__init__.py")


def packages() -> set[str]:
    return {init.parent.name for init in PACKAGE.glob("*/__init__.py")}


def ranks_line() -> str:
    """The ranks as the maps state them, lowest first, the places of a rank in alphabetical order."""
    by_rank: dict[int, list[str]] = {}
    for place, rank in RANK.items():
        if place not in ("__init__", "__main__"):
            by_rank.setdefault(rank, []).append(place)
    named = {"vocabulary": f"the vocabulary ({', '.join(sorted(VOCABULARY))})"}
    return " < ".join(", ".join(named.get(place, place) for place in sorted(places))
                      for _, places in sorted(by_rank.items()))


def test_every_rank_is_a_place_there_is():
    """RANK names no package or module that is gone (a map copied from it would name it too)."""
    places = {unit(dotted(path)) for path in modules()}
    assert set(RANK) <= places, f"RANK names {sorted(set(RANK) - places)}, which grader/ does not have"


@pytest.mark.parametrize("where", sorted(MAPS))
def test_each_package_map_is_the_ranks(where):
    text = (ROOT / where).read_text(encoding="utf-8")
    if where.endswith(".py"):
        text = ast.get_docstring(ast.parse(text))
    listed = list(dict.fromkeys(re.findall(MAPS[where], text)))
    named, there = set(listed), packages()
    assert named == there, f"{where}'s package map names {sorted(named - there)} that grader/ does not have and " \
                           f"misses {sorted(there - named)}; the packages are tests/test_architecture.py's RANK"
    if where in STATE_THE_RANKS:
        assert ranks_line() in " ".join(text.split()), f"{where} does not state the ranks as RANK has them: " \
                                                      f"write {ranks_line()!r}"
    if where in IN_RANK_ORDER and named <= set(RANK):
        ranks = [RANK[name] for name in listed]
        assert ranks == sorted(ranks), f"{where} lists {listed}: not in the order of RANK {ranks}"
    caps = {int(n) for n in re.findall(r"(\d+)[ -]lines?\b", text)}
    assert caps <= {MAX_LINES}, f"{where} gives a cap of {sorted(caps - {MAX_LINES})} lines; the test's is {MAX_LINES}"


def test_the_architecture_tests_docstring_names_every_place():
    text = ast.get_docstring(ast.parse(Path(__file__).read_text()))
    missing = sorted(place for place in set(RANK) - {"__init__", "__main__"} if not re.search(rf"\b{place}\b", text))
    assert not missing, f"this file's docstring does not name {missing}"
