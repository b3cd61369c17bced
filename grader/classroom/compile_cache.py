"""Compiled XLA programs for the program runners, filled before a run from the instructor's notebooks.

``grader.programs.runner`` runs the programs a notebook's hidden tests export, on inputs the grader draws, and
compiles each one. Before a run the grader executes each instructor notebook (``source/``, solutions and hidden
tests) in an ordinary sealed kernel, runs the programs its hidden tests export in a runner whose JAX persistent
compilation cache (``grader.programs.runner.use_compilation_cache``) is a writable staging folder, and seals
what was written (owned by root, entries mode 0444, the folder 0111: searchable, not listable). That folder is
bound read only into every later program runner, so a learner's program that lowers to the instructor's is
not compiled again.

**Never into a kernel.** A kernel can tell a hit from a miss (JAX's monitoring events, the cache's own
functions, or the time a compilation takes), so a cache a kernel reads is an oracle: compiling candidate
answers and keeping the one that hits reveals the instructor's solution, and a hit on a hidden test's program
reveals its learning rates and shapes (``tests/attacks/sharded_step/answer-chosen-by-compile-cache.py``).
Even a cache of only what the released notebook compiles would be a folder a learner's kernel does not have,
and measured it saved nothing; so kernels compile everything themselves, exactly as in JupyterLab. The
runner reports a program's outputs on the grader's inputs, never timings, and runs after the kernel is gone.

A cache entry matches only when JAX's cache key does: a SHA-256 of the program's canonical StableHLO, the
compile options (device assignment included), the devices' topology, the XLA flags, the jaxlib and
backend versions; so a program only ever gets the executable of an identical program.

The folder is kept in ``{out}/.compile-cache/{key}``; ``key`` covers the notebooks, ``coursekit``, the
runner, the JAX and jaxlib versions and the device settings, so a later run on the same course reuses
it and a changed course fills a new one.
"""
from __future__ import annotations

import asyncio
import atexit
import hashlib
import importlib.metadata
import os
import shutil
import stat
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

import coursekit

FORMAT = "4"  # bump when the fill procedure changes
ENTRY_SUFFIX = "-cache"  # JAX's file cache: one ``{module}-{sha256}-cache`` file per program


def folder_key(course, assignments: list[str], settings) -> str:
    digest = hashlib.sha256(FORMAT.encode())
    for name in ("jax", "jaxlib"):
        digest.update(f"{name}={importlib.metadata.version(name)}\n".encode())
    digest.update(f"{sys.version}\n{settings.num_devices}\n{settings.platform}\n".encode())
    for assignment in sorted(assignments):
        digest.update(assignment.encode() + b"\0" + course.source_notebook(assignment).read_bytes())
        digest.update(b"\0" + (course.hidden_cases(assignment) or "").encode())  # the programs' example inputs
    package = Path(coursekit.__file__).resolve().parent
    for path in sorted(package.rglob("*.py")):
        digest.update(str(path.relative_to(package)).encode() + b"\0" + path.read_bytes())
    from grader.programs import runner, structure  # how programs are called and read

    for module in (runner, structure):
        digest.update(Path(module.__file__).read_bytes())
    return digest.hexdigest()[:32]


def seal(folder: Path) -> int:
    """Keep only regular cache entries; make them root's and read only. Returns their count.

    The folder itself can be searched but not listed (mode 0111): a kernel opens an entry only by its
    name, which holds the SHA-256 of the program it compiles, so it can read only the executables of
    programs it already has (a second defence: only program runners, never kernels, get the folder).
    """
    count = 0
    for entry in os.scandir(folder):
        mode = entry.stat(follow_symlinks=False).st_mode
        if stat.S_ISREG(mode) and entry.name.endswith(ENTRY_SUFFIX):
            os.chown(entry.path, 0, 0, follow_symlinks=False)
            os.chmod(entry.path, 0o444)
            count += 1
        elif stat.S_ISDIR(mode):
            shutil.rmtree(entry.path)
        else:
            os.unlink(entry.path)
    os.chown(folder, 0, 0)
    os.chmod(folder, 0o111)
    return count


# Filling runs an assignment's instructor notebook and its programs once (about 3 s of CPU); a correct
# submission's runner then saves compiling the same programs. Below this many submissions it costs more.
WORTH_FILLING_AT = 16


def worth_filling(assignment_of_each_job: list[str]) -> list[str]:
    """The assignments with enough submissions in this run for a cache to save time, sorted."""
    return sorted(a for a in set(assignment_of_each_job) if assignment_of_each_job.count(a) >= WORTH_FILLING_AT)


@dataclass
class Fill:
    """What one assignment contributes: the instructor's notebook and the programs its hidden tests export."""

    instructor: nbformat.NotebookNode
    declared: list = field(default_factory=list)


def _parameterized(path: Path, settings):
    from grader.submission.restore import inject_parameters

    nb = nbformat.read(path, as_version=4)
    inject_parameters(nb, {"num_devices": settings.num_devices, "platform": settings.platform, "figures_dir": None})
    return nb


def fills(course, assignments: list[str], settings) -> dict[str, Fill]:
    from grader.submission.pipeline import declared_programs

    from grader.submission.order import with_hidden_cases

    return {a: Fill(with_hidden_cases(_parameterized(course.source_notebook(a), settings), course.hidden_cases(a)),
                    declared_programs(course, a, settings.num_devices)) for a in assignments}


