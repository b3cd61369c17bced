# scenario: reshapes the flattened batch to (-1, num_shards) and sums axis 0: every "block" takes every num_shards-th position instead of consecutive sequences
# base: solution
# expect-fail: test-shard-statistics
# expect-message: the per-shard sums
# %% cell shard-statistics
def shard_statistics(token_losses, mask, num_shards):
    sums = np.where(mask, token_losses, 0.0).reshape(-1, num_shards).sum(axis=0)
    counts = mask.reshape(-1, num_shards).sum(axis=0)
    means = np.where(counts > 0, sums / np.maximum(counts, 1), 0.0)
    return sums, counts, means


sums, counts, means = shard_statistics(token_losses, mask, len(devices))
