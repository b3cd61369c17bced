"""Read the values a test cell recorded, as pristine NumPy data.

Only the outputs of the test cell itself are read, each key at most once: a
record printed by the learner's own cells, or a second record for the same key,
makes the key unusable instead of overriding the real one.

Records arrive from the learner's kernel, so nothing in them is assumed:
every field's type is checked, sizes and nesting are bounded, and any
problem makes that key unusable (the test that needs it fails with a
message); decoding never raises anything but ``RecordError``.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

MIME_TYPE = "application/vnd.jax-course.record+json"
_DTYPES = {"float16", "float32", "float64", "int32", "int64", "bool", "uint32", "uint8", "int8"}
MAX_DEPTH = 16  # sequences and mappings inside each other
MAX_ELEMENTS = 10_000_000  # of one array, by its shape
MAX_DIMENSIONS = 32
MAX_SHARDS = 4096
MAX_INT = 2**63  # integers a scalar record may hold (beyond, a float conversion overflows)


class RecordError(ValueError):
    """A record is missing, duplicated, malformed or of a rejected type."""


@dataclass
class Shard:
    device: int
    index: list
    value: np.ndarray


@dataclass
class Recorded:
    kind: str
    value: object
    sharding: str | None = None
    shards: list[Shard] = field(default_factory=list)


def _decode_array(payload) -> np.ndarray:
    if not isinstance(payload, dict):
        raise RecordError("malformed array record")
    dtype = payload.get("dtype")
    shape = payload.get("shape")
    data = payload.get("data")
    if type(dtype) is not str or dtype not in _DTYPES or not isinstance(shape, list) or not isinstance(data, list):
        raise RecordError("malformed array record")
    if len(shape) > MAX_DIMENSIONS or not all(type(n) is int and 0 <= n <= MAX_ELEMENTS for n in shape):
        raise RecordError("malformed array shape")
    size = 1
    for n in shape:
        size *= n  # Python integers: no overflow
    if size > MAX_ELEMENTS or size != len(data):
        raise RecordError("array record's data does not fit its shape")
    if not all(v is None or type(v) in (int, float, bool) for v in data):
        raise RecordError("array record holds non-numeric data")
    values = [np.nan if v is None else v for v in data]
    try:
        with np.errstate(all="ignore"):
            array = np.array(values, dtype=np.float64 if dtype.startswith("float") else dtype)
            return array.reshape(shape).astype(dtype)
    except (TypeError, ValueError, OverflowError) as error:
        raise RecordError(f"array record holds values its dtype cannot ({type(error).__name__})") from None


def _index(value) -> list:
    """A shard's index: per dimension an integer or a [start, stop] pair of integers or nulls."""
    if not isinstance(value, list) or len(value) > MAX_DIMENSIONS:
        raise RecordError("malformed shard index")
    for part in value:
        if type(part) is int:
            continue
        if isinstance(part, list) and len(part) == 2 and all(p is None or type(p) is int for p in part):
            continue
        raise RecordError("malformed shard index")
    return value


def _shard(shard) -> Shard:
    if not isinstance(shard, dict):
        raise RecordError("malformed shard record")
    inner = shard.get("value")
    device = shard.get("device", -1)
    # A device is an index below the shard limit: judges' messages quote it ("the copy on device N"), and after
    # hidden tests ran learner code chooses it, so an unbounded integer would carry 60 bits of hidden source per
    # message into the feedback page.
    if not isinstance(inner, dict) or inner.get("kind") != "array" or type(device) is not int \
            or not 0 <= device < MAX_SHARDS:
        raise RecordError("malformed shard record")
    return Shard(device, _index(shard.get("index", [])), _decode_array(inner))


def decode(payload, depth: int = 0) -> Recorded:
    """The recorded value, or ``RecordError`` for anything malformed (never another exception)."""
    if depth > MAX_DEPTH:
        raise RecordError(f"record nested more than {MAX_DEPTH} levels deep")
    if not isinstance(payload, dict):
        raise RecordError("malformed record")
    kind = payload.get("kind")
    if kind == "rejected":
        kind_name = payload.get("type")
        return Recorded("rejected", kind_name[:200] if isinstance(kind_name, str) else "unknown object")
    if kind == "scalar":
        value = payload.get("value")
        if type(value) not in (bool, int, float, str, type(None)):
            raise RecordError("malformed scalar record")
        if type(value) is int and not -MAX_INT <= value <= MAX_INT:
            raise RecordError("scalar record out of range")
        return Recorded("scalar", float("nan") if value is None and payload.get("type") == "float" else value)
    if kind in ("array", "jax_array"):
        recorded = Recorded(kind, _decode_array(payload))
        if kind == "jax_array":
            sharding, shards = payload.get("sharding"), payload.get("shards", [])
            if not isinstance(shards, list) or len(shards) > MAX_SHARDS:
                raise RecordError("malformed shard list")
            recorded.sharding = sharding[:1000] if isinstance(sharding, str) else None
            recorded.shards = [_shard(shard) for shard in shards]
        return recorded
    if kind == "sequence":
        items = payload.get("items", [])
        if not isinstance(items, list):
            raise RecordError("malformed sequence record")
        return Recorded("sequence", [decode(item, depth + 1) for item in items])
    if kind == "mapping":
        items = payload.get("items", {})
        if not isinstance(items, dict):
            raise RecordError("malformed mapping record")
        return Recorded("mapping", {str(k): decode(v, depth + 1) for k, v in items.items()})
    raise RecordError(f"unknown record kind {kind[:50]!r}" if isinstance(kind, str) else "malformed record kind")


def records_of_cell(cell) -> tuple[dict[str, Recorded], list[str]]:
    """Decoded records of one executed cell, and the keys that were unusable."""
    found: dict[str, Recorded] = {}
    broken: list[str] = []
    seen: set[str] = set()
    outputs = cell.get("outputs", []) if isinstance(cell, dict) else []
    for output in outputs if isinstance(outputs, list) else []:
        if not isinstance(output, dict) or output.get("output_type") not in ("display_data", "execute_result"):
            continue
        data = output.get("data")
        payload = data.get(MIME_TYPE) if isinstance(data, dict) else None
        if payload is None:
            continue
        key = payload.get("key") if isinstance(payload, dict) else None
        if not isinstance(key, str):
            broken.append("<malformed>")
            continue
        if key in seen:
            found.pop(key, None)
            broken.append(key)
            continue
        seen.add(key)
        try:
            found[key] = decode(payload.get("value"))
        except RecordError:
            broken.append(key)
    return found, broken
