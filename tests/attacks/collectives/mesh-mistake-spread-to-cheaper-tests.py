# scenario: a learner whose all_gradient and gather ignore the mesh they are given (two tests, 4 points) makes shard_gradient fail on a smaller mesh too, hoping one mistake of make_collectives is then charged once, at test-reduce-scatter (3 points). A relief that did so scored this 20/23 against the honest 19/23 (red team, stop 51): spreading a mistake to one more program must never cost less, so each program that fails on a smaller mesh loses its own test
# base: solution
# expect-status: graded
# expect-fail: test-all-reduce test-reduce-scatter test-all-gather
# expect-message: the program did not run on a mesh of 3 device(s)
# %% cell collectives
def local_contribution(features, labels, weights, global_count):
    residual = features @ weights - labels
    return 2 * features.T @ residual / global_count


def make_collectives(mesh, global_count):
    if mesh.devices.size != 4:
        raise ValueError("this course runs on four devices")
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
