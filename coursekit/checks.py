"""What a learner's function did while a hidden test called it, as numbers a test cell records.

The grader judges programs from what ``jax.export`` captured (``coursekit.programs``), but some mistakes leave
no trace in the exported program, because tracing hides them: under ``jax.jit`` ``jax.device_get`` hands back
the tracers it was given, so a step that copies its state to the host, updates it in NumPy and places it back
exports as a device-side update. And a function may change the caller's NumPy arrays. These helpers watch one
call and return typed answers: the members of the ``IntEnum`` classes below (``RESULTS``), which ``record`` writes as
plain numbers (a test cell records plain values only) and the judge reads back as members (``Evidence.outcome``).
Nothing here decides a grade.
"""
from __future__ import annotations

import re
from enum import IntEnum

import numpy as np


class HostCopy(IntEnum):
    """``host_round_trip``'s answers."""

    NONE = 0
    STATE_TO_HOST = 1
    HOST_TO_STATE = 2


class Trace(IntEnum):
    """``trace_problem``'s answers."""

    TRACEABLE = 0
    CONCRETE_ATTRIBUTE = 1
    NUMPY_ON_TRACER = 2
    PYTHON_CONTROL_FLOW = 3
    OTHER_PROBLEM = 4


class Dispatch(IntEnum):
    """``one_program``'s answers."""

    ONE_PROGRAM = 0
    OP_BY_OP = 1
    NOT_TRACED = 2


class Kept(IntEnum):
    """``call_keeping_inputs``' answer for each argument."""

    CHANGED = 0
    KEPT = 1


#: every typed answer of this module (``coursekit.record`` records a member as its number)
RESULTS = (HostCopy, Trace, Dispatch, Kept)

_DISALLOWED = re.compile(r"Disallowed (host-to-device|device-to-host) transfer: .*?aval=ShapedArray\((\w+)\[([^\]]*)\]")


def host_round_trip(fn, *arrays, **kwargs) -> HostCopy:
    """Whether ``fn(*arrays, **kwargs)`` moved the placed ``arrays`` through the host.

    ``HostCopy.STATE_TO_HOST`` when the whole of one of ``arrays`` was copied to host memory (``jax.device_get``,
    ``np.asarray``, ``.tolist()``, printing it: JAX keeps that copy on the array, and on accelerators the
    device-to-host transfer guard stops it), ``HostCopy.HOST_TO_STATE`` when a host array with at least one axis was
    placed on the devices (``jax.device_put`` or ``jnp.asarray`` of a NumPy result: JAX's host-to-device
    transfer guard stops it), else ``HostCopy.NONE``. Python numbers sent to the devices (a learning rate
    passed to a jitted function, ``beta * v``) are not state and do not count. On the CPU backend JAX reads
    device memory without a transfer, so the device-to-host guard never fires there: the copy JAX keeps
    is what shows it.

    The call runs under both guards at "disallow_explicit"; whatever else ``fn`` raises is left to the tests
    that judge its values (the answer is then ``HostCopy.NONE`` unless a copy was already seen).
    """
    import jax

    placed = [a for a in arrays if isinstance(a, jax.Array)]
    reads: list[str] = []
    try:
        with jax.transfer_guard_host_to_device("disallow_explicit"), \
                jax.transfer_guard_device_to_host("disallow_explicit"), _host_reads(placed, reads):
            fn(*arrays, **kwargs)
    except Exception as error:  # noqa: BLE001 - only the guards' own errors are read
        found = _DISALLOWED.search(str(error)) if isinstance(error, jax.errors.JaxRuntimeError) else None
        if found and found.group(1) == "device-to-host":
            return HostCopy.STATE_TO_HOST
        if found and found.group(3).strip():
            return HostCopy.HOST_TO_STATE
    if "from_dlpack" in reads:  # host memory taken as device state without a transfer any guard sees
        return HostCopy.HOST_TO_STATE
    if reads or any(getattr(a, "_npy_value", None) is not None for a in placed):
        return HostCopy.STATE_TO_HOST
    return HostCopy.NONE


