# scenario: shard_statistics cuts blocks of the notebook's seqs_per_device (two sequences, from the token-batch cell) instead of S / num_shards: right whenever every shard happens to hold two sequences
# base: solution
# expect-fail: test-shard-statistics
# expect-message: the per-shard sums of an unseen batch in 3 shard(s)
# %% cell shard-statistics
def shard_statistics(token_losses, mask, num_shards):
    sums, counts, means = np.zeros(num_shards), np.zeros(num_shards, dtype=np.int64), np.zeros(num_shards)
    for k in range(num_shards):
        block = slice(k * seqs_per_device, (k + 1) * seqs_per_device)
        sums[k] = np.sum(np.where(mask[block], token_losses[block], 0.0))
        counts[k] = np.sum(mask[block])
        means[k] = sums[k] / counts[k] if counts[k] > 0 else 0.0
    return sums, counts, means


sums, counts, means = shard_statistics(token_losses, mask, len(devices))
print("sums:  ", sums)
print("counts:", counts)
print("means: ", means)
