"""Hidden cases drawn over a graded function's contract, the same for one learner at every regrade.

A lesson's ``rubric_cases.py`` declares once what a function's docstring allows (``Contract``: each dimension's
allowed values, and the corners every draw must include), and draws its hidden inputs from it with the learner's
draw number: the grader hands the kernel that number with the hidden cases (``LEARNER_DRAW``, set after the learner's
last cell) and judges with the same one, so the kernel and the grader draw the same cases, a regrade draws them
again, and a learner cannot hard-code what the lesson's own data happen to fix (three micro-batches, two features,
a device that always holds a valid token).

Plain NumPy and Python, so the grader draws the same cases in its own process without JAX.
"""
from __future__ import annotations

import zlib
from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class Contract:
    """What a function accepts: ``dimensions`` maps each name to its allowed values; each corner fixes some
    dimensions (a value, or a tuple of values to draw from) and draws the rest. ``draw`` returns every corner, then
    ``extra`` cases drawn over the whole contract."""

    dimensions: dict[str, tuple]
    corners: tuple[dict, ...] = ()
    extra: int = 1
    name: str = field(default="cases")

    def __post_init__(self):
        for corner in self.corners:
            unknown = set(corner) - set(self.dimensions)
            if unknown:
                raise ValueError(f"{self.name}: a corner fixes {sorted(unknown)}, which the contract does not declare")
        for dimension, allowed in self.dimensions.items():
            if not isinstance(allowed, tuple) or not allowed:
                raise ValueError(f"{self.name}: {dimension} needs a non-empty tuple of allowed values")

    def rng(self, draw: int) -> np.random.Generator:
        """The generator of ``draw``'s cases of this contract (the same for the same draw and name, in any process)."""
        return np.random.default_rng([int(draw) & 0xFFFFFFFF, zlib.crc32(self.name.encode())])

    def draw(self, draw: int) -> list[dict]:
        """The cases of ``draw``: each corner (its free dimensions drawn), then ``extra`` cases drawn freely; each
        case a dict of every dimension's value, plus ``seed`` (for the case's data)."""
        rng = self.rng(draw)
        drawn = []
        for fixed in (*self.corners, *({},) * self.extra):
            case = {}
            for dimension, allowed in self.dimensions.items():
                value = fixed.get(dimension, allowed)
                case[dimension] = value[int(rng.integers(len(value)))] if isinstance(value, tuple) else value
            case["seed"] = int(rng.integers(2**31))
            drawn.append(case)
        return drawn
