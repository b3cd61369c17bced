"""The hidden tests' inputs of collectives, declared once.

The hidden test cells import these (``from rubric_cases import ...``: the grader hands this module to the kernel
with the hidden parts, after the learner's last cell), the rubric judges against them, and the programs' declared
shapes are read off them. Like the rubric, this file never reaches learners (nbgrader leaves out ``rubric*.py``).

What a docstring leaves free is drawn per learner over its contract (``coursekit.contracts``): rows and features,
portions per device, the momentum's coefficients, the payload's sizes and rank counts. The programs the grader runs
itself keep the shapes they were exported with (``program_batch``, ``lowered_batch``, ``momentum_program_state``):
the grader draws their values, and the same shapes on every draw let one compiled program serve every notebook that
exports it; the kernel's own calls on drawn shapes are what a hard-coded shape fails.
"""
import numpy as np

from coursekit import data
from coursekit.contracts import Contract
from coursekit.meshes import sub_mesh_sizes

#: this learner's draw of the cases drawn over a contract (``coursekit.contracts``): the grader sets it in the kernel
#: after the learner's last cell (``grader.submission.order``) and judges with the same number (``Evidence.draw``);
#: 0 is the instructor's own draw (lint, the compile cache)
LEARNER_DRAW = 0


def local_counts(devices: int) -> list[int]:
    """test-local-contribution's block counts: the notebook's device count, and fewer."""
    return [devices] + sub_mesh_sizes(devices)


def program_meshes(devices: int) -> list[int]:
    """The sub-mesh size the hidden program tests use: all devices but one (3 of 4), one compilation per test."""
    return sub_mesh_sizes(devices)[-1:]


#: local_contribution(features, labels, weights, global_count): features (n_local, d), labels (n_local,), weights
#: (d,), any n_local and d; global_count the rows of every block together. Drawn: rows per block and features other
#: than the lesson's 4 and 8 (every block count, from the notebook's devices down to one, is tested on them).
LOCAL = Contract(name="local_contribution", dimensions={"rows": (1, 2, 3, 5), "features": (1, 2, 3, 5, 6, 7)},
                 extra=1)

#: make_collectives(mesh, global_count)'s programs on a mesh of all the devices but one: x (n, d) split by rows, y
#: (n,), w (d,) replicated; any rows per device; all_gradient any d, shard_gradient and gather a d the devices divide,
#: any portion d/p but the lesson's 2 (a portion written as 2 shows).
ALL_REDUCE = Contract(name="all_gradient", dimensions={"rows": (1, 2, 3, 5), "features": (1, 2, 3, 5, 6, 7)}, extra=1)
REDUCE_SCATTER = Contract(name="shard_gradient", dimensions={"rows": (1, 2, 3, 5), "portion": (1, 3, 4)}, extra=1)
GATHER = Contract(name="gather", dimensions={"portion": (1, 3, 4)}, extra=1)

#: momentum_step(weights, velocity, gradient, learning_rate, beta): (d,) each, split P("data"), any portion d/p; any
#: rate and coefficient, none of them the visible call's 0.1 and 0.9 (a step that keeps the lesson's shows).
MOMENTUM = Contract(name="momentum_step", dimensions={
    "portion": (1, 3, 4), "rate": (0.02, 0.05, 0.07, 0.3), "beta": (0.5, 0.7, 0.8, 0.95)}, extra=1)

#: reversal_experiment(features, labels, weights): features (16, d) host arrays, d the one the learner's programs were
#: built for (the lesson's 8): the experiment is judged against the learner's own programs, and a program wrong at
#: another d is charged in its own test, not here again. Drawn: the values' scale, and labels in their drawn order or
#: sorted (a label-only reversal then moves the gradient most).
REVERSAL = Contract(name="reversal_experiment", dimensions={"scale": (0.25, 1.0, 4.0), "sorted": (False, True)},
                    extra=1)

#: ring_payload(gradient_bytes, ranks): any size and rank count. Eight calls: one rank (nothing moves), a rank count
#: that does not divide the size (floor division and rounding show), 16 ranks, and five drawn over the whole contract.
PAYLOAD = Contract(name="ring_payload", dimensions={
    "bytes": (10, 32, 40, 48, 96, 1000, 1001, 4096), "ranks": (1, 2, 3, 5, 6, 7, 16)},
    corners=({"ranks": 1}, {"ranks": (3, 7), "bytes": (10, 40, 1000)}, {"ranks": 16}), extra=5)

#: transfer_budget(gradient_bytes, rank_counts): any size, any list of rank counts (the notebook's device count last);
#: every list holds 3 and 7, which no drawn size is a multiple of (floor division shows).
BUDGET = Contract(name="transfer_budget", dimensions={
    "bytes": (960, 1000, 4100, 1234), "ranks": ((3, 5, 7, 16), (3, 6, 7), (2, 3, 7, 9), (3, 7, 32))}, extra=1)


def _case(contract: Contract, draw: int) -> dict:
    return contract.draw(draw)[0]


