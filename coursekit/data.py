"""Deterministic data sets shared by notebooks and the grader's references.

Pure NumPy, so the grader can rebuild hidden-test inputs in its own process.
"""
from __future__ import annotations

import numpy as np

LESSON_X = np.array(
    [[1, 0], [0, 1], [1, 1], [2, 0], [0, 2], [2, 1], [1, 2], [2, 2]], dtype=np.float32
)
LESSON_TRUE_W = np.array([2.0, -1.0], dtype=np.float32)


def lesson_batch() -> tuple[np.ndarray, np.ndarray]:
    """The 8x2 regression batch of lesson 09.02 and its noiseless labels."""
    return LESSON_X.copy(), LESSON_X @ LESSON_TRUE_W


def random_regression(seed: int, rows: int, cols: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Features, labels and starting weights drawn from ``seed`` (float32)."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(rows, cols)).astype(np.float32)
    y = (x @ rng.normal(size=cols) + 0.1 * rng.normal(size=rows)).astype(np.float32)
    w = rng.normal(size=cols).astype(np.float32)
    return x, y, w


def collectives_batch() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The 16x8 regression of lesson 09.03: features, labels, weights."""
    x = np.arange(16 * 8, dtype=np.float32).reshape(16, 8) / 128 - 0.5
    y = x @ np.linspace(-0.4, 0.3, 8, dtype=np.float32)
    w = np.linspace(0.1, -0.2, 8, dtype=np.float32)
    return x, y, w


# -- local_mean_diagnosis: shards of unequal size, masked token losses ---------


def ragged_shards(seed: int, num_shards: int) -> list[np.ndarray]:
    """Per-example values (float64) in ``num_shards`` shards of 1 to 5 examples, not all the same size.

    Shard ``k`` is centred on ``k``, so its local mean differs from the others'.
    """
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 6, size=num_shards)
    if np.all(sizes == sizes[0]):
        sizes[0] = sizes[0] % 5 + 1
    return [rng.normal(loc=float(k), size=int(n)) for k, n in enumerate(sizes)]


def masked_tokens(
    seed: int,
    num_shards: int,
    *,
    seqs_per_shard: int = 2,
    tokens: int = 6,
    empty=(1,),
    scatter: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """Per-token losses and a validity mask for a batch split by sequence into ``num_shards`` shards.

    Returns ``(losses, mask)``: non-negative float32 losses of shape
    ``(num_shards * seqs_per_shard, tokens)`` and a boolean mask of the same shape,
    True where the token is a target. Shard ``k`` holds sequences
    ``k * seqs_per_shard`` to ``(k + 1) * seqs_per_shard - 1``. The shards listed in
    ``empty`` (indices taken modulo ``num_shards``) hold no valid token; every other
    shard holds at least one. Valid tokens are a prefix of each sequence (padding at
    the end), or drawn token by token with ``scatter=True``; then the first valid
    token of every shard that has one has a loss of exactly 0 (a target predicted
    perfectly is still a target: counting non-zero losses is not counting targets).
    """
    rng = np.random.default_rng(seed)
    rows = num_shards * seqs_per_shard
    losses = np.round(rng.uniform(0.2, 3.0, size=(rows, tokens)), 1).astype(np.float32)
    if scatter:
        mask = rng.random((rows, tokens)) < 0.55
    else:
        lengths = rng.integers(0, tokens + 1, size=rows)
        mask = np.arange(tokens) < lengths[:, None]
    empty_shards = {int(k) % num_shards for k in empty}
    for k in range(num_shards):
        block = slice(k * seqs_per_shard, (k + 1) * seqs_per_shard)
        if k in empty_shards:
            mask[block] = False
        elif not mask[block].any():
            mask[block.start, 0] = True
        if scatter and k not in empty_shards:
            rows_, cols_ = np.nonzero(mask[block])
            losses[block.start + rows_[0], cols_[0]] = 0.0
    return losses, mask


def shard_partials(seed: int, num_shards: int) -> tuple[np.ndarray, np.ndarray]:
    """Per-shard sums (float64) and counts (int64) of valid contributions; shard 0 is empty.

    The total count is larger than ``num_shards``, so dividing by the number of shards
    gives a different number than dividing by the count.
    """
    rng = np.random.default_rng(seed)
    counts = rng.integers(0, 9, size=num_shards)
    counts[0] = 0
    counts[-1] += num_shards + 1
    sums = counts * rng.uniform(0.5, 2.5, size=num_shards)
    return sums, counts


def accumulation_batch(
    seed: int,
    num_shards: int,
    *,
    micro_batches: int = 3,
    seqs_per_shard: int = 2,
    tokens: int = 4,
    features: int = 2,
    empty=(),
    lengths=None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A batch for gradient accumulation: ``micro_batches`` micro-batches, each split by sequence over ``num_shards``.

    Returns ``(x, y, mask, w)``: per-token features ``x`` (M, S, T, d), targets ``y`` (M, S, T) and a validity mask
    (M, S, T) with ``S = num_shards * seqs_per_shard``, all float32 but the boolean mask, and starting weights ``w``
    (d,). Micro-batch ``m``'s sequence ``s`` holds ``lengths[m]`` valid tokens (a prefix, padding after it) when
    ``lengths`` is given (every block then holds the same count, the balanced case); otherwise each sequence draws
    its own length, so micro-batches and shards hold different counts. The micro-batches listed in ``empty``
    (indices modulo M) hold only padding; every other micro-batch holds at least one valid token. Padding positions
    hold ordinary-looking features and targets: only the mask says they are not targets.
    """
    rng = np.random.default_rng(seed)
    rows = num_shards * seqs_per_shard
    x = np.round(rng.normal(size=(micro_batches, rows, tokens, features)), 1).astype(np.float32)
    true_w = np.linspace(1.0, -1.0, features)
    y = np.round(x @ true_w + rng.normal(scale=0.5, size=(micro_batches, rows, tokens)), 1).astype(np.float32)
    if lengths is None:
        drawn = rng.integers(0, tokens + 1, size=(micro_batches, rows))
    else:
        drawn = np.broadcast_to(np.asarray(lengths)[:, None], (micro_batches, rows))
    mask = np.arange(tokens) < drawn[..., None]
    empty_micro = {int(m) % micro_batches for m in empty}
    for m in range(micro_batches):
        if m in empty_micro:
            mask[m] = False
        elif not mask[m].any():
            mask[m, 0, 0] = True
    w = np.round(rng.normal(scale=0.5, size=features), 2).astype(np.float32)
    return x, y, mask, w
