# scenario: weighted_gradient clamps every count to at least 1 "to avoid dividing by zero": a shard without examples gets the weight of one example
# base: solution
# expect-fail: test-unequal-shards
# expect-message: with an empty shard
# %% cell unequal-shards
def weighted_gradient(local_gradients, sizes):
    sizes = np.maximum(np.asarray(sizes, dtype=np.float64), 1.0)
    return np.tensordot(sizes, local_gradients, axes=1) / sizes.sum()
