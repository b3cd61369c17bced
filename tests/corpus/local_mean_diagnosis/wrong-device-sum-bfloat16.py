# scenario: device_sum_and_count accumulates the losses in bfloat16 "to halve the memory": the local sums and the masked mean lose precision
# base: solution
# expect-fail: test-device-partials test-shard-map
# expect-message: the per-device sums of valid losses
# %% cell shard-map
def device_sum_and_count(block_losses, block_mask):
    valid = jnp.where(block_mask, block_losses, 0.0).astype(jnp.bfloat16)
    return jnp.sum(valid).astype(jnp.float32), jnp.sum(block_mask)


def masked_mean_program(block_losses, block_mask):
    local_sum, local_count = device_sum_and_count(block_losses, block_mask)
    return lax.psum(local_sum, "data") / lax.psum(local_count, "data")


def make_sharded_masked_mean(mesh):
    return jax.jit(jax.shard_map(masked_mean_program, mesh=mesh, in_specs=(P("data", None), P("data", None)),
                                 out_specs=P()))


sharded_masked_mean = make_sharded_masked_mean(mesh)
