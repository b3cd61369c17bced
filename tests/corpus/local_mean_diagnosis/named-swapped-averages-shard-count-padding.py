# scenario: mean of local means returned as the global mean; the weighted mean divides by the number of shards; the shard sums and each device's sum add the padding tokens' losses too
# base: solution
# expect-fail: test-two-averages test-unequal-shards test-shard-statistics test-device-partials test-shard-map
# expect-message: this is the global mean: the mean of local means weighs every shard once
# expect-message: it divides by the number of shards, not by the total count
# expect-message: padding losses were summed too: add only the valid tokens' losses
# %% cell two-averages
def two_averages(shards):
    """The global mean and the mean of local means of per-example values split into shards.

    shards: a list of k 1-D arrays; shard i holds n_i >= 1 values
    returns: (global_mean, mean_of_local_means), two floats
    """
    global_mean = float(np.concatenate(shards).mean())
    mean_of_local_means = global_mean
    return global_mean, mean_of_local_means


print(two_averages([np.array([0.5, 1.5]), np.array([4.0])]))

# %% cell unequal-shards
def weighted_gradient(local_gradients, sizes):
    """Global mean from the local means of shards holding `sizes` examples.

    local_gradients: (k, d) or (k,); sizes: k non-negative counts with a positive sum
    returns: (d,), or a float for (k,) input
    """
    sizes = np.asarray(sizes, dtype=np.float64)
    return np.tensordot(sizes, local_gradients, axes=1) / len(sizes)


uneven = local_mean_gradients(host_x, host_y, w0, [3, 5])
print("local means, 3 + 5 rows:", uneven.tolist())
print("plain mean:             ", uneven.mean(axis=0))
print("count-weighted:         ", weighted_gradient(uneven, [3, 5]))

# Self-check of the docstring's "non-negative counts": a shard that holds no example carries no weight.
np.testing.assert_allclose(weighted_gradient(np.array([[1.0, 2.0], [5.0, 5.0], [3.0, 1.0]]), [2, 0, 2]), [2.0, 1.5],
                           err_msg="weighted_gradient: a count of 0 gives no weight, (2 * [1, 2] + 2 * [3, 1]) / 4")

# %% cell shard-statistics
def shard_statistics(token_losses, mask, num_shards):
    """Per-shard partials of the masked loss, for num_shards equal blocks of sequences.

    token_losses, mask: (S, T) with S divisible by num_shards; block k holds
    sequences k*S/num_shards ... (k+1)*S/num_shards - 1.
    returns (sums, counts, means), each of shape (num_shards,):
      sums[k]    the sum of the valid losses of block k
      counts[k]  the number of valid tokens of block k
      means[k]   sums[k] / counts[k], or 0.0 for a block without valid tokens (never NaN)
    """
    sums = token_losses.reshape(num_shards, -1).sum(axis=1)
    counts = mask.reshape(num_shards, -1).sum(axis=1)
    means = np.where(counts > 0, sums / np.maximum(counts, 1), 0.0)
    return sums, counts, means


sums, counts, means = shard_statistics(token_losses, mask, len(devices))
print("sums:  ", sums)
print("counts:", counts)
print("means: ", means)

# %% cell shard-map
def device_sum_and_count(block_losses, block_mask):
    """Runs on one device: the sum of its valid losses and its number of valid tokens.

    block_losses: (S/p, T) float32; block_mask: (S/p, T) bool
    returns: (local_sum, local_count), two scalars
    """
    return jnp.sum(block_losses), jnp.sum(block_mask)


def masked_mean_program(block_losses, block_mask):
    """The per-device program: psum the local sums and the local counts over "data", divide once.

    returns: the global masked mean, the same scalar on every device
    """
    local_sum, local_count = device_sum_and_count(block_losses, block_mask)
    return lax.psum(local_sum, "data") / lax.psum(local_count, "data")


def make_sharded_masked_mean(mesh):
    """jax.jit of jax.shard_map(masked_mean_program, ...) on `mesh`:
    both inputs split by sequence, P("data", None); one replicated scalar out, P().

    returns: a function (token_losses, mask) -> scalar JAX array
    """
    return jax.jit(jax.shard_map(
        masked_mean_program,
        mesh=mesh,
        in_specs=(P("data", None), P("data", None)),
        out_specs=P(),
    ))


sharded_masked_mean = make_sharded_masked_mean(mesh)
print("on the devices:", sharded_masked_mean(device_losses, device_mask))

# Self-check of make_sharded_masked_mean's promise: it runs on the mesh it is given (here half the devices).
half_mesh = Mesh(np.array(devices[:max(1, len(devices) // 2)]), ("data",))
half_losses, half_mask = data.masked_tokens(seed=7, num_shards=half_mesh.devices.size, empty=())
half_rows = NamedSharding(half_mesh, P("data", None))
half_result = make_sharded_masked_mean(half_mesh)(jax.device_put(half_losses, half_rows), jax.device_put(half_mask, half_rows))
np.testing.assert_allclose(float(half_result), np.sum(half_losses * half_mask) / np.sum(half_mask), rtol=1e-5,
                           err_msg="make_sharded_masked_mean(mesh) should use the mesh it is given, not the global one")
