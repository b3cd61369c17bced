# scenario: the per-device program psums the local sums twice (a psum of the already summed total) and the counts once: p times too large; the diagnosis names the sums reduced twice beside the pmean mix-up, not a wrong count alone
# base: solution
# expect-fail: test-shard-map
# expect-message: the sums were reduced twice
# expect-status: graded
# %% cell shard-map
def device_sum_and_count(block_losses, block_mask):
    return jnp.sum(jnp.where(block_mask, block_losses, 0.0)), jnp.sum(block_mask)


def masked_mean_program(block_losses, block_mask):
    local_sum, local_count = device_sum_and_count(block_losses, block_mask)
    total = lax.psum(local_sum, "data")
    return lax.psum(total, "data") / lax.psum(local_count, "data")  # the total, summed again over every device


def make_sharded_masked_mean(mesh):
    return jax.jit(jax.shard_map(masked_mean_program, mesh=mesh, in_specs=(P("data", None), P("data", None)),
                                 out_specs=P()))


sharded_masked_mean = make_sharded_masked_mean(mesh)
