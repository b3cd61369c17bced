# scenario: two_averages returns its two results in the wrong order (mean of local means first)
# base: solution
# expect-fail: test-two-averages
# expect-message: this is the mean of local means
# %% cell two-averages
def two_averages(shards):
    global_mean = float(np.concatenate(shards).mean())
    mean_of_local_means = float(np.mean([shard.mean() for shard in shards]))
    return mean_of_local_means, global_mean
