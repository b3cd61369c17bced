# scenario: each block's gradient divided by the global count N instead of the block's own count
# base: solution
# expect-fail: test-local-gradients
# expect-message: divided by the global count N, not by its own count
# %% cell local-gradients
def local_mean_gradients(x, y, w, sizes):
    bounds = np.cumsum(sizes)[:-1]
    x64 = x.astype(np.float64)
    return np.stack([2 * xb.T @ (xb @ w - yb) / len(y) for xb, yb in zip(np.split(x64, bounds), np.split(y, bounds))])


local_gradients = local_mean_gradients(host_x, host_y, w0, [2, 2, 2, 2])
print(local_gradients)
