"""A new graded lesson from one guide, one command and a lint (docs/how-to/author-a-lesson.md).

The how-to's command block is run as written, in order, on a copy of the course: the scaffold is linted,
generated, its sample learners graded, and the named mistake found in the wrong one's feedback. Then the lint is
shown to fail the author on each kind of mistake it names. (The course's own three rubrics pass it in
``test_scenarios``, which judges the graded batch's run of each solution instead of running it again.)
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from grader.authoring.lint import lint
from grader.layout import Course

ROOT = Path(__file__).resolve().parent.parent
HOWTO = ROOT / "docs" / "how-to" / "author-a-lesson.md"
NAME = "shard_means"


def _commands() -> list[str]:
    block = re.search(r"```bash\n(.*?)```", HOWTO.read_text(), re.S)
    assert block, "the how-to has no command block"
    return [line for line in block.group(1).splitlines() if line.strip()]


def _run(course: Path, command: str, *, ok: bool = True) -> subprocess.CompletedProcess:
    argv = command.split()
    assert argv[:3] == ["python", "-m", "grader"], command
    done = subprocess.run([sys.executable, *argv[1:]], cwd=course, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "COURSE_ROOT": str(course)})
    if ok:
        assert done.returncode == 0, f"{command}\n{done.stdout}\n{done.stderr}"
    return done


@pytest.fixture(scope="module")
def authored(tmp_path_factory) -> tuple[Path, dict[str, subprocess.CompletedProcess]]:
    """A copy of the course after every command of the how-to."""
    course = tmp_path_factory.mktemp("authoring") / "course"
    ignore = shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__")
    for folder in ("source", "notebooks", "samples"):
        shutil.copytree(ROOT / folder, course / folder, ignore=ignore)
    shutil.copytree(ROOT / "tests" / "corpus", course / "tests" / "corpus", ignore=ignore)  # samples' same-as
    shutil.copy2(ROOT / "nbgrader_config.py", course / "nbgrader_config.py")
    return course, {command: _run(course, command) for command in _commands()}


def test_the_how_to_is_the_six_commands_from_scaffold_to_report():
    steps = [command.split()[3] for command in _commands()]
    assert steps == ["new-assignment", "lint", "generate", "samples", "grade", "report"]


def test_the_scaffold_lints_generates_and_grades_with_its_mistake_named(authored):
    course, ran = authored
    made = ran[f"python -m grader new-assignment {NAME}"].stdout
    for written in (f"source/{NAME}/{NAME}.ipynb", f"source/{NAME}/rubric.py", f"source/{NAME}/rubric_cases.py",
                    f"samples/scenarios/{NAME}/ada.py", f"samples/scenarios/{NAME}/blake.py"):
        assert f"wrote {written}" in made and (course / written).is_file()
    assert "no problems" in ran[f"python -m grader lint {NAME}"].stdout
    released = json.loads((course / "notebooks" / NAME / f"{NAME}.ipynb").read_text())
    text = "".join("".join(c["source"]) for c in released["cells"])
    assert "raise NotImplementedError" in text and "HIDDEN TESTS" not in text and "np.concatenate(shards)" not in text
    assert not list((course / "notebooks" / NAME).glob("rubric*.py")), "the hidden cases never reach learners"
    assert not list((course / "notebooks" / NAME).glob("rubric*"))
    results = {(r["student_id"], r["assignment_id"]): r
               for r in json.loads((course / "graded" / "results.json").read_text())}
    assert {key[1] for key in results} == {NAME}  # only the new lesson was graded
    ada, blake = results[("ada", NAME)], results[("blake", NAME)]
    assert (ada["score"], ada["max_score"], ada["status"]) == (2, 2, "graded")
    assert (blake["score"], blake["max_score"]) == (0, 2)
    message = blake["tests"][0]["message"]  # in the lesson's words: the value's name, never its record key
    assert message.startswith("the global mean of the two-shard example") and "example.global_mean" not in message
    page = (course / "graded" / "feedback" / "blake" / NAME / f"{NAME}.html").read_text()
    assert "it is the mean of the local means" in page
    assert re.search(r"blake\s+shard_means\s+0/2", ran["python -m grader report --out graded"].stdout)


def test_a_name_the_course_has_or_cannot_use_is_refused_with_the_rule(authored):
    course, _ = authored
    for name, says in [(NAME, "already exists"), ("sharded_step", "already exists"), ("Shard-Means", "lower-case"),
                       ("../escape", "lower-case")]:
        done = _run(course, f"python -m grader new-assignment {name}", ok=False)
        assert done.returncode == 2 and says in done.stderr, done.stderr
    assert not (course / "escape").exists()


def _mutate(course: Path, name: str, cell: str | None = None, rubric: tuple[str, str] | None = None,
            visible: tuple[str, str] | None = None) -> None:
    if rubric:
        path = course / "source" / name / "rubric.py"
        text = path.read_text()
        assert rubric[0] in text
        path.write_text(text.replace(*rubric))
    if visible:
        path = course / "source" / name / f"{name}.ipynb"
        notebook = json.loads(path.read_text())
        test = next(c for c in notebook["cells"] if c["metadata"].get("nbgrader", {}).get("grade_id") == cell)
        source = "".join(test["source"])
        assert visible[0] in source
        test["source"] = source.replace(*visible)
        path.write_text(json.dumps(notebook, indent=1))


def test_the_lint_fails_the_author_on_each_mistake_it_names(authored, tmp_path):
    original, _ = authored
    course = tmp_path / "course"
    shutil.copytree(original, course, ignore=shutil.ignore_patterns("graded"))
    # A judge for a cell that does not exist, and one cell's judge gone: static findings (no kernel).
    _mutate(course, NAME, rubric=('@rubric.test("test-global-mean")', '@rubric.test("test-global-means")'))
    found = {(p.check, p.where) for p in lint(Course(course), NAME, execute=False).problems}
    assert found == {("judged", "test-global-mean"), ("judged", "test-global-means")}
    _mutate(course, NAME, rubric=('@rubric.test("test-global-means")', '@rubric.test("test-global-mean")'))
    # One run of the solution: a record nobody judges, a key without words, the hidden values read before the
    # visible one, and parts worth 1 of the cell's 2 points.
    _mutate(course, NAME, cell="test-global-mean",
            visible=('record("example.global_mean", example_mean)',
                     'record("example.global_mean", example_mean)\nrecord("example.unjudged", example_mean)'))
    judge = (course / "source" / NAME / "rubric.py").read_text()
    body = judge[judge.index("def judge_global_mean"):]
    _mutate(course, NAME, rubric=(body, '''def judge_global_mean(e: Evidence):
    for count in cases.shard_counts(e.num_devices):  # a key typed as text: it has no words
        e.check(f"hidden.{count}.global_mean", PLANTED, (cases.unseen_shards(count),))
    with e.part("the example", points=1):
        e.check(cases.EXAMPLE_MEAN, GLOBAL_MEAN, (EXAMPLE,))


PLANTED = Reference(global_mean, (
    mistake("a planted mistake on {count} shard(s) that no scenario expects", lambda s: (0.0, {"count": len(s)})),
    mistake("it is the mean of the local means of {count} shard(s)", lambda s: (-1.0, {"count": len(s)}))))
'''))  # (the second mistake is proven: blake's words, numbers aside)
    report = lint(Course(course), NAME)
    by_check = {}
    for problem in report.failures():
        by_check.setdefault(problem.check, []).append(problem.says)
    assert set(by_check) == {"solution", "read", "words", "visible"}, report.problems
    assert "example.unjudged" in by_check["read"][0]
    assert "worth 1 points, the test cell 2" in by_check["solution"][0]
    assert all("hidden." in says for says in by_check["words"]) and "example.global_mean" in by_check["visible"][0]
    # --strict: the named mistake no scenario expects, once (its wording for each shard count is one mistake); the
    # one worded as blake's expect-message, numbers aside, is proven
    unproven = [p.says for p in report.failures(strict=True) if p.check == "mistakes"]
    assert len(unproven) == 1 and "a planted mistake on 4 shard(s)" in unproven[0], unproven
    # The CLI says the same and fails.
    done = _run(course, f"python -m grader lint {NAME} --static", ok=True)
    assert "no problems in the static checks" in done.stdout


def _todo_blocks() -> list[tuple[str, str]]:
    """The how-to's graded TODO: (its first line, which says where it goes; the lines written) per code block."""
    section = HOWTO.read_text().split("### A graded TODO", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    return [(block.split("\n", 1)[0], block.split("\n", 1)[1]) for block in blocks]


def test_a_graded_todo_from_the_how_to_is_three_files_at_most_40_lines_and_lints(authored, tmp_path):
    """Issue 59: a graded TODO added to the scaffold costs at most 40 lines in at most 3 hand-edited files; the
    how-to's blocks, added as it says, make an assignment whose solution the lint passes."""
    original, _ = authored
    course = tmp_path / "course"
    shutil.copytree(original, course, ignore=shutil.ignore_patterns("graded"))
    blocks = _todo_blocks()
    lines = {}
    notebook_path = course / "source" / NAME / f"{NAME}.ipynb"
    notebook = json.loads(notebook_path.read_text())
    at = 1 + next(i for i, c in enumerate(notebook["cells"])
                  if c["metadata"].get("nbgrader", {}).get("grade_id") == "test-global-mean")
    for where, text in blocks:
        cell = re.fullmatch(r"# cell ([a-z-]+): (Autograded answer|Autograder tests, (\d+) points?)", where)
        file = re.fullmatch(r"# file (rubric\w*\.py)", where)
        assert cell or file, where
        target = f"{NAME}.ipynb" if cell else file.group(1)
        lines[target] = lines.get(target, 0) + len(text.splitlines())
        if file:
            path = course / "source" / NAME / file.group(1)
            path.write_text(path.read_text() + "\n\n" + text)
            continue
        tests = cell.group(3) is not None
        meta = {"grade": tests, "grade_id": cell.group(1), "locked": tests, "schema_version": 3,
                "solution": not tests, "task": False, **({"points": int(cell.group(3))} if tests else {})}
        notebook["cells"].insert(at, {"cell_type": "code", "execution_count": None, "id": cell.group(1),
                                      "metadata": {"nbgrader": meta}, "outputs": [], "source": text})
        at += 1
    notebook_path.write_text(json.dumps(notebook, indent=1))
    said = re.search(r"That is (\d+) lines in (\d+) files", HOWTO.read_text())
    assert said and (int(said.group(1)), int(said.group(2))) == (sum(lines.values()), len(lines)), lines
    assert sum(lines.values()) <= 40 and len(lines) <= 3, lines
    report = lint(Course(course), NAME)
    assert report.tests == 2 and not report.failures(), report.problems
    assert [p.check for p in report.problems] == ["mistakes"]  # the new mistake, until a scenario proves it
