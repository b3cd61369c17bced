# scenario: gather is a copy-only shard_map (each device returns its own portion, no collective) followed by a sharding constraint to replicated, so the all-gather is added by the compiler and never written; the function is named "stablehlo.all_gather", so the exported module is `module @"jit_stablehlo.all_gather"` and a count of the collective by regular expression over the program text found one: 23/23 before (the constraint outside the region was allowed, the compiled program was never read); the runner now counts operations of the parsed module (none), refuses a reshard of what the region returns, and sees the compiler's all-gather in the compiled program
# base: solution
# expect-status: graded
# expect-fail: test-all-gather test-lowered
# expect-message: is not computed inside one jax.shard_map region
# %% cell collectives
def local_contribution(features, labels, weights, global_count):
    residual = features @ weights - labels
    return 2 * features.T @ residual / global_count


def make_collectives(mesh, global_count):
    in_specs = (P("data", None), P("data"), P())

    def reduce_all(a, b, weights):
        return jax.lax.psum(local_contribution(a, b, weights, global_count), "data")

    def reduce_shard(a, b, weights):
        return jax.lax.psum_scatter(local_contribution(a, b, weights, global_count), "data", tiled=True)

    keep = jax.shard_map(lambda portion: portion, mesh=mesh, in_specs=P("data"), out_specs=P("data"))

    def gather_all(portion):  # no collective: the constraint makes the compiler gather the portions
        return jax.lax.with_sharding_constraint(keep(portion), NamedSharding(mesh, P()))

    gather_all.__name__ = gather_all.__qualname__ = "stablehlo.all_gather"
    all_gradient = jax.jit(jax.shard_map(reduce_all, mesh=mesh, in_specs=in_specs, out_specs=P()))
    shard_gradient = jax.jit(jax.shard_map(reduce_shard, mesh=mesh, in_specs=in_specs, out_specs=P("data")))
    return all_gradient, shard_gradient, jax.jit(gather_all)


all_gradient, shard_gradient, gather = make_collectives(mesh, len(host_y))
first_run = all_gradient(x, y, w), gather(shard_gradient(x, y, w))
