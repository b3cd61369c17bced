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
