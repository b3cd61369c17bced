# scenario: correct throughout, the host helpers written with jax.numpy (results converted to NumPy and floats)
# base: solution
# expect-fail:
# %% cell two-averages
def two_averages(shards):
    flat = jnp.concatenate([jnp.asarray(s, dtype=jnp.float32) for s in shards])
    means = jnp.stack([jnp.mean(jnp.asarray(s, dtype=jnp.float32)) for s in shards])
    return float(np.mean(np.concatenate(shards))), float(np.mean([float(m) for m in means])) if flat.size else 0.0


print(two_averages([np.array([0.5, 1.5]), np.array([4.0])]))
# %% cell equal-shards
def equal_shard_gradient(local_gradients):
    return np.asarray(jnp.mean(jnp.asarray(local_gradients), axis=0), dtype=np.float64)


print(equal_shard_gradient(local_gradients))
# %% cell unequal-shards
def weighted_gradient(local_gradients, sizes):
    return np.average(np.asarray(local_gradients, dtype=np.float64), axis=0, weights=np.asarray(sizes, dtype=np.float64))


uneven = local_mean_gradients(host_x, host_y, w0, [3, 5])
print("count-weighted:", weighted_gradient(uneven, [3, 5]))
# %% cell combine
def combine_partials(sums, counts):
    return float(np.asarray(jnp.sum(jnp.asarray(sums, dtype=jnp.float32))) / np.sum(counts))


print("from partials:", combine_partials(sums, counts))
# %% cell shard-map
def device_sum_and_count(block_losses, block_mask):
    return jnp.sum(block_losses, where=block_mask), jnp.sum(block_mask, dtype=jnp.float32)


def masked_mean_program(block_losses, block_mask):
    local = jnp.stack(device_sum_and_count(block_losses, block_mask))
    total_sum, total_count = lax.psum(local, "data")
    return total_sum / total_count


def make_sharded_masked_mean(mesh):
    by_sequence = P("data", None)
    return jax.jit(jax.shard_map(masked_mean_program, mesh=mesh, in_specs=(by_sequence, by_sequence),
                                 out_specs=P()))


sharded_masked_mean = make_sharded_masked_mean(mesh)
print("on the devices:", sharded_masked_mean(device_losses, device_mask))
