"""The hidden tests' inputs of local_mean_diagnosis, declared once.

The hidden test cells import these (``from rubric_cases import ...``: the grader hands this module to the kernel
with the hidden parts, after the learner's last cell), the rubric judges against them, and the program's declared
shapes are read off them. Like the rubric, this file never reaches learners (nbgrader leaves out ``rubric*.py``).
"""
import numpy as np

from coursekit import data
from coursekit.contracts import Contract
from coursekit.meshes import sub_mesh_sizes

#: this learner's draw of the cases drawn over a contract (``coursekit.contracts``): the grader sets it in the kernel
#: after the learner's last cell (``grader.submission.order``) and judges with the same number (``Evidence.draw``);
#: 0 is the instructor's own draw (lint, the compile cache)
LEARNER_DRAW = 0


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




# -- drawn over the docstrings' contracts, per learner --------------------------------------------------------------
#: microbatch_partials(x, y, mask, w): x (S/p, T, d), y and mask (S/p, T), w (d,); any block, even one of padding only
PARTIALS = Contract(name="microbatch_partials", dimensions={
    "seqs": (1, 2, 3), "tokens": (1, 2, 3, 4, 5, 6), "features": (1, 2, 3, 4, 5),
    "empty_block": (False, True), "zero_loss": (False, True),
}, corners=({"features": (1, 3, 4, 5), "empty_block": False, "zero_loss": True},), extra=1)

#: make_accumulated_gradient(mesh)(x, y, mask, w): x (M, S, T, d), y and mask (M, S, T), w (d,) replicated, S split
#: over the mesh's devices; any M, d, S/p and T; micro-batches, devices, or a device in one micro-batch, with no valid
#: token, and valid tokens whose loss is 0; a batch holds one valid token at least. Every draw includes the corners a
#: learner could hard-code: micro-batches and features other than the lesson's 3 and 2, a device without a valid
#: token in the whole step, and a mesh smaller than the notebook's; what a corner leaves free is drawn over the contract.
ACCUMULATION = Contract(name="accumulation", dimensions={
    "mesh": ("all", "one", "half", "all_but_one"),
    "micro_batches": (1, 2, 3, 4, 5), "seqs": (1, 2, 3), "tokens": (1, 2, 3, 4, 5, 6), "features": (1, 2, 3, 4, 5),
    "empty_micro_batch": (False, True), "device_empty_in_micro_batch": (False, True),
    "device_empty_in_step": (False, True), "zero_loss": (False, True),
}, corners=(
    {"mesh": "all", "micro_batches": (4, 5), "features": (1, 3, 4, 5), "device_empty_in_step": True,
     "zero_loss": True, "empty_micro_batch": False},  # (more micro-batches than 3: a loop of 3 never reads them all)
    {"mesh": ("one", "half", "all_but_one"), "device_empty_in_micro_batch": True},
), extra=0)  # every other dimension of each corner drawn: two compilations, where the smaller mesh had one


def mesh_size(mesh: str, devices: int) -> int:
    """A contract's mesh on ``devices``: all of them, one, half of them, all but one (``sub_mesh_sizes``)."""
    return {"all": devices, "one": 1, "half": max(devices // 2, 1), "all_but_one": max(devices - 1, 1)}[mesh]


def _zero_loss(x, y, mask, rng) -> None:
    """One valid token predicted exactly (features 0, target 0: its error is 0 whatever w is), in place."""
    valid = np.argwhere(mask)
    if len(valid):
        at = tuple(valid[int(rng.integers(len(valid)))])
        x[at] = 0.0
        y[at] = 0.0


def drawn_partials_blocks(draw: int) -> list[tuple[str, dict, tuple]]:
    """test-microbatch-partials over its contract: (record prefix, case, (x, y, mask, w)) per drawn case."""
    drawn = []
    for i, case in enumerate(PARTIALS.draw(draw)):
        x, y, mask, w = data.accumulation_batch(seed=case["seed"], num_shards=1, micro_batches=1,
                                                seqs_per_shard=case["seqs"], tokens=case["tokens"],
                                                features=case["features"], empty=(0,) if case["empty_block"] else ())
        x, y, mask = x[0], y[0], mask[0]
        if case["zero_loss"]:
            _zero_loss(x, y, mask, np.random.default_rng(case["seed"] + 1))
        drawn.append((f"hidden.partials.drawn{i}", case, (x, y, mask, w)))
    return drawn


def accumulation_case(case: dict, devices: int) -> tuple[int, tuple]:
    """A drawn case of ACCUMULATION on ``devices``: (mesh size, (x, y, mask, w))."""
    size, m, s = mesh_size(case["mesh"], devices), case["micro_batches"], case["seqs"]
    x, y, mask, w = data.accumulation_batch(seed=case["seed"], num_shards=size, micro_batches=m, seqs_per_shard=s,
                                            tokens=case["tokens"], features=case["features"],
                                            empty=(0,) if case["empty_micro_batch"] and m > 1 else ())
    rng = np.random.default_rng(case["seed"] + 1)
    kept_empty = {(0, k) for k in range(size)} if case["empty_micro_batch"] and m > 1 else set()
    if case["device_empty_in_step"] and size > 1:
        gone = int(rng.integers(size))
        mask[:, gone * s:(gone + 1) * s] = False
        kept_empty |= {(micro, gone) for micro in range(m)}
    if case["device_empty_in_micro_batch"] and size > 1:
        free = [(micro, k) for micro in range(m) for k in range(size) if (micro, k) not in kept_empty]
        if len(free) > 1:  # one block emptied, one left for a valid token
            micro, k = free[int(rng.integers(len(free)))]
            mask[micro, k * s:(k + 1) * s] = False
            kept_empty.add((micro, k))
    if not mask.any():  # a batch holds a valid token: the global count is positive
        free = [(micro, k) for micro in range(m) for k in range(size) if (micro, k) not in kept_empty]
        micro, k = free[int(rng.integers(len(free)))]
        mask[micro, k * s, 0] = True
    if case["zero_loss"]:
        _zero_loss(x, y, mask, rng)
    return size, (x, y, mask, w)


def drawn_accumulation_batches(devices: int, draw: int) -> list[tuple[str, int, tuple]]:
    """test-accumulation over its contract: (record prefix, mesh size, (x, y, mask, w)) per drawn case."""
    return [(f"hidden.drawn{i}", *accumulation_case(case, devices)) for i, case in enumerate(ACCUMULATION.draw(draw))]
