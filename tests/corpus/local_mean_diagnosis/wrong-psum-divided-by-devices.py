# scenario: the shard_map program divides the psum of local sums by the number of devices
# base: solution
# expect-fail: test-shard-map
# expect-message: divides the total by the number of devices
# expect-status: graded
# %% cell shard-map
def device_sum_and_count(block_losses, block_mask):
    """Runs on one device: the sum of its valid losses and its number of valid tokens."""
    return jnp.sum(jnp.where(block_mask, block_losses, 0.0)), jnp.sum(block_mask)


def masked_mean_program(block_losses, block_mask):
    local_sum, _ = device_sum_and_count(block_losses, block_mask)
    return lax.psum(local_sum, "data") / lax.psum(1, "data")


def make_sharded_masked_mean(mesh):
    return jax.jit(jax.shard_map(
        masked_mean_program, mesh=mesh, in_specs=(P("data", None), P("data", None)), out_specs=P()
    ))


sharded_masked_mean = make_sharded_masked_mean(mesh)
print("on the devices:", sharded_masked_mean(device_losses, device_mask))
