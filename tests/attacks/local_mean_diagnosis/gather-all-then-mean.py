# scenario: the per-device program never forms local partials: it all_gathers every device's losses and mask (the whole batch is copied to every device) and computes the global mean from the gathered arrays; a decorative psum of a zero satisfies "psum over the devices inside jax.shard_map" (run.collectives all_reduce >= 1) and everything is inside one manual region (manual_only), so test-shard-map's program check never sees that the lesson's algorithm (psum of local sums and counts, divide once) is absent: the rubric counts the wanted collective but does not forbid all_gather here (collectives' _programs does forbid other collectives)
# base: solution
# expect-status: graded
# expect-fail: test-shard-map
# %% cell shard-map
def device_sum_and_count(block_losses, block_mask):
    return jnp.sum(jnp.where(block_mask, block_losses, 0.0)), jnp.sum(block_mask)


def masked_mean_program(block_losses, block_mask):
    every_loss = lax.all_gather(block_losses, "data", tiled=True)  # the whole batch on every device
    every_mask = lax.all_gather(block_mask, "data", tiled=True)
    mean = jnp.sum(jnp.where(every_mask, every_loss, 0.0)) / jnp.sum(every_mask)
    return mean + lax.psum(jnp.zeros((), mean.dtype), "data")  # decorative psum


def make_sharded_masked_mean(mesh):
    return jax.jit(jax.shard_map(masked_mean_program, mesh=mesh, in_specs=(P("data", None), P("data", None)),
                                 out_specs=P(), check_vma=False))


sharded_masked_mean = make_sharded_masked_mean(mesh)
print("on the devices:", sharded_masked_mean(device_losses, device_mask))
