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


_LOOPS = ("stablehlo.while", "scf.while", "scf.for")


def collectives_by_loop(fn, *args) -> dict[str, int]:
    """How many collective operations (``stablehlo.all_reduce``, ``all_gather``, ...) ``fn``'s lowered program writes
    inside a loop (a ``lax.scan`` lowers to ``stablehlo.while``: its body runs once per micro-batch) and outside any
    loop (run once per call). Read from the parsed operations of ``jax.jit(fn).lower(*args)``, following calls."""
    import jax

    fn = fn if isinstance(fn, jax.stages.Wrapped) else jax.jit(fn)
    module = fn.lower(*args).compiler_ir("stablehlo")
    functions = {}
    for op in module.body.operations:
        if op.operation.name == "func.func":
            functions[str(op.operation.attributes["sym_name"]).strip('"')] = op.operation
    counts = {"in a loop": 0, "outside loops": 0}

    def walk(operation, in_loop: bool, depth: int) -> None:
        for region in operation.regions:
            for block in region.blocks:
                for inner in block.operations:
                    inner = inner.operation
                    name = inner.name
                    if name.startswith("stablehlo.") and name.split(".", 1)[1] in (
                            "all_reduce", "reduce_scatter", "all_gather", "all_to_all", "collective_permute"):
                        counts["in a loop" if in_loop else "outside loops"] += 1
                    if name == "func.call" and depth < 32:
                        callee = str(inner.attributes["callee"]).lstrip("@")
                        if callee in functions:
                            walk(functions[callee], in_loop, depth + 1)
                    walk(inner, in_loop or name in _LOOPS, depth)

    walk(functions["main"], False, 0)
    return counts
