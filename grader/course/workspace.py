"""The learner's workspace: their own copy of the student notebooks, which nothing regenerates.

``notebooks/`` is nbgrader's release folder: ``generate`` rewrites it (and ``nbgrader
generate_assignment`` deletes it first). Learners therefore never work there. ``make lab``
serves ``workspace/`` (git-ignored): each assignment is copied there from ``notebooks/`` once,
when the learner has no folder of that name yet, and is never replaced or deleted afterwards;
``generate``, ``demo`` and the tests do not touch it.

The learner's Jupyter server is rooted at the workspace, so its file browser and contents API
cannot reach ``source/`` (solutions, hidden tests), ``rubric.py``, submissions or grading output,
and it runs with the learner's configuration (``lab/learner/``): no formgrader. The instructor's
server (``make instructor``) is rooted at the course and opens formgrader.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from grader.layout import Course

WORKSPACE = "workspace"
LEARNER_CONFIG = Path("lab") / "learner"
INSTRUCTOR_CONFIG = Path("lab") / "instructor"
# What a learner never needs from the release folder.
_SKIP = shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__", "rubric*.py")


EXCHANGE = "exchange"

_LANGUAGE_INFO = ("import json; from ipykernel.ipkernel import IPythonKernel; "
                  "print(json.dumps(IPythonKernel.language_info))")


def kernel_language_info(python: str | Path = sys.executable) -> dict:
    """The ``language_info`` the course's kernel (ipykernel under ``python``) reports when a notebook opens."""
    done = subprocess.run([str(python), "-c", _LANGUAGE_INFO], capture_output=True, text=True, check=True, timeout=120)
    return json.loads(done.stdout)


def complete_language_info(folder: Path, info: dict) -> list[Path]:
    """Give each notebook below ``folder`` the kernel's whole ``language_info`` (return those changed).

    The released notebooks name the language only: ``notebooks/`` is generated on any machine, and the interpreter's
    version is this machine's. JupyterLab writes what the kernel reports into a notebook it opens unless it equals
    what is there already, so a learner's fresh copy showed as changed at once and asked to be saved when closed."""
    import nbformat

    changed = []
    for path in sorted(folder.rglob("*.ipynb")):
        notebook = nbformat.read(path, as_version=4)
        if notebook.metadata.get("language_info") != info:
            notebook.metadata["language_info"] = info
            nbformat.write(notebook, path)
            changed.append(path)
    return changed


def ensure_exchange(course: Course) -> Path:
    """The course-local nbgrader exchange (nbgrader_config.py), created writable for every learner like /tmp."""
    exchange = course.root / EXCHANGE
    if not exchange.is_dir():
        exchange.mkdir(parents=True)
        os.chmod(exchange, 0o1777)
    return exchange


def release_here(course: Course) -> list[str]:
    """Release each assignment the course's own exchange does not hold yet, with nbgrader's ``release_assignment``
    (the instructor's step, run here because on one machine the learner is also the instructor); return their names.

    Without a release nbgrader's Assignment List finds no course ("No courses found"), so the assignments copied into
    the workspace are not listed and have no Submit button. An assignment released before (by formgrader's Release or
    an earlier ``make lab``) is left as it is.
    """
    exchange = ensure_exchange(course)
    missing = [a for a in course.assignments() if (course.release / a).is_dir()
               and not any(exchange.glob(f"*/outbound/{a}"))]
    for assignment in missing:
        done = subprocess.run([str(Path(sys.executable).parent / "nbgrader"), "release_assignment", assignment],
                              cwd=course.root, env=_jupyter_env(None), capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"nbgrader release_assignment {assignment} failed:\n{done.stdout}{done.stderr}")
    if missing:  # what the Assignment List's Fetch copies, as the kernel here will describe it
        info = kernel_language_info()
        for assignment in missing:
            for released in exchange.glob(f"*/outbound/{assignment}"):
                complete_language_info(released, info)
    return missing


def one_machine(course: Course) -> None:
    """What ``make lab`` needs on one machine: new assignments copied into the workspace (``seed``) and released to
    the course's exchange (``release_here``), each release said on stderr."""
    seed(course)
    for name in release_here(course):
        print(f"released {name} to exchange/ (nbgrader release_assignment): the Assignment List lists it, with Submit",
              file=sys.stderr)


