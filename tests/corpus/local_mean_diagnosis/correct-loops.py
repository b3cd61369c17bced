# scenario: correct throughout, written with plain Python loops and a decorator-style shard_map
# base: solution
# expect-fail:
# %% cell two-averages
def two_averages(shards):
    total, count, local_means = 0.0, 0, []
    for shard in shards:
        total += float(sum(shard))
        count += len(shard)
        local_means.append(float(sum(shard)) / len(shard))
    return total / count, sum(local_means) / len(local_means)


print(two_averages([np.array([0.5, 1.5]), np.array([4.0])]))
# %% cell local-gradients
def local_mean_gradients(x, y, w, sizes):
    result, start = [], 0
    for size in sizes:
        rows_x, rows_y = x[start:start + size], y[start:start + size]
        result.append(host_gradient(rows_x, rows_y, w))
        start += size
    return np.array(result, dtype=np.float64)


local_gradients = local_mean_gradients(host_x, host_y, w0, [2, 2, 2, 2])
print(local_gradients)
# %% cell equal-shards
def equal_shard_gradient(local_gradients):
    total = np.zeros(local_gradients.shape[1:])
    for row in local_gradients:
        total = total + row
    return total / len(local_gradients)


print(equal_shard_gradient(local_gradients))
# %% cell unequal-shards
def weighted_gradient(local_gradients, sizes):
    numerator, denominator = 0.0, 0.0
    for local, size in zip(np.asarray(local_gradients, dtype=np.float64), sizes):
        numerator = numerator + size * local
        denominator += size
    return numerator / denominator


uneven = local_mean_gradients(host_x, host_y, w0, [3, 5])
print("count-weighted:", weighted_gradient(uneven, [3, 5]))
# %% cell masked-mean
def masked_token_mean(token_losses, mask):
    total, count = 0.0, 0
    for losses_row, mask_row in zip(token_losses, mask):
        for value, valid in zip(losses_row, mask_row):
            if valid:
                total += float(value)
                count += 1
    return total / count


print("global masked mean:", masked_token_mean(token_losses, mask))
# %% cell shard-statistics
def shard_statistics(token_losses, mask, num_shards):
    per_shard = len(token_losses) // num_shards
    sums, counts, means = np.zeros(num_shards), np.zeros(num_shards, dtype=np.int64), np.zeros(num_shards)
    for k in range(num_shards):
        block = slice(k * per_shard, (k + 1) * per_shard)
        sums[k] = np.sum(token_losses[block][mask[block]], dtype=np.float64)
        counts[k] = np.count_nonzero(mask[block])
        if counts[k]:
            means[k] = sums[k] / counts[k]
    return sums, counts, means


sums, counts, means = shard_statistics(token_losses, mask, len(devices))
print(sums, counts, means)
# %% cell combine
def combine_partials(sums, counts):
    return float(sum(sums)) / float(sum(counts))


print("from partials:", combine_partials(sums, counts))
# %% cell shard-map
from functools import partial


def device_sum_and_count(block_losses, block_mask):
    valid = block_mask.astype(block_losses.dtype)
    return jnp.vdot(block_losses.ravel(), valid.ravel()), valid.sum()


def masked_mean_program(block_losses, block_mask):
    numerator, denominator = device_sum_and_count(block_losses, block_mask)
    return lax.psum(numerator, axis_name="data") / lax.psum(denominator, axis_name="data")


def make_sharded_masked_mean(mesh):
    @jax.jit
    @partial(jax.shard_map, mesh=mesh, in_specs=(P("data", None), P("data", None)), out_specs=P())
    def program(block_losses, block_mask):
        return masked_mean_program(block_losses, block_mask)

    return program


sharded_masked_mean = make_sharded_masked_mean(mesh)
print("on the devices:", sharded_masked_mean(device_losses, device_mask))
