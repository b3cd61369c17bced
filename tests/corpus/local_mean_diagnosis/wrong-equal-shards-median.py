# scenario: equal_shard_gradient takes the median of the local means over the shards instead of their mean
# base: solution
# expect-fail: test-equal-shards
# expect-message: the global gradient from four equal shards
# %% cell equal-shards
def equal_shard_gradient(local_gradients):
    return np.median(local_gradients, axis=0)
