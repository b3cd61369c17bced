# scenario: weighted_gradient divides the weighted sum by the total count with // (floor division)
# base: solution
# expect-fail: test-unequal-shards
# expect-message: integer (floor) division
# %% cell unequal-shards
def weighted_gradient(local_gradients, sizes):
    sizes = np.asarray(sizes)
    return np.tensordot(sizes, local_gradients, axes=1) // sizes.sum()
