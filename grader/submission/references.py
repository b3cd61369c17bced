"""References and the mistakes named on them, as functions of a case.

A rubric says "check this key against this reference, with these mistakes, on this case" in one call:
``e.check(key, GRADIENT, (x, y, w), devices=p)``. A ``Reference`` pairs the NumPy function that computes the right
value from a case's inputs with the functions that compute the lesson's named mistakes from the same inputs
(``mistake``: the wrong value a learner who made it gets, and its words), so a judge never builds a mistake list by
hand for each input, and the two cannot drift apart.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from grader.submission.mistakes import Mistake, scaled

#: a named mistake on a case: ``mistake(*case, **context) -> Mistake | list[Mistake]`` (``context``: what the check
#: knows beyond the inputs, such as ``devices`` or ``mesh``; a mistake takes the keywords it needs and ``**_``)
MistakeOn = Callable[..., "Mistake | list[Mistake]"]


@dataclass(frozen=True)
class Named:
    """One named mistake as a function of a case (made by ``mistake``): its words, and the wrong value it gives."""

    says: str
    wrong: Callable[..., Any]

    def __call__(self, *case, **context) -> list[Mistake]:
        """The mistake on ``case`` (none where ``wrong`` returns None: the case cannot show it)."""
        made = self.wrong(*case, **context)
        if made is None:
            return []
        value, fields = made if isinstance(made, tuple) and len(made) == 2 and isinstance(made[1], dict) else (made, {})
        return [Mistake(value, self.says.format(**context, **fields) if "{" in self.says else self.says)]


def mistake(says: str, wrong: Callable[..., Any] | None = None):
    """A named mistake: ``wrong(*case, **context)`` is the value a learner who made it gets on a case, or None where
    the case cannot show it (``return value, {"k": k}`` fills ``{k}`` in ``says``; the check's context, such as
    ``{devices}``, fills the rest). ``mistake(says, lambda x, y: ...)``, or ``@mistake(says)`` on a function."""
    if wrong is None:
        return lambda function: Named(says, function)
    return Named(says, wrong)


def factors(expected: Callable[..., Any], says: Callable[..., dict[float, str]]) -> MistakeOn:
    """Mistakes that are the right value times known factors, on a case: ``says(*case, **context)`` maps each
    factor to its words (``scaled``: a factor of 0 or 1 names nothing)."""
    return lambda *case, **context: scaled(expected(*case), says(*case, **context))


@dataclass(frozen=True)
class Reference:
    """The right value on a case (``compute(*case)``, float64 NumPy, never JAX) and its named mistakes."""

    compute: Callable[..., Any]
    mistakes: tuple[MistakeOn, ...] = ()

    def on(self, *case, **context) -> tuple[np.ndarray, list[Mistake]]:
        """The reference value on ``case`` and every mistake named on it, in order."""
        value = np.asarray(self.compute(*case), dtype=np.float64)
        return value, self.named(*case, **context)

    def named(self, *case, **context) -> list[Mistake]:
        """Every mistake named on ``case``, in order (for a check against another value than ``compute``'s)."""
        named: list[Mistake] = []
        for mistake_on in self.mistakes:
            made = mistake_on(*case, **context)
            named += list(made) if isinstance(made, (list, tuple)) else [made]
        return named

    def __call__(self, *case):
        """The reference value alone, as ``compute`` returns it."""
        return self.compute(*case)


def reference(*mistakes: MistakeOn) -> Callable[[Callable[..., Any]], Reference]:
    """Decorate the function that computes a reference: ``@reference(summed_means, elementwise)``."""
    def wrap(compute: Callable[..., Any]) -> Reference:
        return Reference(compute, tuple(mistakes))

    return wrap
