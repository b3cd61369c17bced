"""References and the mistakes named on them, as functions of a case.

A rubric says "check this key against this reference, with these mistakes, on this case" in one call:
``e.check(key, GRADIENT, (x, y, w), devices=p)``. A ``Reference`` pairs the NumPy function that computes the right
value from a case's inputs with the functions that compute the lesson's named mistakes from the same inputs, so a
judge never rebuilds a mistake list by hand for each input, and the two cannot drift apart.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from grader.submission.mistakes import Mistake

#: a named mistake on a case: ``mistake(*case, **context) -> Mistake | list[Mistake]`` (``context``: what the check
#: knows beyond the inputs, such as ``devices`` or ``mesh``; a mistake takes the keywords it needs and ``**_``)
MistakeOn = Callable[..., "Mistake | list[Mistake]"]


@dataclass(frozen=True)
class Reference:
    """The right value on a case (``compute(*case)``, float64 NumPy, never JAX) and its named mistakes."""

    compute: Callable[..., Any]
    mistakes: tuple[MistakeOn, ...] = ()

    def on(self, *case, **context) -> tuple[np.ndarray, list[Mistake]]:
        """The reference value on ``case`` and every mistake named on it, in order."""
        value = np.asarray(self.compute(*case), dtype=np.float64)
        named: list[Mistake] = []
        for mistake in self.mistakes:
            made = mistake(*case, **context)
            named += list(made) if isinstance(made, (list, tuple)) else [made]
        return value, named

    def __call__(self, *case):
        """The reference value alone, as ``compute`` returns it."""
        return self.compute(*case)


def reference(*mistakes: MistakeOn) -> Callable[[Callable[..., Any]], Reference]:
    """Decorate the function that computes a reference: ``@reference(summed_means, elementwise)``."""
    def wrap(compute: Callable[..., Any]) -> Reference:
        return Reference(compute, tuple(mistakes))

    return wrap
