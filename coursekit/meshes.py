"""Other mesh sizes for hidden tests: sub-meshes of the kernel's devices, names rebound for a while.

A notebook's device count is fixed when JAX starts, so a test that wants to see
a learner's function on another mesh size builds a mesh from some of the
kernel's devices. ``sub_mesh_sizes`` is plain Python, so the grader computes
the same sizes for its references without JAX.
"""
from __future__ import annotations

import contextlib

_ABSENT = object()


def sub_mesh_sizes(num_devices: int) -> list[int]:
    """Mesh sizes below ``num_devices``: one device, half of them and all but one (1, 2, 3 of 4; 1, 4, 7 of 8)."""
    return sorted({1, num_devices // 2, num_devices - 1} - {0, num_devices})


def sub_mesh(devices, size: int, axis: str = "data"):
    """A one-axis mesh of the first ``size`` of ``devices``."""
    import numpy as np
    from jax.sharding import Mesh

    return Mesh(np.array(list(devices)[:size]), (axis,))


@contextlib.contextmanager
def rebound(namespace: dict, **values):
    """Bind ``values`` in ``namespace`` (a notebook's globals()) and restore every name afterwards."""
    saved = {name: namespace.get(name, _ABSENT) for name in values}
    namespace.update(values)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is _ABSENT:
                namespace.pop(name, None)
            else:
                namespace[name] = value


def rebuilt(namespace: dict, cells, wanted=(), **values) -> dict:
    """A copy of ``namespace`` (a notebook's globals()) with ``values`` bound, in which the learner's own definitions
    (from ``cells``: their sources, in the notebook's order, as the grader read them from the submitted notebook) ran
    again: their functions then read the rebound names, and what they built once at module level (a jitted program
    on the notebook's mesh, a functools.partial of jax.jit with its shardings, an object that keeps a mesh) is built
    again on the rebound values. Rebinding names alone cannot reach a value captured when a cell ran.

    Only definitions run again (``_definitions``): functions, classes and imports, and the module-level assignments
    that a definition or a ``wanted`` name reads (transitively); never a loop, a bare call, a print or an assert. A
    statement that fails is passed over, keeping the binding the notebook had, so nothing here raises. IPython's
    magics are turned into Python first, as the kernel did."""
    names = dict(namespace)
    names.update(values)
    for number, statement in _definitions(cells, set(wanted)):
        try:
            exec(compile(statement, f"<your cell {number + 1}, run again>", "exec"), names)
        except Exception:  # noqa: BLE001 - see the docstring
            continue
    return names


def _definitions(cells, wanted: set) -> list:
    """``(cell number, ast.Module)`` of each statement ``rebuilt`` runs again, in the notebook's order."""
    import ast

    try:
        from IPython.core.inputtransformer2 import TransformerManager

        transform = TransformerManager().transform_cell
    except Exception:  # noqa: BLE001 - plain Python without IPython
        def transform(source):
            return source
    statements = []
    for number, source in enumerate(cells or ()):
        try:
            statements += [(number, s) for s in ast.parse(transform(str(source))).body]
        except Exception:  # noqa: BLE001 - a cell that does not parse defined nothing the first time either
            continue
    defining = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom)
    assigning = (ast.Assign, ast.AnnAssign)

    def read(node) -> set:
        return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}

    def bound(node) -> set:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}

    needed = set(wanted)
    for _, statement in statements:
        if isinstance(statement, defining):
            needed |= read(statement)
    kept: set[int] = set()
    changed = True
    while changed:  # assignments a kept statement reads, until nothing more is needed
        changed = False
        for index, (_, statement) in enumerate(statements):
            if index not in kept and isinstance(statement, assigning) and bound(statement) & needed:
                kept.add(index)
                needed |= read(statement)
                changed = True
    return [(number, ast.Module(body=[statement], type_ignores=[]))
            for index, (number, statement) in enumerate(statements)
            if isinstance(statement, defining) or index in kept]
