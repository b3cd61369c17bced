"""Checks of recorded values against references the rubric computed in NumPy, naming the lesson's mistakes."""
from __future__ import annotations

import numpy as np

from grader.submission.evidence.reading import Records
from grader.submission.mistakes import Mismatch, Mistake, diagnose, off_by, shown_shape, simple_ratio
from grader.submission.references import Reference


def differs(actual, expected) -> str:
    """What differs, for a message that names no cause: a simple ratio to the reference ("it is twice the
    reference"), else how far off it is (``off_by``), else nothing more."""
    ratio = simple_ratio(actual, expected)
    if ratio:
        return f": it is {ratio} the reference"
    off = off_by(actual, expected)
    return f"; {off}" if off else ""


class ValueChecks(Records):
    """Each check raises ``Mismatch`` with a message in the lesson's words, never quoting the reference."""

    def close(self, key: str, expected, *, rtol: float = 1e-5, atol: float = 1e-6, what: str | None = None,
              mistakes: list[Mistake] | None = None, shape_mistakes: dict[tuple, str] | None = None) -> np.ndarray:
        expected = np.asarray(expected, dtype=np.float64)
        actual = self.values(key, expected.shape, what=what, shape_mistakes=shape_mistakes)
        if not np.allclose(actual, expected, rtol=rtol, atol=atol):
            hint = diagnose(actual, mistakes, rtol=max(rtol, 1e-4), atol=max(atol, 1e-6))
            raise Mismatch(f"{self.name(key, what)}: differs from the host NumPy reference"
                           + (f": {hint}" if hint else differs(actual, expected)), named=hint is not None)
        return actual

    def check(self, key: str, reference: Reference, case: tuple, *, rtol: float = 1e-5, atol: float = 1e-6,
              what: str | None = None, shape_mistakes: dict[tuple, str] | None = None, **context) -> np.ndarray:
        """``close``: the value recorded under ``key`` against ``reference`` on ``case``, with the mistakes it names
        on that case (``context``, such as ``devices=p``, is passed to the mistakes)."""
        expected, mistakes = reference.on(*case, **context)
        return self.close(key, expected, rtol=rtol, atol=atol, what=what, mistakes=mistakes,
                          shape_mistakes=shape_mistakes)

    def close_to_any(self, key: str, candidates: list, *, rtol: float = 1e-5, atol: float = 1e-6,
                     what: str | None = None, mistakes: list[Mistake] | None = None,
                     reason: str = "differs from the host NumPy reference") -> np.ndarray:
        """Passes when the value matches any of ``candidates`` (the reference, or the learner's own values)."""
        shapes = {np.shape(c) for c in candidates}
        expected_shape = next(iter(shapes))
        actual = self.values(key, expected_shape, what=what)
        for candidate in candidates:
            if np.allclose(actual, np.asarray(candidate, dtype=np.float64), rtol=rtol, atol=atol):
                return actual
        hint = diagnose(actual, mistakes, rtol=max(rtol, 1e-4), atol=max(atol, 1e-6))
        raise Mismatch(f"{self.name(key, what)}: {reason}" + (f": {hint}" if hint else differs(actual, candidates[0])),
                       named=hint is not None)

    def equal(self, key: str, expected, *, what: str | None = None, mistakes: dict | None = None) -> None:
        recorded = self.get(key, what=what)
        value = recorded.value
        if recorded.kind in ("array", "jax_array"):
            value = value.tolist()
        if type(value) is not type(expected) or value != expected:
            hint = (mistakes or {}).get(value) if isinstance(value, (int, float, str)) else None
            raise Mismatch(f"{self.name(key, what)} is not the expected answer" + (f": {hint}" if hint else ""))

    def shard_shapes(self, key: str, expected_shape, *, devices: int | None = None, what: str | None = None) -> None:
        name = self.name(key, what)
        recorded = self.get(key, what=what)
        if recorded.kind != "jax_array":
            raise Mismatch(f"{name}: expected a JAX array placed on the devices, got a host array")
        if devices is not None and len(recorded.shards) != devices:
            found = len(recorded.shards) if len(recorded.shards) <= 64 else "more"
            raise Mismatch(f"{name}: expected a shard on each of the {devices} devices, found {found}")
        shapes = {tuple(s.value.shape) for s in recorded.shards}
        if not recorded.shards or shapes != {tuple(expected_shape)}:
            found = ", ".join(shown_shape(shape) for shape in sorted(shapes)[:2]) + (", ..." if len(shapes) > 2 else "")
            raise Mismatch(f"{name}: each device should hold shape {tuple(expected_shape)}, found {found}")

    def replicas_close(self, key: str, expected, *, rtol: float = 1e-5, atol: float = 1e-6, what: str | None = None,
                       against: str = "the host reference") -> None:
        """Every addressable shard holds the whole ``expected`` array."""
        expected = np.asarray(expected, dtype=np.float64)
        self.shard_shapes(key, expected.shape, what=what)
        for shard in self.get(key, what=what).shards:
            if not np.allclose(shard.value.astype(np.float64), expected, rtol=rtol, atol=atol):
                raise Mismatch(f"{self.name(key, what)}: the copy on device {shard.device} differs from {against}")
