# scenario: equal shards combined by summing the local mean gradients (p times too large)
# base: solution
# expect-fail: test-equal-shards
# expect-message: local means were summed
# expect-status: graded
# %% cell equal-shards
def equal_shard_gradient(local_gradients):
    """Global mean gradient from the local mean gradients of k shards of EQUAL size.

    local_gradients: (k, d)  ->  (d,)
    """
    return np.sum(local_gradients, axis=0)


print(equal_shard_gradient(local_gradients))
