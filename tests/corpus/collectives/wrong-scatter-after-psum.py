# scenario: shard_gradient reduces twice: a psum of the local contributions, then psum_scatter of that sum; the local contributions are right, every portion is p times too large; the diagnosis names the reduction applied twice, not a wrong local count
# base: solution
# expect-fail: test-reduce-scatter test-lowered
# expect-message: the reduction was applied twice
# expect-status: graded
# %% cell collectives
def local_contribution(features, labels, weights, global_count):
    residual = features @ weights - labels
    return 2 * features.T @ residual / global_count


def make_collectives(mesh, global_count):
    in_specs = (P("data", None), P("data"), P())

    def reduce_all(a, b, weights):
        return jax.lax.psum(local_contribution(a, b, weights, global_count), "data")

    def reduce_shard(a, b, weights):
        summed = jax.lax.psum(local_contribution(a, b, weights, global_count), "data")
        return jax.lax.psum_scatter(summed, "data", tiled=True)  # scatters the sum of an already summed vector

    def gather_all(portion):
        return jax.lax.all_gather(portion, "data", tiled=True)

    all_gradient = jax.jit(jax.shard_map(reduce_all, mesh=mesh, in_specs=in_specs, out_specs=P()))
    shard_gradient = jax.jit(jax.shard_map(reduce_shard, mesh=mesh, in_specs=in_specs, out_specs=P("data")))
    gather = jax.jit(jax.shard_map(gather_all, mesh=mesh, in_specs=P("data"), out_specs=P(), check_vma=False))
    return all_gradient, shard_gradient, gather


all_gradient, shard_gradient, gather = make_collectives(mesh, len(host_y))
first_run = all_gradient(x, y, w), gather(shard_gradient(x, y, w))
