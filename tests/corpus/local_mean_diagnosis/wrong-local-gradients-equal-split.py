# scenario: local gradients from np.array_split into len(sizes) blocks, ignoring the requested sizes
# base: solution
# expect-fail: test-local-gradients
# expect-message: the blocks ignore sizes
# expect-status: graded
# %% cell local-gradients
def local_mean_gradients(x, y, w, sizes):
    """Local mean gradients of consecutive blocks of the batch."""
    k = len(sizes)
    return np.stack([host_gradient(xb, yb, w) for xb, yb in zip(np.array_split(x, k), np.array_split(y, k))])


local_gradients = local_mean_gradients(host_x, host_y, w0, [2, 2, 2, 2])
print(local_gradients)
