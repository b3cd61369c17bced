# scenario: make_collectives written WITHOUT shard_map or any collective: three plain jax.jit functions of global arrays with out_shardings (the compiler partitions them and inserts its own communication); the programs the grader runs for test-all-reduce, test-reduce-scatter and test-all-gather are judged only on values and shardings (Evidence.program_shardings/program_close), never on manual/manual_only/collectives, so 7 of the 9 collectives points of those four tests come with no psum, psum_scatter or all_gather written; only test-lowered (which reads the lowered text and the manual region) notices
# base: solution
# expect-status: graded
# expect-fail: test-all-reduce test-reduce-scatter test-all-gather test-lowered
# %% cell collectives
def local_contribution(features, labels, weights, global_count):
    residual = features @ weights - labels
    return 2 * features.T @ residual / global_count


def make_collectives(mesh, global_count):
    whole = NamedSharding(mesh, P())
    parts = NamedSharding(mesh, P("data"))

    def gradient(a, b, weights):  # the global gradient, as on one machine: no shard_map, no psum
        return 2 * a.T @ (a @ weights - b) / global_count

    all_gradient = jax.jit(gradient, out_shardings=whole)
    shard_gradient = jax.jit(gradient, out_shardings=parts)
    gather = jax.jit(lambda v: v, out_shardings=whole)
    return all_gradient, shard_gradient, gather


all_gradient, shard_gradient, gather = make_collectives(mesh, len(host_y))
first_run = all_gradient(x, y, w), gather(shard_gradient(x, y, w))
