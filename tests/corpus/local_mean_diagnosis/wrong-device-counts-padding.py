# scenario: device_sum_and_count counts every position of the block, padding included (so the program that uses it divides by too much)
# base: solution
# expect-fail: test-device-partials test-shard-map
# expect-message: padding positions were counted
# %% cell shard-map
def device_sum_and_count(block_losses, block_mask):
    return jnp.sum(jnp.where(block_mask, block_losses, 0.0)), jnp.asarray(block_mask.size, dtype=jnp.int32)


def masked_mean_program(block_losses, block_mask):
    local_sum, local_count = device_sum_and_count(block_losses, block_mask)
    return lax.psum(local_sum, "data") / lax.psum(local_count, "data")


def make_sharded_masked_mean(mesh):
    return jax.jit(jax.shard_map(
        masked_mean_program, mesh=mesh, in_specs=(P("data", None), P("data", None)), out_specs=P()
    ))


sharded_masked_mean = make_sharded_masked_mean(mesh)
print("on the devices:", sharded_masked_mean(device_losses, device_mask))
