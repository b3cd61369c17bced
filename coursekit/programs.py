"""Hand a learner's JAX program to the grader, as the program itself.

``exported(fn, *args)`` traces ``fn`` (wrapped in ``jax.jit`` unless it is a
jitted function already) for the shapes, dtypes and shardings of ``args``
with ``jax.export`` and returns the serialized program as base64 text, which
a test cell records. The grader runs that program in its own JAX runtime,
outside the learner's kernel, on inputs the kernel never saw, and reads its
collectives from the program, not from anything the kernel reports. Only the
values in ``args`` are ignored: their shapes and shardings are the program's
signature.
"""
from __future__ import annotations

import base64


NOT_EXPORTED = "not exported"  # then ": " and the class name of JAX's error (the grader words it: launch.EXPORT_ERRORS)


def is_program(fn) -> bool:
    """Whether ``fn`` is a function ``jax.jit`` made, so that ``exported(fn, ...)`` hands the grader ``fn`` itself.

    A hidden test then only exports it: calling it in the kernel on an unseen batch would compile and run the very
    program the grader runs on inputs of its own. Anything else (Python around a jitted program, a plain function)
    is also called in the kernel, since what the Python does to the program's results is evidence too. An exact type
    check: an object that merely has ``lower`` and ``trace`` methods is not a program.
    """
    import jax

    return type(fn) is type(jax.jit(_nothing))


def _nothing():
    return None


def _candidates(fn):
    """``fn`` itself when jitted; else the one jitted function ``fn``'s closure holds (a step that wraps its
    jitted program, to convert the results for example), then ``jax.jit(fn)`` (tracing the learner's Python
    last: it may keep traced values in its own state)."""
    import jax

    if isinstance(fn, jax.stages.Wrapped):
        return [fn]
    held = [cell.cell_contents for cell in getattr(fn, "__closure__", None) or ()
            if isinstance(getattr(cell, "cell_contents", None), jax.stages.Wrapped)]
    return held[:1] + [jax.jit(fn)] if len(held) == 1 else [jax.jit(fn)]


def exported(fn, *args) -> str:
    """Base64 text of ``jax.export.export`` of ``fn``'s program for the shapes and shardings of ``args``.

    The program is ``fn`` itself when it is jitted, else the jitted function
    it wraps when its closure holds exactly one and that one exports for
    ``args`` (what ``fn`` does to the results outside it is judged from the
    values the notebook records), else ``jax.jit(fn)``. A function JAX cannot export (NumPy on traced values,
    a Python callback, not a function at all) gives ``NOT_EXPORTED`` and the
    class name of the error the last try raised instead of an error, so the
    test cell's other records are still made and the feedback can say why.
    """
    import jax

    try:
        specs = [jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=getattr(a, "sharding", None)) for a in args]
        candidates = _candidates(fn)
    except Exception as error:  # noqa: BLE001 - the grader says what an exportable program is
        return f"{NOT_EXPORTED}: {type(error).__name__}"
    failed = None
    for candidate in candidates:
        try:
            return base64.b64encode(jax.export.export(candidate)(*specs).serialize()).decode("ascii")
        except Exception as error:  # noqa: BLE001
            failed = error
    return f"{NOT_EXPORTED}: {type(failed).__name__}"
