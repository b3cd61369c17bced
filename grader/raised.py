"""An error a cell raised, said in the lesson's terms: which exception, and what JAX's message points at.

Shared vocabulary: the grader's feedback (``grader.submission.pipeline``), Validate's answers in the service
(``grader.service.validation``) and the learner's own Validate (``grader.learner.report``) all say a raised cell
this one way, so a test whose cell raised says so, never "the notebook stopped before this test".

The kernel's error (its name, its message, its traceback) is the learner's text: it only *selects* one of the
course's sentences below, by pattern, and is never shown. An exception's name is shown only when it is Python's
own or JAX's (a learner's class could be named after anything, hidden-test text included).
"""
from __future__ import annotations

import builtins
import re

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
MAX_SCANNED_CHARS = 20_000

#: JAX's own exception names a learner meets in these lessons (shown as they are)
JAX_ERRORS = frozenset({"TracerArrayConversionError", "TracerBoolConversionError", "TracerIntegerConversionError",
                        "ConcretizationTypeError", "UnexpectedTracerError", "XlaRuntimeError", "JaxRuntimeError"})

#: (a pattern of the error's text, what it means in the lesson's terms), the first match wins
MEANINGS: list[tuple[re.Pattern, str]] = [(re.compile(pattern, re.I), said) for pattern, said in [
    (r"scatter dimension size \d+ must match shard count \d+",
     "psum_scatter over `data` needs `tiled=True` here: without it, the scattered dimension must have exactly one "
     "entry per device, while each device should keep its own slice of the summed vector"),
    (r"unbound axis name",
     "a collective (psum, psum_scatter, all_gather) names a mesh axis that is not bound where it runs: call it "
     "inside `jax.shard_map` over the mesh, with the mesh's axis name `data`"),
    (r"out_specs which require replication which can't be statically inferred",
     "out_specs=P() says the result is the same on every device, but each device computed its own value: sum the "
     "devices' values first (`jax.lax.psum` over `data`), or give out_specs that keep one value per device"),
    (r"scan body function carry input and carry output must have equal types",
     "a `lax.scan` inside `jax.shard_map` must return its carry with the type it started with: a carry that becomes "
     "different on each device in the loop (a local gradient sum, a local count) must start that way, "
     "`lax.pcast(start, \"data\", to=\"varying\")`, or be built from a value that already is"),
    (r"out_specs entry which is too long",
     "out_specs names more dimensions than the function returns: a per-device number must be reshaped to shape "
     "(1,) to be stacked along `data`"),
    (r"not evenly divisible by the corresponding mesh axis sizes|does not evenly divide the dimension size",
     "an array is split over the devices along a dimension the number of devices does not divide"),
    (r"in_specs passed to shard_map: .{0,200} does not match the specs of the input",
     "an input's placement does not match shard_map's in_specs: place it with "
     "`jax.device_put(value, NamedSharding(mesh, spec))` using the same spec as in_specs"),
    (r"dot_general requires contracting dimensions to have the same shape",
     "a matrix product's inner dimensions differ: check the shapes of the features, the weights and the labels"),
    (r"numpy\.ndarray conversion method __array__\(\) was called on traced array|TracerArrayConversionError",
     "NumPy was called on a traced value inside `jax.jit` or `jax.shard_map`: use `jax.numpy` (jnp) there; NumPy "
     "runs on the host, outside the compiled program"),
    (r"Attempted boolean conversion of traced array|TracerBoolConversionError",
     "a Python `if` (or `and`/`or`) on a traced value inside `jax.jit`: use `jnp.where`, since the value is not "
     "known while the program is traced"),
    (r"^NotImplementedError",
     "a TODO still raises NotImplementedError: write your code in place of `raise NotImplementedError()`"),
    (r"^NameError",
     "a name it uses is not defined: did the cell that defines it run, without an error, before this one?"),
]]


def error_text(error: dict) -> str:
    """The error's name, message and traceback as plain text (bounded), for matching only."""
    parts = [str(error.get("ename", "")), str(error.get("evalue", ""))]
    traceback = error.get("traceback")
    if isinstance(traceback, list):
        parts += [str(line) for line in traceback[:50]]
    return _ANSI.sub("", "\n".join(parts))[:MAX_SCANNED_CHARS]


def exception_name(error: dict) -> str:
    name = str(error.get("ename", ""))
    return name if isinstance(getattr(builtins, name, None), type) or name in JAX_ERRORS else "an exception"


def meaning(error: dict) -> str | None:
    """What the error means in the lesson's terms, or None when the course has no sentence for it."""
    text = error_text(error)
    lines = text.split("\n", 1)
    for pattern, said in MEANINGS:
        if pattern.pattern.startswith("^"):
            if pattern.search(lines[0]):
                return said
        elif pattern.search(text):
            return said
    return None


def raised(error: dict) -> str:
    """"raised ValueError: <meaning>" (the meaning only when the course has one)."""
    said = meaning(error)
    return f"raised {exception_name(error)}" + (f" ({said})" if said else "")


def cell_name(cell, index: int) -> str:
    from grader import cells

    gid = cells.grade_id(cell) if isinstance(cell.get("metadata"), dict) else None
    return f"`{gid}`" if gid and re.fullmatch(r"[A-Za-z0-9_.-]{1,60}", gid) else f"number {index + 1}"


def first_raised_before(notebook_cells: list, gid: str) -> tuple[str, dict] | None:
    """The first code cell before the test cell ``gid`` (not a test) whose run ended in an error: its name and
    error; None when none did."""
    from grader import cells

    for index, cell in enumerate(notebook_cells):
        if cells.grade_id(cell) == gid:
            return None
        if cell.get("cell_type") != "code" or cells.is_autograded_test(cell):
            continue
        error = next((o for o in cell.get("outputs", []) if isinstance(o, dict) and o.get("output_type") == "error"),
                     None)
        if error is not None:
            return cell_name(cell, index), error
    return None


def not_recorded(own: dict | None, before: tuple[str, dict] | None) -> str | None:
    """Why a test's value was never recorded, when a cell raised: the earlier cell that did (the first), else the
    test's own cell; None when no cell raised (the notebook stopped)."""
    if before is not None:
        return f"not checked: the cell {before[0]} above {raised(before[1])}, so this test could not record it"
    if own is not None:
        return f"not checked: this test's cell {raised(own)} before it could record it"
    return None
