"""Compiled XLA programs from the instructor's notebooks, read (never written) by every grading kernel.

Most of a graded notebook's own time is JAX compiling programs: the instructor's test cells, the
hidden tests' sub-meshes, every small array operation. Most of these programs are the same in every
submission (the instructor's cells are restored, and a correct solution often lowers to the
instructor's program). Before a run, the grader executes the instructor's notebooks (``source/``)
in ordinary sealed kernels that may write JAX's persistent compilation cache
(``coursekit.runtime.use_compilation_cache``), then seals that folder: owned by root, no write
permission for anyone, and bound **read only** into each grading kernel at
``~/.cache/jax-course-xla`` (``grader.sandbox.rootfs``). A grading kernel reads an entry only when
JAX's cache key matches: a SHA-256 of the program's canonical StableHLO, the compile options
(device assignment included), the devices' topology, the XLA flags, the jaxlib and backend versions.
A learner's program therefore only ever gets the executable of an identical program.

The programs the hidden tests export are compiled a second time outside the kernel, by
``grader.programs.runner`` (which wraps each in a call of its own). The fill therefore also runs the
instructor's exported programs through that runner, in its own sandbox, writing the same folder; every
grading runner then reads it read only, like a kernel. A learner's program that lowers to the
instructor's skips its compilation there too; any other compiles as before.

The folder is kept in ``{out}/.compile-cache/{key}``; ``key`` covers the instructor's notebooks
graded, ``coursekit``, the JAX and jaxlib versions and the device settings, so a later run on the
same course reuses it, and a changed course fills a new one. Learners have no such folder, so their
kernels compile as before.
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
from pathlib import Path

import nbformat

import coursekit

FORMAT = "2"  # bump when the fill procedure changes
ENTRY_SUFFIX = "-cache"  # JAX's file cache: one ``{module}-{sha256}-cache`` file per program


def folder_key(course, assignments: list[str], settings) -> str:
    digest = hashlib.sha256(FORMAT.encode())
    for name in ("jax", "jaxlib"):
        digest.update(f"{name}={importlib.metadata.version(name)}\n".encode())
    digest.update(f"{sys.version}\n{settings.num_devices}\n{settings.platform}\n".encode())
    for assignment in sorted(assignments):
        digest.update(assignment.encode() + b"\0" + course.source_notebook(assignment).read_bytes())
    package = Path(coursekit.__file__).resolve().parent
    for path in sorted(package.rglob("*.py")):
        digest.update(str(path.relative_to(package)).encode() + b"\0" + path.read_bytes())
    digest.update(Path(__file__).with_name("programs").joinpath("runner.py").read_bytes())  # how programs are called
    return digest.hexdigest()[:32]


def seal(folder: Path) -> int:
    """Keep only regular cache entries; make them root's and read only. Returns their count.

    The folder itself can be searched but not listed (mode 0111): a kernel opens an entry only by its
    name, which holds the SHA-256 of the program it compiles, so it can read only the executables of
    programs it already has. The instructor's solutions and hidden tests, compiled, cannot be listed
    and copied into a learner's outputs (feedback shows the outputs of cells before the hidden tests).
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


def _instructor_notebook(course, assignment: str, settings):
    from .restore import inject_parameters

    nb = nbformat.read(course.source_notebook(assignment), as_version=4)
    inject_parameters(nb, {"num_devices": settings.num_devices, "platform": settings.platform, "figures_dir": "figures"})
    return nb


async def _fill_one(name: str, nb, declared: list, settings, zygote, staging: Path) -> str | None:
    """Run one instructor notebook in a kernel that writes ``staging/kernel``, then the programs its
    hidden tests exported in a runner that writes ``staging/runner`` (``grader.programs``)."""
    from .kernel_run import run_in, start_kernel
    from .pipeline import confinement, recorded_programs
    from .programs.launch import run_programs

    staging.mkdir(mode=0o700)
    async with confinement(settings) as conf:
        (staging / "kernel").mkdir(mode=0o700)
        os.chown(staging / "kernel", conf.uid, conf.uid)  # this kernel's uid only; sealed (root's, read only) afterwards
        conf.compile_cache, conf.compile_cache_writable = staging / "kernel", True
        kernel = await start_kernel(conf, zygote=zygote)
        execution = await run_in(kernel, nb, conf)
    if execution.stopped:
        return f"{name}: {execution.stopped} {execution.message}"
    if not declared:
        return None
    blobs = recorded_programs(execution.notebook, declared)
    runs = await asyncio.to_thread(run_programs, blobs, declared, settings.num_devices, settings, zygote,
                                   fill_cache=staging / "runner")
    failed = sorted(key for key, run in runs.items() if run.error)
    return failed and f"{name}: the instructor's programs {', '.join(failed)} did not run"


