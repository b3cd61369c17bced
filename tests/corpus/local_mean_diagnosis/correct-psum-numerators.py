# scenario: correct throughout, written as sums of numerators and counts with one final division
# base: solution
# expect-fail:
# expect-status: graded
# %% cell two-averages
def two_averages(shards):
    numerator = sum(float(np.sum(s)) for s in shards)
    count = sum(len(s) for s in shards)
    return numerator / count, sum(float(np.sum(s)) / len(s) for s in shards) / len(shards)


print(two_averages([np.array([0.5, 1.5]), np.array([4.0])]))
# %% cell local-gradients
def local_mean_gradients(x, y, w, sizes):
    edges = np.concatenate([[0], np.cumsum(sizes)])
    x = x.astype(np.float64)
    residual = x @ w - y
    return np.stack([
        2 * np.einsum("nd,n->d", x[a:b], residual[a:b]) / (b - a) for a, b in zip(edges[:-1], edges[1:])
    ])


local_gradients = local_mean_gradients(host_x, host_y, w0, [2, 2, 2, 2])
print(local_gradients)
# %% cell equal-shards
def equal_shard_gradient(local_gradients):
    return local_gradients.sum(axis=0) / len(local_gradients)


print(equal_shard_gradient(local_gradients))
# %% cell unequal-shards
def weighted_gradient(local_gradients, sizes):
    sizes = np.asarray(sizes, dtype=np.float64)
    numerators = sizes.reshape((-1,) + (1,) * (np.ndim(local_gradients) - 1)) * local_gradients
    return numerators.sum(axis=0) / sizes.sum()


uneven = local_mean_gradients(host_x, host_y, w0, [3, 5])
print("count-weighted:", weighted_gradient(uneven, [3, 5]))
# %% cell masked-mean
def masked_token_mean(token_losses, mask):
    return float(token_losses[mask].sum() / mask.sum())


print("global masked mean:", masked_token_mean(token_losses, mask))
# %% cell shard-statistics
def shard_statistics(token_losses, mask, num_shards):
    losses = (token_losses * mask).reshape(num_shards, -1)
    counts = mask.reshape(num_shards, -1).sum(axis=1)
    sums = losses.sum(axis=1)
    means = np.zeros(num_shards)
    nonempty = counts > 0
    means[nonempty] = sums[nonempty] / counts[nonempty]
    return sums, counts, means


sums, counts, means = shard_statistics(token_losses, mask, len(devices))
print(sums, counts, means)
# %% cell combine
def combine_partials(sums, counts):
    total_sum, total_count = 0.0, 0
    for s, c in zip(sums, counts):
        total_sum += s
        total_count += c
    return float(total_sum / total_count)


print("from partials:", combine_partials(sums, counts))
# %% cell shard-map
def device_sum_and_count(block_losses, block_mask):
    return (block_losses * block_mask).sum(), block_mask.sum(dtype=jnp.int32)


def masked_mean_program(block_losses, block_mask):
    numerator, denominator = lax.psum(device_sum_and_count(block_losses, block_mask), "data")
    return numerator / denominator


def make_sharded_masked_mean(mesh):
    program = jax.shard_map(
        masked_mean_program,
        mesh=mesh,
        in_specs=(P("data"), P("data")),
        out_specs=P(),
    )
    return jax.jit(program)


sharded_masked_mean = make_sharded_masked_mean(mesh)
print("on the devices:", sharded_masked_mean(device_losses, device_mask))