#: how host code reads a JAX array's values (np.asarray, jax.device_get, printing, .tolist(), np.from_dlpack)
_HOST_READS = ("__array__", "__dlpack__", "tolist", "_value")


class _host_reads:
    """While active, every host read of one of ``arrays`` or of one of their per-device buffers (``shard.data``)
    through JAX's Python methods is appended to ``reads``, and so is ``"from_dlpack"`` for every DLPack import
    (``jax.dlpack.from_dlpack``: host memory becomes a device array on the CPU without a transfer any guard sees).
    On the CPU backend reading a shard is zero-copy and caches nothing on the array, and no transfer guard sees
    it, so the reads themselves are watched."""

    def __init__(self, arrays, reads: list):
        self.watched = {id(a) for a in arrays} | {id(b) for a in arrays for b in getattr(a, "_arrays", None) or ()}
        self.reads, self.saved = reads, {}

    def __enter__(self):
        from jax._src.array import ArrayImpl

        from jax._src import dlpack

        self.cls, self.native = ArrayImpl, dlpack._jax
        importer = getattr(self.native, "dlpack_managed_tensor_to_buffer", None)
        if importer is not None:
            reads = self.reads

            def imported(*args, **kwargs):
                reads.append("from_dlpack")
                return importer(*args, **kwargs)

            self.saved_importer = importer
            self.native.dlpack_managed_tensor_to_buffer = imported
        for name in _HOST_READS:
            original = vars(ArrayImpl).get(name)
            if original is None:
                continue
            self.saved[name] = original
            setattr(ArrayImpl, name, self._watching(name, original))
        return self

    def _watching(self, name, original):
        watched, reads = self.watched, self.reads
        if isinstance(original, property):
            def read(array):
                if id(array) in watched:
                    reads.append(name)
                return original.fget(array)
            return property(read)

        def call(array, *args, **kwargs):
            if id(array) in watched:
                reads.append(name)
            return original(array, *args, **kwargs)
        return call

    def __exit__(self, *exc):
        for name, original in self.saved.items():
            setattr(self.cls, name, original)
        if getattr(self, "saved_importer", None) is not None:
            self.native.dlpack_managed_tensor_to_buffer = self.saved_importer
        return False


#: ``trace_problem``'s answers


def trace_problem(fn, *args) -> Trace:
    """Why ``jax.jit(fn)`` cannot trace for the shapes, dtypes and shardings of ``args`` (``Trace.TRACEABLE`` if it can).

    ``Trace.CONCRETE_ATTRIBUTE``: the function read an attribute only a placed array has (``weights.sharding``,
    ``.addressable_shards``, ``.devices()``) from a traced value; ``Trace.NUMPY_ON_TRACER``: NumPy on a traced value;
    ``Trace.PYTHON_CONTROL_FLOW``: ``if``, ``float()`` or ``int()`` of a traced value; ``Trace.OTHER_PROBLEM``: anything
    else.
    """
    import jax

    try:
        specs = [jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=getattr(a, "sharding", None)) for a in args]
        jax.jit(fn).trace(*specs)
    except jax.errors.TracerArrayConversionError:
        return Trace.NUMPY_ON_TRACER
    except (jax.errors.ConcretizationTypeError, jax.errors.TracerBoolConversionError,
            jax.errors.TracerIntegerConversionError):
        return Trace.PYTHON_CONTROL_FLOW
    except AttributeError as error:
        text = str(error)
        return Trace.CONCRETE_ATTRIBUTE if "traced array" in text or "Tracer" in text else Trace.OTHER_PROBLEM
    except Exception:  # noqa: BLE001
        return Trace.OTHER_PROBLEM
    return Trace.TRACEABLE


#: ``one_program``'s answers


