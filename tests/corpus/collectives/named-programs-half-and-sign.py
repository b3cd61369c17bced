# scenario: all_gradient halves the psum (the factor 2 lost in the program); shard_gradient flips the sign of the psum_scatter
# base: solution
# expect-fail: test-all-reduce test-reduce-scatter
# expect-message: half the reference: the factor 2 is missing
# expect-message: the sign is flipped
# %% cell collectives
def local_contribution(features, labels, weights, global_count):
    """One device's term of the global gradient.

    features: (n_local, d), labels: (n_local,), weights: (d,)  ->  (d,)
    Returns 2 / global_count * features^T (features @ weights - labels); global_count
    is the number of rows on all devices together, not n_local.
    """
    residual = features @ weights - labels
    return 2 * features.T @ residual / global_count


def make_collectives(mesh, global_count):
    """Return (all_gradient, shard_gradient, gather): jitted shard_map programs on axis "data".

    all_gradient(x, y, w) -> (d,), summed with psum, out_specs P()
    shard_gradient(x, y, w) -> (d,), summed with psum_scatter(tiled=True), out_specs P("data")
    gather(g) -> (d,) from a P("data") vector with all_gather(tiled=True), out_specs P(), check_vma=False
    in_specs for the gradient programs: x P("data", None), y P("data"), w P().
    """
    in_specs = (P("data", None), P("data"), P())

    def reduce_all(a, b, weights):
        return 0.5 * jax.lax.psum(local_contribution(a, b, weights, global_count), "data")

    def reduce_shard(a, b, weights):
        return -jax.lax.psum_scatter(local_contribution(a, b, weights, global_count), "data", tiled=True)

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
