# scenario: the per-device program never forms local partials: each device writes its block into a zero buffer the size of the whole batch at its axis_index and psums the buffers, which copies the whole batch to every device (an all-gather written as an all-reduce), then computes the global masked mean from the copy; the program's only collective is the all_reduce the lesson asks for and everything is inside one region manual over "data", so it passes as the lesson's algorithm (psum of local sums and counts, divide once) although no device reduces its own block
# base: solution
# expect-status: graded
# expect-fail: test-shard-map
# %% cell shard-map
def device_sum_and_count(block_losses, block_mask):
    return jnp.sum(jnp.where(block_mask, block_losses, 0.0)), jnp.sum(block_mask)


def _everyone(block):
    rows = block.shape[0]
    buffer = jnp.zeros((rows * lax.psum(1, "data"),) + block.shape[1:], block.dtype)
    start = (lax.axis_index("data") * rows,) + (0,) * (block.ndim - 1)
    return lax.psum(lax.dynamic_update_slice(buffer, block, start), "data")


def masked_mean_program(block_losses, block_mask):
    every_loss = _everyone(block_losses)  # the whole batch, on every device
    every_mask = _everyone(block_mask.astype(jnp.int32)) > 0
    return jnp.sum(jnp.where(every_mask, every_loss, 0.0)) / jnp.sum(every_mask)


def make_sharded_masked_mean(mesh):
    return jax.jit(jax.shard_map(masked_mean_program, mesh=mesh, in_specs=(P("data", None), P("data", None)),
                                 out_specs=P()))


sharded_masked_mean = make_sharded_masked_mean(mesh)
print("on the devices:", sharded_masked_mean(device_losses, device_mask))
