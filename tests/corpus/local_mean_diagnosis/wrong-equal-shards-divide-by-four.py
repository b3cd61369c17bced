# scenario: hard-codes four shards: the local means are summed and divided by 4
# base: solution
# expect-fail: test-equal-shards
# expect-message: by 4 (the lesson's four shards (or devices)), not by the number of shards
# %% cell equal-shards
def equal_shard_gradient(local_gradients):
    return np.sum(local_gradients, axis=0) / 4


print(equal_shard_gradient(local_gradients))
