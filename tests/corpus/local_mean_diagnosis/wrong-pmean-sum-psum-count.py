# scenario: psum/pmean confusion: the program takes the pmean of the local sums but the psum of the local counts (p times too small)
# base: solution
# expect-fail: test-shard-map
# expect-message: the local sums were averaged (pmean) but the counts summed
# %% cell shard-map
def device_sum_and_count(block_losses, block_mask):
    return jnp.sum(jnp.where(block_mask, block_losses, 0.0)), jnp.sum(block_mask)


def masked_mean_program(block_losses, block_mask):
    local_sum, local_count = device_sum_and_count(block_losses, block_mask)
    return lax.pmean(local_sum, "data") / lax.psum(local_count, "data")


def make_sharded_masked_mean(mesh):
    return jax.jit(jax.shard_map(masked_mean_program, mesh=mesh, in_specs=(P("data", None), P("data", None)),
                                 out_specs=P()))


sharded_masked_mean = make_sharded_masked_mean(mesh)
