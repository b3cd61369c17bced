"""The codebase checks itself: ruff, with the rules of ``[tool.ruff]`` in pyproject.toml, over the course's own code
(grader/, coursekit/, tests/, benchmarks/, lab/, the rubrics of source/), in well under a second (issue 59)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HOW_TO_FIX = ("fix what it can with `.venv/bin/ruff check --fix` (then `git diff` to read what it did), the rest by "
              "hand; a `# noqa: CODE - why` only where the code is right as it is")


def _ruff(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--output-format", "concise", *args],
                          cwd=ROOT, input=stdin, capture_output=True, text=True, timeout=120)


def test_ruff_finds_nothing():
    done = _ruff()
    assert "No module named ruff" not in done.stderr, "ruff is not installed: make .venv/.installed-stamp (or " \
                                                      ".venv/bin/pip install -e '.[test]')"
    assert done.returncode == 0, f"ruff found:\n{done.stdout}{done.stderr}\n{HOW_TO_FIX}"


def test_ruff_reads_the_code_with_the_projects_rules():
    """The check above would fail: a file in grader/ with an unused import, a noqa that names no rule and one that is
    not needed is refused under the project's configuration (not ruff's defaults, not an empty selection)."""
    probe = "import os\n\nx = 1  # noqa\ny = 2  # noqa: F401\n"
    done = _ruff("--stdin-filename", "grader/probe.py", "-", stdin=probe)
    assert done.returncode == 1, done.stdout + done.stderr
    for code in ("F401", "PGH004", "RUF100"):
        assert f": {code} " in done.stdout, (code, done.stdout)
