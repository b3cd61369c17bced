# scenario: unequal shards combined by the plain mean of their local means
# base: solution
# expect-fail: test-unequal-shards
# expect-message: plain mean of the local means
# expect-status: graded
# %% cell unequal-shards
def weighted_gradient(local_gradients, sizes):
    """Global mean from the local means of shards holding `sizes` examples.

    local_gradients: (k, d) or (k,); sizes: k non-negative counts with a positive sum
    returns: (d,), or a float for (k,) input
    """
    return np.mean(local_gradients, axis=0)


uneven = local_mean_gradients(host_x, host_y, w0, [3, 5])
print("local means, 3 + 5 rows:", uneven.tolist())
print("plain mean:             ", uneven.mean(axis=0))
print("count-weighted:         ", weighted_gradient(uneven, [3, 5]))
