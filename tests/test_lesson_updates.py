"""docs/how-to/lesson-updates-with-nbgitpuller.md: the recipe publishes notebooks/ and figures/ only, and
nbgitpuller's own puller brings lesson updates into a learner's copy while the learner's changes win.

Everything runs on disk: the lessons repository is a local git repository, cloned through ``file://``."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
GUIDE = ROOT / "docs" / "how-to" / "lesson-updates-with-nbgitpuller.md"
MARKERS = ("BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS", "END HIDDEN TESTS")


@pytest.fixture
def git_env(tmp_path, monkeypatch):
    """A clean git: no system or user configuration, an identity for the recipe's commits (a CI container as root)."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(home / ".gitconfig"))
    for who in ("AUTHOR", "COMMITTER"):
        monkeypatch.setenv(f"GIT_{who}_NAME", "Course Instructor")
        monkeypatch.setenv(f"GIT_{who}_EMAIL", "instructor@example.org")
    monkeypatch.setenv("NBGITPULLER_DEPTH", "1")  # nbgitpuller's default, as on a hub


def _recipe() -> str:
    """The guide's build block: the first bash block under 'Build the lessons repository'."""
    text = GUIDE.read_text(encoding="utf-8")
    section = text.split("## Build the lessons repository", 1)[1]
    block = re.search(r"```bash\n(.*?)```", section, re.S)
    assert block, "the guide's 'Build the lessons repository' section has no bash block"
    return block.group(1)


def _publish(course: Path, lessons: Path) -> None:
    done = subprocess.run(["bash", "-euo", "pipefail", "-c", _recipe()], cwd=course, capture_output=True, text=True,
                          env={**os.environ, "LESSONS": str(lessons)})
    assert done.returncode == 0, done.stderr


def _pull(lessons: Path, clone: Path) -> str:
    from nbgitpuller.pull import GitPuller

    return "".join(GitPuller(f"file://{lessons}", str(clone), branch="main").pull())


def _tree(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*")
            if p.is_file() and ".git" not in p.relative_to(folder).parts}


def _edit(path: Path, index: int, old: str, new: str) -> None:
    """Replace ``old`` by ``new`` in cell ``index`` of the notebook, written as nbformat writes it."""
    notebook = nbformat.read(path, as_version=4)
    assert old in notebook.cells[index].source, (path, index, old)
    notebook.cells[index].source = notebook.cells[index].source.replace(old, new, 1)
    nbformat.write(notebook, path)


def _cell(path: Path, index: int) -> str:
    return nbformat.read(path, as_version=4).cells[index].source


def _solution_blocks(source: Path) -> list[str]:
    blocks = []
    for cell in nbformat.read(source, as_version=4).cells:
        for block in re.findall(r"### BEGIN SOLUTION\n(.*?)### END SOLUTION", cell.source, re.S):
            if block.strip():
                blocks.append(block)
    return blocks


def test_published_repository_holds_the_student_material_and_no_solution(tmp_path, git_env):
    lessons = tmp_path / "lessons-repo"
    _publish(ROOT, lessons)
    tracked = subprocess.run(["git", "-C", str(lessons), "ls-files"], capture_output=True, text=True,
                             check=True).stdout.split()
    expected = sorted(p.relative_to(ROOT).as_posix() for folder in ("notebooks", "figures")
                      for p in (ROOT / folder).rglob("*") if p.is_file())
    assert sorted(tracked) == expected, "the repository holds exactly notebooks/ and figures/"
    assert not any(name.startswith(("source/", "samples/", "tests/")) or name.endswith("rubric.py")
                   for name in tracked)
    blocks = 0
    for notebook in (lessons / "notebooks").glob("*/*.ipynb"):
        text = notebook.read_text(encoding="utf-8")
        released = "\n".join(c.source for c in nbformat.read(notebook, as_version=4).cells)
        for marker in MARKERS:
            assert marker not in text, f"{notebook.name} holds nbgrader's {marker!r} marker"
        for block in _solution_blocks(ROOT / "source" / notebook.parent.name / notebook.name):
            blocks += 1
            assert block not in released, f"{notebook.name} holds a solution of source/: {block[:80]!r}"
    assert blocks >= 3, "the check found the source's solutions to look for"
    head = subprocess.run(["git", "-C", str(lessons), "rev-parse", "HEAD"], capture_output=True, text=True).stdout
    _publish(ROOT, lessons)  # nothing changed: no new commit
    assert subprocess.run(["git", "-C", str(lessons), "rev-parse", "HEAD"], capture_output=True,
                          text=True).stdout == head


