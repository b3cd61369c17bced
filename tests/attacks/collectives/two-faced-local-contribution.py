# scenario: local_contribution answers its own test right (divides by global_count; its hidden part runs at the end, after a last cell flips it back), while a cell the learner adds after that test flips it to divide by the local row count, the lesson's central mistake, for every later call: the programs are traced after the flip (p times the gradient), and so are the "sums of your own local contributions" the later test cells record, so a judge that takes the learner's factor from those records demanded p times the gradient of the programs and gave 23/23. Each later test now takes the factor only when the local-contribution test's own records show the same one
# base: solution
# expect-status: graded
# expect-fail: test-all-reduce test-reduce-scatter
# %% cell collectives
_local_count = [False]


def local_contribution(features, labels, weights, global_count):
    residual = features @ weights - labels
    return 2 * features.T @ residual / (features.shape[0] if _local_count[0] else global_count)


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
# %% append test-local-contribution
_local_count[0] = True
all_gradient, shard_gradient, gather = make_collectives(mesh, len(host_y))  # traced again, after the flip
ga = all_gradient(x, y, w)
gs = shard_gradient(x, y, w)
gg = gather(gs)
# %% append
_local_count[0] = False  # right again at the end, where the hidden parts of the tests run
