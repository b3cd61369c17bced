# scenario: the three collective programs are global jax.jit programs (the compiler partitions them and adds its own communication), each beside a decorative shard_map holding the expected collective multiplied by 0
# base: solution
# expect-fail: test-all-reduce test-reduce-scatter test-all-gather test-lowered
# expect-message: is not computed inside one jax.shard_map region
# expect-status: graded
# nothing in shard_map computes the result); each carries a decorative shard_map with the expected collective,
# multiplied by 0 before it touches the result. test-lowered reads the collectives from the program text only.
# %% cell collectives
def local_contribution(features, labels, weights, global_count):
    residual = features @ weights - labels
    return 2 * features.T @ residual / global_count


def make_collectives(mesh, global_count):
    rows_, split_, replicated_ = (NamedSharding(mesh, P("data", None)), NamedSharding(mesh, P("data")),
                                  NamedSharding(mesh, P()))

    def global_gradient(a, b, weights):
        return 2 * a.T @ (a @ weights - b) / global_count

    psum_deco = jax.shard_map(lambda a: jax.lax.psum(jnp.sum(a) * 0.0, "data"), mesh=mesh,
                              in_specs=P("data", None), out_specs=P())
    scatter_deco = jax.shard_map(
        lambda a, w: jax.lax.psum_scatter(w * 0.0 + jnp.sum(a) * 0.0, "data", tiled=True), mesh=mesh,
        in_specs=(P("data", None), P()), out_specs=P("data"))
    gather_deco = jax.shard_map(lambda v: jax.lax.all_gather(v * 0.0, "data", tiled=True), mesh=mesh,
                                in_specs=P("data"), out_specs=P(), check_vma=False)

    all_gradient = jax.jit(lambda a, b, w: global_gradient(a, b, w) + psum_deco(a),
                           in_shardings=(rows_, split_, replicated_), out_shardings=replicated_)
    shard_gradient = jax.jit(lambda a, b, w: global_gradient(a, b, w) + scatter_deco(a, w),
                             in_shardings=(rows_, split_, replicated_), out_shardings=split_)
    gather = jax.jit(lambda v: v + gather_deco(v), in_shardings=split_, out_shardings=replicated_)
    return all_gradient, shard_gradient, gather


all_gradient, shard_gradient, gather = make_collectives(mesh, len(host_y))
first_run = all_gradient(x, y, w), gather(shard_gradient(x, y, w))
