"""A new graded lesson, ready to generate and grade (``python -m grader new-assignment NAME``).

It writes what one graded TODO needs, each piece where the course keeps it, and nothing else:

    source/NAME/NAME.ipynb             the instructor's notebook: parameters and setup cells, one TODO with its
                                       solution, one test cell with a visible check and a hidden part
    source/NAME/rubric.py              the grader's references in NumPy, with one named mistake
    source/NAME/rubric_cases.py        the hidden test's inputs, declared once: the hidden part of the test cell
                                       and the rubric both import them (learners never receive this file)
    samples/scenarios/NAME/ada.py      a correct answer and the named mistake, as two sample learners' scenario
    samples/scenarios/NAME/blake.py    files that ``python -m grader samples`` turns into submissions to grade

The lesson it holds is small and real (the global mean of sharded values, and the mean of local means as the
named mistake), so that every step of docs/how-to/author-a-lesson.md works on it before the author changes
anything; ``python -m grader lint NAME`` then checks the author's changes.
"""
from __future__ import annotations

import re
from pathlib import Path

import nbformat

from grader import identifiers
from grader.layout import Course

NAME = re.compile(r"[a-z][a-z0-9_]{0,39}")


class ScaffoldError(ValueError):
    """The assignment cannot be created as asked (a bad name, or one the course already has)."""


def _cell(kind: str, source: str, grade_id: str | None = None, *, grade: bool = False, solution: bool = False,
          locked: bool = True, points: float | None = None, tags: list[str] | None = None):
    cell = nbformat.v4.new_code_cell(source) if kind == "code" else nbformat.v4.new_markdown_cell(source)
    if grade_id is not None:
        meta = {"grade": grade, "grade_id": grade_id, "locked": locked, "schema_version": 3, "solution": solution,
                "task": False}
        if points is not None:
            meta["points"] = points
        cell.metadata["nbgrader"] = meta
    if tags:
        cell.metadata["tags"] = tags
    return cell


PARAMETERS = """\
# The notebook's settings; keep these values for this course.
num_devices = 4  # how many devices the lesson splits its work over
platform = "cpu"  # "cpu": num_devices logical devices on this machine's processor
figures_dir = "figures"  # the folder where figure cells save their SVG files"""

SETUP = """\
# Setup cell: run it first, in a fresh kernel. It fixes the device count
# before JAX starts and stops with instructions if JAX already started.
from coursekit.runtime import start_jax

devices = start_jax(num_devices, platform)
import jax
import jax.numpy as jnp
import numpy as np

from coursekit import data
from coursekit.record import record"""

SOLUTION = '''\
def global_mean(shards):
    """The mean of per-example values split into shards: every example weighs once.

    shards: a list of k 1-D arrays; shard i holds n_i >= 1 values
    returns: a float
    """
    ### BEGIN SOLUTION
    return float(np.concatenate(shards).mean())
    ### END SOLUTION


print(global_mean([np.array([0.5, 1.5]), np.array([4.0])]))'''

TEST = """\
example_mean = global_mean([np.array([0.5, 1.5]), np.array([4.0])])
record("example.global_mean", example_mean)
np.testing.assert_allclose(example_mean, 2.0, err_msg="every example weighs once: (0.5 + 1.5 + 4) / 3")
### BEGIN HIDDEN TESTS
from rubric_cases import HIDDEN_MEAN, shard_counts, unseen_shards  # inputs and keys (source/NAME/rubric_cases.py)

for count in shard_counts(len(devices)):  # the notebook's device count, and fewer
    record(HIDDEN_MEAN(count=count), global_mean(unseen_shards(count)))
### END HIDDEN TESTS"""

CASES = '''\
"""The hidden test's inputs of {name}, and the keys its test cell records under, declared once
(docs/how-to/author-a-lesson.md).

The hidden part of the test cell imports them (the grader hands this module to the kernel with the hidden parts,
after the learner's last cell); the rubric judges the same keys on the same inputs. A key carries the words a learner
knows for its value: every message names the value so, never by its key. Like the rubric, this file never reaches
learners (nbgrader leaves out ``rubric*.py``).
"""
from coursekit import data
from coursekit.meshes import sub_mesh_sizes
from coursekit.record import Key

# What the test cell records: the visible part writes the key's text, the hidden part imports the key.
EXAMPLE_MEAN = Key("example.global_mean", "the global mean of the two-shard example")
HIDDEN_MEAN = Key("hidden.{{count}}.global_mean", "the global mean of {{count}} unseen shard(s)")


def shard_counts(devices: int) -> list[int]:
    """The notebook's device count, and fewer (code that assumes four shards fails)."""
    return [devices] + sub_mesh_sizes(devices)


def unseen_shards(count: int):
    """``count`` shards of uneven sizes the learner never saw."""
    return data.ragged_shards(seed={seed} + count, num_shards=count)
'''

