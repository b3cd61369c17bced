# scenario: uses psum with a replicated output where psum_scatter was asked: right values, 8 values stored per device instead of 8/p
# base: solution
# expect-fail: test-reduce-scatter test-lowered
# expect-message: every device holds all 8 values
# %% cell collectives
def local_contribution(features, labels, weights, global_count):
    residual = features @ weights - labels
    return 2 * features.T @ residual / global_count


def make_collectives(mesh, global_count):
    in_specs = (P("data", None), P("data"), P())

    def reduce_all(a, b, weights):
        return jax.lax.psum(local_contribution(a, b, weights, global_count), "data")

    def gather_all(portion):
        return jax.lax.all_gather(portion, "data", tiled=True)

    all_gradient = jax.jit(jax.shard_map(reduce_all, mesh=mesh, in_specs=in_specs, out_specs=P()))
    shard_gradient = jax.jit(jax.shard_map(reduce_all, mesh=mesh, in_specs=in_specs, out_specs=P()))
    gather = jax.jit(jax.shard_map(gather_all, mesh=mesh, in_specs=P("data"), out_specs=P(), check_vma=False))
    return all_gradient, shard_gradient, gather


all_gradient, shard_gradient, gather = make_collectives(mesh, len(host_y))
