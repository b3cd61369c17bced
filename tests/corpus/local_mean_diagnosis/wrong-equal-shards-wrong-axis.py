# scenario: averages each local gradient over its components (axis 1) instead of over the shards
# base: solution
# expect-fail: test-equal-shards
# expect-message: it averages over the wrong axis
# %% cell equal-shards
def equal_shard_gradient(local_gradients):
    return np.mean(local_gradients, axis=1)


print(equal_shard_gradient(local_gradients))
