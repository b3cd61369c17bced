# scenario: local_mean_gradients cuts blocks of sizes[0] rows each, so it is right only when all blocks have the same size
# base: solution
# expect-fail: test-local-gradients
# expect-message: the local mean gradients of the 3 + 5 split
# %% cell local-gradients
def local_mean_gradients(x, y, w, sizes):
    step = sizes[0]
    return np.stack([host_gradient(x[i:i + step], y[i:i + step], w) for i in range(0, len(y), step)])


local_gradients = local_mean_gradients(host_x, host_y, w0, [2, 2, 2, 2])
