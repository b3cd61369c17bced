# scenario: all_gradient never forms a local contribution: inside its shard_map region each device writes its rows into a zero buffer the size of the whole batch at its axis_index and psums the buffers (an all-gather of every row, written as an all-reduce), then computes the whole gradient from the copy on every device; its only collective is the all_reduce the lesson asks for, the region is manual over "data" and takes the inputs as placed, so it passes as "psum of the local contributions" although every device computes the global gradient from the whole batch
# base: solution
# expect-fail: test-all-reduce test-lowered
# expect-status: graded
# %% cell collectives
def local_contribution(features, labels, weights, global_count):
    residual = features @ weights - labels
    return 2 * features.T @ residual / global_count


def _everyone(block):
    rows_here = block.shape[0]
    buffer = jnp.zeros((rows_here * jax.lax.psum(1, "data"),) + block.shape[1:], block.dtype)
    start = (jax.lax.axis_index("data") * rows_here,) + (0,) * (block.ndim - 1)
    return jax.lax.psum(jax.lax.dynamic_update_slice(buffer, block, start), "data")


def make_collectives(mesh, global_count):
    in_specs = (P("data", None), P("data"), P())

    def reduce_all(a, b, weights):
        every_x, every_y = _everyone(a), _everyone(b)  # the whole batch on every device
        return local_contribution(every_x, every_y, weights, global_count)

    def scatter(a, b, weights):
        return jax.lax.psum_scatter(local_contribution(a, b, weights, global_count), "data", tiled=True)

    def gather_all(portion):
        return jax.lax.all_gather(portion, "data", tiled=True)

    all_gradient = jax.jit(jax.shard_map(reduce_all, mesh=mesh, in_specs=in_specs, out_specs=P(), check_vma=False))
    shard_gradient = jax.jit(jax.shard_map(scatter, mesh=mesh, in_specs=in_specs, out_specs=P("data")))
    gather = jax.jit(jax.shard_map(gather_all, mesh=mesh, in_specs=P("data"), out_specs=P(), check_vma=False))
    return all_gradient, shard_gradient, gather


all_gradient, shard_gradient, gather = make_collectives(mesh, len(host_y))
