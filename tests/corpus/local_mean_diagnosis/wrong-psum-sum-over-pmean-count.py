# scenario: the program divides the psum of the local sums by the pmean of the local counts (the average count per device): p times the masked mean
# base: solution
# expect-fail: test-shard-map
# expect-message: the local counts were averaged (pmean) but the sums summed
# %% cell shard-map
def device_sum_and_count(block_losses, block_mask):
    return jnp.sum(jnp.where(block_mask, block_losses, 0.0)), jnp.sum(block_mask)


def masked_mean_program(block_losses, block_mask):
    local_sum, local_count = device_sum_and_count(block_losses, block_mask)
    return lax.psum(local_sum, "data") / lax.pmean(local_count, "data")


def make_sharded_masked_mean(mesh):
    return jax.jit(jax.shard_map(masked_mean_program, mesh=mesh, in_specs=(P("data", None), P("data", None)),
                                 out_specs=P()))


sharded_masked_mean = make_sharded_masked_mean(mesh)
