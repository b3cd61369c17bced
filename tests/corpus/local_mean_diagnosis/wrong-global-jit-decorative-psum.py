# scenario: wrong-global-jit-not-shard-map (a masked jnp.sum over the global arrays under one jit) plus a decorative shard_map whose psum is multiplied by 0 before it reaches the result
# base: solution
# expect-fail: test-shard-map
# expect-message: should psum over the devices inside jax.shard_map
# expect-status: graded
# test-shard-map) plus a decorative shard_map whose psum is multiplied by 0: the structural check passes
# %% cell two-averages
def two_averages(shards):
    everything = np.hstack(shards)
    return float(np.mean(everything)), float(np.mean(list(map(np.mean, shards))))


print(two_averages([np.array([0.5, 1.5]), np.array([4.0])]))
# %% cell local-gradients
def local_mean_gradients(x, y, w, sizes):
    parts = np.split(np.arange(len(y)), np.cumsum(sizes)[:-1])
    return np.array([host_gradient(x[rows], y[rows], w) for rows in parts])


local_gradients = local_mean_gradients(host_x, host_y, w0, [2, 2, 2, 2])
print(local_gradients)
# %% cell equal-shards
def equal_shard_gradient(local_gradients):
    return np.asarray(local_gradients).mean(0)


print(equal_shard_gradient(local_gradients))
# %% cell unequal-shards
def weighted_gradient(local_gradients, sizes):
    sizes = np.asarray(sizes)
    return np.einsum("k,k...->...", sizes / sizes.sum(), np.asarray(local_gradients, dtype=np.float64))


uneven = local_mean_gradients(host_x, host_y, w0, [3, 5])
print("count-weighted:", weighted_gradient(uneven, [3, 5]))
# %% cell masked-mean
def masked_token_mean(token_losses, mask):
    return float(np.ma.masked_array(token_losses, mask=~mask, dtype=np.float64).mean())


print("global masked mean:", masked_token_mean(token_losses, mask))
# %% cell shard-statistics
def shard_statistics(token_losses, mask, num_shards):
    blocks = np.where(mask, token_losses, 0).reshape(num_shards, -1)
    valid = mask.reshape(num_shards, -1)
    sums = blocks.sum(1)
    counts = valid.sum(1)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = np.nan_to_num(sums / counts)
    return sums, counts, means


sums, counts, means = shard_statistics(token_losses, mask, len(devices))
print(sums, counts, means)
# %% cell combine
def combine_partials(sums, counts):
    return float(np.dot(np.ones(len(sums)), sums) / np.dot(np.ones(len(counts)), counts))


print("from partials:", combine_partials(sums, counts))
# %% cell shard-map
def device_sum_and_count(block_losses, block_mask):
    return jnp.where(block_mask, block_losses, 0).sum(), jnp.count_nonzero(block_mask)


def make_sharded_masked_mean(mesh):
    rows = NamedSharding(mesh, P("data", None))

    def global_masked_mean(token_losses, mask):
        return jnp.sum(jnp.where(mask, token_losses, 0.0)) / jnp.sum(mask)

    # Decoration only: a shard_map whose psum is multiplied by zero before it touches the result.
    decoration = jax.shard_map(lambda block: lax.psum(jnp.sum(block) * 0.0, "data"), mesh=mesh,
                               in_specs=P("data", None), out_specs=P())

    def decorated(token_losses, mask):
        return global_masked_mean(token_losses, mask) + decoration(token_losses)

    return jax.jit(decorated, in_shardings=(rows, rows), out_shardings=NamedSharding(mesh, P()))


sharded_masked_mean = make_sharded_masked_mean(mesh)
print("on the devices:", sharded_masked_mean(device_losses, device_mask))
