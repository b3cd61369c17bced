"""Hand values from the learner's kernel to the grader as plain data.

A test cell calls ``record(key, value)``. The value is converted here to JSON
(numbers, lists, dtype and shape, and for JAX arrays every addressable shard)
and published as a display output of that cell with ``MIME_TYPE``. The grader
reads those outputs after the kernel has finished and compares them with its
own references. Nothing here decides pass or fail: tampering with this module
can only lose a record, never create a correct value for data the learner has
not seen.
"""
from __future__ import annotations

import math
import numbers

import numpy as np

MIME_TYPE = "application/vnd.jax-course.record+json"

# Exact types only: subclasses (for example of np.float64) may override
# comparisons or conversions, so they are reported as rejected.
_PLAIN_SCALARS = (bool, int, float, str, type(None))
_NUMPY_SCALARS = (np.float16, np.float32, np.float64, np.int32, np.int64, np.bool_)
_ALLOWED_DTYPES = {"float16", "float32", "float64", "int32", "int64", "bool", "uint32", "uint8", "int8"}


def _check_results() -> tuple[type, ...]:
    """The typed answers of ``coursekit.checks`` (its ``IntEnum`` classes), recorded as plain numbers."""
    from coursekit import checks

    return checks.RESULTS


def _jax_array_type():
    try:
        import jax.numpy as jnp
    except ImportError:  # pragma: no cover - the course always has JAX
        return None
    return type(jnp.zeros(()))


def _array_payload(array: np.ndarray) -> dict:
    if type(array) is not np.ndarray:
        return {"kind": "rejected", "type": f"{type(array).__module__}.{type(array).__qualname__}"}
    if array.dtype.name not in _ALLOWED_DTYPES:
        return {"kind": "rejected", "type": f"ndarray[{array.dtype.name}]"}
    flat = array.astype(np.float64).ravel().tolist() if array.dtype.kind == "f" else array.ravel().tolist()
    flat = [None if isinstance(v, float) and not math.isfinite(v) else v for v in flat]
    finite = bool(np.all(np.isfinite(array))) if array.dtype.kind == "f" else True
    return {"kind": "array", "dtype": array.dtype.name, "shape": list(array.shape), "data": flat, "finite": finite}


def encode(value) -> dict:
    """Plain-data description of ``value``; unknown objects become ``rejected``."""
    kind = type(value)
    if kind in _check_results():  # what a hidden test watched (``coursekit.checks``): recorded as its number
        value, kind = int.__int__(value), int
    if kind in _PLAIN_SCALARS:
        if kind is float and not math.isfinite(value):
            return {"kind": "scalar", "type": "float", "value": None, "finite": False}
        return {"kind": "scalar", "type": kind.__name__, "value": value, "finite": True}
    if kind in _NUMPY_SCALARS:
        return _array_payload(np.asarray(value))
    if kind is np.ndarray:
        return _array_payload(value)
    jax_array = _jax_array_type()
    if jax_array is not None and kind is jax_array:
        payload = _array_payload(np.asarray(value))
        if payload["kind"] == "array":
            payload["kind"] = "jax_array"
            payload["sharding"] = str(getattr(value.sharding, "spec", value.sharding))
            payload["shards"] = [
                {
                    "device": int(shard.device.id),
                    "index": [[s.start, s.stop] if isinstance(s, slice) else s for s in shard.index],
                    "value": _array_payload(np.asarray(shard.data)),
                }
                for shard in value.addressable_shards
            ]
        return payload
    if kind in (list, tuple):
        return {"kind": "sequence", "items": [encode(item) for item in value]}
    if kind is dict and all(type(k) is str for k in value):
        return {"kind": "mapping", "items": {k: encode(v) for k, v in value.items()}}
    if isinstance(value, numbers.Number) or hasattr(value, "__array__"):
        return {"kind": "rejected", "type": f"{kind.__module__}.{kind.__qualname__}"}
    return {"kind": "rejected", "type": f"{kind.__module__}.{kind.__qualname__}"}


class Key(str):
    """A record key and the words a learner knows for the value recorded under it, declared once, beside the hidden
    cases (an assignment's ``rubric_cases.py``): the test cell records under it (``record(KEY, value)``), the judge
    reads it (``e.close(KEY, ...)``) and every message names the value by ``words``, never by the key.

    A key with ``{fields}`` (in the key and its words alike) is a template: ``KEY(count=3)`` is the key of one case.
    It is a ``str``, so records, lookups and messages treat it as its key."""

    words: str

    def __new__(cls, key: str, words: str):
        made = super().__new__(cls, key)
        made.words = str(words)
        return made

    def __call__(self, **fields) -> Key:
        """The key of one case: the template's fields filled in the key and in its words."""
        return Key(str.format(self, **fields), self.words.format(**fields))

    def __getnewargs__(self):
        return str.__str__(self), self.words

    def __repr__(self) -> str:
        return f"Key({str.__repr__(self)}, {self.words!r})"


def record(key: str, value) -> None:
    """Publish ``value`` under ``key`` (a ``str``, or a ``Key``) for the grader; the learner sees nothing.

    The output carries the payload under ``MIME_TYPE`` and an empty ``text/plain``:
    JupyterLab and nbconvert render the empty text as nothing (an output with only an
    unknown MIME type also shows nothing in JupyterLab, but nbconvert warns about it
    once per record), so no plumbing line reaches the learner's screen.
    """
    from IPython.display import display

    payload = {"key": str.__str__(key) if isinstance(key, str) else str(key), "value": encode(value)}
    display({MIME_TYPE: payload, "text/plain": ""}, raw=True)


def lowered_text(fn, *args) -> str:
    """The StableHLO text of ``fn`` lowered for ``args`` (what the compiler receives).

    ``fn`` is wrapped in ``jax.jit`` here and lowered by JAX, and the result
    must be JAX's own ``Lowered`` object: the text comes from tracing ``fn``,
    never from a ``lower`` method of the object passed in.
    """
    import jax

    lowered = jax.jit(fn).lower(*args)
    if type(lowered) is not jax.stages.Lowered:
        raise TypeError(f"jax.jit(...).lower returned a {type(lowered).__name__}, not jax.stages.Lowered")
    return lowered.as_text()
