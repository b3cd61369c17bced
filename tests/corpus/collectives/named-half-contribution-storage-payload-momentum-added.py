# scenario: local_contribution misses the factor 2; ring_payload's reduce-scatter is G/p (what a rank keeps); momentum_step adds the new momentum to the weights
# base: solution
# expect-fail: test-local-contribution test-payload test-momentum
# expect-message: half the reference: the factor 2 is missing
# expect-message: G/p is what a rank keeps (storage), not what passes through it
# expect-message: the momentum was added: w' = w - learning_rate * v'
# %% cell collectives
def local_contribution(features, labels, weights, global_count):
    """One device's term of the global gradient.

    features: (n_local, d), labels: (n_local,), weights: (d,)  ->  (d,)
    Returns 2 / global_count * features^T (features @ weights - labels); global_count
    is the number of rows on all devices together, not n_local.
    """
    residual = features @ weights - labels
    return features.T @ residual / global_count


def make_collectives(mesh, global_count):
    """Return (all_gradient, shard_gradient, gather): jitted shard_map programs on axis "data".

    all_gradient(x, y, w) -> (d,), summed with psum, out_specs P()
    shard_gradient(x, y, w) -> (d,), summed with psum_scatter(tiled=True), out_specs P("data")
    gather(g) -> (d,) from a P("data") vector with all_gather(tiled=True), out_specs P(), check_vma=False
    in_specs for the gradient programs: x P("data", None), y P("data"), w P().
    """
    in_specs = (P("data", None), P("data"), P())

    def reduce_all(a, b, weights):
        return jax.lax.psum(local_contribution(a, b, weights, global_count), "data")

    def reduce_shard(a, b, weights):
        return jax.lax.psum_scatter(local_contribution(a, b, weights, global_count), "data", tiled=True)

    def gather_all(portion):
        return jax.lax.all_gather(portion, "data", tiled=True)

    all_gradient = jax.jit(jax.shard_map(reduce_all, mesh=mesh, in_specs=in_specs, out_specs=P()))
    shard_gradient = jax.jit(jax.shard_map(reduce_shard, mesh=mesh, in_specs=in_specs, out_specs=P("data")))
    gather = jax.jit(
        jax.shard_map(gather_all, mesh=mesh, in_specs=P("data"), out_specs=P(), check_vma=False)
    )
    return all_gradient, shard_gradient, gather


all_gradient, shard_gradient, gather = make_collectives(mesh, len(host_y))
# Run each program once, here: a mistake in them is reported below this cell, not in a later one.
first_run = all_gradient(x, y, w), gather(shard_gradient(x, y, w))

# %% cell payload
def ring_payload(gradient_bytes, ranks):
    """Idealized ring payload per rank: (reduce_scatter_bytes, all_reduce_bytes).

    B_RS = (p - 1) / p * G and B_AR = 2 (p - 1) / p * G with G = gradient_bytes, p = ranks.
    """
    scatter_bytes = gradient_bytes / ranks
    return scatter_bytes, 2 * scatter_bytes


print("ring_payload(32, 4) =", ring_payload(32, 4))

# %% cell momentum
def momentum_step(weights, velocity, gradient, learning_rate, beta):
    """One momentum update on partitioned state.

    weights, velocity, gradient: (d,) arrays split P("data"), d/p values per device.
    Returns (new_weights, new_velocity), both still split P("data").
    """
    def update(w_slice, v_slice, g_slice):
        new_v = beta * v_slice + g_slice
        return w_slice + learning_rate * new_v, new_v

    sliced = jax.shard_map(update, mesh=mesh, in_specs=(P("data"),) * 3, out_specs=(P("data"), P("data")))
    return jax.jit(sliced)(weights, velocity, gradient)


# A first run here, so that a mistake in momentum_step is reported below this cell.
first_momentum = momentum_step(jax.device_put(host_w, split), jax.device_put(np.zeros(8, dtype=np.float32), split), gs, 0.1, 0.9)
