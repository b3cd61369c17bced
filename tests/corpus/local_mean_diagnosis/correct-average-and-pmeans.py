# scenario: correct, written differently: np.average weights, boolean-index masked mean, array_split statistics, a ratio of pmeans on the devices and one in_specs prefix for both inputs
# base: solution
# expect-fail:
# %% cell two-averages
def two_averages(shards):
    total = sum(float(np.sum(s)) for s in shards)
    count = sum(len(s) for s in shards)
    return total / count, float(np.average([np.average(s) for s in shards]))
# %% cell unequal-shards
def weighted_gradient(local_gradients, sizes):
    return np.average(np.asarray(local_gradients, dtype=np.float64), axis=0, weights=np.asarray(sizes, dtype=np.float64))
# %% cell masked-mean
def masked_token_mean(token_losses, mask):
    return float(token_losses[mask].astype(np.float64).mean())
# %% cell shard-statistics
def shard_statistics(token_losses, mask, num_shards):
    blocks = zip(np.array_split(token_losses, num_shards), np.array_split(mask, num_shards))
    sums, counts = map(np.array, zip(*[(float(l[m].sum()), int(m.sum())) for l, m in blocks]))
    return sums, counts, sums / np.maximum(counts, 1)


sums, counts, means = shard_statistics(token_losses, mask, len(devices))
# %% cell shard-map
def device_sum_and_count(block_losses, block_mask):
    return jnp.vdot(block_losses, block_mask.astype(block_losses.dtype)), jnp.count_nonzero(block_mask)


def masked_mean_program(block_losses, block_mask):
    local_sum, local_count = device_sum_and_count(block_losses, block_mask)
    return lax.pmean(local_sum, "data") / lax.pmean(local_count.astype(jnp.float32), "data")


def make_sharded_masked_mean(mesh):
    return jax.jit(jax.shard_map(masked_mean_program, mesh=mesh, in_specs=P("data", None), out_specs=P()))


sharded_masked_mean = make_sharded_masked_mean(mesh)