RUBRIC = '''\
"""References for {name}'s test cells, computed by the grader in NumPy (docs/how-to/author-a-lesson.md).

One judge per autograded test cell, registered under the cell's grade_id. A judge checks each value the test cell
recorded against a ``Reference`` on the same case (``e.check(KEY, REFERENCE, case)``), never in the learner's
kernel; a wrong value that equals one of the reference's named mistakes gets that mistake's words in the learner's
feedback. The keys and the hidden cases come from ``rubric_cases``, which the hidden part of the test cell imports too.
"""
import numpy as np

from grader.rubric import Evidence, Reference, Rubric, mistake

from . import rubric_cases as cases

rubric = Rubric()
EXAMPLE = [np.array([0.5, 1.5]), np.array([4.0])]  # the visible check's shards


def global_mean(shards):
    """Every example weighs once."""
    return float(np.concatenate(shards).mean())


GLOBAL_MEAN = Reference(global_mean, (
    mistake("it is the mean of the local means: a shard with few examples weighs as much as a shard with many; the "
            "global mean weighs every example once", lambda shards: float(np.mean([s.mean() for s in shards]))),
))


@rubric.test("test-global-mean")
def judge_global_mean(e: Evidence):
    e.check(cases.EXAMPLE_MEAN, GLOBAL_MEAN, (EXAMPLE,))
    for count in cases.shard_counts(e.num_devices):
        e.check(cases.HIDDEN_MEAN(count=count), GLOBAL_MEAN, (cases.unseen_shards(count),))
'''


CORRECT = """\
# scenario: a correct answer: one sum over every example, one division by their count
# base: solution
# %% cell global-mean
def global_mean(shards):
    values = np.concatenate(shards)
    return float(values.sum() / values.size)
"""

WRONG = """\
# scenario: the mean of the local means, the mistake the lesson names
# base: solution
# expect-fail: test-global-mean
# expect-message: it is the mean of the local means
# %% cell global-mean
def global_mean(shards):
    return float(np.mean([shard.mean() for shard in shards]))
"""


def notebook(name: str) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.metadata = {"kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"},
                   "language_info": {"name": "python"}}
    nb.cells = [
        _cell("markdown", f"# {name}\n\n*A new lesson: replace this introduction, then each section below with "
                          "your own (docs/how-to/author-a-lesson.md).*\n\nWhen shards hold different numbers of "
                          "examples, the mean of their local means is not the mean of the examples."),
        _cell("code", PARAMETERS, "parameters", tags=["parameters"]),
        _cell("code", SETUP, "setup"),
        _cell("markdown", "## 1 · TODO: the global mean of sharded values\n\nOne shard holds $0.5$ and $1.5$ (local "
                          "mean $1$), another holds $4$. Every example weighs once: $(0.5 + 1.5 + 4)/3 = 2$, "
                          "while the mean of the two local means is $2.5$. Write `global_mean`."),
        _cell("code", SOLUTION, "global-mean", solution=True, locked=False),
        _cell("code", TEST.replace("NAME", name), "test-global-mean", grade=True, points=2),
    ]
    return nb


def new_assignment(course: Course, name: str) -> list[Path]:
    """Write the new assignment's files; refuse a name that is not an assignment id or that the course has."""
    if not NAME.fullmatch(name) or not identifiers.valid(name):
        raise ScaffoldError(f"{name!r} is not a usable assignment name: use 1 to 40 lower-case letters, digits and "
                            "underscores, starting with a letter (it names a folder, a notebook and nbgrader's "
                            "assignment)")
    folder = course.source / name
    if folder.exists() or name in course.assignments():
        raise ScaffoldError(f"source/{name} already exists: the course has an assignment of that name")
    seed = 91000 + sum(name.encode()) % 900 * 10  # the hidden cases' seeds: away from the other lessons' 90xxx
    scenarios = course.samples / "scenarios" / name
    written = {
        folder / f"{name}.ipynb": nbformat.writes(notebook(name)) + "\n",
        folder / "rubric.py": RUBRIC.format(name=name),
        folder / "rubric_cases.py": CASES.format(name=name, seed=seed),
        scenarios / "ada.py": CORRECT,  # two learners of the sample class (samples/roster.csv)
        scenarios / "blake.py": WRONG,
    }
    for path, text in written.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return list(written)
