"""Read the values a test cell recorded, as pristine NumPy data.

Only the outputs of the test cell itself are read, each key at most once: a
record printed by the learner's own cells, or a second record for the same key,
makes the key unusable instead of overriding the real one.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

MIME_TYPE = "application/vnd.jax-course.record+json"
_DTYPES = {"float16", "float32", "float64", "int32", "int64", "bool", "uint32", "uint8", "int8"}


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


def _decode_array(payload: dict) -> np.ndarray:
    dtype = payload.get("dtype")
    shape = payload.get("shape")
    data = payload.get("data")
    if dtype not in _DTYPES or not isinstance(shape, list) or not isinstance(data, list):
        raise RecordError("malformed array record")
    if not all(type(n) is int and n >= 0 for n in shape):
        raise RecordError("malformed array shape")
    if not all(v is None or type(v) in (int, float, bool) for v in data):
        raise RecordError("array record holds non-numeric data")
    values = [np.nan if v is None else v for v in data]
    array = np.array(values, dtype=np.float64 if dtype.startswith("float") else dtype)
    if array.size != int(np.prod(shape, dtype=np.int64)):
        raise RecordError("array record's data does not fit its shape")
    return array.reshape(shape).astype(dtype)


def decode(payload) -> Recorded:
    if not isinstance(payload, dict):
        raise RecordError("malformed record")
    kind = payload.get("kind")
    if kind == "rejected":
        return Recorded("rejected", str(payload.get("type")))
    if kind == "scalar":
        value = payload.get("value")
        if type(value) not in (bool, int, float, str, type(None)):
            raise RecordError("malformed scalar record")
        return Recorded("scalar", float("nan") if value is None and payload.get("type") == "float" else value)
    if kind in ("array", "jax_array"):
        recorded = Recorded(kind, _decode_array(payload))
        if kind == "jax_array":
            recorded.sharding = str(payload.get("sharding"))
            for shard in payload.get("shards") or []:
                inner = shard.get("value", {})
                if inner.get("kind") != "array":
                    raise RecordError("malformed shard record")
                recorded.shards.append(Shard(int(shard.get("device", -1)), shard.get("index"), _decode_array(inner)))
        return recorded
    if kind == "sequence":
        return Recorded("sequence", [decode(item) for item in payload.get("items", [])])
    if kind == "mapping":
        items = payload.get("items", {})
        if not isinstance(items, dict):
            raise RecordError("malformed mapping record")
        return Recorded("mapping", {str(k): decode(v) for k, v in items.items()})
    raise RecordError(f"unknown record kind {kind!r}")


def records_of_cell(cell) -> tuple[dict[str, Recorded], list[str]]:
    """Decoded records of one executed cell, and the keys that were unusable."""
    found: dict[str, Recorded] = {}
    broken: list[str] = []
    seen: set[str] = set()
    for output in cell.get("outputs", []):
        if output.get("output_type") not in ("display_data", "execute_result"):
            continue
        payload = output.get("data", {}).get(MIME_TYPE)
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
        except (RecordError, TypeError, ValueError, OverflowError):
            broken.append(key)
    return found, broken
