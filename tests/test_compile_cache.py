"""The compilation cache: filled from trusted notebooks only, read (never written) by grading kernels."""
from __future__ import annotations

import asyncio
import hashlib
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

from grader import compile_cache
from grader.pipeline import Settings

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="sealed kernels (and so the cache) need root")

PROGRAM = """
from coursekit.runtime import start_jax
devices = start_jax({devices})
import jax, jax.numpy as jnp
print("value", jax.jit(lambda x: x * {factor} + 1)(jnp.arange(8.0)).tolist())
"""

PROBE = """
import json, os
from pathlib import Path
from jax import monitoring
events = []
monitoring.register_event_listener(lambda name, **kw: events.append(name))
""" + PROGRAM + """
folder = Path.home() / ".cache" / "jax-course-xla"
entries = {entries!r}
attempts = {{}}
def attempt(name, action):
    try:
        action()
        attempts[name] = "succeeded"
    except OSError as error:
        attempts[name] = type(error).__name__
attempt("create", lambda: (folder / "planted-cache").write_bytes(b"x"))
attempt("append", lambda: open(folder / entries[0], "ab").write(b"x"))
attempt("chmod", lambda: os.chmod(folder / entries[0], 0o666))
attempt("rename", lambda: os.rename(folder / entries[0], folder / "renamed"))
attempt("unlink", lambda: os.unlink(folder / entries[0]))
attempt("rmdir", lambda: os.rmdir(folder))
attempt("list", lambda: os.listdir(folder))
print("probe", json.dumps({{"hits": events.count("/jax/compilation_cache/cache_hits"),
                           "misses": events.count("/jax/compilation_cache/compile_requests_use_cache")
                                     - events.count("/jax/compilation_cache/cache_hits"),
                           "read_only_mount": bool(os.statvfs(folder).f_flag & os.ST_RDONLY),
                           "attempts": attempts}}))
"""


def _notebook(code: str):
    return nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(code)])


def _fill(folder: Path, code: str) -> tuple[int, list[str]]:
    settings = Settings(out=Path(tempfile.gettempdir()))
    counts, problems = compile_cache.build({"trusted": compile_cache.Fill(_notebook(code))}, settings, None, 1, folder)
    return counts["kernel"], problems


def _grade(code: str, cache: Path | None):
    """Run ``code`` in a sealed grading kernel (read-only cache, as ``grade`` binds it); return the notebook."""
    from grader.kernel_run import run_in, start_kernel
    from grader.pipeline import confinement

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


def _digest(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.iterdir()}


@pytest.fixture(scope="module")
def filled():
    parent = Path(tempfile.mkdtemp(prefix="cache-test-"))
    folder = parent / "sealed"
    try:
        count, problems = _fill(folder, PROGRAM.format(devices=4, factor=2))
        yield folder, count, problems
    finally:
        shutil.rmtree(parent, ignore_errors=True)


@needs_root
def test_the_fill_run_writes_programs_and_seals_them(filled):
    folder, count, problems = filled
    folder = folder / "kernel"
    assert not problems and count >= 1
    assert count == len(list(folder.iterdir()))
    assert stat.S_IMODE(folder.stat().st_mode) == 0o111 and folder.stat().st_uid == 0  # searched, never listed
    for entry in folder.iterdir():
        info = entry.lstat()
        assert stat.S_ISREG(info.st_mode) and entry.name.endswith("-cache")
        assert info.st_uid == 0 and stat.S_IMODE(info.st_mode) == 0o444


@needs_root
def test_a_grading_kernel_reads_the_cache_and_cannot_write_it(filled):
    folder, _, _ = filled
    before = _digest(folder / "kernel")
    nb = _grade(PROBE.format(devices=4, factor=2, entries=sorted(before)), folder)
    text = _texts(nb)
    probe = json.loads(text.split("probe ", 1)[1].splitlines()[0])
    assert "value [1.0, 3.0, 5.0" in text
    assert probe["hits"] >= 1, probe
    assert probe["read_only_mount"], probe  # a second defence: even the files' owner could not write
    # no write of any kind, and no listing (the names of the instructor's programs stay unknown)
    assert set(probe["attempts"].values()) <= {"OSError", "PermissionError"} and len(probe["attempts"]) == 7, probe
    assert _digest(folder / "kernel") == before
    assert not any(o.get("name") == "stderr" for o in nb.cells[0].outputs), text
    shown = "".join(line for line in text.splitlines(True) if not line.startswith("probe "))
    assert "warn" not in shown.lower() and "cache" not in shown.lower(), shown


@needs_root
def test_another_program_or_device_count_never_gets_a_cached_executable(filled):
    folder, _, _ = filled
    before = _digest(folder / "kernel")
    for devices, factor, expected in ((4, 3, "value [1.0, 4.0, 7.0"), (2, 2, "value [1.0, 3.0, 5.0")):
        nb = _grade(PROBE.format(devices=devices, factor=factor, entries=sorted(before)), folder)
        text = _texts(nb)
        probe = json.loads(text.split("probe ", 1)[1].splitlines()[0])
        assert expected in text
        assert probe["misses"] >= 1, probe  # compiled in the kernel, not taken from the cache
        assert not any(o.get("name") == "stderr" for o in nb.cells[0].outputs), text
    assert _digest(folder / "kernel") == before  # the misses wrote nothing


def test_a_learner_kernel_without_the_folder_uses_no_cache(tmp_path):
    code = ("from coursekit.runtime import start_jax; start_jax(4); import jax; "
            "print(repr(jax.config.jax_compilation_cache_dir))")
    environment = {"HOME": str(tmp_path), "PATH": os.environ.get("PATH", "")}
    out = subprocess.run([sys.executable, "-c", code], env=environment, capture_output=True, text=True, check=True)
    assert out.stdout.strip().endswith("None")
    (tmp_path / ".cache" / "jax-course-xla").mkdir(parents=True)
    out = subprocess.run([sys.executable, "-c", code], env=environment, capture_output=True, text=True, check=True)
    assert out.stdout.strip().endswith(repr(str(tmp_path / ".cache" / "jax-course-xla")))


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


@needs_root
def test_kernels_never_read_a_program_of_the_instructors_solution_or_hidden_tests(tmp_path):
    """A kernel can tell a hit from a miss, so a cached solution would be an oracle for the answer: its folder
    holds only what the released notebook compiles; the instructor's programs go to the runners' folder only."""
    from grader.programs import Input, Program

    test_cell = nbformat.v4.new_code_cell(INSTRUCTOR, metadata={"nbgrader": {"grade_id": "test-solution"}})
    fill = compile_cache.Fill(_notebook(PROGRAM.format(devices=4, factor=2)),
                              nbformat.v4.new_notebook(cells=[test_cell]),
                              [Program("test-solution/program.solution", 4, (Input((8,)),))])
    final = tmp_path / "sealed"
    counts, problems = compile_cache.build({"course": fill}, Settings(out=tmp_path), None, 1, final)
    assert not problems and counts["kernel"] >= 1 and counts["runner"] >= 1, (counts, problems)
    for factor, misses in ((2, 0), (7, 1)):  # the released notebook's program; the instructor's solution
        nb = _grade(PROBE.format(devices=4, factor=factor, entries=["x"]), final)
        probe = json.loads(_texts(nb).split("probe ", 1)[1].splitlines()[0])
        assert probe["misses"] == misses and probe["hits"] >= 1, (factor, probe)  # (the eager arange hits)
