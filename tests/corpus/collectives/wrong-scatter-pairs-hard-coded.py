# scenario: hard-codes the portion size: "each device keeps 8/4 = 2 values", so the reduce-scatter cuts the gradient into pairs (reshape(-1, 2)) for an untiled psum_scatter: right only when the gradient has exactly 2 values per device
# base: solution
# expect-fail: test-reduce-scatter
# expect-message: shard_gradient on a mesh of 3 device(s)
# %% cell collectives
def local_contribution(features, labels, weights, global_count):
    residual = features @ weights - labels
    return 2 * features.T @ residual / global_count


def make_collectives(mesh, global_count):
    in_specs = (P("data", None), P("data"), P())

    def reduce_all(a, b, weights):
        return jax.lax.psum(local_contribution(a, b, weights, global_count), "data")

    def reduce_shard(a, b, weights):
        pairs = local_contribution(a, b, weights, global_count).reshape(-1, 2)  # one pair of values per device
        return jax.lax.psum_scatter(pairs, "data")

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