def test_second_pull_brings_updates_and_keeps_the_learners_changes(tmp_path, git_env):
    course, lessons, clone = tmp_path / "course", tmp_path / "lessons-repo", tmp_path / "learner" / "lessons"
    for folder in ("notebooks", "figures"):
        shutil.copytree(ROOT / folder, course / folder)
    _publish(course, lessons)

    _pull(lessons, clone)  # the learner's first visit of the link
    assert _tree(clone) == _tree(course), "the first pull gives the learner the published material"

    sharded = Path("notebooks/sharded_step/sharded_step.ipynb")
    means = Path("notebooks/local_mean_diagnosis/local_mean_diagnosis.ipynb")
    collectives = Path("notebooks/collectives/collectives.ipynb")
    solution = next(i for i, c in enumerate(nbformat.read(course / collectives, as_version=4).cells)
                    if "raise NotImplementedError(" in c.source)
    last = len(nbformat.read(course / collectives, as_version=4).cells) - 1
    hint = re.search(r"raise NotImplementedError\(.*\)", _cell(course / collectives, solution)).group(0)
    figure = next(iter(sorted((course / "figures").glob("*.svg"))))

    # upstream: a correction in sharded_step, the same solution line of collectives reworded, a note at its end,
    # a new figure
    _edit(course / sharded, 0, _cell(course / sharded, 0), _cell(course / sharded, 0) + "\n\nCorrected: v2.")
    _edit(course / collectives, solution, hint, 'raise NotImplementedError("v2: reworded hint")')
    _edit(course / collectives, last, _cell(course / collectives, last),
          _cell(course / collectives, last) + "\n\nAdded in v2.")
    (course / "figures" / "new-in-v2.svg").write_text('<svg xmlns="http://www.w3.org/2000/svg"/>\n')
    _publish(course, lessons)

    # meanwhile the learner: solves a cell of local_mean_diagnosis and the same cell of collectives that upstream
    # rewords, keeps notes of their own, deletes a figure, and drew a figure under the name upstream now adds
    means_cell = next(i for i, c in enumerate(nbformat.read(clone / means, as_version=4).cells)
                      if "raise NotImplementedError(" in c.source)
    means_hint = re.search(r"raise NotImplementedError\(.*\)", _cell(clone / means, means_cell)).group(0)
    _edit(clone / means, means_cell, means_hint, "return 'the learner answer'")
    _edit(clone / collectives, solution, hint, "return 'the learner solution'")
    learners_means = (clone / means).read_bytes()
    (clone / "notes.md").write_text("my notes\n")
    (clone / "figures" / figure.name).unlink()
    (clone / "figures" / "new-in-v2.svg").write_text("<svg>the learner's own</svg>\n")

    output = _pull(lessons, clone)  # the learner opens the link again

    assert (clone / sharded).read_bytes() == (course / sharded).read_bytes(), "the corrected lesson arrives"
    assert (clone / "figures" / "new-in-v2.svg").read_bytes() == (course / "figures" / "new-in-v2.svg").read_bytes()
    assert (clone / means).read_bytes() == learners_means, "a notebook only the learner edited stays theirs"
    both = nbformat.read(clone / collectives, as_version=4)
    nbformat.validate(both)
    assert "return 'the learner solution'" in both.cells[solution].source, "where both changed a line, the learner's wins"
    assert "v2: reworded hint" not in both.cells[solution].source
    assert both.cells[last].source.endswith("Added in v2."), "upstream's change elsewhere in that file comes in"
    assert (clone / "notes.md").read_text() == "my notes\n", "the learner's own file stays"
    assert (clone / "figures" / figure.name).read_bytes() == figure.read_bytes(), "a deleted file comes back"
    renamed = list((clone / "figures").glob("new-in-v2__*.svg"))
    assert len(renamed) == 1 and renamed[0].read_text() == "<svg>the learner's own</svg>\n", \
        f"the learner's file under the new figure's name is kept, renamed: {output}"
    missing = set(_tree(course)) - set(_tree(clone))
    assert not missing, f"published files missing from the learner's copy after the pull: {sorted(missing)}"
