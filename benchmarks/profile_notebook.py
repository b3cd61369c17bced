"""Where one notebook's CPU time goes, cell by cell: imports, XLA compilation, figures, the rest.

    .venv/bin/python benchmarks/profile_notebook.py NOTEBOOK [--cache-dir DIR] [--repeat N]

Runs the notebook's code cells in this process, in an IPython shell with the inline figure backend
(as a kernel runs them), and attributes CPU time (``time.process_time``: user+sys of this process,
all threads) with JAX's own monitoring events:

  trace+lower  ``/jax/core/compile/jaxpr_trace_duration`` + ``jaxpr_to_mlir_module_duration``
  compile      ``/jax/core/compile/backend_compile_duration`` (XLA compilation, or a cache read)
  figures      the inline backend's PNG rendering after a cell (``flush_figures``) and ``savefig``

Wall seconds of the compile events are converted to CPU by nothing: on a single compile thread they
are close; XLA's CPU compiler is single threaded per program. ``--cache-dir`` turns on JAX's
persistent compilation cache there (as ``coursekit.runtime`` does for a grading kernel) to show
what a cache hit saves. This is a measurement, not a test.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebook", type=Path)
    parser.add_argument("--cache-dir", type=Path)
    parser.add_argument("--json", action="store_true", help="print one JSON line instead of a table")
    args = parser.parse_args()

    t0 = time.process_time()
    w0 = time.monotonic()
    os.environ["MPLBACKEND"] = "module://matplotlib_inline.backend_inline"
    import IPython  # noqa: F401
    import jax
    import matplotlib
    import nbformat
    import numpy  # noqa: F401
    from IPython.core.interactiveshell import InteractiveShell
    from jax import monitoring
    imports = time.process_time() - t0

    events: dict[str, float] = defaultdict(float)
    counts: dict[str, int] = defaultdict(int)

    def on_duration(name, seconds, **kwargs):
        events[name] += seconds
        counts[name] += 1

    def on_event(name, **kwargs):
        counts[name] += 1

    monitoring.register_event_duration_secs_listener(on_duration)
    monitoring.register_event_listener(on_event)

    class Shell(InteractiveShell):
        def enable_gui(self, gui=None):  # the inline backend needs no event loop
            return None

    shell = Shell.instance()
    shell.run_line_magic("matplotlib", "inline")
    from matplotlib_inline import backend_inline
    figures = {"s": 0.0}
    flush = backend_inline.flush_figures

    def timed_flush():
        start = time.process_time()
        try:
            return flush()
        finally:
            figures["s"] += time.process_time() - start

    shell.events.unregister("post_execute", flush)
    shell.events.register("post_execute", timed_flush)
    import matplotlib.figure
    savefig = matplotlib.figure.Figure.savefig

    def timed_savefig(self, *a, **k):
        start = time.process_time()
        try:
            return savefig(self, *a, **k)
        finally:
            figures["s"] += time.process_time() - start

    matplotlib.figure.Figure.savefig = timed_savefig
    if args.cache_dir:
        jax.config.update("jax_compilation_cache_dir", str(args.cache_dir))
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
        jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)

    nb = nbformat.read(args.notebook, as_version=4)
    os.chdir(args.notebook.parent)
    cells = []
    run0 = time.process_time()
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        before = dict(events)
        start = time.process_time()
        result = shell.run_cell(cell.source, store_history=True, silent=False)
        spent = time.process_time() - start
        gid = cell.metadata.get("nbgrader", {}).get("grade_id", "?")
        delta = {k: events.get(k, 0) - before.get(k, 0) for k in events}
        cells.append((gid, spent, delta, result.success))
    run = time.process_time() - run0
    total = time.process_time() - t0
    trace = events["/jax/core/compile/jaxpr_trace_duration"] + events["/jax/core/compile/jaxpr_to_mlir_module_duration"]
    compile_s = events["/jax/core/compile/backend_compile_duration"]
    summary = {
        "notebook": str(args.notebook), "cpu_total": round(total, 2), "wall_total": round(time.monotonic() - w0, 2),
        "imports": round(imports, 2), "cells": round(run, 2), "trace_lower": round(trace, 2),
        "xla_compile": round(compile_s, 2), "figures": round(figures["s"], 2),
        "compiles": counts["/jax/core/compile/backend_compile_duration"],
        "cache_hits": counts.get("/jax/compilation_cache/cache_hits", 0),
        "cache_misses": counts.get("/jax/compilation_cache/compile_requests_use_cache", 0)
                        - counts.get("/jax/compilation_cache/cache_hits", 0),
        "rest": round(run - trace - compile_s - figures["s"], 2),
    }
    if args.json:
        print(json.dumps(summary))
        return
    for gid, spent, delta, ok in cells:
        c = delta.get("/jax/core/compile/backend_compile_duration", 0)
        print(f"  {gid:28s} cpu {spent:6.2f} s  xla compile {c:5.2f} s  {'ok' if ok else 'error'}")
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
