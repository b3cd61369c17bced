# scenario: correct throughout, written with count-weighted local means (guarded against empty shards)
# base: solution
# expect-fail:
# expect-status: graded
# %% cell two-averages
def two_averages(shards):
    counts = np.array([len(s) for s in shards], dtype=np.float64)
    local_means = np.array([np.mean(s) for s in shards])
    return float(np.average(local_means, weights=counts)), float(local_means.sum() / len(local_means))


print(two_averages([np.array([0.5, 1.5]), np.array([4.0])]))
# %% cell local-gradients
def local_mean_gradients(x, y, w, sizes):
    out = []
    start = 0
    for n in sizes:
        xb = x[start:start + n].astype(np.float64)
        yb = y[start:start + n].astype(np.float64)
        out.append(2.0 / n * xb.T @ (xb @ w - yb))
        start += n
    return np.array(out)


local_gradients = local_mean_gradients(host_x, host_y, w0, [2, 2, 2, 2])
print(local_gradients)
# %% cell equal-shards
def equal_shard_gradient(local_gradients):
    k = local_gradients.shape[0]
    return np.average(local_gradients, axis=0, weights=np.ones(k))


print(equal_shard_gradient(local_gradients))
# %% cell unequal-shards
def weighted_gradient(local_gradients, sizes):
    return np.average(np.asarray(local_gradients, dtype=np.float64), axis=0, weights=np.asarray(sizes, dtype=np.float64))


uneven = local_mean_gradients(host_x, host_y, w0, [3, 5])
print("count-weighted:", weighted_gradient(uneven, [3, 5]))
# %% cell masked-mean
def masked_token_mean(token_losses, mask):
    lengths = mask.sum(axis=1)
    keep = lengths > 0
    sequence_means = (token_losses * mask).sum(axis=1)[keep] / lengths[keep]
    return float(np.average(sequence_means, weights=lengths[keep]))


print("global masked mean:", masked_token_mean(token_losses, mask))
# %% cell shard-statistics
def shard_statistics(token_losses, mask, num_shards):
    sums, counts, means = [], [], []
    for losses_block, mask_block in zip(np.split(token_losses, num_shards), np.split(mask, num_shards)):
        total = float(losses_block[mask_block].sum())
        n = int(mask_block.sum())
        sums.append(total)
        counts.append(n)
        means.append(total / n if n else 0.0)
    return np.array(sums), np.array(counts), np.array(means)


sums, counts, means = shard_statistics(token_losses, mask, len(devices))
print(sums, counts, means)
# %% cell combine
def combine_partials(sums, counts):
    counts = np.asarray(counts, dtype=np.float64)
    means = np.divide(sums, counts, out=np.zeros_like(counts), where=counts > 0)
    return float(np.sum(counts * means) / counts.sum())


print("from partials:", combine_partials(sums, counts))
# %% cell shard-map
def device_sum_and_count(block_losses, block_mask):
    valid = block_mask.astype(jnp.float32)
    return jnp.sum(block_losses * valid), jnp.sum(valid)


def masked_mean_program(block_losses, block_mask):
    local_sum, local_count = device_sum_and_count(block_losses, block_mask)
    local_mean = jnp.where(local_count > 0, local_sum / jnp.where(local_count > 0, local_count, 1.0), 0.0)
    return lax.psum(local_count * local_mean, "data") / lax.psum(local_count, "data")


def make_sharded_masked_mean(mesh):
    spec = P("data", None)
    return jax.jit(jax.shard_map(masked_mean_program, mesh=mesh, in_specs=(spec, spec), out_specs=P()))


sharded_masked_mean = make_sharded_masked_mean(mesh)
print("on the devices:", sharded_masked_mean(device_losses, device_mask))
