# scenario: correct, written differently: jnp.sum(..., where=mask) on the devices with a float count, nanmean over NaN-masked losses on the host, einsum weights and np.divide guards
# base: solution
# expect-fail:
# %% cell unequal-shards
def weighted_gradient(local_gradients, sizes):
    sizes = np.asarray(sizes, dtype=np.float64)
    return np.einsum("k,k...->...", sizes, np.asarray(local_gradients, dtype=np.float64)) / np.sum(sizes)
# %% cell masked-mean
def masked_token_mean(token_losses, mask):
    return float(np.nanmean(np.where(mask, token_losses.astype(np.float64), np.nan)))
# %% cell shard-statistics
def shard_statistics(token_losses, mask, num_shards):
    per_block = lambda a: a.reshape(num_shards, -1)
    sums = per_block(token_losses * mask).sum(axis=1)
    counts = per_block(mask).sum(axis=1)
    means = np.divide(sums, counts, out=np.zeros_like(sums, dtype=np.float64), where=counts > 0)
    return sums, counts, means


sums, counts, means = shard_statistics(token_losses, mask, len(devices))
# %% cell combine
def combine_partials(sums, counts):
    return float(np.divide(np.sum(sums, dtype=np.float64), np.sum(counts)))
# %% cell shard-map
def device_sum_and_count(block_losses, block_mask):
    return jnp.sum(block_losses, where=block_mask), jnp.sum(block_mask, dtype=jnp.float32)


def masked_mean_program(block_losses, block_mask):
    local_sum, local_count = device_sum_and_count(block_losses, block_mask)
    return lax.psum(local_sum, axis_name="data") / lax.psum(local_count, axis_name="data")


def make_sharded_masked_mean(mesh):
    return jax.jit(jax.shard_map(masked_mean_program, mesh=mesh, in_specs=(P("data", None), P("data", None)),
                                 out_specs=P()))


sharded_masked_mean = make_sharded_masked_mean(mesh)
