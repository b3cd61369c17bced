# scenario: local_contribution divides by global_count - 1, a denominator the lesson names no mistake for: the local-contribution test charges it, and the programs built on it (the sum of the learner's own contributions, as that test recorded them) are not charged again
# base: solution
# expect-fail: test-local-contribution
# expect-message: the local contributions on the lesson data: differs from the host NumPy reference
# %% cell collectives
def local_contribution(features, labels, weights, global_count):
    residual = features @ weights - labels
    return 2 * features.T @ residual / (global_count - 1)


def make_collectives(mesh, global_count):
    in_specs = (P("data", None), P("data"), P())

    def reduce_all(a, b, weights):
        return jax.lax.psum(local_contribution(a, b, weights, global_count), "data")

    def reduce_shard(a, b, weights):
        return jax.lax.psum_scatter(local_contribution(a, b, weights, global_count), "data", tiled=True)

    def gather_all(portion):
        return jax.lax.all_gather(portion, "data", tiled=True)

    all_gradient = jax.jit(jax.shard_map(reduce_all, mesh=mesh, in_specs=in_specs, out_specs=P()))
    shard_gradient = jax.jit(jax.shard_map(reduce_shard, mesh=mesh, in_specs=in_specs, out_specs=P("data")))
    gather = jax.jit(jax.shard_map(gather_all, mesh=mesh, in_specs=P("data"), out_specs=P(), check_vma=False))
    return all_gradient, shard_gradient, gather


all_gradient, shard_gradient, gather = make_collectives(mesh, len(host_y))
first_run = all_gradient(x, y, w), gather(shard_gradient(x, y, w))
