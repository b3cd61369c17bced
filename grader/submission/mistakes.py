"""Wrong values the lessons name, and what of a learner's value a message may quote.

Used by the judges (``grader.submission.judge``, which re-exports these names for the rubrics) to say which mistake
a wrong value is (``Mistake``, ``diagnose``) and to quote a learner-made shape or dtype only where it carries few
bits (after hidden tests ran, learner code chooses what its records look like).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def shown_shape(shape) -> str:
    """A learner-made shape, as a message may quote it: small shapes in full, any other as "another shape".

    After hidden tests ran, learner code controls what its records look like; a message that quoted any shape
    (up to 32 dimensions of any size) would carry hundreds of learner-chosen bits per test into the feedback
    page, enough to spell out hidden-test source. A shape of at most 3 dimensions of at most 64 is what honest
    mistakes produce, and carries at most 19 bits.
    """
    shape = tuple(int(n) for n in shape)
    return str(shape) if len(shape) <= 3 and all(0 <= n <= 64 for n in shape) else "another shape"


def shown_dtype(dtype) -> str:
    """A learner-made dtype, quoted only when it is one of NumPy's plain numeric or boolean dtypes."""
    dtype = np.dtype(dtype)
    return dtype.name if dtype.fields is None and dtype.kind in "biufc" and dtype.name.isalnum() else "another dtype"


class Mismatch(AssertionError):
    """A recorded value is missing or differs from the reference; ``named``: the message names the lesson's mistake."""

    def __init__(self, message: str = "", *, named: bool = False):
        super().__init__(message)
        self.named = named


@dataclass(frozen=True)
class Mistake:
    """A recognizable wrong value (computed by the rubric in NumPy) and what it means, in the lesson's words."""

    value: object
    says: str


def scaled(expected, factors: dict[float, str]) -> list[Mistake]:
    """``Mistake``s for values off from ``expected`` by known factors ({factor: what that means})."""
    expected = np.asarray(expected, dtype=np.float64)
    return [Mistake(factor * expected, says) for factor, says in factors.items() if factor not in (0, 1)]


def denominator_mistakes(expected, *, devices: int, count: int | None = None, what: str = "gradient",
                         mesh: int | None = None, derivative: bool = True) -> list[Mistake]:
    """The denominator mistakes the lessons warn about, for a mean over ``count`` examples on ``devices`` devices.

    ``mesh``: the size of the (sub-)mesh the value was computed on, when it is
    not the notebook's own device count; a value scaled by mesh/4 or 4/mesh
    there assumes the lesson's four devices. ``derivative``: also the slips of
    differentiating a square by hand (a missing or doubled factor 2, the sign).
    """
    p = mesh or devices
    factors: dict[float, str] = {
        float(p): f"{p} times the global {what}: the per-device means were summed (local means, not one global mean)",
        1.0 / p: f"the global {what} divided by the number of devices ({p}): the global mean already has the right "
                 "denominator",
    }
    if mesh and mesh != 4:
        factors.setdefault(mesh / 4, f"scaled by {mesh}/4 on a mesh of {mesh} device(s): the code assumes four devices")
        factors.setdefault(4 / mesh, f"scaled by 4/{mesh} on a mesh of {mesh} device(s): the code assumes four devices")
    if count:
        factors.setdefault(float(count), f"{count} times the mean: a sum over the examples, not their mean")
    if derivative:
        factors.setdefault(-1.0, "the sign is flipped")
        factors.setdefault(0.5, "half the reference: the factor 2 of the derivative of a square is missing")
        factors.setdefault(2.0, "twice the reference: the factor 2 is applied twice")
    return scaled(expected, factors)


def diagnose(actual, mistakes, *, rtol: float = 1e-4, atol: float = 1e-6) -> str | None:
    """What ``actual`` is, when it matches exactly one of the known ``mistakes``.

    When the data make two different mistakes give the same value, nothing is
    claimed: a wrong diagnosis would mislead more than none.
    """
    actual = np.asarray(actual, dtype=np.float64)
    found = []
    for mistake in mistakes or []:
        wrong = np.asarray(mistake.value, dtype=np.float64)
        if wrong.shape == actual.shape and np.all(np.isfinite(wrong)) and \
                np.allclose(actual, wrong, rtol=rtol, atol=atol):
            found.append(mistake.says)
    return found[0] if len(set(found)) == 1 else None


def simple_ratio(actual, expected, *, rtol: float = 1e-4, atol: float = 1e-6, most: int = 16) -> str | None:
    """How ``actual`` compares with a non-zero ``expected`` when it is a simple multiple of it (k or 1/k times, k
    from 2 to ``most``, either sign): "twice", "3 times", "1/2 of", "-1/4 of". A message may say it: it names the
    difference, not a cause, and carries a few bits of the learner's value, never more. None for any other value."""
    actual, expected = np.asarray(actual, dtype=np.float64), np.asarray(expected, dtype=np.float64)
    if actual.shape != expected.shape or not np.any(expected != 0) or not np.all(np.isfinite(actual)):
        return None
    for k in range(2, most + 1):
        for sign in (1, -1):
            if np.allclose(actual, sign * k * expected, rtol=rtol, atol=atol):
                return ("-" if sign < 0 else "") + ("twice" if k == 2 and sign > 0 else f"{k} times")
            if np.allclose(actual, sign * expected / k, rtol=rtol, atol=atol):
                return f"{'-' if sign < 0 else ''}1/{k} of"
    return None


def off_by(actual, expected) -> str | None:
    """What differs, when no mistake is the cause and no simple ratio says it: how far ``actual`` is from
    ``expected``, the norm of the difference relative to the reference's, two digits ("it is off by 9.8% (...)").
    Two digits of one number: a message may say it (it names the difference, not a cause). None where the shapes
    differ, a value is not finite, or the reference is zero (no relative error)."""
    actual, expected = np.asarray(actual, dtype=np.float64), np.asarray(expected, dtype=np.float64)
    if actual.shape != expected.shape or not np.all(np.isfinite(actual)) or not np.all(np.isfinite(expected)):
        return None
    scale = float(np.linalg.norm(expected))
    if scale == 0:
        return None
    error = 100 * float(np.linalg.norm(actual - expected)) / scale
    shown = f"{float(f'{error:.2g}'):g}" if error < 1e6 else "more than a million"
    return f"it is off by {shown}% (the norm of the difference, relative to the reference's)"
