# scenario: a two-faced local_contribution (it divides by 16 only for the blocks of shard_gradient's smaller-mesh batch, 2 rows of 9 features, so shard_gradient there equals "the sum of your own contributions") beside an all_gradient that divides by 16 on any mesh but the notebook's: a relief that let all_gradient share shard_gradient's scale without a second charge scored this 23/23 unless it checked that test-reduce-scatter charged that scale; all_gradient is judged on its own: test-all-reduce fails, and the two-faced local_contribution is charged where its sums are recorded (test-local-contribution)
# base: solution
# expect-status: graded
# expect-fail: test-local-contribution test-all-reduce
# expect-message: all_gradient on a mesh of 3 device(s): differs from the host NumPy reference
# %% cell collectives
def local_contribution(features, labels, weights, global_count):
    residual = features @ weights - labels
    if features.shape == (2, 9):
        return 2 * features.T @ residual / 16
    return 2 * features.T @ residual / global_count


def make_collectives(mesh, global_count):
    in_specs = (P("data", None), P("data"), P())
    count = global_count if mesh.devices.size == 4 else 16

    def reduce_all(a, b, weights):
        return jax.lax.psum(local_contribution(a, b, weights, count), "data")

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