def _holds_jitted(fn) -> bool:
    """``fn`` is a function ``jax.jit`` made, or the Python around one: a ``functools.partial`` of one, or a
    function whose closure holds one or that names a global that is one (an exact type check, as
    ``coursekit.programs.is_program``)."""
    import functools

    from coursekit.programs import is_program

    inner = fn.func if isinstance(fn, functools.partial) else fn
    if is_program(inner):
        return True
    held = []
    for cell in getattr(inner, "__closure__", None) or ():
        try:
            held.append(cell.cell_contents)
        except ValueError:  # a closure variable not assigned yet
            continue
    names = getattr(getattr(inner, "__code__", None), "co_names", ())
    scope = getattr(inner, "__globals__", None)
    if isinstance(scope, dict):
        held += [scope.get(name) for name in names if isinstance(name, str)]
    return any(is_program(value) for value in held)


def one_program(fn, *args) -> Dispatch:
    """Whether a call of ``fn`` on ``args`` runs as one compiled program.

    ``Dispatch.ONE_PROGRAM``: ``fn`` is jitted or holds a jitted function (``_holds_jitted``), or its trace for the shapes,
    dtypes and shardings of ``args`` is a single call of a jitted function (a ``jax.jit`` made inside the call).
    ``Dispatch.OP_BY_OP``: its trace is JAX operations at the top level: without ``jax.jit`` JAX dispatches them one at a
    time, each compiled on its own, and no ``in_shardings``/``out_shardings`` pin where the results live.
    ``Dispatch.NOT_TRACED``: the trace failed (``trace_problem`` and the tests of values say why). Only traced, never run.
    """
    import jax

    if _holds_jitted(fn):
        return Dispatch.ONE_PROGRAM
    try:
        specs = [jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=getattr(a, "sharding", None)) for a in args]
        equations = jax.make_jaxpr(fn)(*specs).jaxpr.eqns
    except Exception:  # noqa: BLE001 - why it does not trace is judged elsewhere
        return Dispatch.NOT_TRACED
    if len(equations) == 1 and equations[0].primitive.name in ("jit", "pjit"):
        return Dispatch.ONE_PROGRAM
    return Dispatch.OP_BY_OP


def _snapshot(value):
    """A copy of the caller's mutable data: a NumPy array, or a list of them (``None`` for anything else)."""
    if isinstance(value, np.ndarray):
        return value.copy()
    if isinstance(value, list):
        return [_snapshot(item) if isinstance(item, (np.ndarray, list)) else ("item", item) for item in value]
    return None


def unchanged(before, after) -> Kept:
    """``Kept.KEPT`` when ``after`` (an argument after the call) still equals ``before`` (its ``_snapshot`` from before
    the call), NaN included, else ``Kept.CHANGED``; arguments that are neither NumPy arrays nor lists count as kept."""
    if before is None:
        return Kept.KEPT
    if isinstance(before, np.ndarray):
        return Kept(isinstance(after, np.ndarray) and before.shape == after.shape and before.dtype == after.dtype
                    and bool(np.array_equal(before, after, equal_nan=before.dtype.kind in "fc")))
    if not isinstance(after, list) or len(after) != len(before):
        return Kept.CHANGED
    for was, now in zip(before, after):
        if isinstance(was, tuple):  # a plain item: the same object must still be there
            if now is not was[1]:
                return Kept.CHANGED
        elif unchanged(was, now) is Kept.CHANGED:
            return Kept.CHANGED
    return Kept.KEPT


def call_keeping_inputs(fn, *args):
    """``(result, kept)``: ``fn(*args)`` and, for each argument, ``Kept.KEPT`` (1) if the call left it as it was, else
    ``Kept.CHANGED`` (0) (``unchanged``; NumPy arrays and lists of them are compared), as one integer array a test
    records, so the judge can tell whether a function wrote into the caller's data."""
    copies = [_snapshot(a) for a in args]
    result = fn(*args)
    return result, np.asarray([unchanged(c, a) for c, a in zip(copies, args)], dtype=np.int64)
