# scenario: weighted_gradient handles only (k, d) local means, although the docstring promises (k,) too
# base: solution
# expect-fail: test-unequal-shards
# expect-message: the code handles only (k, d) input
# %% cell unequal-shards
def weighted_gradient(local_gradients, sizes):
    """Global mean from the local means of shards holding `sizes` examples.

    local_gradients: (k, d) or (k,); sizes: k non-negative counts with a positive sum
    returns: (d,), or a float for (k,) input
    """
    sizes = np.asarray(sizes, dtype=np.float64)
    return (sizes[:, None] * np.asarray(local_gradients)).sum(axis=0) / sizes.sum()


uneven = local_mean_gradients(host_x, host_y, w0, [3, 5])
print("count-weighted:", weighted_gradient(uneven, [3, 5]))