async def _fill_one(name: str, fill: Fill, settings, zygote, staging: Path) -> str | None:
    """The instructor's notebook in a sealed kernel that reads and writes no cache; the programs its hidden
    tests exported in a runner that writes ``staging``."""
    from grader.kernel.run import run_in, start_kernel
    from grader.submission.pipeline import confinement, recorded_programs
    from grader.programs.launch import run_programs

    if not fill.declared:
        return None
    async with confinement(settings) as conf:
        execution = await run_in(await start_kernel(conf, zygote=zygote), fill.instructor, conf)
    if execution.stopped:
        return f"{name}: {execution.stopped} {execution.message}"
    blobs = recorded_programs(execution.notebook, fill.declared)
    runs = await asyncio.to_thread(run_programs, blobs, fill.declared, settings.num_devices, settings, zygote,
                                   fill_cache=staging)
    failed = sorted(key for key, run in runs.items() if run.error)
    return f"{name}: the instructor's programs {', '.join(failed)} did not run" if failed else None


def build(fills: dict[str, Fill], settings, zygote, workers: int, final: Path) -> tuple[int, list[str]]:
    """Run every ``Fill`` (trusted notebooks) in sealed kernels, and their programs in runners that may write JAX's
    cache, then merge what the runners compiled into ``final``, sealed. Returns the number of programs in it and
    any notebook's problem."""
    work = Path(tempfile.mkdtemp(prefix="fill-", dir=final.parent))
    try:
        async def run_all():
            # All at once when few: CPU bound, and a lone last notebook would leave a core idle.
            limit = asyncio.Semaphore(max(1, workers, min(len(fills), 2 * workers)))

            async def one(name):
                async with limit:
                    return await _fill_one(name, fills[name], settings, zygote, work / f"notebook-{index[name]}")

            return await asyncio.gather(*(one(name) for name in fills))

        index = {name: i for i, name in enumerate(fills)}
        problems = [p for p in asyncio.run(run_all()) if p]
        merged = work / "merged"
        merged.mkdir(mode=0o700)
        for name in fills:
            staging = work / f"notebook-{index[name]}"
            if not staging.is_dir() or staging.is_symlink():
                continue
            for entry in os.scandir(staging):
                if entry.is_file(follow_symlinks=False) and not (merged / entry.name).exists():
                    os.rename(entry.path, merged / entry.name)
        count = seal(merged)
        os.rename(merged, final)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return count, problems


def fill(course, assignments: list[str], settings, zygote, workers: int, root: Path) -> tuple[Path, str]:
    """The sealed cache folder for ``assignments`` (filled now unless an earlier run did); and what happened."""
    root.mkdir(parents=True, exist_ok=True)
    os.chmod(root, 0o700)
    final = root / folder_key(course, assignments, settings)
    if final.is_dir():
        return final, "compiled programs kept from an earlier run"
    count, problems = build(fills(course, assignments, settings), settings, zygote, workers, final)
    note = f"compiled {count} of the instructor's programs for the program runners"
    return final, note + (f" (notebook problems: {'; '.join(problems)})" if problems else "")


# ---------------------------------------------------------------- on Dask workers
# A compiled XLA program is only valid on the kind of machine that compiled it (CPU features), so a cluster
# worker fills a folder of its own, once, from the instructor's notebooks sent with its tasks (workers are
# trusted like the instructor's machine: they run as root and hold the cluster's key; kernels cannot reach
# their memory).

_WORKER_FOLDERS: dict[str, Path | None] = {}
_WORKER_LOCK = threading.Lock()


def fill_request(course, assignments: list[str], settings) -> dict:
    """What a worker needs to fill its own cache: the instructor's notebooks and the programs they declare."""
    from grader.programs import program_to_json

    return {"key": folder_key(course, assignments, settings),
            "fills": {a: {"instructor": nbformat.writes(f.instructor), "declared": [program_to_json(p) for p in f.declared]}
                      for a, f in fills(course, assignments, settings).items()}}


def worker_folder(request: dict, settings, zygote) -> Path | None:
    """This worker's sealed cache folder for ``request`` (``fill_request``), filled by its first task; None
    when it could not be filled (the kernels then compile their own programs, as without a cache)."""
    from grader.programs import program_from_json

    key = str(request["key"])
    with _WORKER_LOCK:
        if key not in _WORKER_FOLDERS:
            root = Path(tempfile.mkdtemp(prefix="grader-compile-cache-"))
            atexit.register(shutil.rmtree, root, ignore_errors=True)
            started = time.monotonic()
            try:
                found = {a: Fill(nbformat.reads(f["instructor"], as_version=4),
                                 [program_from_json(p) for p in f["declared"]])
                         for a, f in request["fills"].items()}
                count, problems = build(found, settings, zygote, os.cpu_count() or 1, root / "sealed")
                print(f"grader: compiled {count} programs in {time.monotonic() - started:.1f} s"
                      + (f" ({'; '.join(problems)})" if problems else ""), file=sys.stderr, flush=True)
                _WORKER_FOLDERS[key] = root / "sealed"
            except Exception as error:  # noqa: BLE001 - only a speed-up
                print(f"grader: no compilation cache on this worker ({type(error).__name__}: {error})",
                      file=sys.stderr, flush=True)
                _WORKER_FOLDERS[key] = None
        return _WORKER_FOLDERS[key]
