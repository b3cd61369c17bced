"""Learners' JAX programs as evidence: exported in the kernel, run and inspected outside it.

Values a kernel records can be made by any code the kernel runs; a program
cannot be faked that way. Where the lesson is the program (the sharded
training step, the shard_map programs), a hidden test records the program
itself (``coursekit.programs.exported``: ``jax.export`` with its shardings),
the rubric declares what it must look like (``Program``: the record key, the
mesh size, its inputs' shapes and partition specs), and the grader

* draws fresh inputs the kernel never saw (``launch``),
* runs the program in a sandbox of its own, never in the kernel or the
  grader's process (``runner``), refusing host callbacks and custom calls,
* hands the rubric a ``ProgramRun``: the inputs, every output with its
  sharding and shards, the collectives its parsed StableHLO writes and those
  of the program compiled for those inputs (``structure``), which the rubric
  judges against NumPy references.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np


@dataclass(frozen=True)
class Input:
    """One argument: its shape, how it is split over the mesh axis "data", and its dtype."""

    shape: tuple[int, ...]
    spec: tuple = ()  # PartitionSpec entries, e.g. ("data", None); () is replicated
    dtype: str = "float32"


@dataclass(frozen=True)
class Expect:
    """What a program must look like, beside its values: judged by ``Evidence.program_expected`` in this order,
    each failure with the standard words of ``grader.programs.expectations`` (or the lesson's, in ``says``).

    inputs are placed as the ``Input`` specs say (always); ``outputs``: per output, replicated on every device
    (True) or split (False); ``region``: the one collective ("all_reduce", "reduce_scatter", "all_gather") of a
    single shard_map region that computes everything (manual over the inputs' mesh axis, nothing else crosses
    devices); ``compiled_gather``: False where the compiled, partitioned program must not all-gather (the batch
    stays split); ``no_data_moved``: True where no collective may carry a whole input instead of results;
    ``reduce_once``: True where the devices communicate once, after the loop over micro-batches (no collective in
    a loop, and no more bytes carried than the results and a count: ``structure.carries_more``); ``collectives``:
    with ``reduce_once``, the most collective operations the program may write, every kind together (a psum of the
    gradient sum and one of the count: 2), whatever each carries; judged on its own too (``collectives``: a program
    that may communicate not at all, as an elementwise update on split state, has 0); ``compiled_collectives``: the
    most collectives of any kind the compiled, partitioned program may perform (those the compiler adds included:
    0 where the state stays where it is).
    """

    outputs: tuple[bool, ...] | None = None
    region: str | None = None
    compiled_gather: bool = True
    no_data_moved: bool = False
    reduce_once: bool = False
    collectives: int | None = None
    compiled_collectives: int | None = None
    #: (check, words) pairs replacing a check's standard words ("{what}" stands for the program's name); the checks
    #: are named in ``grader.programs.expectations.STANDARD``
    says: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Program:
    """A program a test cell records under ``key``, exported for a mesh of ``mesh`` devices, with what it must look
    like (``expect``; None: the judge checks it by hand)."""

    key: str
    mesh: int
    inputs: tuple[Input, ...]
    run: bool = True  # False: only read (shardings, collectives), not compiled or run
    expect: Expect | None = None


@dataclass
class Output:
    value: np.ndarray
    sharding: str  # the PartitionSpec of the result, as text
    replicated: bool
    shard_shapes: list[tuple[int, ...]]
    shards_consistent: bool  # every shard holds its slice of the value


@dataclass
class ProgramRun:
    """What the program did on the grader's inputs, or why it was not run (``error``)."""

    key: str
    error: str | None = None
    inputs: list[np.ndarray] = field(default_factory=list)
    outputs: list[Output] = field(default_factory=list)
    in_shardings: list[str | None] = field(default_factory=list)
    expected_in_shardings: list[str] = field(default_factory=list)
    out_shardings: list[str | None] = field(default_factory=list)
    collectives: dict[str, int] = field(default_factory=dict)  # the collective operations the program writes
    compiled_collectives: dict[str, int] = field(default_factory=dict)  # those of its compiled (partitioned) HLO
    manual: bool = False  # a shard_map region, manual over the mesh axes its inputs are split on
    manual_only: bool = False  # one such region computes everything (outside it only calls, reshapes and conversions,
    # no resharding), and the compiled program has no collective the region does not write
    moves_data: bool = False  # its collectives carry a whole input, not results (``structure.moves_data``)
    looped: bool = False  # a loop repeats a collective (``structure.Structure.looped``)
    #: its collectives carry more bytes than its results (``structure.carries_more``), or it writes more collectives
    #: than its ``Expect.collectives`` allows (``structure.too_many``): either way it reduces more than once
    carries_more: bool = False


# -- as plain data (a Dask worker runs the programs and sends the runs back) -----
def program_to_json(program: Program) -> dict:
    return {"key": program.key, "mesh": program.mesh, "run": program.run,
            "inputs": [{"shape": list(i.shape), "spec": list(i.spec), "dtype": i.dtype} for i in program.inputs]}


def program_from_json(data: dict) -> Program:
    return Program(str(data["key"]), int(data["mesh"]),
                   tuple(Input(tuple(int(n) for n in i["shape"]), tuple(i["spec"]), str(i["dtype"]))
                         for i in data["inputs"]), bool(data.get("run", True)))


def run_to_json(run: ProgramRun) -> dict:
    def array(value: np.ndarray) -> dict:
        return {"shape": list(value.shape), "dtype": value.dtype.name,
                "data": [None if not np.isfinite(v) else v for v in value.astype(np.float64).ravel().tolist()]}

    data = asdict(run)
    data["inputs"] = [array(value) for value in run.inputs]
    data["outputs"] = [{"value": array(o.value), "sharding": o.sharding, "replicated": o.replicated,
                        "shard_shapes": [list(s) for s in o.shard_shapes], "shards_consistent": o.shards_consistent}
                       for o in run.outputs]
    return data
