# scenario: hard-codes four devices: make_sharded_masked_mean builds its own mesh of jax.devices()[:4]
# base: solution
# expect-fail: test-shard-map
# expect-message: not a mesh of the lesson's four devices
# %% cell shard-map
def device_sum_and_count(block_losses, block_mask):
    return jnp.sum(jnp.where(block_mask, block_losses, 0.0)), jnp.sum(block_mask)


def masked_mean_program(block_losses, block_mask):
    local_sum, local_count = device_sum_and_count(block_losses, block_mask)
    return lax.psum(local_sum, "data") / lax.psum(local_count, "data")


def make_sharded_masked_mean(mesh):
    four = Mesh(np.array(jax.devices()[:4]), ("data",))
    return jax.jit(jax.shard_map(
        masked_mean_program, mesh=four, in_specs=(P("data", None), P("data", None)), out_specs=P()
    ))


sharded_masked_mean = make_sharded_masked_mean(mesh)
print("on the devices:", sharded_masked_mean(device_losses, device_mask))
