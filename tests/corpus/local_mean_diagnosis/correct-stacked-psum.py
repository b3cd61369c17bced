# scenario: correct: the per-device program stacks its sum and count and reduces both with one psum
# base: solution
# expect-fail:
# expect-status: graded
# %% cell shard-map
def device_sum_and_count(block_losses, block_mask):
    valid = block_mask.astype(block_losses.dtype)
    return jnp.vdot(valid.ravel(), block_losses.ravel()), jnp.sum(block_mask)


def masked_mean_program(block_losses, block_mask):
    local_sum, local_count = device_sum_and_count(block_losses, block_mask)
    totals = lax.psum(jnp.stack([local_sum, local_count.astype(local_sum.dtype)]), "data")
    return totals[0] / totals[1]


def make_sharded_masked_mean(mesh):
    split = P("data", None)
    return jax.jit(jax.shard_map(masked_mean_program, mesh=mesh, in_specs=(split, split), out_specs=P()))


sharded_masked_mean = make_sharded_masked_mean(mesh)
print("on the devices:", sharded_masked_mean(device_losses, device_mask))
