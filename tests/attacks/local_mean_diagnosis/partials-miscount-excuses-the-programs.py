# scenario: device_sum_and_count is already charged (it sums in bfloat16), so the learner makes its counts count the non-zero losses too, at no cost, hoping the sharded masked mean, which counts the non-zero losses on its own (its own jnp.count_nonzero), is then judged against "your own per-device counts": a relief that did so scored this 14/16 against 11/16 for the same program beside right counts (red team, stop 51). The program is judged against the lesson's masked mean: test-shard-map fails
# base: solution
# expect-status: graded
# expect-fail: test-device-partials test-shard-map
# expect-message: it counts the non-zero losses, not the targets
# %% cell shard-map
def device_sum_and_count(block_losses, block_mask):
    valid = jnp.where(block_mask, block_losses, 0.0).astype(jnp.bfloat16)
    return jnp.sum(valid).astype(jnp.float32), jnp.count_nonzero(jnp.where(block_mask, block_losses, 0.0)).astype(jnp.int32)


def masked_mean_program(block_losses, block_mask):
    kept = jnp.where(block_mask, block_losses, 0.0)
    return lax.psum(jnp.sum(kept), "data") / lax.psum(jnp.count_nonzero(kept).astype(jnp.int32), "data")


def make_sharded_masked_mean(mesh):
    return jax.jit(jax.shard_map(
        masked_mean_program, mesh=mesh, in_specs=(P("data", None), P("data", None)), out_specs=P()
    ))


sharded_masked_mean = make_sharded_masked_mean(mesh)
print("on the devices:", sharded_masked_mean(device_losses, device_mask))
