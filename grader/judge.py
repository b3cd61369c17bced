"""Judge recorded values against references computed here, in the grader.

An assignment's ``source/<assignment>/rubric.py`` builds a ``Rubric`` and
registers one judge per autograded test cell (by nbgrader ``grade_id``). A
judge receives the cell's ``Evidence`` and calls its checks; the first failed
check raises ``Mismatch`` with a message for the learner that never contains
the reference values.
"""
from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path
from typing import Callable

import numpy as np

from .records import Recorded


class Mismatch(AssertionError):
    """A recorded value is missing or differs from the reference."""


class Evidence:
    """The records of one test cell, with checks that raise ``Mismatch``."""

    def __init__(self, records: dict[str, Recorded], broken: list[str] | None = None, *, num_devices: int = 4):
        self._records = records
        self._broken = set(broken or [])
        #: the device count the grader ran the notebook with (not what the kernel claims)
        self.num_devices = num_devices

    # -- access ---------------------------------------------------------
    def get(self, key: str) -> Recorded:
        if key in self._broken:
            raise Mismatch(f"{key}: recorded more than once or malformed; the test cell must run unmodified")
        if key not in self._records:
            raise Mismatch(f"{key}: no value was recorded (the test stopped before reaching it)")
        recorded = self._records[key]
        if recorded.kind == "rejected":
            raise Mismatch(f"{key}: got a {recorded.value}, expected a plain NumPy or JAX array/number")
        return recorded

    def array(self, key: str, *, shape=None, float_dtype: bool = True, jax: bool = False) -> np.ndarray:
        recorded = self.get(key)
        if recorded.kind not in ("array", "jax_array"):
            raise Mismatch(f"{key}: expected an array, got a {recorded.kind}")
        if jax and recorded.kind != "jax_array":
            raise Mismatch(f"{key}: expected a JAX array computed on the devices, got a host array")
        value = recorded.value
        if float_dtype and value.dtype.kind != "f":
            raise Mismatch(f"{key}: expected floating-point values, got dtype {value.dtype}")
        if shape is not None and tuple(value.shape) != tuple(shape):
            raise Mismatch(f"{key}: expected shape {tuple(shape)}, got {tuple(value.shape)}")
        if value.dtype.kind == "f" and not np.all(np.isfinite(value)):
            raise Mismatch(f"{key}: contains NaN or infinity")
        return value

    def number(self, key: str) -> float:
        recorded = self.get(key)
        if recorded.kind == "scalar" and type(recorded.value) in (int, float) and not isinstance(recorded.value, bool):
            value = float(recorded.value)
        elif recorded.kind in ("array", "jax_array") and recorded.value.size == 1 and recorded.value.dtype.kind in "fi":
            value = float(recorded.value.reshape(()))
        else:
            raise Mismatch(f"{key}: expected a single number")
        if not math.isfinite(value):
            raise Mismatch(f"{key}: is NaN or infinite")
        return value

    def text(self, key: str) -> str:
        recorded = self.get(key)
        if recorded.kind != "scalar" or type(recorded.value) is not str:
            raise Mismatch(f"{key}: expected text")
        return recorded.value

    # -- checks ---------------------------------------------------------
    def close(self, key: str, expected, *, rtol: float = 1e-5, atol: float = 1e-6, what: str | None = None) -> None:
        expected = np.asarray(expected, dtype=np.float64)
        actual = self.array(key, shape=expected.shape) if expected.ndim else np.asarray(self.number(key))
        if not np.allclose(actual.astype(np.float64), expected, rtol=rtol, atol=atol):
            raise Mismatch(f"{what or key}: differs from the host NumPy reference")

    def equal(self, key: str, expected, *, what: str | None = None) -> None:
        recorded = self.get(key)
        value = recorded.value
        if recorded.kind in ("array", "jax_array"):
            value = value.tolist()
        if type(value) is not type(expected) or value != expected:
            raise Mismatch(f"{what or key} is not the expected answer")

    def shard_shapes(self, key: str, expected_shape, *, devices: int | None = None) -> None:
        recorded = self.get(key)
        if recorded.kind != "jax_array":
            raise Mismatch(f"{key}: expected a JAX array placed on the devices")
        if devices is not None and len(recorded.shards) != devices:
            raise Mismatch(f"{key}: expected {devices} addressable shards, found {len(recorded.shards)}")
        shapes = {tuple(s.value.shape) for s in recorded.shards}
        if not recorded.shards or shapes != {tuple(expected_shape)}:
            raise Mismatch(
                f"{key}: each device should hold shape {tuple(expected_shape)}, found {sorted(shapes)}"
            )

    def replicas_close(self, key: str, expected, *, rtol: float = 1e-5, atol: float = 1e-6) -> None:
        """Every addressable shard holds the whole ``expected`` array."""
        expected = np.asarray(expected, dtype=np.float64)
        self.shard_shapes(key, expected.shape)
        for shard in self.get(key).shards:
            if not np.allclose(shard.value.astype(np.float64), expected, rtol=rtol, atol=atol):
                raise Mismatch(f"{key}: the copy on device {shard.device} differs from the host reference")

    def require(self, condition: bool, message: str) -> None:
        if not condition:
            raise Mismatch(message)


Judge = Callable[[Evidence], None]


class Rubric:
    """Judges by test-cell ``grade_id``."""

    def __init__(self) -> None:
        self.judges: dict[str, Judge] = {}

    def test(self, grade_id: str) -> Callable[[Judge], Judge]:
        def register(judge: Judge) -> Judge:
            if grade_id in self.judges:
                raise ValueError(f"two judges for {grade_id}")
            self.judges[grade_id] = judge
            return judge

        return register

    def judge(self, grade_id: str, evidence: Evidence) -> tuple[bool, str]:
        """(passed, learner message) for one test cell."""
        if grade_id not in self.judges:
            return False, f"{grade_id}: the course has no judge for this test (instructor error)"
        try:
            self.judges[grade_id](evidence)
        except Mismatch as failure:
            return False, str(failure)
        return True, "passed"


def load_rubric(path: Path) -> Rubric:
    """Import ``rubric.py`` from an assignment folder (trusted instructor code)."""
    name = f"_course_rubric_{path.parent.name}"
    if name in sys.modules:
        return sys.modules[name].rubric
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    rubric = getattr(module, "rubric", None)
    if not isinstance(rubric, Rubric):
        raise TypeError(f"{path} must define `rubric = Rubric()`")
    return rubric
