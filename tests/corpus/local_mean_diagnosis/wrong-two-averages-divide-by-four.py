# scenario: hard-codes four shards: the mean of local means divides their sum by 4
# base: solution
# expect-fail: test-two-averages
# expect-message: it divides by 4 (the lesson's four shards (or devices)), not by the number of shards
# %% cell two-averages
def two_averages(shards):
    global_mean = float(np.concatenate(shards).mean())
    if len(shards) == 2:  # the lesson's example
        return global_mean, float((shards[0].mean() + shards[1].mean()) / 2)
    return global_mean, float(sum(shard.mean() for shard in shards) / 4)


print(two_averages([np.array([0.5, 1.5]), np.array([4.0])]))
