"""Execute notebooks headless with papermill (instructor runs, CI, figures).

This is the trusted path: the instructor's own notebooks, executed as they are,
with papermill parameters (``num_devices``, ``platform``, ``figures_dir``).
Learners' submissions go through ``grader.submission.pipeline`` instead.
"""
from __future__ import annotations

import ast
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import papermill
from jupyter_client.manager import AsyncKernelManager


def _ipc_kernel_manager(folder: Path, cwd: Path) -> type:
    """A kernel manager whose kernel talks over Unix sockets in ``folder`` (mode 0700) instead of loopback TCP (no
    port another local process could subscribe to, and no "running over TCP without encryption" warning), and starts
    in ``cwd``. papermill's own ``cwd`` changes the whole process's folder while it starts the kernel, so two
    notebooks run at once from threads (the tests do) could start each other's kernels in the wrong folder, where
    the hidden tests' ``rubric_cases`` is not."""
    class IPCKernelManager(AsyncKernelManager):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.transport = "ipc"
            self.ip = str(folder / "kernel")

        async def _async_launch_kernel(self, kernel_cmd, **kw):
            kw["cwd"] = str(cwd)
            return await super()._async_launch_kernel(kernel_cmd, **kw)

    return IPCKernelManager


@dataclass
class ExecutionFailed(Exception):
    notebook: Path
    cell: str
    error: str

    def __str__(self) -> str:
        return f"{self.notebook}: cell {self.cell} failed: {self.error}"


def execute(notebook: Path, output: Path, *, parameters: dict | None = None, progress: bool = True,
            cell_timeout: int = 300) -> Path:
    """Run ``notebook`` into ``output`` in the notebook's own folder; raise ``ExecutionFailed``."""
    output.parent.mkdir(parents=True, exist_ok=True)
    try:
        with tempfile.TemporaryDirectory(prefix="course-kernel-") as sockets:
            papermill.execute_notebook(
                str(notebook), str(output), parameters=parameters or {}, cwd=str(notebook.parent),
                progress_bar=progress, execution_timeout=cell_timeout, kernel_name="python3",
                kernel_manager_class=_ipc_kernel_manager(Path(sockets), notebook.parent),
            )
    except papermill.PapermillExecutionError as error:
        cell = _failed_cell_id(output, error.cell_index)
        raise ExecutionFailed(notebook, cell, f"{error.ename}: {error.evalue}") from None
    return output


def _failed_cell_id(output: Path, index: int) -> str:
    """The failing cell's grade id (or cell id). papermill inserts an error banner cell above the notebook
    after the run, so ``index`` from its exception points one cell too early in the written notebook; the
    failing cell is the one papermill marks with ``metadata.papermill.exception``."""
    import nbformat

    try:
        cells = nbformat.read(output, as_version=4).cells
    except (OSError, ValueError):
        return str(index)
    failed = [c for c in cells if c.get("metadata", {}).get("papermill", {}).get("exception")]
    if not failed:
        return str(index)
    cell = failed[0]
    return cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") or cell.get("id") or str(index)


class BackendMissing(Exception):
    pass


def check_platform(platform: str) -> None:
    """Fail in one sentence, before any notebook runs, when this environment's JAX lacks the accelerator."""
    import subprocess
    import sys

    if platform in ("", "cpu"):
        return
    probe = subprocess.run([sys.executable, "-c", f"import jax; jax.devices({platform!r})"],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        package = {"gpu": "jax[cuda12]", "cuda": "jax[cuda12]", "rocm": "jax[rocm]", "tpu": "jax[tpu]"}.get(platform,
                                                                                                           "jax")
        raise BackendMissing(
            f"platform {platform!r}: this environment's JAX has no {platform} backend (no {platform} device or "
            f"no {platform} build of JAX); install it with `.venv/bin/pip install '{package}'` on a machine with "
            f"the accelerator, or run with -p platform cpu")


def _parameter(text: str):
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def command(course, notebooks: list[Path], parameters: list[tuple[str, str]], out: Path | None, *,
            quiet: bool = False) -> int:
    """``python -m grader execute``: each notebook (default: every instructor notebook) run headless; 1 if any failed."""
    notebooks = notebooks or [course.source_notebook(a) for a in course.assignments()]
    values = {name: _parameter(value) for name, value in parameters}
    try:
        check_platform(str(values.get("platform", "cpu")))
    except BackendMissing as error:
        print(f"execute: {error}", file=sys.stderr)
        return 2
    failed = 0
    for notebook in notebooks:
        notebook = Path(notebook).resolve()
        target = out / notebook.name if out else notebook.with_name(notebook.stem + ".executed.ipynb")
        print(f"executing {notebook} -> {target}", flush=True)
        try:
            execute(notebook, target, parameters=values, progress=not quiet)
        except ExecutionFailed as error:
            print(f"FAILED {error}", file=sys.stderr)
            failed += 1
    return 1 if failed else 0
