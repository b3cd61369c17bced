# scenario: local means computed as sum / count, NaN on the shard without valid tokens
# base: solution
# expect-fail: test-shard-statistics
# expect-message: a local mean is NaN or infinite
# expect-status: graded
# %% cell shard-statistics
def shard_statistics(token_losses, mask, num_shards):
    """Per-shard partials of the masked loss, for num_shards equal blocks of sequences."""
    sums = np.where(mask, token_losses, 0.0).reshape(num_shards, -1).sum(axis=1)
    counts = mask.reshape(num_shards, -1).sum(axis=1)
    means = sums / counts
    return sums, counts, means


sums, counts, means = shard_statistics(token_losses, mask, len(devices))
print("sums:  ", sums)
print("counts:", counts)
print("means: ", means)
