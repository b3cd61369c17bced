# scenario: the weighted mean divides by the lesson's 4; each device returns its (guarded) local mean instead of its local sum
# base: solution
# expect-fail: test-unequal-shards test-device-partials test-shard-map
# expect-message: it divides by 4 (the lesson's four shards (or devices)), not by the total count
# expect-message: these are local means, not local sums: divide once, at the end
# %% cell unequal-shards
def weighted_gradient(local_gradients, sizes):
    """Global mean from the local means of shards holding `sizes` examples.

    local_gradients: (k, d) or (k,); sizes: k non-negative counts with a positive sum
    returns: (d,), or a float for (k,) input
    """
    sizes = np.asarray(sizes, dtype=np.float64)
    return np.tensordot(sizes, local_gradients, axes=1) / 4


uneven = local_mean_gradients(host_x, host_y, w0, [3, 5])
print("local means, 3 + 5 rows:", uneven.tolist())
print("plain mean:             ", uneven.mean(axis=0))
print("count-weighted:         ", weighted_gradient(uneven, [3, 5]))

# Self-check of the docstring's "non-negative counts": a shard that holds no example carries no weight.
np.testing.assert_allclose(weighted_gradient(np.array([[1.0, 2.0], [5.0, 5.0], [3.0, 1.0]]), [2, 0, 2]), [2.0, 1.5],
                           err_msg="weighted_gradient: a count of 0 gives no weight, (2 * [1, 2] + 2 * [3, 1]) / 4")

# %% cell shard-map
def device_sum_and_count(block_losses, block_mask):
    """Runs on one device: the sum of its valid losses and its number of valid tokens.

    block_losses: (S/p, T) float32; block_mask: (S/p, T) bool
    returns: (local_sum, local_count), two scalars
    """
    count = jnp.sum(block_mask)
    total = jnp.sum(jnp.where(block_mask, block_losses, 0.0))
    return jnp.where(count > 0, total / jnp.maximum(count, 1), 0.0), count  # a guarded local mean


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
