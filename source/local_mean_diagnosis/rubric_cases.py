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
    """test-masked-mean's call on fresh data (did masked_token_mean leave its arguments as they were?); its values
    are judged on the cases drawn over its contract (``drawn_masked_tokens``)."""
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
    """test-combine's call on fresh data: per-shard sums and counts of ``count`` shards (the values are judged on the
    cases drawn over combine_partials' contract, ``drawn_partials``)."""
    return data.shard_partials(seed=90230 + count, num_shards=count)


def device_partials_tokens(devices: int):
    """test-device-partials: 2 sequences of 7 tokens per shard, the first empty."""
    return data.masked_tokens(seed=90227, num_shards=devices, seqs_per_shard=2, tokens=7, empty=(0,), scatter=True)


def shard_map_tokens(devices: int) -> list[tuple[str, tuple]]:
    """test-shard-map on the notebook's mesh: (record prefix, (losses, mask)); the exported program's example is the
    last one (its shapes are the program's declared inputs). The other cases are drawn (``drawn_shard_map_tokens``)."""
    return [("hidden.device.full", data.masked_tokens(seed=90229, num_shards=devices, seqs_per_shard=2, tokens=8,
                                                      empty=(), scatter=False))]


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


# -- the masked mean, the combination and the sharded masked mean over their contracts ------------------------------
#: masked_token_mean(token_losses, mask): (S, T) float and (S, T) bool, any S and T (S need not be a multiple of the
#: devices); sequences with no valid token; valid tokens whose loss is exactly 0; one valid token at least. The corner:
#: sizes other than the lesson's (2 sequences a device, 6 tokens), a number of sequences no device count divides
#: evenly, an empty sequence and a loss of 0.
MASKED = Contract(name="masked_token_mean", dimensions={
    "seqs": (1, 2, 3, 5, 6, 7, 8, 9), "tokens": (1, 2, 3, 4, 5, 7, 8), "scattered": (False, True),
    "empty_sequence": (False, True), "zero_loss": (False, True),
}, corners=({"seqs": (5, 7, 9), "tokens": (3, 4, 5, 7, 8), "empty_sequence": True, "zero_loss": True},), extra=1)

#: combine_partials(sums, counts): (k,) each, any k; shards with a count of 0 (their sum 0) anywhere, not only first;
#: a non-empty shard whose sum is 0 (every loss 0); counts as integers or as floats. The corners: more shards than the
#: lesson's 4 with empty ones, and a single shard.
COMBINE = Contract(name="combine_partials", dimensions={
    "shards": (1, 2, 3, 4, 5, 6, 7, 8), "empty_shards": (0, 1, 2), "zero_sum": (False, True),
    "counts": ("int", "float"),
}, corners=({"shards": (5, 6, 7, 8), "empty_shards": (1, 2), "zero_sum": True}, {"shards": 1, "zero_sum": False}),
   extra=1)

#: make_sharded_masked_mean(mesh)(token_losses, mask): (S, T) split by sequence over the mesh's devices, any S/p and T;
#: a device without a valid token, valid tokens whose loss is 0; meshes of every size. Three programs, as before the
#: draws (one per shape and mesh): the notebook's mesh with an empty device and a loss of 0, and two smaller meshes.
SHARD_MAP = Contract(name="sharded_masked_mean", dimensions={
    "mesh": ("all", "one", "half", "all_but_one"), "seqs": (1, 2, 3, 4), "tokens": (1, 2, 3, 5, 7, 8),
    "scattered": (False, True), "device_empty": (False, True), "zero_loss": (False, True),
}, corners=({"mesh": "all", "seqs": (1, 3, 4), "tokens": (3, 5, 7, 8), "device_empty": True, "zero_loss": True},
            # (half the mesh is 2 devices of 4: one of them empty, the plain mean of local means is exactly half the
            # mean, as a program that assumes four devices gives: the corner keeps the two apart)
            {"mesh": "half", "seqs": (2, 3, 4), "tokens": (3, 5, 7, 8), "device_empty": False},
            {"mesh": ("one", "all_but_one")}), extra=0)


