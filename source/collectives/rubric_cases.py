"""The hidden tests' inputs of collectives, declared once.

The hidden test cells import these (``from rubric_cases import ...``: the grader hands this module to the kernel
with the hidden parts, after the learner's last cell), the rubric judges against them, and the programs' declared
shapes are read off them. Like the rubric, this file never reaches learners (nbgrader leaves out ``rubric*.py``).
"""
import numpy as np

from coursekit import data
from coursekit.meshes import sub_mesh_sizes


def local_counts(devices: int) -> list[int]:
    """test-local-contribution's block counts: the notebook's device count, and fewer."""
    return [devices] + sub_mesh_sizes(devices)


def program_meshes(devices: int) -> list[int]:
    """The sub-mesh size the hidden program tests use: all devices but one (3 of 4), one compilation per test."""
    return sub_mesh_sizes(devices)[-1:]


def local_batch(count: int):
    """test-local-contribution in ``count`` blocks: 3 rows per block, 5 features."""
    return data.random_regression(seed=90301 + count, rows=3 * count, cols=5)


def all_reduce_batch(size: int):
    """test-all-reduce on a mesh of ``size`` devices: 2 rows and 2 features per device."""
    return data.random_regression(seed=90302 + size, rows=2 * size, cols=2 * size)


def reduce_scatter_batch(size: int):
    """test-reduce-scatter on a mesh of ``size`` devices: 3 values per device (the lesson and the program keep 2,
    so a portion size written as 2 shows here)."""
    return data.random_regression(seed=90303 + size, rows=2 * size, cols=3 * size)


def program_batch(devices: int):
    """The example batch of the programs the grader runs (test-all-reduce, -reduce-scatter, -all-gather: its
    weights are the gathered vector); the grader draws its own values of these shapes."""
    return data.random_regression(seed=90307, rows=2 * devices, cols=2 * devices)


def summed_batches(devices: int) -> list[tuple[str, tuple, int]]:
    """(record key, batch, blocks) of the batches whose summed local contributions test-local-contribution records
    for the later tests: the all-reduce's and the reduce-scatter's sub-mesh batches, and the programs' batch."""
    size = program_meshes(devices)[0]
    return [(f"hidden.batch{90302 + size}.sum", all_reduce_batch(size), size),
            (f"hidden.batch{90303 + size}.sum", reduce_scatter_batch(size), size),
            (PROGRAM_SUM, program_batch(devices), devices)]


PROGRAM_SUM = "hidden.batch90307.sum"  # the key of the programs' batch's sum


def summed_key(batch: str, size: int) -> str:
    """The key under which test-local-contribution recorded the sum on the ``batch`` ("all_reduce" or
    "reduce_scatter") of a mesh of ``size`` devices."""
    return f"hidden.batch{(90302 if batch == 'all_reduce' else 90303) + size}.sum"


def gather_vector(size: int) -> np.ndarray:
    """test-all-gather on a mesh of ``size`` devices: 3 values per device."""
    return data.random_regression(seed=90304 + size, rows=3 * size, cols=2)[1]


def lowered_batch(devices: int):
    """test-lowered: the unseen batch its programs are lowered and exported for."""
    return data.random_regression(seed=90305, rows=2 * devices, cols=2 * devices)


MOMENTUM_RATE, MOMENTUM_BETA = 0.05, 0.8  # test-momentum's hidden calls: momentum_step(w, v, g, 0.05, 0.8)


def momentum_state(size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """test-momentum on a mesh of ``size`` devices: (weights, momentum, gradient), 3 values per device each."""
    return tuple(data.random_regression(seed=seed + size, rows=3 * size, cols=2)[1] for seed in (90306, 90316, 90326))


def momentum_program_state(devices: int) -> np.ndarray:
    """The exported momentum step's example state (only its shape and placement count): 2 values per device."""
    return np.zeros(2 * devices, dtype=np.float32)


def reversal_batch():
    """test-make-it-yours: the unseen batch reversal_experiment is called with."""
    return data.random_regression(seed=90309, rows=16, cols=8)
