"""The compilation cache: filled from the instructor's notebooks, read only by program runners, never by kernels."""
from __future__ import annotations

import asyncio
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import nbformat
import pytest

from grader.classroom import compile_cache
from grader.submission.pipeline import Settings

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="sealed kernels (and so the cache) need root")

INSTRUCTOR = """
from coursekit.runtime import start_jax
devices = start_jax(4)
import jax, jax.numpy as jnp
from coursekit.programs import exported
from coursekit.record import record
solution = jax.jit(lambda x: x * 7 + 1)  # the instructor's answer, which the hidden test also exports
print("value", solution(jnp.arange(8.0)).tolist())
from jax.sharding import Mesh, NamedSharding, PartitionSpec
placed = jax.device_put(jnp.arange(8.0), NamedSharding(Mesh(devices, ("data",)), PartitionSpec()))
record("program.solution", exported(solution, placed))
"""

# A learner's notebook that compiles the instructor's solution and looks for any compilation cache.
PROBE = """
import json, os
from pathlib import Path
from jax import monitoring
events = []
monitoring.register_event_listener(lambda name, **kw: events.append(name))
from coursekit.runtime import start_jax
devices = start_jax(4)
import jax, jax.numpy as jnp
print("value", jax.jit(lambda x: x * 7 + 1)(jnp.arange(8.0)).tolist())
caches = [str(p) for p in (Path.home() / ".cache").rglob("*")] if (Path.home() / ".cache").exists() else []
mounts = [line for line in open("/proc/self/mountinfo") if "cache" in line]
print("probe", json.dumps({"hits": events.count("/jax/compilation_cache/cache_hits"),
                           "cache_dir": jax.config.jax_compilation_cache_dir, "caches": caches, "mounts": mounts}))
"""


def _notebook(code: str, grade_id: str | None = None):
    metadata = {"nbgrader": {"grade_id": grade_id}} if grade_id else {}
    return nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(code, metadata=metadata)])


def _grade(code: str, cache: Path | None):
    """Run ``code`` in a sealed grading kernel of a run whose runners read ``cache``; return the notebook."""
    from grader.kernel.run import run_in, start_kernel
    from grader.submission.pipeline import confinement

    nb = _notebook(code)

    async def run():
        settings = Settings(out=Path(tempfile.gettempdir()), compile_cache_dir=cache)
        async with confinement(settings) as conf:
            await run_in(await start_kernel(conf, preload=False), nb, conf)

    asyncio.run(run())
    return nb


def _texts(nb) -> str:
    return "".join(o.get("text", "") + json.dumps(o.get("data", {})) + o.get("evalue", "")
                   for c in nb.cells for o in c.get("outputs", []))


@pytest.fixture(scope="module")
def filled():
    """The sealed folder a run fills from an instructor notebook whose hidden test exports its solution."""
    from grader.programs import Input, Program

    parent = Path(tempfile.mkdtemp(prefix="cache-test-"))
    try:
        fill = compile_cache.Fill(_notebook(INSTRUCTOR, "test-solution"),
                                  [Program("test-solution/program.solution", 4, (Input((8,)),))])
        count, problems = compile_cache.build({"course": fill}, Settings(out=parent), None, 1, parent / "sealed")
        yield parent / "sealed", count, problems
    finally:
        shutil.rmtree(parent, ignore_errors=True)


@needs_root
def test_the_fill_compiles_the_instructors_programs_and_seals_them(filled):
    folder, count, problems = filled
    assert not problems and count >= 1, (count, problems)
    assert count == len(list(folder.iterdir()))
    assert stat.S_IMODE(folder.stat().st_mode) == 0o111 and folder.stat().st_uid == 0  # searched, never listed
    for entry in folder.iterdir():
        info = entry.lstat()
        assert stat.S_ISREG(info.st_mode) and entry.name.endswith("-cache")
        assert info.st_uid == 0 and stat.S_IMODE(info.st_mode) == 0o444


@needs_root
def test_a_grading_kernel_has_no_cache_even_when_the_runners_have_the_solution(filled):
    """A kernel can tell a hit from a miss: with the instructor's solution in its cache, a notebook could try
    candidate answers and keep the one that hits. Kernels of a run whose runners read that cache see no cache."""
    folder, _, _ = filled
    nb = _grade(PROBE, folder)
    text = _texts(nb)
    probe = json.loads(text.split("probe ", 1)[1].splitlines()[0])
    assert "value [1.0, 8.0, 15.0" in text
    assert probe == {"hits": 0, "cache_dir": None, "caches": [], "mounts": []}, probe


def test_start_jax_never_turns_on_a_cache(tmp_path):
    """Learners' and graded kernels alike: even a cache folder in the home is not used by the course runtime."""
    code = ("from coursekit.runtime import start_jax; start_jax(4); import jax; "
            "print(repr(jax.config.jax_compilation_cache_dir))")
    environment = {"HOME": str(tmp_path), "PATH": os.environ.get("PATH", "")}
    (tmp_path / ".cache" / "jax-course-xla").mkdir(parents=True)
    out = subprocess.run([sys.executable, "-c", code], env=environment, capture_output=True, text=True, check=True)
    assert out.stdout.strip().endswith("None")


def test_the_cache_folder_key_covers_the_course_the_kernel_helpers_and_the_program_runner(tmp_path):
    """The key names the folder a run fills; computing it must not fail (the grader would then run without a
    cache and say so only in a warning), and it changes with the code that runs and reads programs."""
    from grader.layout import Course
    from grader.programs import runner

    course = Course.default()
    key = compile_cache.folder_key(course, ["sharded_step"], Settings(out=tmp_path))
    assert len(key) == 32 and int(key, 16) >= 0
    assert key == compile_cache.folder_key(course, ["sharded_step"], Settings(out=tmp_path))
    assert key != compile_cache.folder_key(course, ["collectives"], Settings(out=tmp_path))
    assert Path(runner.__file__).name == "runner.py"