def workspace_dir(course: Course) -> Path:
    return course.root / WORKSPACE


def seed(course: Course, workspace: Path | None = None) -> list[Path]:
    """Copy each released assignment the learner does not have yet; return the folders created.

    A folder that exists is left exactly as it is, whatever it holds.
    """
    workspace = workspace or workspace_dir(course)
    workspace.mkdir(parents=True, exist_ok=True)
    created = []
    for assignment in course.assignments():
        released, mine = course.release / assignment, workspace / assignment
        if not released.is_dir() or os.path.lexists(mine):
            continue
        shutil.copytree(released, mine, ignore=_SKIP)
        created.append(mine)
    if created:
        info = kernel_language_info()
        for mine in created:
            complete_language_info(mine, info)
    return created


def _jupyter_env(extra_config: Path | None) -> dict[str, str]:
    env = dict(os.environ)
    # nbgrader's server extensions run `alembic` and other tools from PATH.
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    if extra_config is not None:
        env["JUPYTER_CONFIG_PATH"] = os.pathsep.join(
            p for p in (str(extra_config), env.get("JUPYTER_CONFIG_PATH", "")) if p)
    return env


def _root_flag() -> list[str]:
    return ["--allow-root"] if os.geteuid() == 0 else []


def learner_lab(course: Course, workspace: Path | None = None, extra: list[str] = ()) -> tuple[list[str], dict, Path]:
    """argv, environment and working folder of the learner's JupyterLab."""
    workspace = workspace or workspace_dir(course)
    ensure_exchange(course)
    # Validate's dialog in the course's words (grader/course/labextension.py): a checked copy of nbgrader's
    # labextension, found before the installed one.
    from grader.course.labextension import prepare

    extensions = prepare(course.root)
    argv = [str(Path(sys.executable).parent / "jupyter-lab"), f"--ServerApp.root_dir={workspace}",
            f"--LabApp.extra_labextensions_path={extensions}", *_root_flag(), *extra]
    # The working folder is the workspace too: nbgrader reads nbgrader_config.py from it and from
    # the learner configuration, never the instructor's one at the course root.
    return argv, _jupyter_env(course.root / LEARNER_CONFIG), workspace


def register_assignments(course: Course) -> list[str]:
    """Record in the course's gradebook.db each assignment it does not know yet; return their names.

    formgrader's Autograde (nbgrader's Autograde converter) refuses an assignment missing from the
    database, and on a fresh clone the release folder ``notebooks/`` is already there, so Release and
    Collect work before anyone pressed Generate. nbgrader's generate step records the notebooks and
    cells; its student version goes to a throwaway folder (``notebooks/`` is not touched).
    """
    import sqlite3

    from grader.course.generate import generate

    db = course.root / "gradebook.db"
    known: set[str] = set()
    if db.exists():  # read only, without nbgrader's API (which needs `alembic` on PATH)
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as connection:
            if connection.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name='assignment'").fetchone():
                known = {name for (name,) in connection.execute("SELECT name FROM assignment")}
    missing = [assignment for assignment in course.assignments() if assignment not in known]
    db_url = f"sqlite:///{db}"
    if missing:
        print(f"gradebook.db: recording {', '.join(missing)} for formgrader (once, about 10 s each)", file=sys.stderr)
        with tempfile.TemporaryDirectory() as tmp:
            generate(course, missing, release=Path(tmp), db_url=db_url)
    return missing


def instructor_lab(course: Course, extra: list[str] = ()) -> tuple[list[str], dict, Path]:
    """argv, environment and working folder of the instructor's JupyterLab (formgrader)."""
    ensure_exchange(course)
    register_assignments(course)
    argv = [str(Path(sys.executable).parent / "jupyter-lab"), f"--ServerApp.root_dir={course.root}",
            "--LabApp.default_url=/formgrader", *_root_flag(), *extra]
    # lab/instructor/jupyter_server_config.py: formgrader's pages escape what they print, and the server sends a
    # Content-Security-Policy (grader/nbgrader_adapter/formgrader_guard.py)
    return argv, _jupyter_env(course.root / INSTRUCTOR_CONFIG), course.root
