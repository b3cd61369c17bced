# scenario: the per-device partials count the valid tokens right, but the sharded masked mean counts the non-zero losses itself (its own jnp.count_nonzero): the shard-map test judges a program against the non-zero rule only when the per-device counts the learner recorded follow that rule too, so this one is charged where it is written
# base: solution
# expect-fail: test-shard-map
# expect-message: it counts the non-zero losses, not the targets
# %% cell shard-map
def device_sum_and_count(block_losses, block_mask):
    return jnp.sum(jnp.where(block_mask, block_losses, 0.0)), jnp.sum(block_mask).astype(jnp.int32)


def masked_mean_program(block_losses, block_mask):
    kept = jnp.where(block_mask, block_losses, 0.0)
    return lax.psum(jnp.sum(kept), "data") / lax.psum(jnp.count_nonzero(kept).astype(jnp.int32), "data")


def make_sharded_masked_mean(mesh):
    return jax.jit(jax.shard_map(
        masked_mean_program, mesh=mesh, in_specs=(P("data", None), P("data", None)), out_specs=P()
    ))


sharded_masked_mean = make_sharded_masked_mean(mesh)
print("on the devices:", sharded_masked_mean(device_losses, device_mask))
