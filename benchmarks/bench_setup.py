"""What every benchmark shares: the course's paths, the benchmark class, the course's Python and environment."""
from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


ASSIGNMENTS = ("sharded_step", "local_mean_diagnosis", "collectives")
SAMPLES, CORPUS = ROOT / "samples" / "scenarios", ROOT / "tests" / "corpus"
# Ten learners per notebook: correct (several ways of writing it), blank, and wrong answers.
CLASS = {
    "sharded_step": [SAMPLES / "sharded_step" / f"{name}.py" for name in
                     ("ada", "blake", "chen", "dana", "ada", "chen", "blake", "ada", "dana", "ada")],
    "local_mean_diagnosis": [SAMPLES / "local_mean_diagnosis" / f"{n}.py" for n in ("ada", "blake", "chen")] + [
        CORPUS / "local_mean_diagnosis" / f"{n}.py" for n in (
            "correct-count-weighted-means", "correct-stacked-psum", "correct-psum-numerators",
            "wrong-divide-by-devices", "wrong-divide-by-sequences", "wrong-nan-empty-shard",
            "wrong-pmean-local-means")],
    "collectives": [SAMPLES / "collectives" / f"{n}.py" for n in ("ada", "blake", "chen")] + [
        CORPUS / "collectives" / f"{n}.py" for n in (
            "correct-decorated-programs", "correct-einsum", "correct-reshaped-collectives",
            "wrong-gather-keeps-portions", "wrong-payload-inverted", "wrong-psum-for-scatter",
            "wrong-scatter-untiled")],
}
GiB = 1024**3
# The course routes formgrader's Autograde and Generate Feedback to the project's grader (issue 13); the
# baseline must be nbgrader's own pipeline, so its defaults are put back in the temporary course.
STOCK_AUTOGRADE = """
for _section, _keys in {"Autograde": ["sanitize_preprocessors", "autograde_preprocessors"],
                        "GenerateFeedback": ["preprocessors", "exporter_class"]}.items():
    for _key in _keys:
        c[_section].pop(_key, None)
"""


def venv_bin() -> Path:
    candidate = ROOT / ".venv" / "bin"
    return candidate if (candidate / "python").exists() else Path(sys.executable).parent


def python() -> str:
    return str(venv_bin() / "python")


def environment() -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = f"{venv_bin()}{os.pathsep}{env.get('PATH', '')}"  # nbgrader autograde runs `alembic`
    env.pop("COURSE_ROOT", None)
    return env


def load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())