def build(notebooks: dict, settings, zygote, workers: int, final: Path,
          declared: dict | None = None) -> tuple[int, list[str]]:
    """Run ``notebooks`` (name -> trusted notebook) in sealed kernels that may write JAX's cache, and the
    programs they record (``declared``: name -> the rubric's programs) in runners that may, then merge what
    they compiled into ``final``, sealed. Returns the number of programs and any notebook's problem."""
    work = Path(tempfile.mkdtemp(prefix="fill-", dir=final.parent))
    try:
        async def run_all():
            # All at once when few: CPU bound, and a lone last notebook would leave a core idle.
            limit = asyncio.Semaphore(max(1, workers, min(len(notebooks), 2 * workers)))

            async def one(name):
                async with limit:
                    return await _fill_one(name, notebooks[name], (declared or {}).get(name, []), settings, zygote,
                                           work / f"notebook-{index[name]}")

            return await asyncio.gather(*(one(name) for name in notebooks))

        index = {name: i for i, name in enumerate(notebooks)}
        problems = [p for p in asyncio.run(run_all()) if p]
        merged = work / "merged"
        merged.mkdir()
        for name in notebooks:
            for part in ("kernel", "runner"):
                staging = work / f"notebook-{index[name]}" / part
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
        return final, f"compiled programs kept from an earlier run ({len(os.listdir(final))})"
    from .pipeline import declared_programs

    notebooks = {a: _instructor_notebook(course, a, settings) for a in assignments}
    declared = {a: declared_programs(course, a, settings.num_devices) for a in assignments}
    count, problems = build(notebooks, settings, zygote, workers, final, declared)
    note = f"compiled {count} programs from the instructor's notebooks"
    return final, note + (f" (instructor notebook problems: {'; '.join(problems)})" if problems else "")


# ---------------------------------------------------------------- on Dask workers
# A compiled XLA program is only valid on the kind of machine that compiled it (CPU features), so a cluster
# worker fills a folder of its own, once, from the instructor's notebooks sent with its tasks (workers are
# trusted like the instructor's machine: they run as root and hold the cluster's key; kernels cannot reach
# their memory).

_WORKER_FOLDERS: dict[str, Path | None] = {}
_WORKER_LOCK = threading.Lock()


def fill_request(course, assignments: list[str], settings) -> dict:
    """What a worker needs to fill its own cache: the instructor's notebooks and the programs their tests export."""
    from .pipeline import declared_programs
    from .programs import program_to_json

    return {"key": folder_key(course, assignments, settings),
            "notebooks": {a: nbformat.writes(_instructor_notebook(course, a, settings)) for a in assignments},
            "declared": {a: [program_to_json(p) for p in declared_programs(course, a, settings.num_devices)]
                         for a in assignments}}


def worker_folder(request: dict, settings, zygote) -> Path | None:
    """This worker's sealed cache folder for ``request`` (``fill_request``), filled by its first task; None
    when it could not be filled (the kernels then compile their own programs, as without a cache)."""
    from .programs import program_from_json

    key = str(request["key"])
    with _WORKER_LOCK:
        if key not in _WORKER_FOLDERS:
            root = Path(tempfile.mkdtemp(prefix="grader-compile-cache-"))
            atexit.register(shutil.rmtree, root, ignore_errors=True)
            started = time.monotonic()
            try:
                notebooks = {a: nbformat.reads(text, as_version=4) for a, text in request["notebooks"].items()}
                declared = {a: [program_from_json(p) for p in programs] for a, programs in request["declared"].items()}
                count, problems = build(notebooks, settings, zygote, os.cpu_count() or 1, root / "sealed", declared)
                print(f"grader: compiled {count} programs from the instructor's notebooks in "
                      f"{time.monotonic() - started:.1f} s" + (f" ({'; '.join(problems)})" if problems else ""),
                      file=sys.stderr, flush=True)
                _WORKER_FOLDERS[key] = root / "sealed"
            except Exception as error:  # noqa: BLE001 - only a speed-up
                print(f"grader: no compilation cache on this worker ({type(error).__name__}: {error})",
                      file=sys.stderr, flush=True)
                _WORKER_FOLDERS[key] = None
        return _WORKER_FOLDERS[key]