def _losses_of(losses, mask, zero_loss: bool, rng) -> None:
    """A valid token whose loss is exactly 0 (``zero_loss``), or none, in place."""
    if zero_loss:
        if not ((losses == 0) & mask).any():
            valid = np.argwhere(mask)
            losses[tuple(valid[int(rng.integers(len(valid)))])] = 0.0
    else:
        losses[losses == 0] = 1.0


def masked_case(case: dict, shards: int = 1) -> tuple:
    """(token_losses, mask) of a drawn case of MASKED (``shards`` 1) or SHARD_MAP (split over ``shards`` devices)."""
    empty = (int(np.random.default_rng(case["seed"] + 2).integers(shards)),) \
        if case.get("device_empty") and shards > 1 else ()
    losses, mask = data.masked_tokens(seed=case["seed"], num_shards=shards, seqs_per_shard=case["seqs"],
                                      tokens=case["tokens"], empty=empty, scatter=case["scattered"])
    rng = np.random.default_rng(case["seed"] + 1)
    row = None
    if case.get("empty_sequence") and len(mask) > 1:
        row = int(rng.integers(len(mask)))
        kept = mask[row].copy()
        mask[row] = False
        if not mask.any():  # the batch's one valid token moves to another sequence
            mask[(row + 1) % len(mask), int(np.argmax(kept))] = True
    _losses_of(losses, mask, case["zero_loss"], rng)
    if not (losses[mask] != 0).any():  # a mean of 0 tells no mistake apart: one valid token with a loss that is not 0
        usable = ~mask & (losses != 0) & mask.reshape(shards, -1).any(axis=1).repeat(len(mask) // shards)[:, None]
        if row is not None:
            usable[row] = False  # the empty sequence stays empty
        free = np.argwhere(usable)
        if len(free):
            mask[tuple(free[int(rng.integers(len(free)))])] = True
        else:  # every valid token's loss is 0 and no position is free: all but one of them get a loss of 1.5
            valid = np.argwhere(mask)
            losses[tuple(valid[1:].T)] = 1.5
            if len(valid) == 1:
                losses[tuple(valid[0])] = 1.5
    return losses, mask


def drawn_masked_tokens(draw: int) -> list[tuple[str, tuple]]:
    """test-masked-mean over its contract: (record prefix, (token_losses, mask)) per drawn case."""
    return [(f"hidden.drawn{i}", masked_case(case)) for i, case in enumerate(MASKED.draw(draw))]


def combine_case(case: dict) -> tuple[np.ndarray, np.ndarray]:
    """(sums, counts) of a drawn case of COMBINE: shards emptied at drawn places, one non-empty shard left."""
    rng = np.random.default_rng(case["seed"])
    k = case["shards"]
    counts = rng.integers(1, 9, size=k)
    empty = rng.permutation(k)[:min(case["empty_shards"], k - 1)]
    counts[empty] = 0
    sums = np.round(counts * rng.uniform(0.5, 2.5, size=k), 2)
    if case["zero_sum"]:
        full = np.flatnonzero(counts)
        sums[full[int(rng.integers(len(full)))]] = 0.0  # (every valid loss 0 where it is the only one: a mean of 0)
    return sums, counts.astype(np.float64 if case["counts"] == "float" else np.int64)


def drawn_partials(draw: int) -> list[tuple[str, tuple]]:
    """test-combine over its contract: (record prefix, (sums, counts)) per drawn case."""
    return [(f"hidden.drawn{i}", combine_case(case)) for i, case in enumerate(COMBINE.draw(draw))]


def drawn_shard_map_tokens(devices: int, draw: int) -> list[tuple[str, int, tuple]]:
    """test-shard-map over its contract: (record prefix, mesh size, (token_losses, mask)) per drawn case."""
    drawn = []
    for i, case in enumerate(SHARD_MAP.draw(draw)):
        size = mesh_size(case["mesh"], devices)
        drawn.append((f"hidden.drawn{i}", size, masked_case(case, size)))
    return drawn
