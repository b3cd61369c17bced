"""The hidden tests' inputs of local_mean_diagnosis, declared once.

The hidden test cells import these (``from rubric_cases import ...``: the grader hands this module to the kernel
with the hidden parts, after the learner's last cell), the rubric judges against them, and the program's declared
shapes are read off them. Like the rubric, this file never reaches learners (nbgrader leaves out ``rubric*.py``).
"""
import numpy as np

from coursekit import data
from coursekit.meshes import sub_mesh_sizes


def shard_counts(devices: int) -> list[int]:
    """The shard counts most hidden tests use: the notebook's device count and the sub-mesh sizes."""
    return [devices] + sub_mesh_sizes(devices)


def ragged(count: int):
    """test-two-averages: ``count`` shards of uneven sizes."""
    return data.ragged_shards(seed=90221 + count, num_shards=count)


def local_gradient_batch(count: int):
    """test-local-gradients: (x, y, w, sizes), shard k holding k + 1 rows, 3 features."""
    sizes = list(range(1, count + 1))
    return (*data.random_regression(seed=90222 + count, rows=sum(sizes), cols=3), sizes)


def equal_locals(count: int) -> np.ndarray:
    """test-equal-shards: one local gradient (3 values) per shard."""
    return np.random.default_rng(90223 + count).normal(size=(count, 3))


def unequal_locals(count: int) -> np.ndarray:
    """test-unequal-shards: one local gradient (3 values) per shard; shard k holds k + 1 examples."""
    return np.random.default_rng(90224 + count).normal(size=(count, 3))


def masked_tokens(devices: int):
    """test-masked-mean: 3 sequences of 7 tokens per shard, the last sequence empty, the valid tokens scattered."""
    return data.masked_tokens(seed=90225, num_shards=devices, seqs_per_shard=3, tokens=7, empty=(-1,), scatter=True)


def statistics_counts(devices: int) -> list[int]:
    """test-shard-statistics' shard counts: twice the devices, and one fewer."""
    return [2 * devices] + sub_mesh_sizes(devices)[-1:]


def statistics_tokens(count: int, devices: int):
    """test-shard-statistics in ``count`` shards: three sequences per shard on the smaller count (two elsewhere, as
    in the lesson: blocks are S / num_shards), the first (and fourth) sequence empty."""
    return data.masked_tokens(seed=90226 + count, num_shards=count, seqs_per_shard=2 if count > devices else 3,
                              tokens=5, empty=(0, 3) if count > 3 else (0,) if count > 1 else (), scatter=True)


def statistics_fresh_tokens(devices: int):
    """test-shard-statistics' call on fresh data (did shard_statistics leave its arguments as they were?)."""
    return data.masked_tokens(seed=90226, num_shards=devices, seqs_per_shard=3, tokens=5, empty=(0,), scatter=True)


def partials(count: int):
    """test-combine: per-shard sums and counts of ``count`` shards."""
    return data.shard_partials(seed=90230 + count, num_shards=count)


def device_partials_tokens(devices: int):
    """test-device-partials: 2 sequences of 7 tokens per shard, the first empty."""
    return data.masked_tokens(seed=90227, num_shards=devices, seqs_per_shard=2, tokens=7, empty=(0,), scatter=True)


def shard_map_tokens(devices: int) -> list[tuple[str, tuple]]:
    """test-shard-map on the notebook's mesh: (record prefix, (losses, mask)); the exported program's example is the
    last one (its shapes are the program's declared inputs)."""
    return [("hidden.device", data.masked_tokens(seed=90228, num_shards=devices, seqs_per_shard=3, tokens=5,
                                                 empty=(-1,), scatter=True)),
            ("hidden.device.full", data.masked_tokens(seed=90229, num_shards=devices, seqs_per_shard=2, tokens=8,
                                                      empty=(), scatter=False))]


def sub_mesh_sizes_of_shard_map(devices: int) -> list[int]:
    """test-shard-map's two meshes of fewer devices (one compilation each)."""
    return sub_mesh_sizes(devices)[-2:]


def mesh_tokens(size: int):
    """test-shard-map on a mesh of ``size`` devices: 3 sequences of 5 tokens per shard."""
    return data.masked_tokens(seed=90240 + size, num_shards=size, seqs_per_shard=3, tokens=5,
                              empty=(0,) if size > 2 else (), scatter=True)


# -- gradient accumulation ----------------------------------------------------------------------------------------
def partials_blocks() -> list[tuple[str, tuple]]:
    """test-microbatch-partials: one device's block of one micro-batch, 3 features (the lesson has 2), as
    (record prefix, (x, y, mask, w)): a block with scattered padding, and one that holds only padding."""
    x, y, mask, w = data.accumulation_batch(seed=90250, num_shards=1, micro_batches=2, seqs_per_shard=2, tokens=5,
                                            features=3, empty=(1,))
    mask[0] = np.random.default_rng(90251).random(mask[0].shape) < 0.6
    mask[0, 0, 0] = True
    return [("hidden.partials", (x[0], y[0], mask[0], w)), ("hidden.partials.empty", (x[1], y[1], mask[1], w))]


def accumulation_batches(devices: int) -> list[tuple[str, tuple]]:
    """test-accumulation on a mesh of ``devices``: (record prefix, (x, y, mask, w)) with the lesson batch's shapes
    (one compilation): uneven counts with micro-batch 0 empty, then uneven counts with none empty. The exported
    program's example is the last one (its shapes are the program's declared inputs)."""
    return [("hidden.accumulation.empty", data.accumulation_batch(seed=90252, num_shards=devices, empty=(0,))),
            ("hidden.accumulation", data.accumulation_batch(seed=90253, num_shards=devices))]


def accumulation_mesh_size(devices: int) -> int:
    """test-accumulation's smaller mesh: all devices but one (one device of two)."""
    return sub_mesh_sizes(devices)[-1]
