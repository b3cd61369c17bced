"""A test cell's records, read typed: each read names the value in the lesson's words when it cannot be used.

A read raises ``Mismatch`` (the learner's failure, with a message) when the record is missing, malformed, or not
of the kind asked for; it never quotes more of a learner-made value than ``grader.submission.mistakes`` allows.
"""
from __future__ import annotations

import math
from enum import IntEnum
from typing import TypeVar

import numpy as np

from grader.programs import ProgramRun
from grader.submission.mistakes import Mismatch, shown_dtype, shown_shape
from grader.submission.records import Recorded

# What a test says of a value its cell never recorded: the notebook stopped before it, or a cell raised
# (grader.raised.not_recorded). The class report counts these apart from the mistakes of learners who got that far.
NOT_CHECKED = "not checked: "
NOT_REACHED = (NOT_CHECKED + "the notebook stopped before this test could record it "
               "(is every TODO above it solved and run?)")
E = TypeVar("E", bound=IntEnum)  # a typed answer of coursekit.checks


class Records:
    """The records of one test cell (and the runs of the programs it recorded), read typed."""

    def __init__(self, records: dict[str, Recorded], broken: list[str] | None = None, *, num_devices: int = 4,
                 names: dict[str, str] | None = None, programs: dict[str, ProgramRun] | None = None,
                 elsewhere: dict[str, dict[str, Recorded]] | None = None, draw: int = 0):
        self._records = records
        #: the learner's draw of the hidden cases drawn over a contract (``coursekit.contracts``; 0: the instructor's)
        self.draw = draw
        #: grade_id -> the well-formed records of another test cell of the notebook (``elsewhere``)
        self._elsewhere = dict(elsewhere or {})
        #: record key -> what the program recorded under it did in the grader's runner (``grader.programs``)
        self._programs = dict(programs or {})
        self._broken = set(broken or [])
        #: the device count the grader ran the notebook with (not what the kernel claims)
        self.num_devices = num_devices
        #: record key -> the words a learner knows for it (set by ``Rubric.judge``)
        self.names = dict(names or {})

    def elsewhere(self, grade_id: str, key: str) -> np.ndarray | None:
        """An array another test cell recorded (that test's own evidence, to check a relative judgement against),
        as float64; None when it did not, or recorded no plain array (Validate has none: ``ShownEvidence``)."""
        recorded = self._elsewhere.get(grade_id, {}).get(key)
        if recorded is None or recorded.kind not in ("array", "jax_array") or recorded.value.dtype.kind not in "fiu":
            return None
        return recorded.value.astype(np.float64)

    def name(self, key: str, what: str | None = None) -> str:
        """The value's words for the learner: ``what``, else the ``Key``'s own words, else the rubric's ``names``."""
        return what or getattr(key, "words", None) or self.names.get(key) or key

    def has(self, key: str) -> bool:
        return key in self._records and key not in self._broken

    def get(self, key: str, *, what: str | None = None) -> Recorded:
        name = self.name(key, what)
        if key in self._broken:
            raise Mismatch(f"{name}: recorded more than once or malformed; the test cell must run unmodified")
        if key not in self._records:
            raise Mismatch(f"{name}: {NOT_REACHED}")
        recorded = self._records[key]
        if recorded.kind == "rejected":
            # Not the object's type name: a learner class can be named with any text (hidden-test source included).
            raise Mismatch(f"{name}: got an object of another type, expected a plain NumPy or JAX array/number")
        return recorded

    def array(self, key: str, *, shape=None, float_dtype: bool = True, jax: bool = False,
              what: str | None = None, shape_mistakes: dict[tuple, str] | None = None) -> np.ndarray:
        name = self.name(key, what)
        recorded = self.get(key, what=what)
        if recorded.kind not in ("array", "jax_array"):
            raise Mismatch(f"{name}: expected an array, got a {recorded.kind}")
        if jax and recorded.kind != "jax_array":
            raise Mismatch(f"{name}: expected a JAX array computed on the devices, got a host array")
        value = recorded.value
        if float_dtype and value.dtype.kind != "f":
            raise Mismatch(f"{name}: expected floating-point values, got dtype {shown_dtype(value.dtype)}")
        if shape is not None and tuple(value.shape) != tuple(shape):
            hint = (shape_mistakes or {}).get(tuple(value.shape))
            raise Mismatch(f"{name}: expected shape {tuple(shape)}, got {shown_shape(value.shape)}"
                           + (f": {hint}" if hint else ""))
        if value.dtype.kind == "f" and not np.all(np.isfinite(value)):
            raise Mismatch(f"{name}: contains NaN or infinity")
        return value

    def number(self, key: str, *, what: str | None = None) -> float:
        name = self.name(key, what)
        recorded = self.get(key, what=what)
        if recorded.kind == "scalar" and type(recorded.value) in (int, float) and not isinstance(recorded.value, bool):
            value = float(recorded.value)
        elif recorded.kind in ("array", "jax_array") and recorded.value.size == 1 and recorded.value.dtype.kind in "fi":
            value = float(recorded.value.reshape(()))
        else:
            raise Mismatch(f"{name}: expected a single number")
        if not math.isfinite(value):
            raise Mismatch(f"{name}: is NaN or infinite")
        return value

    def outcome(self, key: str, kind: type[E], *, what: str | None = None) -> E | None:
        """What a hidden test watched (``coursekit.checks``: ``HostCopy``, ``Trace``, ``Dispatch``), read back typed:
        the member of ``kind`` recorded under ``key``, or None when the number recorded is none of its members."""
        value = self.number(key, what=what)
        return next((member for member in kind if member == value), None)

    def outcomes(self, key: str, kind: type[E], count: int, *, what: str | None = None) -> list[E | None]:
        """``outcome`` for a recorded array of ``count`` answers (``call_keeping_inputs``: one ``Kept`` per argument)."""
        return [next((member for member in kind if member == value), None)
                for value in self.array(key, shape=(count,), float_dtype=False, what=what).tolist()]

    def text(self, key: str, *, what: str | None = None) -> str:
        recorded = self.get(key, what=what)
        if recorded.kind != "scalar" or type(recorded.value) is not str:
            raise Mismatch(f"{self.name(key, what)}: expected text")
        return recorded.value

    def values(self, key: str, shape, *, what: str | None = None, shape_mistakes=None) -> np.ndarray:
        """The recorded number or array as float64, checked for shape and finiteness."""
        if tuple(shape) == ():
            recorded = self.get(key, what=what)
            if recorded.kind in ("array", "jax_array") and recorded.value.size != 1:
                hint = (shape_mistakes or {}).get(tuple(recorded.value.shape))
                raise Mismatch(f"{self.name(key, what)}: expected a single number, got shape "
                               f"{shown_shape(recorded.value.shape)}" + (f": {hint}" if hint else ""))
            return np.asarray(self.number(key, what=what), dtype=np.float64)
        return self.array(key, shape=shape, what=what, shape_mistakes=shape_mistakes).astype(np.float64)

    def require(self, condition: bool, message: str) -> None:
        if not condition:
            raise Mismatch(message)