def local_batch(count: int, draw: int = 0):
    """test-local-contribution in ``count`` blocks, rows per block and features of this learner's draw."""
    case = _case(LOCAL, draw)
    return data.random_regression(seed=case["seed"] + count, rows=case["rows"] * count, cols=case["features"])


def all_reduce_batch(size: int, draw: int = 0):
    """test-all-reduce on a mesh of ``size`` devices, rows per device and features of this learner's draw."""
    case = _case(ALL_REDUCE, draw)
    return data.random_regression(seed=case["seed"] + size, rows=case["rows"] * size, cols=case["features"])


def reduce_scatter_batch(size: int, draw: int = 0):
    """test-reduce-scatter on a mesh of ``size`` devices: rows per device and values per device of this draw (the
    lesson and the programs keep 2 values per device, so a portion size written as 2 shows here)."""
    case = _case(REDUCE_SCATTER, draw)
    return data.random_regression(seed=case["seed"] + size, rows=case["rows"] * size, cols=case["portion"] * size)


def program_batch(devices: int):
    """The example batch of the programs the grader runs (test-all-reduce, -reduce-scatter, -all-gather: its
    weights are the gathered vector); the grader draws its own values of these shapes."""
    return data.random_regression(seed=90307, rows=2 * devices, cols=2 * devices)


def summed_batches(devices: int, draw: int = 0) -> list[tuple[str, tuple, int]]:
    """(record key, batch, blocks) of the batches whose summed local contributions test-local-contribution records
    for the later tests: the all-reduce's and the reduce-scatter's sub-mesh batches, and the programs' batch."""
    size = program_meshes(devices)[0]
    return [(summed_key("all_reduce", size), all_reduce_batch(size, draw), size),
            (summed_key("reduce_scatter", size), reduce_scatter_batch(size, draw), size),
            (PROGRAM_SUM, program_batch(devices), devices)]


PROGRAM_SUM = "hidden.batch90307.sum"  # the key of the programs' batch's sum


def summed_key(batch: str, size: int) -> str:
    """The key under which test-local-contribution recorded the sum on the ``batch`` ("all_reduce" or
    "reduce_scatter") of a mesh of ``size`` devices."""
    return f"hidden.sum.{batch}.mesh{size}"


def gather_vector(size: int, draw: int = 0) -> np.ndarray:
    """test-all-gather on a mesh of ``size`` devices: the values per device of this learner's draw."""
    case = _case(GATHER, draw)
    return data.random_regression(seed=case["seed"] + size, rows=case["portion"] * size, cols=2)[1]


def lowered_batch(devices: int):
    """test-lowered: the unseen batch its programs are lowered and exported for."""
    return data.random_regression(seed=90305, rows=2 * devices, cols=2 * devices)


def momentum_rates(draw: int = 0) -> tuple[float, float]:
    """test-momentum's hidden calls: momentum_step(w, v, g, rate, beta) with this learner's (rate, beta)."""
    case = _case(MOMENTUM, draw)
    return case["rate"], case["beta"]


def momentum_state(size: int, draw: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """test-momentum on a mesh of ``size`` devices: (weights, momentum, gradient), this draw's portion per device."""
    case = _case(MOMENTUM, draw)
    return tuple(data.random_regression(seed=case["seed"] + size + k, rows=case["portion"] * size, cols=2)[1]
                 for k in (0, 10, 20))


def momentum_program_state(devices: int) -> np.ndarray:
    """The exported momentum step's example state (only its shape and placement count): 2 values per device."""
    return np.zeros(2 * devices, dtype=np.float32)


def reversal_batch(draw: int = 0):
    """test-make-it-yours: the unseen 16 x 8 batch reversal_experiment is called with, over its contract."""
    case = _case(REVERSAL, draw)
    x, y, w = data.random_regression(seed=case["seed"], rows=16, cols=8)
    x, y = x * np.float32(case["scale"]), y * np.float32(case["scale"])
    if case["sorted"]:
        order = np.argsort(y, kind="stable")
        x, y = x[order], y[order]
    return x, y, w


def payload_cases(draw: int = 0) -> list[tuple[int, int]]:
    """(G, p) of test-payload's hidden calls, ``payload.hidden``."""
    return [(case["bytes"], case["ranks"]) for case in PAYLOAD.draw(draw)]


def budget_case(devices: int, draw: int = 0) -> tuple[int, list[int]]:
    """(G, rank counts) of test-budget's hidden call: this draw's size and counts, the notebook's device count last."""
    case = _case(BUDGET, draw)
    return case["bytes"], [*case["ranks"], devices]


def budget_sizes(devices: int, draw: int = 0) -> list[tuple[int, int]]:
    """(G, p) of test-payload's ``payload.budget_sizes``: the budget test's own sizes, the lesson's then the hidden
    ones (ring_payload judged there too, so a helper wrong only at the sizes a budget asks for is charged)."""
    size, ranks = budget_case(devices, draw)
    return [(2**20, p) for p in (2, 4, 8)] + [(size, p) for p in ranks]
